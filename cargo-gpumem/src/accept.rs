//! `cargo gpumem accept [FILTER]`: pending golden files become the golden files.

use crate::review::{pending_in, show};
use gpumem_harness::error::Error;
use gpumem_harness::exit_code::SUCCESS;
use std::path::Path;

pub fn accept(manifest: Option<&Path>, filter: Option<&str>) -> Result<i32, Error> {
    let (workspace, pending) = pending_in(manifest, filter)?;
    for snapshot in &pending {
        snapshot.accept()?;
        println!("accepted {}", show(&workspace, &snapshot.golden));
    }
    println!("{} golden file(s) accepted", pending.len());
    Ok(SUCCESS)
}
