//! Exit codes shared by every `cargo gpumem` command. Documented in the README; keep both in step.

/// Every check and golden timeline held.
pub const SUCCESS: i32 = 0;
/// A check or golden timeline failed, or snapshots await review.
pub const FAILED: i32 = 1;
/// Bad input (scenario or data file), bad usage, or a configuration error.
pub const BAD_INPUT: i32 = 2;
/// A build that the command needed failed (same code cargo uses for a failed build).
pub const BUILD_FAILED: i32 = 101;
