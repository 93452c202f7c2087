//! The tracked API on devices without any driver: the simulated device and a test double
//! that refuses on demand, as a driver out of memory would.

use super::*;
use crate::allocator::{DeviceMemory, SimulatedDevice};
use crate::timeline::Action;
use crate::units::MIB;

/// A device double: hands out addresses from a counter, counts calls, and refuses every
/// allocation while `refuse` is set (a driver answering CUDA_ERROR_OUT_OF_MEMORY).
#[derive(Default)]
struct FakeDevice {
    capacity: u64,
    used: u64,
    next: u64,
    mallocs: u32,
    frees: u32,
    refuse: bool,
}

impl FakeDevice {
    fn new(capacity: u64) -> Self {
        FakeDevice {
            capacity,
            next: 0x1000_0000,
            ..FakeDevice::default()
        }
    }
}

impl DeviceMemory for FakeDevice {
    fn capacity(&self) -> u64 {
        self.capacity
    }
    fn free_bytes(&self) -> u64 {
        self.capacity - self.used
    }
    fn malloc(&mut self, size: u64) -> Option<u64> {
        self.mallocs += 1;
        if self.refuse || self.used + size > self.capacity {
            return None;
        }
        self.used += size;
        let addr = self.next;
        self.next += size;
        Some(addr)
    }
    fn free(&mut self, _addr: u64, size: u64) {
        self.frees += 1;
        self.used -= size;
    }
}

#[test]
fn allocations_are_recorded_at_the_callers_line_with_their_label() {
    let mut device = TrackedDevice::new(SimulatedDevice::new(1 << 30));
    let line = line!() + 1;
    let a = device.alloc_labelled(3 * MIB, "weights").unwrap();
    let b = device.alloc(1000).unwrap();
    let timeline = device.tracker().timeline();
    let frames: Vec<_> = timeline
        .events
        .iter()
        .filter(|e| e.action == Action::Alloc)
        .map(|e| timeline.stacks.get(e.stack)[0].clone())
        .collect();
    assert_eq!(frames.len(), 2);
    assert_eq!(&*frames[0].file, file!());
    assert_eq!((frames[0].line, &*frames[0].name), (line, "weights"));
    assert_eq!((frames[1].line, &*frames[1].name), (line + 1, "<rust>"));
    // The model rounds and segments as PyTorch: a 3 MiB request takes a 20 MiB segment, a
    // 1000-byte one a 2 MiB small-pool segment.
    assert_eq!(device.allocator().stats().reserved_bytes, 22 * MIB);
    device.free(a);
    device.free(b);
    assert_eq!(device.allocator().stats().allocated_bytes, 0);
    let freed = device.tracker().timeline();
    assert_eq!(freed.events.last().unwrap().allocated, 0);
}

#[test]
fn iterations_mark_allocated_bytes_and_checks_read_them() {
    let mut device = TrackedDevice::new(SimulatedDevice::new(1 << 30));
    let tracker = device.tracker().clone();
    let mut kept = Vec::new();
    for i in 0..5u64 {
        tracker.iteration(|| {
            let scratch = device.alloc(8 * MIB).unwrap();
            kept.push(device.alloc_labelled(MIB, "history").unwrap());
            device.free(scratch);
            assert_eq!(i, kept.len() as u64 - 1);
        });
    }
    let timeline = tracker.timeline();
    assert_eq!(timeline.iterations_completed(), 5);
    let ends: Vec<u64> = timeline
        .iterations
        .iter()
        .map(|m| m.allocated_at_end)
        .collect();
    assert_eq!(ends, vec![MIB, 2 * MIB, 3 * MIB, 4 * MIB, 5 * MIB]);
    // One MiB kept per iteration: a leak that the scenario checks see.
    let verdicts = crate::assert_memory!(
        timeline,
        peak_allocated <= "13 MiB",
        leak_per_iteration == "1 MiB",
    );
    assert_eq!(verdicts.len(), 2);
    let leak = std::panic::catch_unwind(|| {
        crate::assert_memory!(
            tracker.timeline(),
            steady_state,
            leak_per_iteration <= "0 B"
        );
    });
    let message = *leak.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("steady_state failed"), "{message}");
    assert!(message.contains("leak_per_iteration failed"), "{message}");
    assert!(message.contains(file!()), "{message}");
}

#[test]
fn a_steady_loop_passes_every_check() {
    let mut device = TrackedDevice::new(SimulatedDevice::new(1 << 30));
    let tracker = device.tracker().clone();
    for _ in 0..6 {
        tracker.iteration(|| {
            let a = device.alloc(5 * MIB).unwrap();
            let b = device.alloc(5 * MIB).unwrap();
            device.free(a);
            device.free(b);
        });
    }
    crate::assert_memory!(
        tracker.timeline(),
        peak_allocated <= "10 MiB",
        peak_reserved == "20 MiB",
        steady_state(warmup = 2, tolerance = "0 B"),
        leak_per_iteration <= "0 B",
        oom = false,
    );
}

#[test]
fn bad_checks_are_reported_with_the_assertion_location() {
    let timeline = Tracker::new(1 << 30).timeline();
    for (result, expected) in [
        (
            bound_check("peak_alocated", "<=", "1 GiB"),
            "unknown check `peak_alocated`",
        ),
        (
            bound_check("peak_allocated", "<=", "1 GB!"),
            "peak_allocated <=",
        ),
        (steady_state_check(1, "lots"), "`steady_state` tolerance"),
    ] {
        let message = result.unwrap_err();
        assert!(message.contains(expected), "{message}");
    }
    let caught = std::panic::catch_unwind(|| {
        crate::assert_memory!(timeline, peak_reserve <= "1 GiB");
    });
    let message = *caught.unwrap_err().downcast::<String>().unwrap();
    assert!(message.starts_with(file!()), "{message}");
    assert!(
        message.contains("unknown check `peak_reserve`"),
        "{message}"
    );
}

#[test]
fn a_refused_segment_goes_through_flush_and_retry_to_an_oom() {
    let mut device = TrackedDevice::new(FakeDevice::new(64 * MIB));
    let tracker = device.tracker().clone();
    let first = device.alloc(30 * MIB).unwrap();
    let kept = tracker.iteration(|| device.alloc(30 * MIB).unwrap());
    device.free(first);
    // 32 MiB: the cached 30 MiB block is too small and the device has 4 MiB left, so it
    // refuses the segment; the model returns the cached segment and asks again.
    let after_retry = tracker.iteration(|| device.alloc(32 * MIB).unwrap());
    let actions: Vec<Action> = tracker.timeline().events.iter().map(|e| e.action).collect();
    assert_eq!(
        &actions[actions.len() - 3..],
        [Action::SegmentFree, Action::SegmentAlloc, Action::Alloc]
    );
    assert_eq!(device.allocator().stats().num_alloc_retries, 1);
    assert_eq!(device.allocator().device().mallocs, 4);
    // Nothing left to flush: the device's second refusal is the OOM.
    let oom = tracker.iteration(|| device.alloc(40 * MIB)).unwrap_err();
    assert!(
        oom.message
            .starts_with("CUDA out of memory. Tried to allocate 40.00 MiB."),
        "{}",
        oom.message
    );
    let timeline = tracker.timeline();
    let report = timeline.oom.as_ref().unwrap();
    assert_eq!(report.iteration, Some(2));
    assert_eq!(timeline.iterations_completed(), 2);
    assert_eq!(timeline.events.last().unwrap().action, Action::Oom);
    crate::assert_memory!(timeline, oom = true, peak_allocated == "62 MiB");
    device.free(kept);
    device.free(after_retry);
}

#[test]
fn a_pass_through_allocation_is_its_own_segment() {
    let tracker = Tracker::new(1 << 30);
    let site = Site::caller(Some("buffer"));
    tracker.iteration(|| {
        tracker.record_pass_through_alloc(0x100, 3000, site);
        tracker.record_pass_through_alloc(0x2000, 5000, site);
        tracker.record_pass_through_free(0x100, site);
        tracker.record_pass_through_free(0x999, site);
    });
    let timeline = tracker.timeline();
    let actions: Vec<Action> = timeline.events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions,
        [
            Action::SegmentAlloc,
            Action::Alloc,
            Action::SegmentAlloc,
            Action::Alloc,
            Action::FreeRequested,
            Action::FreeCompleted,
            Action::SegmentFree,
        ]
    );
    assert_eq!(timeline.peak_allocated(), 8000);
    assert_eq!(timeline.iterations[0].allocated_at_end, 5000);
    assert_eq!(tracker.allocated_bytes(), 5000);
}

#[test]
fn golden_text_names_sites_and_outcome_without_addresses() {
    let mut device = TrackedDevice::new(FakeDevice::new(256 * MIB));
    let tracker = device.tracker().clone();
    for _ in 0..3 {
        tracker.iteration(|| {
            let a = device.alloc_labelled(4 * MIB, "activations").unwrap();
            device.free(a);
        });
    }
    let text = golden_text("steady", &tracker.timeline());
    assert!(
        text.starts_with("tracked   steady\ndevice    256 MiB"),
        "{text}"
    );
    assert!(text.contains("completed 3 iterations"), "{text}");
    assert!(text.contains(&format!("{}:", file!())), "{text}");
    assert!(text.contains("in activations"), "{text}");
    assert!(!text.contains("0x"), "{text}");
    // Deterministic: the same program gives the same text.
    assert_eq!(text, golden_text("steady", &tracker.timeline()));
    assert_eq!(device.allocator().device().frees, 0);
    assert_eq!(device.allocator().device().mallocs, 1);
}
