//! Allocations through the caching-allocator model on any [`DeviceMemory`]: the program asks
//! for bytes, the model decides segments, splits and reuse exactly as for a scenario, and the
//! device (simulated, a test fake, or a real GPU through `crate::cuda`) provides the segments.

use crate::allocator::{
    AllocatorConfig, AllocatorEvent, CachingAllocator, DeviceMemory, OutOfMemory,
};

use super::tracker::{Site, Tracker};

/// One live allocation of a [`TrackedDevice`]: give it back with [`TrackedDevice::free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "an allocation that is never freed is a leak"]
pub struct Allocation {
    /// The device address (a real pointer on a real GPU).
    pub addr: u64,
    /// The bytes asked for.
    pub size: u64,
}

/// A device whose allocations go through PyTorch's caching allocator model and are recorded,
/// with their caller's location, by a [`Tracker`].
pub struct TrackedDevice<D: DeviceMemory> {
    allocator: CachingAllocator<D>,
    tracker: Tracker,
    events: Vec<AllocatorEvent>,
}

impl<D: DeviceMemory> TrackedDevice<D> {
    /// The model with default settings (`PYTORCH_CUDA_ALLOC_CONF` unset) over `device`.
    pub fn new(device: D) -> Self {
        Self::with_config(device, AllocatorConfig::default())
    }

    pub fn with_config(device: D, config: AllocatorConfig) -> Self {
        let tracker = Tracker::new(device.capacity());
        TrackedDevice {
            allocator: CachingAllocator::new(device, config),
            tracker,
            events: Vec::new(),
        }
    }

    /// The tracker (clone it to mark iterations from elsewhere).
    pub fn tracker(&self) -> &Tracker {
        &self.tracker
    }

    pub fn allocator(&self) -> &CachingAllocator<D> {
        &self.allocator
    }

    /// Allocates `size` bytes; the caller's location is the allocation's site.
    #[track_caller]
    pub fn alloc(&mut self, size: u64) -> Result<Allocation, OutOfMemory> {
        self.alloc_at(size, Site::caller(None))
    }

    /// [`TrackedDevice::alloc`] with a label that reports print after the location.
    #[track_caller]
    pub fn alloc_labelled(
        &mut self,
        size: u64,
        label: &'static str,
    ) -> Result<Allocation, OutOfMemory> {
        self.alloc_at(size, Site::caller(Some(label)))
    }

    fn alloc_at(&mut self, size: u64, site: Site) -> Result<Allocation, OutOfMemory> {
        self.events.clear();
        let result = self.allocator.malloc(size, 0, &mut self.events);
        self.flush(site);
        match result {
            Ok(addr) => Ok(Allocation { addr, size }),
            Err(oom) => {
                self.tracker.record_model_oom(&oom, site);
                Err(oom)
            }
        }
    }

    /// Frees an allocation of this device (its block returns to the model's cache).
    #[track_caller]
    pub fn free(&mut self, allocation: Allocation) {
        let site = Site::caller(None);
        self.events.clear();
        // An allocation of this device is live until freed once; the type makes a second
        // free of the same value possible, and the model ignores it (no event).
        let _ = self.allocator.free(allocation.addr, &mut self.events);
        self.flush(site);
    }

    /// Returns every cached segment without live blocks to the device (`empty_cache`).
    #[track_caller]
    pub fn empty_cache(&mut self) {
        let site = Site::caller(None);
        self.events.clear();
        self.allocator.empty_cache(&mut self.events);
        self.flush(site);
    }

    fn flush(&mut self, site: Site) {
        if self.events.is_empty() {
            return;
        }
        let stats = self.allocator.stats();
        self.tracker.record_model_events(
            &self.events,
            site,
            stats.allocated_bytes,
            stats.reserved_bytes,
        );
    }
}
