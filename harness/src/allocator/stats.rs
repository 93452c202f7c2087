//! The counters behind `torch.cuda.memory_stats()` (aggregate over both pools).

use serde::Serialize;

/// Allocator statistics. Byte counts follow torch: `allocated_bytes` sums the rounded sizes
/// of live blocks, `reserved_bytes` the sizes of segments held from the device,
/// `requested_bytes` the unrounded sizes callers asked for. Peaks are the highest value since
/// creation or the last [`reset_peaks`](AllocatorStats::reset_peaks).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AllocatorStats {
    pub allocated_bytes: u64,
    pub peak_allocated_bytes: u64,
    pub reserved_bytes: u64,
    pub peak_reserved_bytes: u64,
    pub requested_bytes: u64,
    pub peak_requested_bytes: u64,
    /// Live blocks (`allocation.all.current`).
    pub allocations: u64,
    pub peak_allocations: u64,
    /// Segments held from the device.
    pub segments: u64,
    pub peak_segments: u64,
    /// Free blocks that are part of a split segment, and their bytes: the fragmentation that
    /// `empty_cache` cannot return.
    pub inactive_split_blocks: u64,
    pub inactive_split_bytes: u64,
    /// Allocations that needed the cache flushed (`release_cached_blocks`) and a second try.
    pub num_alloc_retries: u64,
    pub num_ooms: u64,
    /// Segments obtained from and returned to the device (`cudaMalloc` / `cudaFree` calls
    /// that succeeded).
    pub num_device_alloc: u64,
    pub num_device_free: u64,
}

impl AllocatorStats {
    /// Sets every peak to its current value (`reset_peak_memory_stats`).
    pub fn reset_peaks(&mut self) {
        self.peak_allocated_bytes = self.allocated_bytes;
        self.peak_reserved_bytes = self.reserved_bytes;
        self.peak_requested_bytes = self.requested_bytes;
        self.peak_allocations = self.allocations;
        self.peak_segments = self.segments;
    }

    pub(super) fn block_allocated(&mut self, size: u64, requested: u64) {
        self.allocations += 1;
        self.peak_allocations = self.peak_allocations.max(self.allocations);
        self.allocated_bytes += size;
        self.peak_allocated_bytes = self.peak_allocated_bytes.max(self.allocated_bytes);
        self.requested_bytes += requested;
        self.peak_requested_bytes = self.peak_requested_bytes.max(self.requested_bytes);
    }

    pub(super) fn block_freed(&mut self, size: u64, requested: u64) {
        self.allocations -= 1;
        self.allocated_bytes -= size;
        self.requested_bytes -= requested;
    }

    pub(super) fn segment_allocated(&mut self, size: u64) {
        self.num_device_alloc += 1;
        self.segments += 1;
        self.peak_segments = self.peak_segments.max(self.segments);
        self.reserved_bytes += size;
        self.peak_reserved_bytes = self.peak_reserved_bytes.max(self.reserved_bytes);
    }

    pub(super) fn segment_freed(&mut self, size: u64) {
        self.num_device_free += 1;
        self.segments -= 1;
        self.reserved_bytes -= size;
    }
}
