//! The test harness: a workspace's scenarios as libtest trials with golden timelines.
//!
//! - [`discovery`]: the workspace (via `cargo metadata`, or a plain folder) and its scenario folders.
//! - [`config_file`]: `gpumem.toml` and `pyproject.toml` `[tool.gpumem]` for repositories without cargo.
//! - [`suite`]: one libtest-mimic trial per scenario variant, named `<scenario>::<variant>`.
//! - [`golden`]: the golden text of each variant as an insta named snapshot beside its scenario.
//! - [`pending`]: pending golden files and accepting or rejecting them.
//! - [`diff`]: `similar` diffs for failure messages and review.
//! - [`engine`]: the single place that calls the engine (parse, run, check, render).
//!
//! Two entry points run the same trials: `cargo gpumem test` and [`main`], which a
//! `harness = false` test target calls so that `cargo test` and `cargo nextest run` work:
//!
//! ```toml
//! [[test]]
//! name = "scenarios"
//! harness = false
//! ```
//!
//! ```no_run
//! // tests/scenarios.rs
//! fn main() -> std::process::ExitCode {
//!     gpumem_harness::main()
//! }
//! ```

pub mod config_file;
pub mod diff;
pub mod discovery;
pub mod engine;
pub mod golden;
pub mod pending;
mod progress;
pub mod suite;

pub use discovery::{ScenarioFile, Workspace};
pub use pending::{PendingSnapshot, find_pending};
pub use suite::{Suite, SuiteOutcome, trial_name};

use crate::exit_code::BAD_INPUT;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Entry point of a `harness = false` test target: runs every scenario of the workspace that
/// contains the crate under test (found from `CARGO_MANIFEST_DIR`, which cargo and nextest set
/// when they run a test binary), taking libtest's command-line flags.
///
/// Exits like a libtest binary: 0 when every trial passed, 101 when one failed or when the
/// workspace has no scenario at all (a target pointed at nothing must not pass), 2 for bad
/// flags or when the workspace cannot be read.
pub fn main() -> ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        eprintln!(
            "error: CARGO_MANIFEST_DIR is not set; run this test binary through `cargo test` or `cargo nextest run`"
        );
        return ExitCode::from(BAD_INPUT as u8);
    };
    let manifest = PathBuf::from(manifest_dir).join("Cargo.toml");
    let workspace = match Workspace::discover(Some(&manifest)) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(BAD_INPUT as u8);
        }
    };
    // SAFETY: no other thread has started yet; the trials start below.
    unsafe { prepare_process(&workspace.root) };
    let suite = match Suite::load(&workspace) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(BAD_INPUT as u8);
        }
    };
    if suite.names().is_empty() && !args.list {
        eprintln!("error: no scenarios to run: {}", workspace.where_looked());
        return ExitCode::from(crate::exit_code::LIBTEST_FAILED as u8);
    }
    let outcome = suite.run(&args, true);
    outcome.conclusion.exit_code()
}

/// Points insta at the user's workspace and quiets its own report (the trial's failure
/// message carries the diff instead). `INSTA_OUTPUT` is left alone when the user set it.
///
/// insta otherwise asks `cargo metadata` about the directory this crate was *built* in,
/// which for an installed `cargo-gpumem` is not the user's workspace.
///
/// # Safety
/// Sets environment variables: call it before the process starts any thread.
pub unsafe fn prepare_process(workspace_root: &Path) {
    // SAFETY: the caller guarantees that no other thread runs.
    unsafe {
        std::env::set_var("INSTA_WORKSPACE_ROOT", workspace_root);
        if std::env::var_os("INSTA_OUTPUT").is_none() {
            std::env::set_var("INSTA_OUTPUT", "none");
        }
    }
}
