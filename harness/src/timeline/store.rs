//! Compact storage for the events a [`super::Recorder`] holds in its head and its tail.
//!
//! A [`MemoryEvent`] takes 72 bytes, most of them options and padding; a tail event is kept
//! in 32 (address, size, allocated bytes, and one word packing the rest), in fixed-size
//! chunks that are recycled as the oldest iterations leave, so a long run neither reallocates
//! a growing list nor allocates per iteration. The few events that do not fit the packing
//! (an OOM's free-memory figure, a stream or stack id out of range, reserved bytes that are
//! not whole 2 MiB units) are kept whole beside the chunks. The iteration an event happened in
//! is its chunk's: only whether it was inside the iteration is stored.

use std::collections::VecDeque;

use super::{Action, Category, MemoryEvent, StackId};

/// Records per chunk (32 KiB).
const CHUNK_RECORDS: usize = 1024;

/// Reserved bytes are stored in these units (segments are multiples of 2 MiB).
const RESERVED_UNIT_SHIFT: u32 = 21;

// The packed word, low bits first: escaped flag, inside-iteration flag, action, category
// (0 = none), stream, stack id, reserved bytes in 2 MiB units.
const ESCAPED: u64 = 1;
const IN_ITERATION: u64 = 1 << 1;
const ACTION_SHIFT: u32 = 2;
const CATEGORY_SHIFT: u32 = 5;
const STREAM_SHIFT: u32 = 8;
const STREAM_BITS: u32 = 5;
const STACK_SHIFT: u32 = 13;
const STACK_BITS: u32 = 24;
const RESERVED_SHIFT: u32 = 37;
const RESERVED_BITS: u32 = 27;
const FIELD3: u64 = 0b111;

/// One event in 32 bytes. An escaped record holds in `addr` the position of its whole event
/// among every escaped event so far.
#[derive(Debug, Clone, Copy, Default)]
struct Packed {
    addr: u64,
    size: u64,
    allocated: u64,
    bits: u64,
}

const ACTIONS: [Action; 8] = [
    Action::Alloc,
    Action::FreeRequested,
    Action::FreeCompleted,
    Action::SegmentAlloc,
    Action::SegmentFree,
    Action::SegmentMap,
    Action::SegmentUnmap,
    Action::Oom,
];

const CATEGORIES: [Category; 6] = [
    Category::Parameter,
    Category::Gradient,
    Category::OptimizerState,
    Category::Activation,
    Category::Input,
    Category::Temporary,
];

/// Both lists are in declaration order, so a discriminant is the position.
fn action_code(action: Action) -> u64 {
    action as u64
}

fn category_code(category: Option<Category>) -> u64 {
    category.map_or(0, |c| c as u64 + 1)
}

fn category_of(code: u64) -> Option<Category> {
    (code as usize).checked_sub(1).map(|i| CATEGORIES[i])
}

fn fits(value: u64, bits: u32) -> bool {
    value >> bits == 0
}

/// Events in order, oldest first; each is pushed at the back and leaves from the front.
#[derive(Debug, Clone, Default)]
pub(super) struct EventStore {
    chunks: VecDeque<Vec<Packed>>,
    /// Records of the front chunk that already left.
    front_offset: usize,
    len: usize,
    /// One emptied chunk kept for the next one needed.
    spare: Option<Vec<Packed>>,
    escaped: VecDeque<MemoryEvent>,
    /// Escaped events that already left (the position of `escaped[0]`).
    escaped_gone: u64,
}

impl EventStore {
    pub fn len(&self) -> usize {
        self.len
    }

    /// Adds an event at the back. Its `iteration` is not stored, only whether it is set.
    /// Inlined into the recorder: called once per allocator event, whose fields are then
    /// packed from registers instead of from a `MemoryEvent` written out for the call.
    #[inline]
    pub fn push(&mut self, event: &MemoryEvent) {
        let reserved_units = event.reserved >> RESERVED_UNIT_SHIFT;
        let packable = event.device_free.is_none()
            && event.reserved & ((1 << RESERVED_UNIT_SHIFT) - 1) == 0
            && fits(reserved_units, RESERVED_BITS)
            && fits(u64::from(event.stream), STREAM_BITS)
            && fits(u64::from(event.stack.0), STACK_BITS);
        let flags = if event.iteration.is_some() {
            IN_ITERATION
        } else {
            0
        };
        let record = if packable {
            Packed {
                addr: event.addr,
                size: event.size,
                allocated: event.allocated,
                bits: flags
                    | action_code(event.action) << ACTION_SHIFT
                    | category_code(event.category) << CATEGORY_SHIFT
                    | u64::from(event.stream) << STREAM_SHIFT
                    | u64::from(event.stack.0) << STACK_SHIFT
                    | reserved_units << RESERVED_SHIFT,
            }
        } else {
            self.escaped.push_back(event.clone());
            Packed {
                addr: self.escaped_gone + self.escaped.len() as u64 - 1,
                bits: flags | ESCAPED,
                ..Packed::default()
            }
        };
        let back_full = self.chunks.back().is_none_or(|c| c.len() == CHUNK_RECORDS);
        if back_full {
            let chunk = self
                .spare
                .take()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK_RECORDS));
            self.chunks.push_back(chunk);
        }
        if let Some(chunk) = self.chunks.back_mut() {
            chunk.push(record);
        }
        self.len += 1;
    }

    /// The event at `index` (0 = oldest held), as it happened in `iteration`.
    #[cfg(test)]
    pub fn get(&self, index: usize, iteration: u32) -> MemoryEvent {
        self.decode(self.record(index), iteration)
    }

    /// Removes the oldest `count` events, handing each to `each` as it happened in
    /// `iteration`; emptied chunks are recycled.
    pub fn take_front(&mut self, count: usize, iteration: u32, mut each: impl FnMut(MemoryEvent)) {
        let mut left = count.min(self.len);
        while left > 0 {
            let Some(front) = self.chunks.front() else {
                return;
            };
            let end = front.len().min(self.front_offset + left);
            for at in self.front_offset..end {
                let record = self.chunks[0][at];
                let event = self.decode(record, iteration);
                if record.bits & ESCAPED != 0 {
                    self.escaped.pop_front();
                    self.escaped_gone += 1;
                }
                each(event);
            }
            let taken = end - self.front_offset;
            left -= taken;
            self.len -= taken;
            self.front_offset = end;
            let front_len = self.chunks[0].len();
            if self.front_offset == front_len && (front_len == CHUNK_RECORDS || self.len == 0) {
                if let Some(mut chunk) = self.chunks.pop_front() {
                    chunk.clear();
                    self.spare = Some(chunk);
                }
                self.front_offset = 0;
            }
        }
    }

    fn decode(&self, record: Packed, iteration: u32) -> MemoryEvent {
        let iteration = (record.bits & IN_ITERATION != 0).then_some(iteration);
        if record.bits & ESCAPED != 0 {
            let mut event = self.escaped[(record.addr - self.escaped_gone) as usize].clone();
            event.iteration = iteration;
            return event;
        }
        let field = |shift: u32, bits: u32| (record.bits >> shift) & ((1 << bits) - 1);
        MemoryEvent {
            action: ACTIONS[field(ACTION_SHIFT, 3) as usize],
            addr: record.addr,
            size: record.size,
            stream: field(STREAM_SHIFT, STREAM_BITS) as u32,
            stack: StackId(field(STACK_SHIFT, STACK_BITS) as u32),
            iteration,
            allocated: record.allocated,
            reserved: field(RESERVED_SHIFT, RESERVED_BITS) << RESERVED_UNIT_SHIFT,
            device_free: None,
            category: category_of(field(CATEGORY_SHIFT, 3)),
        }
    }

    /// The action and address of the event at `index`, without decoding the rest.
    pub fn action_and_addr(&self, index: usize) -> (Action, u64) {
        let record = self.record(index);
        if record.bits & ESCAPED != 0 {
            let event = &self.escaped[(record.addr - self.escaped_gone) as usize];
            return (event.action, event.addr);
        }
        let code = (record.bits >> ACTION_SHIFT) & FIELD3;
        (ACTIONS[code as usize], record.addr)
    }

    /// Sets the category of the event at `index`.
    pub fn set_category(&mut self, index: usize, category: Category) {
        let (chunk, offset) = self.position(index);
        let record = &mut self.chunks[chunk][offset];
        if record.bits & ESCAPED != 0 {
            let at = (record.addr - self.escaped_gone) as usize;
            self.escaped[at].category = Some(category);
        } else {
            record.bits = (record.bits & !(FIELD3 << CATEGORY_SHIFT))
                | category_code(Some(category)) << CATEGORY_SHIFT;
        }
    }

    /// Removes the oldest event.
    #[cfg(test)]
    pub fn pop_front(&mut self) {
        self.take_front(1, 0, drop);
    }

    /// Bytes the store holds.
    pub fn bytes(&self) -> usize {
        let chunks = self.chunks.len() + self.spare.is_some() as usize;
        chunks * CHUNK_RECORDS * std::mem::size_of::<Packed>()
            + self.escaped.capacity() * std::mem::size_of::<MemoryEvent>()
    }

    fn position(&self, index: usize) -> (usize, usize) {
        let at = self.front_offset + index;
        (at / CHUNK_RECORDS, at % CHUNK_RECORDS)
    }

    fn record(&self, index: usize) -> Packed {
        let (chunk, offset) = self.position(index);
        self.chunks[chunk][offset]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(n: u64) -> MemoryEvent {
        MemoryEvent {
            action: ACTIONS[(n % 8) as usize],
            addr: 0x7f00_0000_0000 + n * 512,
            size: n * 1000 + 1,
            stream: (n % 3) as u32,
            stack: StackId((n % 50) as u32),
            iteration: (!n.is_multiple_of(4)).then_some(9),
            allocated: n * 512,
            reserved: (n % 7) << 21,
            device_free: None,
            category: if n.is_multiple_of(5) {
                None
            } else {
                Some(CATEGORIES[(n % 6) as usize])
            },
        }
    }

    /// Events that cannot be packed, each for another reason.
    fn odd(n: u64) -> MemoryEvent {
        let mut e = event(n);
        match n % 4 {
            0 => e.device_free = Some(n),
            1 => e.reserved = (1 << 21) + 512,
            2 => e.stream = 1 << STREAM_BITS,
            _ => e.stack = StackId(1 << STACK_BITS),
        }
        e
    }

    #[test]
    fn events_come_back_as_they_went_in_across_chunks_and_escapes() {
        let mut store = EventStore::default();
        let mut expected = VecDeque::new();
        for n in 0..5000u64 {
            let e = if n.is_multiple_of(97) {
                odd(n)
            } else {
                event(n)
            };
            store.push(&e);
            expected.push_back(e);
            // Leave from the front now and then, so chunks recycle.
            if n.is_multiple_of(3) {
                store.pop_front();
                expected.pop_front();
            }
            if n % 1000 == 999 {
                let mut taken = Vec::new();
                store.take_front(600, 9, |e| taken.push(e));
                let want: Vec<_> = expected.drain(..600).collect();
                assert_eq!(taken, want);
            }
        }
        assert_eq!(store.len(), expected.len());
        for (i, e) in expected.iter().enumerate() {
            assert_eq!(&store.get(i, 9), e, "event {i}");
            assert_eq!(store.action_and_addr(i), (e.action, e.addr));
        }
        store.set_category(0, Category::Gradient);
        store.set_category(expected.len() - 1, Category::Input);
        assert_eq!(store.get(0, 9).category, Some(Category::Gradient));
        assert_eq!(
            store.get(expected.len() - 1, 9).category,
            Some(Category::Input)
        );
        while store.len() > 0 {
            store.pop_front();
        }
        assert!(store.escaped.is_empty() && store.chunks.is_empty());
    }

    #[test]
    fn a_record_takes_32_bytes() {
        assert_eq!(std::mem::size_of::<Packed>(), 32);
        assert!(std::mem::size_of::<MemoryEvent>() > 64);
    }
}
