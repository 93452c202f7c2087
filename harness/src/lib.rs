//! # gpumem-harness
//!
//! The engine of `cargo gpumem`: it runs a scenario's workload on a model of CPython's object
//! lifetimes and PyTorch's CUDA caching allocator, records a memory [`timeline::Timeline`],
//! checks expectations against it and renders golden text.
//!
//! ## Data flow (one direction)
//!
//! ```text
//! scenario.yaml --scenario::load--> Scenario --variants()--> Variant --run::run_variant--> Timeline
//! snapshot.pickle --snapshot_format--> Timeline
//! Timeline --check::evaluate--> verdicts --report::{golden_text, human_report, json_report}
//! ```
//!
//! Everything meets at the Timeline; checks, reports and exports never know whether it came
//! from a model run or a recorded snapshot.
//!
//! ## Modules
//!
//! - [`scenario`]: the scenario file schema, `vary` expansion, located errors.
//! - [`python`]: the workload interpreter (ruff's Python parser, CPython's evaluation order).
//! - [`heap`]: objects, reference counts, CPython's generational collector per version.
//! - [`torch`]: tensors, storages, autograd graph nodes, memory categories.
//! - [`allocator`]: PyTorch's CUDA caching allocator over a device ([`allocator::DeviceMemory`]).
//! - [`timeline`]: allocator events, iteration marks, collections, reference paths.
//! - [`check`] and [`report`]: expectations to verdicts; golden, human and JSON reports.
//! - [`snapshot_format`]: PyTorch snapshot pickles (safe reader, replay, exporter, diff).
//! - [`tracked`]: a Rust program's own device allocations as a timeline, with
//!   [`assert_memory!`] and [`assert_golden!`]; `cuda` (feature `cuda`): real GPUs through
//!   cudarc, for `device: cuda` scenarios and cudarc programs.
//! - [`harness`]: discovery, libtest-mimic trials, insta golden files; [`main`] for a
//!   `harness = false` test target.
//! - [`error`] and [`exit_code`]: typed errors with file, line and column; the exit codes every
//!   command shares.
//!
//! ## Use from a test target
//!
//! ```no_run
//! // tests/gpumem.rs, with `harness = false` for this target in Cargo.toml
//! fn main() -> std::process::ExitCode {
//!     gpumem_harness::main()
//! }
//! ```

pub mod allocator;
pub mod check;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod error;
pub mod exit_code;
pub mod harness;
pub mod heap;
pub mod python;
pub mod real_device;
pub mod report;
pub mod run;
pub mod run_failure;
pub mod scenario;
pub mod snapshot_format;
pub mod timeline;
pub mod torch;
pub mod tracked;
pub mod units;
pub mod version_matrix;

pub use harness::main;

/// insta, for [`assert_golden!`] (its macros must expand in the caller's crate).
#[doc(hidden)]
pub use insta as __insta;
