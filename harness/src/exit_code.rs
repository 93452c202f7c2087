//! Exit codes shared by every `cargo gpumem` command. Documented in the README; keep both in step.

/// Every check and golden timeline held.
pub const SUCCESS: i32 = 0;
/// A check or golden timeline failed, or snapshots await review.
pub const FAILED: i32 = 1;
/// Bad input (scenario or data file), bad usage, or a configuration error.
pub const BAD_INPUT: i32 = 2;
/// What a `harness = false` test target ([`crate::main`]) returns when a trial failed: the
/// code of a failed libtest binary, so `cargo test` and nextest read it as one. `cargo gpumem`
/// itself never returns it.
pub const LIBTEST_FAILED: i32 = 101;
