//! Replaying a recorded trace through the allocator model (reference torch-memory.md §4.14).
//!
//! A trace rarely starts when the process did, so the allocator state at its start is rebuilt
//! first: the final segments, minus the segments the trace itself allocated, holding the blocks
//! that were live at the start (those live at the end and never allocated in the trace, plus
//! those the trace frees without having allocated them); the free space between two live
//! blocks of a segment is one free block (the allocator always coalesces), and in large
//! segments a slack of at most 1 MiB after a live block belongs to that block (the allocator
//! does not split it off). The model is driven into that state through its public API: each
//! segment is obtained at its real address and carved, in address order, into its blocks.
//!
//! Then every `alloc` and `free_completed` goes through the model in order. The device backend
//! hands out the addresses the trace's `segment_alloc` entries recorded, and refuses a request
//! when the trace shows the allocator flushing its cache first, so a faithful model predicts
//! every address. The result counts what it predicted and compares the final block layout.
//!
//! What-if replays ([`what_if`]) run the same requests under other settings on a simulated
//! device of a given capacity, from the live allocations at the start with an empty cache.

use super::model::{BlockState, Segment, SegmentType, Snapshot, TraceAction, TraceEntry};
use super::read::{StreamNumbers, allocator_config, pick_device};
use crate::allocator::{
    AllocatorConfig, AllocatorEvent, CachingAllocator, DeviceMemory, SMALL_SIZE, SimulatedDevice,
};
use crate::timeline::Action;
use serde::Serialize;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;

/// How much of the trace the model predicted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ReplayCounts {
    pub allocs_total: u64,
    /// `alloc` entries whose address the model chose too.
    pub allocs_predicted: u64,
    pub segments_total: u64,
    /// `segment_alloc` entries the model made too, with the same size.
    pub segments_predicted: u64,
}

/// The outcome of [`replay`].
#[derive(Debug, Clone, Serialize)]
pub struct ReplayReport {
    pub device: u32,
    #[serde(flatten)]
    pub counts: ReplayCounts,
    /// Whether the model could be put in the rebuilt start state exactly.
    pub start_state_exact: bool,
    /// Blocks of the final segments, and how many the model has identically (address, size,
    /// allocated or not).
    pub final_blocks_total: u64,
    pub final_blocks_matching: u64,
    /// Whether the model's final segments are the file's, block for block.
    pub final_layout_identical: bool,
    /// Allocated and reserved bytes after each trace entry that a Timeline keeps (the ones
    /// [`super::to_timeline`] turns into events), in the same order.
    #[serde(skip)]
    pub series: Vec<(u64, u64)>,
    /// What the replay could not model, in words.
    pub notes: Vec<String>,
}

impl ReplayReport {
    /// Whether every address and segment was predicted and the final layout matches.
    pub fn exact(&self) -> bool {
        self.start_state_exact
            && self.final_layout_identical
            && self.counts.allocs_predicted == self.counts.allocs_total
            && self.counts.segments_predicted == self.counts.segments_total
    }

    /// One line for reports: `replay: 6526/6526 alloc addresses, 0/0 segments predicted, ...`.
    pub fn summary(&self) -> String {
        let pct = |a: u64, b: u64| {
            if b == 0 {
                100.0
            } else {
                a as f64 * 100.0 / b as f64
            }
        };
        format!(
            "replay: {}/{} alloc addresses ({:.1} %), {}/{} segment sizes predicted; final layout {} ({}/{} blocks)",
            self.counts.allocs_predicted,
            self.counts.allocs_total,
            pct(self.counts.allocs_predicted, self.counts.allocs_total),
            self.counts.segments_predicted,
            self.counts.segments_total,
            if self.final_layout_identical {
                "identical"
            } else {
                "differs"
            },
            self.final_blocks_matching,
            self.final_blocks_total,
        )
    }
}

/// What the replay tells the device before each request.
#[derive(Debug)]
struct DeviceScript {
    /// Segments the trace allocated for the request being replayed: (address, size).
    pending: VecDeque<(u64, u64)>,
    /// Requests to refuse before handing out `pending` (the trace shows a cache flush or OOM).
    refusals: u32,
    /// Address for the next request outside the trace (rebuilding the start state).
    forced: Option<u64>,
    /// Addresses for segments the trace does not have: far above any real one.
    next_invented: u64,
}

/// A device that hands out the addresses a trace recorded. The replay keeps a second handle
/// on its script, since the allocator owns the device.
struct ReplayDevice {
    script: Rc<RefCell<DeviceScript>>,
    live: HashMap<u64, u64>,
    used: u64,
}

impl ReplayDevice {
    fn new() -> (Self, Rc<RefCell<DeviceScript>>) {
        let script = Rc::new(RefCell::new(DeviceScript {
            pending: VecDeque::new(),
            refusals: 0,
            forced: None,
            next_invented: 0xfff0_0000_0000,
        }));
        let device = ReplayDevice {
            script: Rc::clone(&script),
            live: HashMap::new(),
            used: 0,
        };
        (device, script)
    }
}

impl DeviceMemory for ReplayDevice {
    fn capacity(&self) -> u64 {
        u64::MAX / 4
    }
    fn free_bytes(&self) -> u64 {
        self.capacity().saturating_sub(self.used)
    }
    fn malloc(&mut self, size: u64) -> Option<u64> {
        let mut script = self.script.borrow_mut();
        if script.refusals > 0 {
            script.refusals -= 1;
            return None;
        }
        let addr = match script.forced.take() {
            Some(addr) => addr,
            None => match script.pending.pop_front() {
                Some((addr, _)) => addr,
                None => {
                    let addr = script.next_invented;
                    script.next_invented = script
                        .next_invented
                        .saturating_add(size.saturating_add((1 << 21) - 1) & !((1 << 21) - 1));
                    addr
                }
            },
        };
        self.live.insert(addr, size);
        self.used = self.used.saturating_add(size);
        Some(addr)
    }
    fn free(&mut self, addr: u64, size: u64) {
        if self.live.remove(&addr).is_some() {
            self.used = self.used.saturating_sub(size);
        }
    }
}

/// One block of the rebuilt start state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StartBlock {
    address: u64,
    size: u64,
    live: bool,
}

#[derive(Debug, Clone)]
struct StartSegment {
    address: u64,
    total_size: u64,
    stream: u64,
    small: bool,
    blocks: Vec<StartBlock>,
}

/// The start state of one device's trace, as reference §4.14 rebuilds it.
fn start_state(
    segments: &[&Segment],
    trace: &[TraceEntry],
    config: &AllocatorConfig,
) -> Vec<StartSegment> {
    // First event at each segment address and at each block address.
    let mut segment_first: HashMap<u64, (&TraceAction, u64)> = HashMap::new();
    let mut block_first: HashMap<u64, &TraceEntry> = HashMap::new();
    for e in trace {
        match e.action {
            TraceAction::SegmentAlloc | TraceAction::SegmentFree => {
                segment_first.entry(e.addr).or_insert((&e.action, e.size));
            }
            TraceAction::Alloc | TraceAction::FreeRequested | TraceAction::FreeCompleted => {
                block_first.entry(e.addr).or_insert(e);
            }
            _ => {}
        }
    }
    let mut out: Vec<StartSegment> = Vec::new();
    for s in segments {
        if !segment_first.contains_key(&s.address) {
            out.push(StartSegment {
                address: s.address,
                total_size: s.total_size,
                stream: s.stream,
                small: s.segment_type == SegmentType::Small,
                blocks: Vec::new(),
            });
        }
    }
    let mut known: std::collections::HashSet<u64> = out.iter().map(|s| s.address).collect();
    for e in trace {
        if e.action == TraceAction::SegmentFree
            && matches!(
                segment_first.get(&e.addr),
                Some((TraceAction::SegmentFree, _))
            )
            && known.insert(e.addr)
        {
            out.push(StartSegment {
                address: e.addr,
                total_size: e.size,
                stream: e.stream,
                small: e.size == crate::allocator::SMALL_BUFFER,
                blocks: Vec::new(),
            });
        }
    }
    out.sort_by_key(|s| s.address);

    // Live blocks at the start: (address, exact size or None, request).
    let final_live: HashMap<u64, u64> = segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state != BlockState::Inactive)
        .map(|b| (b.address, b.size))
        .collect();
    let mut live: Vec<(u64, Option<u64>, u64)> = final_live
        .iter()
        .filter(|(addr, _)| !block_first.contains_key(addr))
        .map(|(&addr, &size)| (addr, Some(size), size))
        .collect();
    for (&addr, e) in &block_first {
        if e.action != TraceAction::Alloc {
            live.push((addr, None, e.size));
        }
    }
    live.sort_by_key(|l| l.0);

    for seg in &mut out {
        let end = seg.address.saturating_add(seg.total_size);
        let inside: Vec<_> = live
            .iter()
            .filter(|l| l.0 >= seg.address && l.0 < end)
            .collect();
        let mut cursor = seg.address;
        for (i, &&(addr, exact, request)) in inside.iter().enumerate() {
            if addr > cursor {
                seg.blocks.push(StartBlock {
                    address: cursor,
                    size: addr - cursor,
                    live: false,
                });
            }
            let next = inside.get(i + 1).map_or(end, |n| n.0);
            let mut size = exact
                .unwrap_or_else(|| config.round_size(request))
                .min(next - addr);
            if exact.is_none() && !seg.small && next - addr - size <= SMALL_SIZE {
                size = next - addr;
            }
            seg.blocks.push(StartBlock {
                address: addr,
                size,
                live: true,
            });
            cursor = addr.saturating_add(size);
        }
        if cursor < end {
            seg.blocks.push(StartBlock {
                address: cursor,
                size: end - cursor,
                live: false,
            });
        }
    }
    out
}

/// Drives `model` into the start state; returns whether it got there exactly.
fn build_start_state(
    model: &mut CachingAllocator<ReplayDevice>,
    script: &RefCell<DeviceScript>,
    start: &[StartSegment],
    streams: &mut StreamNumbers,
) -> bool {
    let mut events: Vec<AllocatorEvent> = Vec::new();
    let mut exact = true;
    let mut to_free: Vec<u64> = Vec::new();
    for seg in start {
        let stream = streams.number(seg.stream);
        // Pieces to request, in address order; a free block too big for one request of its
        // pool is requested in pieces that coalesce again when freed.
        let mut pieces: Vec<(u64, u64, bool)> = Vec::new();
        for b in &seg.blocks {
            if seg.small
                && !b.live
                && b.size > SMALL_SIZE
                && b.size <= crate::allocator::SMALL_BUFFER
            {
                let mut at = b.address;
                while at < b.address.saturating_add(b.size) {
                    let piece = (b.address.saturating_add(b.size) - at).min(SMALL_SIZE);
                    pieces.push((at, piece, false));
                    at += piece;
                }
            } else {
                pieces.push((b.address, b.size, b.live));
            }
        }
        if !seg.small && pieces.len() > 1 {
            // Obtain the whole segment first, then give it back to carve it.
            script.borrow_mut().forced = Some(seg.address);
            match model.malloc(seg.total_size, stream, &mut events) {
                Ok(addr) if addr == seg.address => {
                    let _ = model.free(addr, &mut events);
                }
                _ => exact = false,
            }
        } else {
            script.borrow_mut().forced = Some(seg.address);
        }
        for (address, size, live) in pieces {
            match model.malloc(size, stream, &mut events) {
                Ok(addr) if addr == address => {
                    if !live {
                        to_free.push(addr);
                    }
                }
                Ok(addr) => {
                    exact = false;
                    to_free.push(addr);
                }
                Err(_) => exact = false,
            }
        }
    }
    for addr in to_free {
        let _ = model.free(addr, &mut events);
    }
    // Compare with what was meant.
    let built = model.segments();
    let expected: Vec<(u64, Vec<StartBlock>)> = start
        .iter()
        .map(|s| (s.address, s.blocks.clone()))
        .collect();
    let got: Vec<(u64, Vec<StartBlock>)> = built
        .iter()
        .map(|s| {
            (
                s.address,
                s.blocks
                    .iter()
                    .map(|b| StartBlock {
                        address: b.address,
                        size: b.size,
                        live: b.state == crate::allocator::BlockState::ActiveAllocated,
                    })
                    .collect(),
            )
        })
        .collect();
    exact && merged(expected) == got
}

/// Adjacent free blocks as the allocator holds them: merged.
fn merged(segments: Vec<(u64, Vec<StartBlock>)>) -> Vec<(u64, Vec<StartBlock>)> {
    segments
        .into_iter()
        .map(|(addr, blocks)| {
            let mut out: Vec<StartBlock> = Vec::new();
            for b in blocks {
                match out.last_mut() {
                    Some(last) if !last.live && !b.live => last.size += b.size,
                    _ => out.push(b),
                }
            }
            (addr, out)
        })
        .collect()
}

/// Replays the trace of the snapshot's main device (see [`pick_device`]) through the model
/// under the snapshot's own allocator settings.
pub fn replay(snapshot: &Snapshot) -> ReplayReport {
    let super::read::DeviceView {
        device,
        config,
        trace,
        segments,
    } = super::read::DeviceView::main(snapshot);
    let mut notes = Vec::new();
    if snapshot
        .allocator_settings
        .as_ref()
        .is_some_and(|s| s.expandable_segments)
    {
        notes.push(
            "expandable segments are not modelled by the allocator model; the replay treats \
             mapped ranges as segments"
                .to_string(),
        );
    }
    let start = start_state(&segments, trace, &config);
    let mut streams = StreamNumbers::default();
    let (device_memory, script) = ReplayDevice::new();
    let mut model = CachingAllocator::new(device_memory, config);
    let start_state_exact = build_start_state(&mut model, &script, &start, &mut streams);

    let mut counts = ReplayCounts::default();
    let mut addr_map: HashMap<u64, u64> = HashMap::new();
    let mut events: Vec<AllocatorEvent> = Vec::new();
    let mut series = Vec::with_capacity(trace.len());
    let mut unmatched_frees = 0u64;
    // Segment entries since the last request: they belong to the next alloc or oom.
    let mut pending_segments: Vec<&TraceEntry> = Vec::new();
    let mut skipped_flush = 0u64;
    let record = |model: &CachingAllocator<ReplayDevice>, series: &mut Vec<(u64, u64)>| {
        let s = model.stats();
        series.push((s.allocated_bytes, s.reserved_bytes));
    };
    // For each entry, the action of the first later entry that is not a segment event: found
    // in one backward pass (searching forward from every segment event was quadratic).
    let mut next_requests: Vec<Option<&TraceAction>> = vec![None; trace.len()];
    let mut next: Option<&TraceAction> = None;
    for (i, e) in trace.iter().enumerate().rev() {
        next_requests[i] = next;
        if !matches!(
            e.action,
            TraceAction::SegmentFree | TraceAction::SegmentAlloc
        ) {
            next = Some(&e.action);
        }
    }
    for (i, e) in trace.iter().enumerate() {
        match &e.action {
            TraceAction::SegmentAlloc | TraceAction::SegmentFree => {
                counts.segments_total += (e.action == TraceAction::SegmentAlloc) as u64;
                pending_segments.push(e);
                // A run of segment_free that no request follows is an `empty_cache()` call.
                let next_request = next_requests[i];
                let ends_run = !matches!(
                    trace.get(i + 1).map(|n| &n.action),
                    Some(TraceAction::SegmentFree | TraceAction::SegmentAlloc)
                );
                if ends_run
                    && e.action == TraceAction::SegmentFree
                    && !matches!(next_request, Some(TraceAction::Alloc | TraceAction::Oom))
                {
                    model.empty_cache(&mut events);
                    pending_segments.clear();
                    skipped_flush += 1;
                }
            }
            TraceAction::Alloc | TraceAction::Oom => {
                let stream = streams.number(e.stream);
                let flushes = pending_segments
                    .iter()
                    .any(|p| p.action == TraceAction::SegmentFree);
                let mut dev = script.borrow_mut();
                dev.pending = pending_segments
                    .iter()
                    .filter(|p| p.action == TraceAction::SegmentAlloc)
                    .map(|p| (p.addr, p.size))
                    .collect();
                dev.refusals = if e.action == TraceAction::Oom {
                    u32::MAX
                } else {
                    flushes as u32
                };
                drop(dev);
                events.clear();
                let result = model.malloc(e.size, stream, &mut events);
                let mut dev = script.borrow_mut();
                dev.refusals = 0;
                dev.pending.clear();
                drop(dev);
                if pending_segments
                    .iter()
                    .any(|p| p.action == TraceAction::SegmentAlloc)
                {
                    let created: std::collections::HashSet<(u64, u64)> = events
                        .iter()
                        .filter(|m| m.action == Action::SegmentAlloc)
                        .map(|m| (m.addr, m.size))
                        .collect();
                    counts.segments_predicted += pending_segments
                        .iter()
                        .filter(|p| p.action == TraceAction::SegmentAlloc)
                        .filter(|p| created.contains(&(p.addr, p.size)))
                        .count() as u64;
                }
                pending_segments.clear();
                if e.action == TraceAction::Alloc {
                    counts.allocs_total += 1;
                    if let Ok(addr) = result {
                        if addr == e.addr {
                            counts.allocs_predicted += 1;
                        }
                        addr_map.insert(e.addr, addr);
                    }
                }
            }
            TraceAction::FreeCompleted => {
                let addr = addr_map.remove(&e.addr).unwrap_or(e.addr);
                if model.free(addr, &mut events).is_err() {
                    unmatched_frees += 1;
                }
            }
            TraceAction::FreeRequested | TraceAction::SegmentMap | TraceAction::SegmentUnmap => {}
            TraceAction::Snapshot | TraceAction::Other(_) => continue,
        }
        record(&model, &mut series);
    }
    if unmatched_frees > 0 {
        notes.push(format!(
            "{unmatched_frees} frees named no block the model held"
        ));
    }
    if skipped_flush > 0 {
        notes.push(format!(
            "{skipped_flush} runs of segment_free were replayed as empty_cache() calls"
        ));
    }
    if trace.iter().any(|e| {
        matches!(
            e.action,
            TraceAction::SegmentMap | TraceAction::SegmentUnmap
        )
    }) {
        notes.push("segment_map/segment_unmap entries were not replayed".to_string());
    }

    let (final_blocks_total, final_blocks_matching, final_layout_identical) =
        compare_final(&segments, &model);
    ReplayReport {
        device,
        counts,
        start_state_exact,
        final_blocks_total,
        final_blocks_matching,
        final_layout_identical,
        series,
        notes,
    }
}

fn compare_final(
    segments: &[&Segment],
    model: &CachingAllocator<ReplayDevice>,
) -> (u64, u64, bool) {
    let model_blocks: HashMap<u64, (u64, bool)> = model
        .segments()
        .iter()
        .flat_map(|s| s.blocks.iter())
        .map(|b| {
            (
                b.address,
                (
                    b.size,
                    b.state == crate::allocator::BlockState::ActiveAllocated,
                ),
            )
        })
        .collect();
    let mut total = 0u64;
    let mut matching = 0u64;
    for b in segments.iter().flat_map(|s| s.blocks.iter()) {
        total += 1;
        let live = b.state != BlockState::Inactive;
        if model_blocks.get(&b.address) == Some(&(b.size, live)) {
            matching += 1;
        }
    }
    let identical = matching == total && model_blocks.len() as u64 == total;
    (total, matching, identical)
}

/// The snapshot's Timeline with allocated and reserved bytes from an exact replay (block sizes
/// as the allocator chose them), when the replay predicted everything. Returns whether the
/// timeline was updated.
pub fn apply_exact_series(imported: &mut super::ImportedTimeline, report: &ReplayReport) -> bool {
    let events = &mut imported.timeline.events;
    if !report.exact() || report.series.len() != events.len() || report.device != imported.device {
        return false;
    }
    for (event, (allocated, reserved)) in events.iter_mut().zip(&report.series) {
        event.allocated = *allocated;
        event.reserved = *reserved;
    }
    imported
        .timeline
        .approximations
        .retain(|n| !n.starts_with("allocated bytes of allocations"));
    true
}

/// Settings and device for a what-if replay.
#[derive(Debug, Clone)]
pub struct WhatIfSetup {
    pub config: AllocatorConfig,
    /// Device capacity in bytes.
    pub capacity: u64,
}

/// The outcome of one what-if replay.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WhatIfOutcome {
    pub peak_allocated_bytes: u64,
    pub peak_reserved_bytes: u64,
    /// `1 - allocated / reserved` at the moment reserved memory peaked.
    pub fragmentation_at_peak: f64,
    /// The trace entry (index into the device's trace) whose allocation ran out of memory,
    /// and torch's message; the replay stops there.
    pub oom_at_entry: Option<usize>,
    pub oom_message: Option<String>,
}

/// Replays the snapshot's requests under `setup`, starting from the allocations live at the
/// start of the trace with an empty cache, on a simulated device.
pub fn what_if(snapshot: &Snapshot, setup: &WhatIfSetup) -> WhatIfOutcome {
    let device = pick_device(snapshot);
    let trace: &[TraceEntry] = snapshot
        .device_traces
        .get(device as usize)
        .map_or(&[][..], Vec::as_slice);
    let segments: Vec<&Segment> = snapshot
        .segments
        .iter()
        .filter(|s| s.device == device)
        .collect();
    let original = allocator_config(snapshot);
    let start = start_state(&segments, trace, &original);
    let mut streams = StreamNumbers::default();
    let mut model =
        CachingAllocator::new(SimulatedDevice::new(setup.capacity), setup.config.clone());
    let mut events = Vec::new();
    let mut addr_map: HashMap<u64, u64> = HashMap::new();
    let mut outcome = WhatIfOutcome {
        peak_allocated_bytes: 0,
        peak_reserved_bytes: 0,
        fragmentation_at_peak: 0.0,
        oom_at_entry: None,
        oom_message: None,
    };
    let observe = |model: &CachingAllocator<SimulatedDevice>, outcome: &mut WhatIfOutcome| {
        let s = model.stats();
        outcome.peak_allocated_bytes = outcome.peak_allocated_bytes.max(s.allocated_bytes);
        if s.reserved_bytes > outcome.peak_reserved_bytes {
            outcome.peak_reserved_bytes = s.reserved_bytes;
            outcome.fragmentation_at_peak = if s.reserved_bytes == 0 {
                0.0
            } else {
                1.0 - s.allocated_bytes as f64 / s.reserved_bytes as f64
            };
        }
    };
    for seg in &start {
        let stream = streams.number(seg.stream);
        for b in seg.blocks.iter().filter(|b| b.live) {
            match model.malloc(b.size, stream, &mut events) {
                Ok(addr) => {
                    addr_map.insert(b.address, addr);
                }
                Err(oom) => {
                    outcome.oom_message = Some(oom.message);
                    outcome.oom_at_entry = Some(0);
                    return outcome;
                }
            }
            observe(&model, &mut outcome);
        }
    }
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            TraceAction::Alloc => match model.malloc(e.size, streams.number(e.stream), &mut events)
            {
                Ok(addr) => {
                    addr_map.insert(e.addr, addr);
                }
                Err(oom) => {
                    outcome.oom_at_entry = Some(i);
                    outcome.oom_message = Some(oom.message);
                    observe(&model, &mut outcome);
                    return outcome;
                }
            },
            TraceAction::FreeCompleted => {
                if let Some(addr) = addr_map.remove(&e.addr) {
                    let _ = model.free(addr, &mut events);
                }
            }
            _ => {}
        }
        events.clear();
        observe(&model, &mut outcome);
    }
    outcome
}

#[cfg(test)]
mod tests;
