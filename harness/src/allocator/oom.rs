//! The out-of-memory error and the message torch prints with it.

use std::fmt;

use crate::units::torch_format_size;

/// An allocation that failed after the cache was flushed. `message` is the text of torch's
/// `OutOfMemoryError` (2.4–2.11 wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutOfMemory {
    /// Bytes the caller asked for.
    pub requested: u64,
    /// The request after rounding (the size of the `oom` trace entry).
    pub rounded: u64,
    /// The segment size the allocator tried to obtain (what "Tried to allocate" prints).
    pub alloc_size: u64,
    /// Free device memory when the allocator gave up.
    pub device_free: u64,
    pub message: String,
}

impl fmt::Display for OutOfMemory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for OutOfMemory {}

/// The numbers the message reports, read when the allocator gives up.
pub(super) struct OomFacts {
    pub alloc_size: u64,
    pub device_index: u32,
    pub capacity: u64,
    pub device_free: u64,
    pub process_used: u64,
    pub allocated: u64,
    pub reserved: u64,
    /// The allowed maximum when a memory fraction is set.
    pub allowed: Option<u64>,
    pub docs_url: &'static str,
}

/// torch's message. The process line is the variant without a pid ("Including non-PyTorch
/// memory, this process has …"), which keeps it deterministic; the private-pool clause is
/// absent because private pools are not modelled.
pub(super) fn oom_message(f: &OomFacts) -> String {
    format!(
        "CUDA out of memory. Tried to allocate {}. GPU {} has a total capacity of {} of which {} \
         is free. Including non-PyTorch memory, this process has {} memory in use. {}Of the \
         allocated memory {} is allocated by PyTorch, and {} is reserved by PyTorch but \
         unallocated. If reserved but unallocated memory is large try setting \
         PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See \
         documentation for Memory Management  ({})",
        torch_format_size(f.alloc_size),
        f.device_index,
        torch_format_size(f.capacity),
        torch_format_size(f.device_free),
        torch_format_size(f.process_used),
        f.allowed
            .map(|allowed| format!("{} allowed; ", torch_format_size(allowed)))
            .unwrap_or_default(),
        torch_format_size(f.allocated),
        torch_format_size(f.reserved.saturating_sub(f.allocated)),
        f.docs_url,
    )
}

/// The check torch makes before the allocator is reached.
pub(super) const EXABYTE_MESSAGE: &str =
    "CUDA out of memory. Tried to allocate more than 1EB memory.";
