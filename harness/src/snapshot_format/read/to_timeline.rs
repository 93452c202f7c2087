//! [`Snapshot`] → [`Timeline`]: the main device's trace as timeline events, and the allocator
//! settings and stream numbering the replay shares.

use super::fast_hash::AddressMap;
use crate::allocator::AllocatorConfig;
use crate::snapshot_format::model::*;
use crate::timeline::{Action, MemoryEvent, StackId, Timeline};
use std::collections::HashMap;

/// A snapshot's memory as a Timeline, with what was chosen on the way.
#[derive(Debug, Clone)]
pub struct ImportedTimeline {
    pub timeline: Timeline,
    /// The device whose trace became the timeline.
    pub device: u32,
    /// Allocated and reserved bytes when the trace began.
    pub initial_allocated: u64,
    pub initial_reserved: u64,
}

/// The device a timeline is made of: the one with the most trace entries (the lowest index
/// among equals), or the lowest device with segments when no device has a trace.
/// What the reader and the replay look at: the main device's trace and final segments, and
/// the allocator settings the snapshot was recorded under.
pub struct DeviceView<'s> {
    pub device: u32,
    pub config: AllocatorConfig,
    pub trace: &'s [TraceEntry],
    pub segments: Vec<&'s Segment>,
}

impl<'s> DeviceView<'s> {
    /// The view of the device [`pick_device`] chooses.
    pub fn main(snapshot: &'s Snapshot) -> DeviceView<'s> {
        let device = pick_device(snapshot);
        DeviceView {
            device,
            config: allocator_config(snapshot),
            trace: snapshot
                .device_traces
                .get(device as usize)
                .map_or(&[][..], Vec::as_slice),
            segments: snapshot
                .segments
                .iter()
                .filter(|s| s.device == device)
                .collect(),
        }
    }
}

pub fn pick_device(snapshot: &Snapshot) -> u32 {
    let by_trace = snapshot
        .device_traces
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .max_by(|(a, ta), (b, tb)| ta.len().cmp(&tb.len()).then(b.cmp(a)))
        .map(|(d, _)| d as u32);
    by_trace
        .or_else(|| snapshot.segments.iter().map(|s| s.device).min())
        .unwrap_or(0)
}

/// The allocator settings a snapshot was recorded under, as the model's config.
pub fn allocator_config(snapshot: &Snapshot) -> AllocatorConfig {
    let mut config = AllocatorConfig::default();
    if let Some(s) = &snapshot.allocator_settings {
        if let Some(max) = s.max_split_size {
            config.max_split_size = max;
        }
        config.roundup_power2_divisions = s.roundup_power2_divisions;
        config.garbage_collection_threshold = s.garbage_collection_threshold;
    }
    config
}

/// Maps raw stream values to the small numbers a Timeline uses: 0 stays 0, the others are
/// numbered 1, 2, … in order of first appearance (as PyTorch's viewer numbers them).
#[derive(Debug, Default)]
pub struct StreamNumbers(HashMap<u64, u32>);

impl StreamNumbers {
    pub fn number(&mut self, raw: u64) -> u32 {
        if raw == 0 {
            return 0;
        }
        let next = self.0.len() as u32 + 1;
        *self.0.entry(raw).or_insert(next)
    }
}

/// The snapshot's trace of one device as a Timeline. Allocated bytes count each allocation's
/// block: its size in the final segments when it is still live there, otherwise its request
/// rounded as the allocator rounds it (exact except when the allocator handed out a large
/// block whole, up to 1 MiB bigger; [`super::replay`] resolves those). Reserved bytes are
/// exact. Both start from the final segments minus what the trace did, since a trace usually
/// starts in the middle of a process (reference §4.14).
pub fn to_timeline(snapshot: &Snapshot) -> ImportedTimeline {
    let DeviceView {
        device,
        config,
        trace,
        segments,
    } = DeviceView::main(snapshot);
    let final_blocks: AddressMap<u64> = segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state != BlockState::Inactive)
        .map(|b| (b.address, b.size))
        .collect();
    let final_allocated: u64 = segments
        .iter()
        .fold(0u64, |t, s| t.saturating_add(s.allocated_size));
    let final_reserved: u64 = segments
        .iter()
        .fold(0u64, |t, s| t.saturating_add(s.total_size));

    // The last alloc at each address that is still live at the end takes its final block size.
    let mut last_alloc: AddressMap<usize> = AddressMap::default();
    let mut freed_after: AddressMap<bool> = AddressMap::default();
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            TraceAction::Alloc => {
                last_alloc.insert(e.addr, i);
                freed_after.insert(e.addr, false);
            }
            TraceAction::FreeCompleted => {
                freed_after.insert(e.addr, true);
            }
            _ => {}
        }
    }

    let mut streams = StreamNumbers::default();
    let mut live: AddressMap<u64> = AddressMap::default();
    let mut events = Vec::with_capacity(trace.len());
    let mut allocated_delta: i128 = 0;
    let mut reserved_delta: i128 = 0;
    let mut deltas: Vec<(i128, i128)> = Vec::with_capacity(trace.len());
    let mut notes = Vec::new();
    let mut skipped: HashMap<String, usize> = HashMap::new();
    for (i, e) in trace.iter().enumerate() {
        let action = match &e.action {
            TraceAction::Alloc => {
                let block = match final_blocks.get(&e.addr) {
                    Some(size) if last_alloc.get(&e.addr) == Some(&i) && !freed_after[&e.addr] => {
                        *size
                    }
                    _ => config.round_size(e.size),
                };
                live.insert(e.addr, block);
                allocated_delta += block as i128;
                Action::Alloc
            }
            TraceAction::FreeRequested => Action::FreeRequested,
            TraceAction::FreeCompleted => {
                let block = live
                    .remove(&e.addr)
                    .unwrap_or_else(|| config.round_size(e.size));
                allocated_delta -= block as i128;
                Action::FreeCompleted
            }
            TraceAction::SegmentAlloc | TraceAction::SegmentMap => {
                reserved_delta += e.size as i128;
                if e.action == TraceAction::SegmentAlloc {
                    Action::SegmentAlloc
                } else {
                    Action::SegmentMap
                }
            }
            TraceAction::SegmentFree | TraceAction::SegmentUnmap => {
                reserved_delta -= e.size as i128;
                if e.action == TraceAction::SegmentFree {
                    Action::SegmentFree
                } else {
                    Action::SegmentUnmap
                }
            }
            TraceAction::Oom => Action::Oom,
            TraceAction::Snapshot | TraceAction::Other(_) => {
                *skipped.entry(e.action.name().to_string()).or_default() += 1;
                continue;
            }
        };
        deltas.push((allocated_delta, reserved_delta));
        events.push(MemoryEvent {
            action,
            addr: e.addr,
            size: e.size,
            stream: streams.number(e.stream),
            stack: e.frames.unwrap_or_default(),
            iteration: None,
            allocated: 0,
            reserved: 0,
            device_free: e.device_free,
            category: None,
        });
    }
    let initial_allocated = start_value(final_allocated, allocated_delta, &mut notes, "allocated");
    let initial_reserved = start_value(final_reserved, reserved_delta, &mut notes, "reserved");
    for (event, (a, r)) in events.iter_mut().zip(&deltas) {
        event.allocated = (initial_allocated as i128 + a).max(0) as u64;
        event.reserved = (initial_reserved as i128 + r).max(0) as u64;
    }

    let segment_devices: std::collections::BTreeSet<u32> =
        snapshot.segments.iter().map(|s| s.device).collect();
    let devices_with_data = (0..snapshot.device_traces.len().max(1) as u32)
        .filter(|d| {
            snapshot
                .device_traces
                .get(*d as usize)
                .is_some_and(|t| !t.is_empty())
        })
        .chain(segment_devices.iter().copied())
        .collect::<std::collections::BTreeSet<_>>();
    if devices_with_data.len() > 1 {
        notes.push(format!(
            "the snapshot holds {} devices; device {device} (the most trace entries) was read",
            devices_with_data.len()
        ));
    }
    let mut skipped: Vec<_> = skipped.into_iter().collect();
    skipped.sort();
    for (name, count) in skipped {
        notes.push(format!(
            "{count} `{name}` trace entries carry no memory change and were skipped"
        ));
    }
    if trace.iter().any(|e| e.action == TraceAction::Alloc) {
        notes.push(
            "allocated bytes of allocations freed within the trace are their requests rounded \
             like the allocator (a large block handed out whole may be up to 1 MiB bigger)"
                .to_string(),
        );
    }
    if trace.is_empty() {
        notes.push("the snapshot has no trace: only its final state is known".to_string());
    }

    let mut timeline = Timeline {
        // A snapshot does not record the device's capacity.
        device_capacity: 0,
        events,
        stacks: snapshot.stacks.clone(),
        approximations: notes,
        ..Timeline::default()
    };
    if timeline.events.is_empty() {
        // Keep the final state visible to peak checks even without a trace.
        timeline.events.push(MemoryEvent {
            action: Action::SegmentAlloc,
            addr: 0,
            size: 0,
            stream: 0,
            stack: StackId::default(),
            iteration: None,
            allocated: final_allocated,
            reserved: final_reserved,
            device_free: None,
            category: None,
        });
        timeline
            .approximations
            .push("the timeline is one event holding the final state".to_string());
    }
    ImportedTimeline {
        timeline,
        device,
        initial_allocated,
        initial_reserved,
    }
}

fn start_value(final_value: u64, delta: i128, notes: &mut Vec<String>, what: &str) -> u64 {
    let start = final_value as i128 - delta;
    if start < 0 {
        notes.push(format!(
            "the trace {what} {} bytes more than the final segments hold; the start was set to 0",
            -start
        ));
        0
    } else {
        start as u64
    }
}
