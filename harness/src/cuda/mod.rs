//! Real GPUs through cudarc (feature `cuda`): probing the driver without panicking, device
//! memory for the caching-allocator model ([`CudaDriverMemory`], what `device: cuda` runs
//! on), and pass-through tracking of a cudarc program's own allocations ([`TrackedStream`]).
//!
//! cudarc is used with dynamic loading and CUDA 12.8 bindings: nothing of CUDA is needed to
//! build, and `libcuda.so.1` is opened only when a real device is asked for. Every entry
//! point is checked before cudarc is first called (see [`probe`]), so a machine without a
//! driver gets a reason, never a panic.
//!
//! The recording, checks and golden text are in [`crate::tracked`] and need no CUDA; they are
//! re-exported here so that a cudarc program needs one path.

mod driver_memory;
pub mod probe;
mod tracked_stream;

pub use driver_memory::{CudaDriverMemory, DriverLog};
pub use probe::{DeviceInfo, DriverProbe, NO_DRIVER, driver_loadable, probe, unavailable};
pub use tracked_stream::{TrackedSlice, TrackedStream};

pub use crate::tracked::{Allocation, Site, TrackedDevice, Tracker};

/// Opens CUDA device `ordinal` with the caching-allocator model in front of it: allocations
/// through the returned device are segments and blocks exactly as PyTorch would make them.
pub fn tracked_device(ordinal: u32) -> Result<TrackedDevice<CudaDriverMemory>, String> {
    CudaDriverMemory::open(ordinal).map(TrackedDevice::new)
}
