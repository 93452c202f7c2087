//! Crafted snapshots that made `check` take minutes: every pass over a snapshot is
//! O(n log n) at worst. Each shape is generated here with 200 000 entries and must be read,
//! converted and replayed in well under a second in release mode (the bound below is loose
//! for debug builds; a quadratic pass takes minutes at this size either way).

use gpumem_harness::snapshot_format::model::{
    Segment, SegmentType, Snapshot, TraceAction, TraceEntry,
};
use gpumem_harness::snapshot_format::{encode_snapshot, read_snapshot, replay, to_timeline};
use std::time::{Duration, Instant};

const N: usize = 200_000;

fn entry(action: TraceAction, addr: u64, size: u64) -> TraceEntry {
    TraceEntry {
        action,
        addr,
        size,
        stream: 0,
        time_us: None,
        device_free: None,
        frames: None,
    }
}

fn segment(device: u32, address: u64) -> Segment {
    Segment {
        device,
        address,
        total_size: 2 << 20,
        allocated_size: 0,
        active_size: 0,
        requested_size: 0,
        stream: 0,
        segment_type: SegmentType::Large,
        pool_id: (0, 0),
        is_expandable: false,
        frames: Default::default(),
        blocks: Vec::new(),
    }
}

fn limit() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(30)
    } else {
        Duration::from_secs(1)
    }
}

/// Reads, converts and replays `snapshot`; returns the time taken.
fn check(snapshot: &Snapshot) -> Duration {
    let bytes = encode_snapshot(snapshot);
    let started = Instant::now();
    let read = read_snapshot(&bytes[..], "crafted.pickle").expect("reads");
    let _ = to_timeline(&read);
    let _ = replay::replay(&read);
    started.elapsed()
}

#[test]
fn a_long_run_of_segment_frees_replays_in_linear_time() {
    // Each segment event used to search forward for the next request: N²/2 steps.
    let mut trace: Vec<TraceEntry> = (0..N as u64)
        .map(|i| entry(TraceAction::SegmentFree, (i + 1) << 21, 2 << 20))
        .collect();
    trace.push(entry(TraceAction::Alloc, 1 << 40, 512));
    let snapshot = Snapshot {
        device_traces: vec![trace],
        ..Snapshot::default()
    };
    let took = check(&snapshot);
    assert!(took < limit(), "took {took:?}");
}

#[test]
fn many_devices_and_segments_are_checked_in_n_log_n() {
    // Each device index used to be looked up in every segment: N² steps.
    let snapshot = Snapshot {
        segments: (0..N as u64).map(|i| segment(0, (i + 1) << 21)).collect(),
        device_traces: vec![Vec::new(); N],
        ..Snapshot::default()
    };
    let took = check(&snapshot);
    assert!(took < limit(), "took {took:?}");
}

#[test]
fn many_trace_lists_are_matched_in_constant_time_each() {
    // Each appended trace list used to be looked up among all earlier ones: N² steps.
    let snapshot = Snapshot {
        device_traces: (0..N as u64)
            .map(|i| vec![entry(TraceAction::Alloc, (i + 1) << 12, 512)])
            .collect(),
        ..Snapshot::default()
    };
    let took = check(&snapshot);
    assert!(took < limit(), "took {took:?}");
}

#[test]
fn sizes_that_overflow_are_refused_as_malformed() {
    let mut huge = segment(0, 1 << 21);
    // Pickled sizes are at most i64::MAX each: three of them overflow a u64 sum.
    huge.total_size = i64::MAX as u64;
    let snapshot = Snapshot {
        segments: vec![huge.clone(), huge.clone(), huge],
        ..Snapshot::default()
    };
    let bytes = encode_snapshot(&snapshot);
    let e = read_snapshot(&bytes[..], "overflow.pickle")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("overflow.pickle: data error: not a memory snapshot: segments[2]"),
        "{e}"
    );
    assert!(e.contains("add up to more than 64 bits"), "{e}");
}
