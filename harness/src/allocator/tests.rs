//! Behaviour of the allocator model, one mechanism per test. Expected values are derived from
//! the rules in the module documentation.

use super::*;
use crate::timeline::Action;
use crate::units::{GIB, MIB};

fn allocator(capacity: u64) -> CachingAllocator {
    CachingAllocator::new(SimulatedDevice::new(capacity), AllocatorConfig::default())
}

fn event(action: Action, addr: u64, size: u64, stream: u32) -> AllocatorEvent {
    AllocatorEvent {
        action,
        addr,
        size,
        stream,
        device_free: None,
    }
}

/// Allocates and returns the address, checking the allocator's consistency.
fn alloc(a: &mut CachingAllocator, size: u64, stream: u32) -> u64 {
    let mut events = Vec::new();
    let addr = a
        .malloc(size, stream, &mut events)
        .expect("allocation fits");
    a.assert_consistent();
    addr
}

fn free(a: &mut CachingAllocator, addr: u64) {
    a.free(addr, &mut Vec::new()).expect("live address");
    a.assert_consistent();
}

const BASE: u64 = SIMULATED_BASE_ADDRESS;

#[test]
fn rounds_to_512_bytes_by_default() {
    let config = AllocatorConfig::default();
    let table = [
        (1, 512),
        (511, 512),
        (512, 512),
        (513, 1024),
        (1200, 1536),
        (1_000_000, 1_000_448),
        (MIB, MIB),
        (MIB + 1, MIB + 512),
        (5 * MIB + 100, 5 * MIB + 512),
    ];
    for (size, rounded) in table {
        assert_eq!(config.round_size(size), rounded, "round_size({size})");
    }
}

#[test]
fn roundup_power2_divisions_round_to_a_division_of_the_power_of_two() {
    let config = AllocatorConfig {
        roundup_power2_divisions: [4; 16],
        ..AllocatorConfig::default()
    };
    // Not above 512 · 4 bytes: plain 512-byte rounding still applies.
    assert_eq!(config.round_size(1200), 1536);
    // 1.1 MiB lies between 1 and 2 MiB, whose quarters are 256 KiB apart.
    assert_eq!(config.round_size(1_153_434), 1_310_720);
    assert_eq!(config.round_size(3 * MIB + 1), 3 * MIB + MIB / 2);
    assert_eq!(config.round_size(2 * MIB), 2 * MIB);
    assert_eq!(config.round_size(5 * MIB), 5 * MIB);
}

#[test]
fn one_mebibyte_is_the_last_small_request() {
    let mut a = allocator(GIB);
    let mut events = Vec::new();
    let small = a.malloc(MIB, 0, &mut events).unwrap();
    let large = a.malloc(MIB + 1, 0, &mut events).unwrap();
    let segments = a.segments();
    assert_eq!(segments.len(), 2);
    assert_eq!(
        (segments[0].address, segments[0].pool),
        (small, PoolKind::Small)
    );
    assert_eq!(segments[0].total_size, 2 * MIB);
    assert_eq!(
        (segments[1].address, segments[1].pool),
        (large, PoolKind::Large)
    );
    assert_eq!(segments[1].total_size, 20 * MIB);
    assert_eq!(
        events,
        [
            event(Action::SegmentAlloc, BASE, 2 * MIB, 0),
            event(Action::Alloc, BASE, MIB, 0),
            event(Action::SegmentAlloc, BASE + 2 * MIB, 20 * MIB, 0),
            event(Action::Alloc, BASE + 2 * MIB, MIB + 1, 0),
        ]
    );
    assert_eq!(pool_for(MIB), PoolKind::Small);
    assert_eq!(pool_for(MIB + 512), PoolKind::Large);
}

#[test]
fn segment_size_depends_on_the_request() {
    for (request, segment) in [
        (1000, 2 * MIB),
        (5 * MIB, 20 * MIB),
        (10 * MIB - 512, 20 * MIB),
        (10 * MIB, 10 * MIB),
        (11 * MIB, 12 * MIB),
        (100 * MIB + 1, 102 * MIB),
    ] {
        let mut a = allocator(GIB);
        alloc(&mut a, request, 0);
        assert_eq!(a.stats().reserved_bytes, segment, "request {request}");
    }
}

#[test]
fn large_blocks_split_only_when_more_than_1_mib_is_left() {
    // 19 MiB from a 20 MiB segment leaves exactly 1 MiB: handed out whole.
    let mut a = allocator(GIB);
    alloc(&mut a, 19 * MIB, 0);
    assert_eq!(a.stats().allocated_bytes, 20 * MIB);
    assert_eq!(a.stats().requested_bytes, 19 * MIB);
    assert_eq!(a.segments()[0].blocks.len(), 1);

    // 512 bytes less leaves 1 MiB + 512: split, the low part to the caller.
    let mut a = allocator(GIB);
    let addr = alloc(&mut a, 19 * MIB - 512, 0);
    assert_eq!(a.stats().allocated_bytes, 19 * MIB - 512);
    let blocks = &a.segments()[0].blocks;
    assert_eq!(blocks.len(), 2);
    assert_eq!(
        (blocks[0].address, blocks[0].state),
        (addr, BlockState::ActiveAllocated)
    );
    assert_eq!(
        (blocks[1].address, blocks[1].size),
        (addr + 19 * MIB - 512, MIB + 512)
    );
    assert_eq!(blocks[1].state, BlockState::Inactive);
    assert_eq!(a.stats().inactive_split_blocks, 1);
    assert_eq!(a.stats().inactive_split_bytes, MIB + 512);
}

#[test]
fn small_blocks_split_down_to_512_bytes() {
    let mut a = allocator(GIB);
    let first = alloc(&mut a, MIB, 0);
    // Leaves 512 bytes of the 2 MiB segment, still worth a block of their own.
    let second = alloc(&mut a, MIB - 612, 0);
    assert_eq!(second, first + MIB);
    assert_eq!(a.segments()[0].blocks.len(), 3);
    // The last 512 bytes serve the next small request exactly.
    let third = alloc(&mut a, 100, 0);
    assert_eq!(third, first + 2 * MIB - 512);
    assert_eq!(a.segments()[0].blocks.len(), 3);
    assert_eq!(a.stats().reserved_bytes, 2 * MIB);
    assert_eq!(a.stats().allocated_bytes, 2 * MIB);
    assert_eq!(a.stats().inactive_split_blocks, 0);
}

#[test]
fn best_fit_takes_the_smallest_block_then_the_lowest_address() {
    let mut a = allocator(GIB);
    let big = alloc(&mut a, 14 * MIB, 0);
    let low = alloc(&mut a, 12 * MIB, 0);
    let high = alloc(&mut a, 12 * MIB, 0);
    assert!(big < low && low < high);
    for addr in [high, big, low] {
        free(&mut a, addr);
    }
    // 14 MiB has the lowest address but 12 MiB is the better fit; of the two 12 MiB
    // blocks the lower one wins. Their 1 MiB slack is not split off, the 3 MiB of the
    // 14 MiB block is.
    assert_eq!(alloc(&mut a, 11 * MIB, 0), low);
    assert_eq!(alloc(&mut a, 11 * MIB, 0), high);
    assert_eq!(alloc(&mut a, 11 * MIB, 0), big);
    assert_eq!(a.stats().allocated_bytes, 12 * MIB + 12 * MIB + 11 * MIB);
    assert_eq!(a.stats().num_device_alloc, 3);
}

#[test]
fn freeing_coalesces_neighbours_into_one_block() {
    let mut a = allocator(GIB);
    let x = alloc(&mut a, 4 * MIB, 0);
    let y = alloc(&mut a, 4 * MIB, 0);
    let z = alloc(&mut a, 4 * MIB, 0);
    assert_eq!((y, z), (x + 4 * MIB, x + 8 * MIB));
    assert_eq!(a.segments()[0].blocks.len(), 4);
    free(&mut a, x);
    free(&mut a, z); // merges with the free tail
    assert_eq!(a.segments()[0].blocks.len(), 3);
    assert_eq!(a.stats().inactive_split_blocks, 2);
    free(&mut a, y); // merges with both sides
    let segment = &a.segments()[0];
    assert_eq!(segment.blocks.len(), 1);
    assert_eq!(
        (segment.blocks[0].size, segment.blocks[0].state),
        (20 * MIB, BlockState::Inactive)
    );
    assert_eq!(a.stats().inactive_split_blocks, 0);
    assert_eq!(a.stats().inactive_split_bytes, 0);
    // Whole again, so the segment can go back to the device.
    let mut events = Vec::new();
    a.empty_cache(&mut events);
    assert_eq!(events, [event(Action::SegmentFree, x, 20 * MIB, 0)]);
}

#[test]
fn free_emits_requested_then_completed_with_the_raw_size() {
    let mut a = allocator(GIB);
    let addr = alloc(&mut a, 1000, 3);
    let mut events = Vec::new();
    a.free(addr, &mut events).unwrap();
    assert_eq!(
        events,
        [
            event(Action::FreeRequested, addr, 1000, 3),
            event(Action::FreeCompleted, addr, 1000, 3),
        ]
    );
}

#[test]
fn empty_cache_returns_only_whole_free_segments() {
    let mut a = allocator(GIB);
    let own = alloc(&mut a, 12 * MIB, 0); // 12 MiB segment
    let live = alloc(&mut a, 5 * MIB, 0); // 20 MiB segment, split
    let small = alloc(&mut a, 4096, 0); // 2 MiB segment
    free(&mut a, own);
    free(&mut a, small);
    assert_eq!(a.stats().reserved_bytes, 34 * MIB);
    let mut events = Vec::new();
    a.empty_cache(&mut events);
    a.assert_consistent();
    // Large pool first, then small; the segment holding `live` stays.
    assert_eq!(
        events,
        [
            event(Action::SegmentFree, own, 12 * MIB, 0),
            event(Action::SegmentFree, small, 2 * MIB, 0),
        ]
    );
    assert_eq!(a.stats().reserved_bytes, 20 * MIB);
    assert_eq!(a.segments()[0].address, live);
    assert_eq!(a.stats().num_device_free, 2);
}

#[test]
fn empty_cache_frees_in_pool_order() {
    let mut a = allocator(GIB);
    let first = alloc(&mut a, 30 * MIB, 0);
    let second = alloc(&mut a, 12 * MIB, 0);
    let on_stream_1 = alloc(&mut a, 11 * MIB, 1);
    for addr in [first, second, on_stream_1] {
        free(&mut a, addr);
    }
    let mut events = Vec::new();
    a.empty_cache(&mut events);
    let order: Vec<_> = events.iter().map(|e| e.addr).collect();
    // (stream, size, address): stream 0's 12 MiB, its 30 MiB, then stream 1.
    assert_eq!(order, [second, first, on_stream_1]);
    assert_eq!(a.stats().reserved_bytes, 0);
}

#[test]
fn a_full_device_is_flushed_and_the_allocation_retried() {
    let mut a = allocator(40 * MIB);
    let cached = alloc(&mut a, 30 * MIB, 0);
    free(&mut a, cached);
    // No cached block holds 32 MiB and the device has only 10 MiB left.
    let mut events = Vec::new();
    let addr = a.malloc(32 * MIB, 0, &mut events).unwrap();
    a.assert_consistent();
    assert_eq!(
        events,
        [
            event(Action::SegmentFree, cached, 30 * MIB, 0),
            event(Action::SegmentAlloc, addr, 32 * MIB, 0),
            event(Action::Alloc, addr, 32 * MIB, 0),
        ]
    );
    assert_eq!(addr, BASE, "the device reuses the freed range");
    assert_eq!(a.stats().num_alloc_retries, 1);
    assert_eq!(a.stats().num_ooms, 0);
    assert_eq!(a.stats().reserved_bytes, 32 * MIB);
}

#[test]
fn out_of_memory_reports_like_torch() {
    let mut a = allocator(64 * MIB);
    alloc(&mut a, 4 * MIB, 0); // 20 MiB segment, 16 MiB of it cached but split
    alloc(&mut a, 30 * MIB, 0);
    let mut events = Vec::new();
    // Stream 1 cannot use stream 0's cached block; its 20 MiB segment does not fit in the
    // 14 MiB left, and flushing frees nothing.
    let err = a.malloc(5 * MIB + 100, 1, &mut events).unwrap_err();
    a.assert_consistent();
    assert_eq!(
        events,
        [AllocatorEvent {
            device_free: Some(14 * MIB),
            ..event(Action::Oom, 0, 5 * MIB + 512, 1)
        }]
    );
    assert_eq!(
        (err.requested, err.rounded, err.alloc_size, err.device_free),
        (5 * MIB + 100, 5 * MIB + 512, 20 * MIB, 14 * MIB)
    );
    assert_eq!(
        err.message,
        "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 64.00 MiB \
         of which 14.00 MiB is free. Including non-PyTorch memory, this process has 50.00 MiB \
         memory in use. Of the allocated memory 34.00 MiB is allocated by PyTorch, and 16.00 MiB \
         is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try \
         setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See \
         documentation for Memory Management  \
         (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    );
    assert_eq!(a.stats().num_ooms, 1);
    assert_eq!(a.stats().num_alloc_retries, 1);
    // A failed allocation leaves the state untouched.
    assert_eq!(a.stats().allocated_bytes, 34 * MIB);
    assert_eq!(a.stats().reserved_bytes, 50 * MIB);
}

#[test]
fn out_of_memory_flushes_before_giving_up() {
    let mut a = allocator(64 * MIB);
    let cached = alloc(&mut a, 12 * MIB, 0);
    alloc(&mut a, 40 * MIB, 0);
    free(&mut a, cached);
    let mut events = Vec::new();
    let err = a.malloc(30 * MIB, 0, &mut events).unwrap_err();
    assert_eq!(
        events,
        [
            event(Action::SegmentFree, cached, 12 * MIB, 0),
            AllocatorEvent {
                device_free: Some(24 * MIB),
                ..event(Action::Oom, 0, 30 * MIB, 0)
            },
        ]
    );
    assert!(
        err.message
            .contains("and 0 bytes is reserved by PyTorch but unallocated")
    );
    assert_eq!(a.stats().reserved_bytes, 40 * MIB);
}

#[test]
fn exabyte_requests_fail_before_the_allocator() {
    let mut a = allocator(GIB);
    let mut events = Vec::new();
    let err = a.malloc(1 << 60, 0, &mut events).unwrap_err();
    assert_eq!(
        err.message,
        "CUDA out of memory. Tried to allocate more than 1EB memory."
    );
    assert!(events.is_empty());
    assert_eq!(a.stats().num_ooms, 0);
}

#[test]
fn zero_byte_allocations_are_null() {
    let mut a = allocator(GIB);
    let mut events = Vec::new();
    assert_eq!(a.malloc(0, 0, &mut events), Ok(0));
    assert_eq!(a.free(0, &mut events), Ok(()));
    assert!(events.is_empty());
    assert_eq!(a.stats(), &AllocatorStats::default());
}

#[test]
fn unknown_and_double_frees_are_errors_that_change_nothing() {
    let mut a = allocator(GIB);
    let addr = alloc(&mut a, 4 * MIB, 0);
    let mut events = Vec::new();
    assert_eq!(
        a.free(addr + 512, &mut events),
        Err(UnknownAddress { addr: addr + 512 })
    );
    assert!(events.is_empty());
    free(&mut a, addr);
    assert_eq!(a.free(addr, &mut events), Err(UnknownAddress { addr }));
    assert!(events.is_empty());
    a.assert_consistent();
}

#[test]
fn peaks_track_the_maximum_until_reset() {
    let mut a = allocator(GIB);
    let big = alloc(&mut a, 3 * MIB, 0);
    let small = alloc(&mut a, 1000, 0);
    free(&mut a, big);
    let s = a.stats();
    assert_eq!(
        (s.allocated_bytes, s.peak_allocated_bytes),
        (1024, 3 * MIB + 1024)
    );
    assert_eq!(
        (s.requested_bytes, s.peak_requested_bytes),
        (1000, 3 * MIB + 1000)
    );
    assert_eq!(
        (s.reserved_bytes, s.peak_reserved_bytes),
        (22 * MIB, 22 * MIB)
    );
    assert_eq!((s.allocations, s.peak_allocations), (1, 2));
    a.empty_cache(&mut Vec::new());
    assert_eq!(a.stats().reserved_bytes, 2 * MIB);
    assert_eq!(a.stats().peak_reserved_bytes, 22 * MIB);
    a.reset_peak_stats();
    let s = a.stats();
    assert_eq!(s.peak_allocated_bytes, 1024);
    assert_eq!(s.peak_reserved_bytes, 2 * MIB);
    assert_eq!(s.peak_segments, 1);
    free(&mut a, small);
    assert_eq!(a.stats().peak_allocated_bytes, 1024);
}

#[test]
fn streams_never_share_blocks() {
    let mut a = allocator(GIB);
    let on_0 = alloc(&mut a, 4 * MIB, 0);
    free(&mut a, on_0);
    let mut events = Vec::new();
    let on_1 = a.malloc(4 * MIB, 1, &mut events).unwrap();
    assert_ne!(on_1, on_0);
    assert_eq!(events[0], event(Action::SegmentAlloc, on_1, 20 * MIB, 1));
    assert_eq!(alloc(&mut a, 4 * MIB, 0), on_0);
    // Stream 1's leftover is not offered to stream 0 either.
    let again_0 = alloc(&mut a, 4 * MIB, 0);
    assert_eq!(again_0, on_0 + 4 * MIB);
    assert_eq!(a.stats().segments, 2);
}

#[test]
fn random_workloads_keep_the_structures_consistent() {
    random_workload(AllocatorConfig::default());
}

#[test]
fn random_workloads_keep_the_structures_consistent_with_every_knob() {
    random_workload(AllocatorConfig {
        max_split_size: 64 * MIB,
        roundup_power2_divisions: [4; 16],
        garbage_collection_threshold: 0.6,
        memory_fraction: Some(0.9),
        ..AllocatorConfig::default()
    });
}

/// A deterministic mix of sizes, streams and free orders, checked after every step.
fn random_workload(config: AllocatorConfig) {
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut a = configured(2 * GIB, config);
    let mut live: Vec<u64> = Vec::new();
    let mut events = Vec::new();
    let mut ooms = 0;
    for step in 0..4000 {
        let r = next();
        if live.is_empty() || r % 5 < 3 {
            let size = match r % 4 {
                0 => 1 + (next() % 4096),
                1 => 1 + (next() % MIB),
                2 => 1 + (next() % (12 * MIB)),
                _ => 1 + (next() % (200 * MIB)),
            };
            let stream = (next() % 3) as u32;
            events.clear();
            match a.malloc(size, stream, &mut events) {
                Ok(addr) => live.push(addr),
                Err(err) => {
                    ooms += 1;
                    assert_eq!(events.last().map(|e| e.action), Some(Action::Oom));
                    assert!(
                        err.message
                            .starts_with("CUDA out of memory. Tried to allocate")
                    );
                }
            }
        } else {
            let addr = live.swap_remove((next() % live.len() as u64) as usize);
            a.free(addr, &mut events).unwrap();
        }
        if step % 500 == 499 {
            a.empty_cache(&mut events);
        }
        a.assert_consistent();
    }
    assert_eq!(a.stats().num_ooms, ooms);
    // The mix is sized so that the OOM path is exercised too; every OOM follows a retry.
    assert!(
        ooms > 0 && a.stats().num_alloc_retries >= ooms,
        "ooms {ooms}, {:?}",
        a.stats()
    );
    for addr in live.drain(..) {
        a.free(addr, &mut events).unwrap();
    }
    a.empty_cache(&mut events);
    a.assert_consistent();
    assert_eq!(a.stats().reserved_bytes, 0);
    assert_eq!(a.device().used_bytes(), 0);
}

fn configured(capacity: u64, config: AllocatorConfig) -> CachingAllocator {
    CachingAllocator::new(SimulatedDevice::new(capacity), config)
}

fn max_split_64_mib() -> AllocatorConfig {
    AllocatorConfig {
        max_split_size: 64 * MIB,
        ..AllocatorConfig::default()
    }
}

#[test]
fn oversize_blocks_serve_only_close_oversize_requests() {
    let mut a = configured(GIB, max_split_64_mib());
    let oversize = alloc(&mut a, 100 * MIB, 0);
    free(&mut a, oversize);
    // A smaller request may not take (and split) the oversize block.
    let small = alloc(&mut a, 30 * MIB, 0);
    assert_ne!(small, oversize);
    // An oversize request may, if the block is less than 20 MiB larger: 70 + 20 <= 100.
    let too_far = alloc(&mut a, 70 * MIB, 0);
    assert_ne!(too_far, oversize);
    assert_eq!(alloc(&mut a, 90 * MIB, 0), oversize);
    // Oversize blocks are handed out whole.
    assert_eq!(a.stats().allocated_bytes, 30 * MIB + 70 * MIB + 100 * MIB);
}

#[test]
fn oversize_segments_are_freed_before_a_full_flush() {
    let mut a = configured(140 * MIB, max_split_64_mib());
    let oversize = alloc(&mut a, 100 * MIB, 0);
    let ordinary = alloc(&mut a, 12 * MIB, 0);
    free(&mut a, oversize);
    free(&mut a, ordinary);
    let mut events = Vec::new();
    let addr = a.malloc(40 * MIB, 0, &mut events).unwrap();
    a.assert_consistent();
    // Only the smallest oversize block of at least 64 MiB goes; the 12 MiB one stays cached
    // and no retry is counted.
    assert_eq!(
        events,
        [
            event(Action::SegmentFree, oversize, 100 * MIB, 0),
            event(Action::SegmentAlloc, addr, 40 * MIB, 0),
            event(Action::Alloc, addr, 40 * MIB, 0),
        ]
    );
    assert_eq!(a.stats().num_alloc_retries, 0);
    assert_eq!(a.stats().reserved_bytes, 52 * MIB);
}

#[test]
fn several_oversize_segments_are_freed_largest_first() {
    let mut a = configured(150 * MIB, max_split_64_mib());
    let big = alloc(&mut a, 70 * MIB, 0);
    let smaller = alloc(&mut a, 66 * MIB, 0);
    let ordinary = alloc(&mut a, 12 * MIB, 0);
    for addr in [big, smaller, ordinary] {
        free(&mut a, addr);
    }
    let mut events = Vec::new();
    let addr = a.malloc(120 * MIB, 0, &mut events).unwrap();
    a.assert_consistent();
    assert_eq!(
        events,
        [
            event(Action::SegmentFree, big, 70 * MIB, 0),
            event(Action::SegmentFree, smaller, 66 * MIB, 0),
            event(Action::SegmentAlloc, addr, 120 * MIB, 0),
            event(Action::Alloc, addr, 120 * MIB, 0),
        ]
    );
    assert_eq!(a.stats().reserved_bytes, 132 * MIB);
}

#[test]
fn a_memory_fraction_caps_reserved_memory_and_shows_in_the_message() {
    let config = AllocatorConfig {
        memory_fraction: Some(0.5),
        ..AllocatorConfig::default()
    };
    let mut a = configured(100 * MIB, config);
    alloc(&mut a, 40 * MIB, 0);
    let mut events = Vec::new();
    let err = a.malloc(12 * MIB, 0, &mut events).unwrap_err();
    assert_eq!(err.device_free, 60 * MIB, "the device itself had room");
    assert_eq!(
        err.message,
        "CUDA out of memory. Tried to allocate 12.00 MiB. GPU 0 has a total capacity of \
         100.00 MiB of which 60.00 MiB is free. Including non-PyTorch memory, this process has \
         40.00 MiB memory in use. 50.00 MiB allowed; Of the allocated memory 40.00 MiB is \
         allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated. If reserved \
         but unallocated memory is large try setting \
         PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See \
         documentation for Memory Management  \
         (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
    );
    assert_eq!(alloc(&mut a, 10 * MIB, 0), BASE + 40 * MIB);
}

/// Two cached segments of different ages, then a miss while reserved memory is above the
/// threshold; returns the events of that miss.
fn age_then_miss(config: AllocatorConfig) -> (Vec<AllocatorEvent>, u64) {
    let mut a = configured(110 * MIB, config);
    alloc(&mut a, 12 * MIB, 0);
    let old = alloc(&mut a, 20 * MIB, 0);
    let young = alloc(&mut a, 30 * MIB, 0);
    free(&mut a, old);
    free(&mut a, young);
    // Reusing the 30 MiB block makes it younger than the 20 MiB one.
    let again = alloc(&mut a, 30 * MIB, 0);
    assert_eq!(again, young);
    free(&mut a, again);
    let mut events = Vec::new();
    a.malloc(40 * MIB, 0, &mut events).unwrap();
    a.assert_consistent();
    (events, old)
}

#[test]
fn garbage_collection_frees_the_oldest_cached_segments_above_the_threshold() {
    let config = AllocatorConfig {
        memory_fraction: Some(1.0),
        garbage_collection_threshold: 0.5,
        ..AllocatorConfig::default()
    };
    // Reserved 62 MiB > 0.5 × 110 MiB: 7 MiB must go; the older 20 MiB segment is enough,
    // the younger 30 MiB one stays.
    let (events, old) = age_then_miss(config);
    let actions: Vec<_> = events.iter().map(|e| (e.action, e.size)).collect();
    assert_eq!(
        actions,
        [
            (Action::SegmentFree, 20 * MIB),
            (Action::SegmentAlloc, 40 * MIB),
            (Action::Alloc, 40 * MIB),
        ]
    );
    assert_eq!(events[0].addr, old);
    // Without the threshold (or without a fraction) nothing is collected.
    let (events, _) = age_then_miss(AllocatorConfig {
        memory_fraction: Some(1.0),
        ..AllocatorConfig::default()
    });
    assert_eq!(events[0].action, Action::SegmentAlloc);
    let (events, _) = age_then_miss(AllocatorConfig {
        garbage_collection_threshold: 0.5,
        ..AllocatorConfig::default()
    });
    assert_eq!(events[0].action, Action::SegmentAlloc);
}

#[test]
fn repeated_empty_cache_costs_what_it_releases_not_the_cached_fragments() {
    // 40 000 cached split fragments (every other 512-byte block of the small pool freed, so
    // none merge), then 40 000 `empty_cache` calls that each have nothing to release. Scanning
    // the whole free list per call (1.6e9 visits) took seconds; the whole-segment index
    // makes each call constant.
    let mut a = allocator(GIB);
    let mut events = Vec::new();
    let addrs: Vec<u64> = (0..80_000)
        .map(|_| a.malloc(512, 0, &mut events).expect("fits"))
        .collect();
    for &addr in addrs.iter().step_by(2) {
        a.free(addr, &mut events).unwrap();
    }
    let reserved = a.stats().reserved_bytes;
    let start = std::time::Instant::now();
    for _ in 0..40_000 {
        events.clear();
        a.empty_cache(&mut events);
        assert!(events.is_empty(), "no segment is whole");
    }
    let elapsed = start.elapsed();
    assert_eq!(a.stats().reserved_bytes, reserved);
    a.assert_consistent();
    assert!(
        elapsed < std::time::Duration::from_millis(500),
        "40 000 empty_cache calls took {elapsed:?}"
    );
    // Freeing the rest makes every segment whole again, and one call releases them all.
    for &addr in addrs.iter().skip(1).step_by(2) {
        a.free(addr, &mut events).unwrap();
    }
    a.empty_cache(&mut events);
    a.assert_consistent();
    assert_eq!(a.stats().reserved_bytes, 0);
}
