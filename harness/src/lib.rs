//! # gpumem-harness
//!
//! The engine of `cargo gpumem`. (Crate guide: filled in as modules land.)

pub mod allocator;
pub mod check;
pub mod error;
pub mod exit_code;
pub mod harness;
pub mod heap;
pub mod python;
pub mod report;
pub mod run;
pub mod scenario;
pub mod snapshot_format;
pub mod timeline;
pub mod torch;
pub mod units;

pub use harness::main;
