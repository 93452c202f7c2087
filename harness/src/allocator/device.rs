//! Where segments come from: the device's `cudaMalloc` / `cudaFree`. The caching allocator
//! only talks to a [`DeviceMemory`], so the same model runs on a simulated device, replays a
//! recorded trace, or drives a real GPU.

use std::collections::BTreeMap;

use crate::units::MIB;

/// A device that hands out whole segments.
pub trait DeviceMemory {
    /// Total memory the device reports.
    fn capacity(&self) -> u64;
    /// Bytes not yet handed out (what cudaMemGetInfo reports as free).
    fn free_bytes(&self) -> u64;
    /// cudaMalloc: an address, or None when the device is out of memory.
    fn malloc(&mut self, size: u64) -> Option<u64>;
    fn free(&mut self, addr: u64, size: u64);
    /// Device memory this process uses, including memory not obtained through the caching
    /// allocator (the "this process has X memory in use" of the OOM message). By default
    /// the process is taken to be the device's only user.
    fn process_used_bytes(&self) -> u64 {
        self.capacity().saturating_sub(self.free_bytes())
    }
    /// Called when the workload's iteration `iteration` ends, with the bytes the model holds
    /// in segments then: a real device samples the driver's own figures here (see
    /// `crate::real_device`). A model device has nothing to observe.
    fn iteration_ended(&mut self, iteration: u32, model_reserved: u64) {
        let _ = (iteration, model_reserved);
    }
    /// Whether this is real device memory (a GPU through its driver) rather than a model.
    fn is_real(&self) -> bool {
        false
    }
}

/// A device chosen at run time (the simulated one, or a real GPU).
impl<D: DeviceMemory + ?Sized> DeviceMemory for Box<D> {
    fn capacity(&self) -> u64 {
        (**self).capacity()
    }
    fn free_bytes(&self) -> u64 {
        (**self).free_bytes()
    }
    fn malloc(&mut self, size: u64) -> Option<u64> {
        (**self).malloc(size)
    }
    fn free(&mut self, addr: u64, size: u64) {
        (**self).free(addr, size)
    }
    fn process_used_bytes(&self) -> u64 {
        (**self).process_used_bytes()
    }
    fn iteration_ended(&mut self, iteration: u32, model_reserved: u64) {
        (**self).iteration_ended(iteration, model_reserved)
    }
    fn is_real(&self) -> bool {
        (**self).is_real()
    }
}

/// First address the simulated device hands out.
pub const SIMULATED_BASE_ADDRESS: u64 = 0x7f00_0000_0000;
/// Granularity of simulated addresses (every segment size is a multiple of it anyway).
pub const SIMULATED_ALIGNMENT: u64 = 2 * MIB;

/// A device with a fixed capacity and no other users.
///
/// A malloc fails when the bytes in use plus the request exceed the capacity; fragmentation
/// of device memory itself is not modelled (a real driver maps pages, so it rarely matters).
/// Addresses are deterministic: the lowest free 2 MiB-aligned range of a virtual address space
/// starting at [`SIMULATED_BASE_ADDRESS`], so freed ranges are reused roughly the way a driver
/// would. Real `cudaMalloc` addresses are not modelled; a replay of a recorded trace takes
/// them from the trace's `segment_alloc` entries through its own [`DeviceMemory`].
#[derive(Debug, Clone)]
pub struct SimulatedDevice {
    capacity: u64,
    in_use: u64,
    /// Live allocations: address → size as requested.
    live: BTreeMap<u64, u64>,
    /// Holes below `high_water`: address → length.
    holes: BTreeMap<u64, u64>,
    /// Everything from here up is unused address space.
    high_water: u64,
}

impl SimulatedDevice {
    pub fn new(capacity: u64) -> Self {
        SimulatedDevice {
            capacity,
            in_use: 0,
            live: BTreeMap::new(),
            holes: BTreeMap::new(),
            high_water: SIMULATED_BASE_ADDRESS,
        }
    }

    /// Bytes currently handed out.
    pub fn used_bytes(&self) -> u64 {
        self.in_use
    }

    /// Takes `span` bytes of address space from the lowest hole that fits, or from the top.
    fn take_address_range(&mut self, span: u64) -> Option<u64> {
        let hole = self
            .holes
            .iter()
            .find(|&(_, &len)| len >= span)
            .map(|(&start, &len)| (start, len));
        if let Some((start, len)) = hole {
            self.holes.remove(&start);
            if len > span {
                self.holes.insert(start + span, len - span);
            }
            return Some(start);
        }
        let start = self.high_water;
        self.high_water = start.checked_add(span)?;
        Some(start)
    }

    /// Returns a range to the address space, merging it with adjacent holes.
    fn return_address_range(&mut self, mut start: u64, mut span: u64) {
        if let Some((&before, &len)) = self.holes.range(..start).next_back()
            && before + len == start
        {
            self.holes.remove(&before);
            start = before;
            span += len;
        }
        if let Some(len) = self.holes.remove(&(start + span)) {
            span += len;
        }
        if start + span == self.high_water {
            self.high_water = start;
        } else {
            self.holes.insert(start, span);
        }
    }
}

fn address_span(size: u64) -> Option<u64> {
    size.max(1).checked_next_multiple_of(SIMULATED_ALIGNMENT)
}

impl DeviceMemory for SimulatedDevice {
    fn capacity(&self) -> u64 {
        self.capacity
    }

    fn free_bytes(&self) -> u64 {
        self.capacity.saturating_sub(self.in_use)
    }

    fn malloc(&mut self, size: u64) -> Option<u64> {
        if self.in_use.checked_add(size)? > self.capacity {
            return None;
        }
        let addr = self.take_address_range(address_span(size)?)?;
        self.in_use += size;
        self.live.insert(addr, size);
        Some(addr)
    }

    /// Frees a live allocation; an address it never handed out (or a size that does not
    /// match) is ignored, as the caching allocator never produces one.
    fn free(&mut self, addr: u64, size: u64) {
        if self.live.get(&addr) != Some(&size) {
            return;
        }
        self.live.remove(&addr);
        self.in_use -= size;
        if let Some(span) = address_span(size) {
            self.return_address_range(addr, span);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fails_beyond_capacity() {
        let mut d = SimulatedDevice::new(10 * MIB);
        assert!(d.malloc(8 * MIB).is_some());
        assert_eq!(d.free_bytes(), 2 * MIB);
        assert_eq!(d.malloc(4 * MIB), None);
        assert!(d.malloc(2 * MIB).is_some());
        assert_eq!(d.free_bytes(), 0);
    }

    #[test]
    fn addresses_are_lowest_fit_and_reused() {
        let mut d = SimulatedDevice::new(1 << 40);
        let a = d.malloc(2 * MIB).unwrap();
        let b = d.malloc(20 * MIB).unwrap();
        let c = d.malloc(2 * MIB).unwrap();
        assert_eq!(a, SIMULATED_BASE_ADDRESS);
        assert_eq!(b, a + 2 * MIB);
        assert_eq!(c, b + 20 * MIB);
        d.free(b, 20 * MIB);
        // The lowest hole that fits is reused, split from its start.
        assert_eq!(d.malloc(4 * MIB), Some(b));
        assert_eq!(d.malloc(30 * MIB), Some(c + 2 * MIB));
        assert_eq!(d.malloc(16 * MIB), Some(b + 4 * MIB));
        // Freeing everything merges the holes back into the untouched top.
        for (addr, size) in [(a, 2), (b, 4), (b + 4 * MIB, 16), (c, 2), (c + 2 * MIB, 30)] {
            d.free(addr, size * MIB);
        }
        assert_eq!(d.used_bytes(), 0);
        assert_eq!(d.malloc(MIB), Some(SIMULATED_BASE_ADDRESS));
    }

    #[test]
    fn ignores_unknown_frees() {
        let mut d = SimulatedDevice::new(10 * MIB);
        let a = d.malloc(2 * MIB).unwrap();
        d.free(a + 2 * MIB, 2 * MIB);
        d.free(a, 4 * MIB);
        assert_eq!(d.used_bytes(), 2 * MIB);
    }
}
