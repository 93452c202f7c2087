//! Memory checks for Rust programs that allocate device memory themselves: the other half of
//! the harness's users. A [`Tracker`] records allocations (with the caller's location and a
//! label) and iteration marks into the same [`Timeline`](crate::timeline::Timeline) a
//! scenario run produces, so the same checks ([`assert_memory!`](crate::assert_memory)) and
//! golden text ([`assert_golden!`](crate::assert_golden)) apply.
//!
//! Two ways to allocate:
//! - **through the caching-allocator model**: [`TrackedDevice`] over any
//!   [`DeviceMemory`](crate::allocator::DeviceMemory) (the simulated device, a test double,
//!   or a real GPU with `crate::cuda::CudaDriverMemory`);
//! - **pass-through**: `crate::cuda::TrackedStream` (feature `cuda`) wraps a cudarc stream;
//!   every allocation is cudarc's own, recorded as it is made and freed.
//!
//! Nothing here needs CUDA: the cudarc parts live in `crate::cuda`.

mod checks;
mod device;
mod tracker;

#[cfg(test)]
mod tests;

pub use checks::{assert_checks, bound_check, golden_text, oom_check, steady_state_check};
pub use device::{Allocation, TrackedDevice};
pub use tracker::{Site, Tracker};
