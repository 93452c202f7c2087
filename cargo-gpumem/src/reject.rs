//! `cargo gpumem reject [FILTER]`: pending golden files are deleted; golden files stay.

use crate::review::{pending_in, show};
use gpumem_harness::error::Error;
use gpumem_harness::exit_code::SUCCESS;
use std::path::Path;

pub fn reject(manifest: Option<&Path>, filter: Option<&str>) -> Result<i32, Error> {
    let (workspace, pending) = pending_in(manifest, filter)?;
    for snapshot in &pending {
        snapshot.reject()?;
        println!("rejected {}", show(&workspace, &snapshot.pending));
    }
    println!("{} pending file(s) rejected", pending.len());
    Ok(SUCCESS)
}
