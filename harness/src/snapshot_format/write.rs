//! Timeline → snapshot pickle that PyTorch's viewers open (`_memory_viz.py` and MemoryViz.js).
//!
//! The writer follows reference torch-memory.md §3.4: protocol 4 without `FRAME`, only dicts,
//! lists, strings, ints, bools, floats and 2-tuples; `frames` on every segment, block and trace
//! entry; contiguous block addresses; every `free_requested` paired with a `free_completed`;
//! `time_us` on every entry (the event's index: a Timeline has no wall times, and the output
//! must not depend on when it was written); no `category`. Strings and frame dicts are memoized,
//! as in the files torch writes, so a long trace stays small.

use super::model::{
    AllocatorSettings, Block, BlockState, Segment, SegmentType, Snapshot, TraceAction, TraceEntry,
};
use crate::allocator::SMALL_BUFFER;
use crate::timeline::{Action, StackId, Timeline};
use std::collections::{BTreeMap, HashMap};

/// Encodes a snapshot as a protocol-4 pickle.
pub fn encode_snapshot(snapshot: &Snapshot) -> Vec<u8> {
    let mut p = Pickler::default();
    p.out.extend([0x80, 4]);
    p.dict(|p| {
        p.key("segments");
        p.list(|p| {
            for s in &snapshot.segments {
                p.segment(s, snapshot);
            }
        });
        p.key("device_traces");
        p.list(|p| {
            for trace in &snapshot.device_traces {
                p.list(|p| {
                    for (i, e) in trace.iter().enumerate() {
                        if i > 0 && i % APPENDS_BATCH == 0 {
                            p.out.extend([b'e', b'(']);
                        }
                        p.trace_entry(e, i, snapshot);
                    }
                });
            }
        });
        if let Some(settings) = &snapshot.allocator_settings {
            p.key("allocator_settings");
            p.settings(settings);
        }
        p.key("external_annotations");
        p.list(|p| {
            for a in &snapshot.annotations {
                p.dict(|p| {
                    p.key("stage");
                    p.str(&a.stage);
                    p.key("name");
                    p.str(&a.name);
                    p.key("device");
                    p.int(a.device as i64);
                    if let Some(t) = a.time_us {
                        p.key("time_us");
                        p.int(t);
                    }
                });
            }
        });
    });
    p.out.push(b'.');
    p.out
}

/// The snapshot a Timeline describes: its events as device 0's trace, and the segments and
/// blocks that are live at its end. Block sizes are what each `alloc` added to the allocated
/// bytes, so the snapshot's allocated total equals the Timeline's final allocated bytes.
/// Segments that existed before the Timeline's first event are unknown to it and absent.
pub fn timeline_to_snapshot(timeline: &Timeline) -> Snapshot {
    let mut trace = Vec::with_capacity(timeline.events.len());
    let mut segments: BTreeMap<u64, (u64, u32, StackId)> = BTreeMap::new();
    // Live allocations: address → (block size, request, stack).
    let mut live: BTreeMap<u64, (u64, u64, StackId)> = BTreeMap::new();
    let mut previous_allocated = initial_allocated(&timeline.events);
    for e in &timeline.events {
        let action = match e.action {
            Action::Alloc => {
                let block = e.allocated.saturating_sub(previous_allocated);
                live.insert(e.addr, (block, e.size, e.stack));
                TraceAction::Alloc
            }
            Action::FreeRequested => TraceAction::FreeRequested,
            Action::FreeCompleted => {
                live.remove(&e.addr);
                TraceAction::FreeCompleted
            }
            Action::SegmentAlloc => {
                segments.insert(e.addr, (e.size, e.stream, e.stack));
                TraceAction::SegmentAlloc
            }
            Action::SegmentFree => {
                segments.remove(&e.addr);
                TraceAction::SegmentFree
            }
            Action::SegmentMap => TraceAction::SegmentMap,
            Action::SegmentUnmap => TraceAction::SegmentUnmap,
            Action::Oom => TraceAction::Oom,
        };
        // The events of one allocator call carry the counters after the call, so a
        // `segment_alloc` already counts the block its `alloc` hands out: only requests and
        // frees move the base that the next block size is measured from.
        if !is_segment_event(e.action) {
            previous_allocated = e.allocated;
        }
        trace.push(TraceEntry {
            action,
            addr: e.addr,
            size: e.size,
            stream: e.stream as u64,
            time_us: None,
            device_free: e.device_free,
            frames: Some(e.stack),
        });
    }
    let segments = segments
        .into_iter()
        .map(|(address, (total_size, stream, frames))| {
            let end = address.saturating_add(total_size);
            let mut blocks = Vec::new();
            let mut cursor = address;
            for (&addr, &(size, requested, stack)) in live.range(address..end) {
                if addr > cursor {
                    blocks.push(free_block(cursor, addr - cursor));
                }
                let size = size.min(end - addr);
                blocks.push(Block {
                    address: addr,
                    size,
                    requested_size: requested,
                    state: BlockState::ActiveAllocated,
                    frames: stack,
                });
                cursor = addr.saturating_add(size);
            }
            if cursor < end {
                blocks.push(free_block(cursor, end - cursor));
            }
            let allocated_size = blocks
                .iter()
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .map(|b| b.size)
                .sum();
            let requested_size = blocks
                .iter()
                .filter(|b| b.state == BlockState::ActiveAllocated)
                .map(|b| b.requested_size)
                .sum();
            Segment {
                device: 0,
                address,
                total_size,
                allocated_size,
                active_size: allocated_size,
                requested_size,
                stream: stream as u64,
                segment_type: if total_size == SMALL_BUFFER {
                    SegmentType::Small
                } else {
                    SegmentType::Large
                },
                pool_id: (0, 0),
                is_expandable: false,
                frames,
                blocks,
            }
        })
        .collect();
    Snapshot {
        segments,
        device_traces: vec![trace],
        allocator_settings: None,
        annotations: Vec::new(),
        stacks: timeline.stacks.clone(),
    }
}

/// Allocated bytes before the first event.
fn initial_allocated(events: &[crate::timeline::MemoryEvent]) -> u64 {
    // Segment events carry the counters of the request they serve: start from that request.
    let Some(first) = events.iter().find(|e| !is_segment_event(e.action)) else {
        return events.first().map_or(0, |e| e.allocated);
    };
    match first.action {
        Action::Alloc => first
            .allocated
            .saturating_sub(first.size.next_multiple_of(512)),
        _ => first.allocated,
    }
}

fn is_segment_event(action: Action) -> bool {
    matches!(
        action,
        Action::SegmentAlloc | Action::SegmentFree | Action::SegmentMap | Action::SegmentUnmap
    )
}

fn free_block(address: u64, size: u64) -> Block {
    Block {
        address,
        size,
        requested_size: 0,
        state: BlockState::Inactive,
        frames: StackId::default(),
    }
}

/// Items per `APPENDS`, as Python's pickler batches them: a reader can convert and drop each
/// batch of trace entries as it arrives (see `read::read_snapshot`).
const APPENDS_BATCH: usize = 1000;

/// The Timeline as snapshot pickle bytes.
pub fn export_timeline(timeline: &Timeline) -> Vec<u8> {
    encode_snapshot(&timeline_to_snapshot(timeline))
}

/// A minimal pickler: the opcodes Python's own pickler uses for this data, protocol 4.
#[derive(Default)]
struct Pickler {
    out: Vec<u8>,
    memo_len: u32,
    strings: HashMap<String, u32>,
    frames: HashMap<(std::sync::Arc<str>, u32, std::sync::Arc<str>), u32>,
}

impl Pickler {
    fn memoize(&mut self) -> u32 {
        self.out.push(0x94);
        self.memo_len += 1;
        self.memo_len - 1
    }

    fn get(&mut self, index: u32) {
        if index < 256 {
            self.out.extend([b'h', index as u8]);
        } else {
            self.out.push(b'j');
            self.out.extend(index.to_le_bytes());
        }
    }

    fn str(&mut self, s: &str) {
        if let Some(&index) = self.strings.get(s) {
            self.get(index);
            return;
        }
        if s.len() < 256 {
            self.out.extend([0x8c, s.len() as u8]);
        } else {
            self.out.push(b'X');
            self.out.extend((s.len() as u32).to_le_bytes());
        }
        self.out.extend(s.as_bytes());
        let index = self.memoize();
        self.strings.insert(s.to_string(), index);
    }

    fn key(&mut self, s: &str) {
        self.str(s);
    }

    fn int(&mut self, n: i64) {
        if (0..256).contains(&n) {
            self.out.extend([b'K', n as u8]);
        } else if (0..65536).contains(&n) {
            self.out.push(b'M');
            self.out.extend((n as u16).to_le_bytes());
        } else if i32::try_from(n).is_ok() {
            self.out.push(b'J');
            self.out.extend((n as i32).to_le_bytes());
        } else {
            // LONG1: minimal little-endian two's complement, keeping a sign bit.
            let bytes = n.to_le_bytes();
            let mut len = 8;
            while len > 1 {
                let top = bytes[len - 1];
                let below_sign = bytes[len - 2] & 0x80;
                if (top == 0 && below_sign == 0) || (top == 0xff && below_sign != 0) {
                    len -= 1;
                } else {
                    break;
                }
            }
            self.out.extend([0x8a, len as u8]);
            self.out.extend(&bytes[..len]);
        }
    }

    fn uint(&mut self, n: u64) {
        self.int(i64::try_from(n).unwrap_or(i64::MAX));
    }

    fn bool(&mut self, b: bool) {
        self.out.push(if b { 0x88 } else { 0x89 });
    }

    fn float(&mut self, x: f64) {
        self.out.push(b'G');
        self.out.extend(x.to_be_bytes());
    }

    fn dict(&mut self, fill: impl FnOnce(&mut Self)) {
        self.out.push(b'}');
        self.memoize();
        self.out.push(b'(');
        fill(self);
        self.out.push(b'u');
    }

    fn list(&mut self, fill: impl FnOnce(&mut Self)) {
        self.out.push(b']');
        self.memoize();
        self.out.push(b'(');
        fill(self);
        self.out.push(b'e');
    }

    /// A stack as a `frames` list. Like torch's own files, each use gets its own list while
    /// each distinct frame dict is written once and referenced from the memo after that.
    fn frames(&mut self, stack: StackId, snapshot: &Snapshot) {
        self.out.push(b']');
        self.memoize();
        let frames = snapshot.stacks.get(stack);
        if frames.is_empty() {
            return;
        }
        self.out.push(b'(');
        for f in frames {
            let key = (f.file.clone(), f.line, f.name.clone());
            if let Some(&index) = self.frames.get(&key) {
                self.get(index);
                continue;
            }
            let index = self.memo_len;
            self.dict(|p| {
                p.key("name");
                p.str(&f.name);
                p.key("filename");
                p.str(&f.file);
                p.key("line");
                p.int(f.line as i64);
            });
            self.frames.insert(key, index);
        }
        self.out.push(b'e');
    }

    fn segment(&mut self, s: &Segment, snapshot: &Snapshot) {
        self.dict(|p| {
            p.key("device");
            p.int(s.device as i64);
            p.key("address");
            p.uint(s.address);
            p.key("total_size");
            p.uint(s.total_size);
            p.key("allocated_size");
            p.uint(s.allocated_size);
            p.key("active_size");
            p.uint(s.active_size);
            p.key("requested_size");
            p.uint(s.requested_size);
            p.key("stream");
            p.int(s.stream as i64);
            p.key("segment_type");
            p.str(s.segment_type.name());
            p.key("segment_pool_id");
            p.int(s.pool_id.0);
            p.int(s.pool_id.1);
            p.out.push(0x86);
            p.memoize();
            p.key("is_expandable");
            p.bool(s.is_expandable);
            p.key("frames");
            p.frames(s.frames, snapshot);
            p.key("blocks");
            p.list(|p| {
                for b in &s.blocks {
                    p.dict(|p| {
                        p.key("address");
                        p.uint(b.address);
                        p.key("size");
                        p.uint(b.size);
                        p.key("requested_size");
                        p.uint(b.requested_size);
                        p.key("state");
                        p.str(b.state.name());
                        p.key("frames");
                        p.frames(b.frames, snapshot);
                    });
                }
            });
        });
    }

    fn trace_entry(&mut self, e: &TraceEntry, index: usize, snapshot: &Snapshot) {
        self.dict(|p| {
            p.key("action");
            p.str(e.action.name());
            if e.action == TraceAction::Oom {
                p.key("device_free");
                p.uint(e.device_free.unwrap_or(0));
            } else {
                p.key("addr");
                p.uint(e.addr);
            }
            p.key("size");
            p.uint(e.size);
            p.key("stream");
            p.int(e.stream as i64);
            p.key("time_us");
            p.int(e.time_us.unwrap_or(index as i64));
            p.key("frames");
            p.frames(e.frames.unwrap_or_default(), snapshot);
        });
    }

    fn settings(&mut self, s: &AllocatorSettings) {
        self.dict(|p| {
            p.key("PYTORCH_CUDA_ALLOC_CONF");
            p.str(&s.alloc_conf);
            p.key("max_split_size");
            p.int(
                s.max_split_size
                    .map_or(-1, |m| i64::try_from(m).unwrap_or(-1)),
            );
            p.key("garbage_collection_threshold");
            p.float(s.garbage_collection_threshold);
            p.key("expandable_segments");
            p.bool(s.expandable_segments);
            p.key("roundup_power2_divisions");
            p.dict(|p| {
                for (i, d) in s.roundup_power2_divisions.iter().enumerate() {
                    p.str(&(1u64 << i).to_string());
                    p.uint(*d);
                }
            });
        });
    }
}

#[cfg(test)]
mod tests;
