//! Builds a [`Timeline`] while a source runs: stamps each allocator event with the stack and
//! iteration it happened in, keeps iteration marks, and aggregates cycle reports.
//!
//! Memory stays bounded however many iterations run: the first iterations (up to
//! [`HEAD_BYTES`] of records) and the last ones (up to [`TAIL_BYTES`]) keep every event, and
//! so do the iterations where allocated and reserved memory first reached their peaks; every
//! other iteration is folded into a summary (see [`super::folded`]) as it leaves the tail. A
//! run short enough never folds (every shipped scenario, the longest with tens of thousands of
//! iterations, stays far below), and its timeline is exactly the one a plain list of every
//! event would give.

use super::folded::{FoldedSpan, LiveBlock, MAX_SPANS, Resume};
use super::store::EventStore;
use super::{
    Action, Category, CycleReport, Folded, GcEvent, IterationMark, MemoryEvent, OomReport, StackId,
    Timeline,
};
use rustc_hash::FxHashMap;
use std::collections::VecDeque;

/// Bytes of records (events, marks, collector runs) kept in full at the start of a run.
pub const HEAD_BYTES: usize = 48 << 20;
/// Bytes of records kept in full at the end of a run.
pub const TAIL_BYTES: usize = 48 << 20;
/// Distinct iterations per kind of collection whose first run is kept in detail (the reports
/// list five, then "...").
const NOTABLE_COLLECTION_LABELS: u32 = 7;

/// A position in the sequence of every event recorded (folded ones included): not an index
/// into [`Timeline::events`], which holds only the retained ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventSeq(u64);

/// One iteration's events and collector runs, from its start to the next iteration's start
/// (events after the loop belong to the last iteration's chunk).
#[derive(Debug, Clone)]
struct Chunk {
    /// `first_event` is 0 until the chunk joins the retained events.
    mark: IterationMark,
    /// Sequence number of the chunk's first event.
    start: u64,
    /// Iterations begun before this one.
    ordinal: u32,
    /// Its events: while the chunk is in the tail they are the next `len` of the recorder's
    /// [`EventStore`].
    len: usize,
    /// `event_index` relative to the chunk's first event; the flag marks a run the reports
    /// need even when the chunk is folded.
    gc: Vec<(GcEvent, bool)>,
    peak_allocated: u64,
    peak_reserved: u64,
}

#[derive(Debug, Clone)]
enum Piece {
    Kept {
        chunk: Chunk,
        events: Vec<MemoryEvent>,
        /// Live blocks when the chunk began.
        live_before: Vec<LiveBlock>,
        holds_allocated_peak: bool,
        holds_reserved_peak: bool,
    },
    Folded {
        span: FoldedSpan,
        notable: Vec<GcEvent>,
    },
}

/// What a report calls when a run happened: its iteration, or before/after the loop.
type CollectionLabel = (Option<u32>, bool);

/// Which collection runs the reports name: per kind, the first run of each of its first
/// distinct iterations, and the first run that freed device memory.
#[derive(Debug, Default, Clone)]
struct NotableCollections {
    /// `[automatic][generation]`: distinct labels seen and the last one.
    labels: [[(u32, Option<CollectionLabel>); 3]; 2],
    freed_seen: bool,
}

impl NotableCollections {
    fn judge(&mut self, event: &GcEvent) -> bool {
        let label = (event.iteration, event.iterations_begun == 0);
        let (count, last) =
            &mut self.labels[event.automatic as usize][event.generation.min(2) as usize];
        let mut notable = false;
        if *last != Some(label) && *count < NOTABLE_COLLECTION_LABELS {
            *count += 1;
            *last = Some(label);
            notable = true;
        }
        if event.bytes_freed > 0 && !self.freed_seen {
            self.freed_seen = true;
            notable = true;
        }
        notable
    }
}

#[derive(Default)]
pub struct Recorder {
    /// The first iterations' marks and collector runs, with indexes final; also the stacks,
    /// reports and notes. Their events are in `head` until [`Recorder::finish`].
    timeline: Timeline,
    /// Events before the first iteration and those of the iterations `timeline` holds, in
    /// 32-byte records instead of 72-byte [`MemoryEvent`]s: up to [`HEAD_BYTES`] of them are
    /// written once and read back only at the end, so a long run's head costs less than half
    /// the memory traffic (and page faults) it did as a growing list of whole events.
    head: EventStore,
    /// Between head and tail: folded spans and kept peak iterations, in order.
    middle: Vec<Piece>,
    tail: VecDeque<Chunk>,
    /// The tail's events, in order, compact.
    store: EventStore,
    /// Whether the tail's last chunk is an iteration under way.
    open: bool,
    begun: u32,
    /// Events recorded so far (folded ones included).
    recorded: u64,
    /// Blocks live after every event that is not in the tail.
    live: FxHashMap<u64, LiveBlock>,
    /// Highest allocated and reserved bytes of the events not in the tail.
    best_allocated: u64,
    best_reserved: u64,
    notable: NotableCollections,
    /// Iterations per span before spans are merged.
    span_width: u32,
    /// Folded pieces in `middle` (counted as they come and go: a long run folds every
    /// iteration, and counting them by a walk of `middle` cost one walk per iteration).
    spans: usize,
    /// Bytes of records kept in full at the start and at the end, and those the tail holds.
    head_bytes: usize,
    tail_budget: usize,
    tail_bytes: usize,
    /// Highest peaks of the tail's finished chunks.
    tail_allocated: WindowMax,
    tail_reserved: WindowMax,
}

/// The maximum over a sliding window of values (ids increase; the oldest leave first): a
/// deque of the values not dominated by a later one, so each update is amortised O(1).
#[derive(Debug, Default)]
struct WindowMax(VecDeque<(u32, u64)>);

impl WindowMax {
    fn push(&mut self, id: u32, value: u64) {
        while self.0.back().is_some_and(|&(_, v)| v <= value) {
            self.0.pop_back();
        }
        self.0.push_back((id, value));
    }

    fn retire(&mut self, id: u32) {
        if self.0.front().is_some_and(|&(front, _)| front == id) {
            self.0.pop_front();
        }
    }

    fn max(&self) -> u64 {
        self.0.front().map_or(0, |&(_, v)| v)
    }
}

impl Recorder {
    pub fn new(device_capacity: u64) -> Recorder {
        Recorder::with_retention(device_capacity, HEAD_BYTES, TAIL_BYTES)
    }

    /// A recorder that keeps `head` and `tail` bytes of records in full (tests fold short
    /// runs).
    pub fn with_retention(device_capacity: u64, head: usize, tail: usize) -> Recorder {
        Recorder {
            timeline: Timeline {
                device_capacity,
                ..Timeline::default()
            },
            span_width: 1,
            head_bytes: head,
            tail_budget: tail,
            ..Recorder::default()
        }
    }

    /// Keeps `head` and `tail` bytes of records in full from now on (`limits.records`).
    pub fn set_retention(&mut self, head: usize, tail: usize) {
        self.head_bytes = head;
        self.tail_budget = tail;
    }

    /// The iteration under way, if any.
    pub fn iteration(&self) -> Option<u32> {
        match (self.open, self.tail.back()) {
            (true, Some(chunk)) => Some(chunk.mark.iteration),
            _ => None,
        }
    }

    /// How many iterations have begun so far.
    pub fn iterations_begun(&self) -> u32 {
        self.begun
    }

    /// Bytes held by the records so far (counted in a run's memory budget). Bounded however
    /// many iterations run: the folding keeps a fixed number of iterations in full.
    pub fn record_bytes(&self) -> u64 {
        let event = std::mem::size_of::<MemoryEvent>();
        let gc = std::mem::size_of::<(GcEvent, bool)>();
        let chunk = |c: &Chunk| c.gc.capacity() * gc;
        let t = &self.timeline;
        let mut bytes = self.store.bytes()
            + self.head.bytes()
            + t.events.capacity() * event
            + t.iterations.capacity() * std::mem::size_of::<IterationMark>()
            + t.gc_events.capacity() * std::mem::size_of::<GcEvent>()
            + self.tail.capacity() * std::mem::size_of::<Chunk>()
            + self.middle.capacity() * std::mem::size_of::<Piece>()
            + self.live.capacity() * (std::mem::size_of::<LiveBlock>() + 8);
        bytes += self.tail.iter().map(chunk).sum::<usize>();
        for piece in &self.middle {
            bytes += match piece {
                Piece::Kept {
                    chunk: c,
                    events,
                    live_before,
                    ..
                } => {
                    chunk(c)
                        + events.capacity() * event
                        + live_before.capacity() * std::mem::size_of::<LiveBlock>()
                }
                Piece::Folded { notable, .. } => {
                    notable.capacity() * std::mem::size_of::<GcEvent>()
                }
            };
        }
        bytes as u64
    }

    /// Where the next event will fall (for a collector run's [`GcEvent::event_index`]).
    pub fn next_event(&self) -> EventSeq {
        EventSeq(self.recorded)
    }

    pub fn stacks(&mut self) -> &mut super::StackTable {
        &mut self.timeline.stacks
    }

    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        action: Action,
        addr: u64,
        size: u64,
        stream: u32,
        device_free: Option<u64>,
        stack: StackId,
        allocated: u64,
        reserved: u64,
        category: Option<Category>,
    ) {
        let iteration = self.iteration();
        let event = MemoryEvent {
            action,
            addr,
            size,
            stream,
            stack,
            iteration,
            allocated,
            reserved,
            device_free,
            category,
        };
        self.recorded += 1;
        match self.tail.back_mut() {
            Some(chunk) => {
                if self.open {
                    chunk.mark.peak_allocated = chunk.mark.peak_allocated.max(allocated);
                }
                chunk.peak_allocated = chunk.peak_allocated.max(allocated);
                chunk.peak_reserved = chunk.peak_reserved.max(reserved);
                chunk.len += 1;
                self.store.push(&event);
            }
            None => {
                apply(&mut self.live, &event);
                self.best_allocated = self.best_allocated.max(allocated);
                self.best_reserved = self.best_reserved.max(reserved);
                self.head.push(&event);
            }
        }
    }

    /// Re-labels the live allocation at `addr` (a gradient buffer that became `.grad`):
    /// its latest `Alloc` event gets `category`.
    pub fn relabel_allocation(&mut self, addr: u64, category: Category) {
        let latest = |events: &mut [MemoryEvent]| {
            events
                .iter_mut()
                .rev()
                .find(|e| e.addr == addr && e.action == Action::Alloc)
                .map(|e| e.category = Some(category))
                .is_some()
        };
        // The tail's events, newest first.
        for index in (0..self.store.len()).rev() {
            if self.store.action_and_addr(index) == (Action::Alloc, addr) {
                self.store.set_category(index, category);
                return;
            }
        }
        // Older than the tail: the live blocks carried across folds hold it too.
        if let Some(block) = self.live.get_mut(&addr) {
            block.category = Some(category);
        }
        for piece in self.middle.iter_mut().rev() {
            match piece {
                Piece::Kept { events, .. } => {
                    if latest(events) {
                        return;
                    }
                }
                // Its latest `Alloc` may be among the folded events.
                Piece::Folded { .. } => return,
            }
        }
        // The head's events, newest first.
        for index in (0..self.head.len()).rev() {
            if self.head.action_and_addr(index) == (Action::Alloc, addr) {
                self.head.set_category(index, category);
                return;
            }
        }
    }

    pub fn begin_iteration(&mut self, iteration: u32, allocated: u64, reserved: u64) {
        if let Some(last) = self.tail.back() {
            let (ordinal, a, r) = (last.ordinal, last.peak_allocated, last.peak_reserved);
            self.tail_allocated.push(ordinal, a);
            self.tail_reserved.push(ordinal, r);
        }
        if let Some(last) = self.tail.back() {
            self.tail_bytes += chunk_bytes(last);
        }
        while self.tail_bytes > self.tail_budget && !self.tail.is_empty() {
            self.retire_oldest();
        }
        self.tail.push_back(Chunk {
            mark: IterationMark {
                iteration,
                first_event: 0,
                allocated_at_start: allocated,
                reserved_at_start: reserved,
                allocated_at_end: allocated,
                reserved_at_end: reserved,
                peak_allocated: allocated,
                device_tensors_at_end: 0,
                completed: false,
            },
            start: self.recorded,
            ordinal: self.begun,
            len: 0,
            gc: Vec::new(),
            peak_allocated: 0,
            peak_reserved: 0,
        });
        self.open = true;
        self.begun += 1;
    }

    /// Closes the open iteration (`completed` false when an error cut it short).
    pub fn end_iteration(
        &mut self,
        allocated: u64,
        reserved: u64,
        device_tensors: u64,
        completed: bool,
    ) {
        if !std::mem::take(&mut self.open) {
            return;
        }
        if let Some(chunk) = self.tail.back_mut() {
            let mark = &mut chunk.mark;
            mark.allocated_at_end = allocated;
            mark.reserved_at_end = reserved;
            mark.device_tensors_at_end = device_tensors;
            mark.completed = completed;
        }
    }

    /// Records a collector run; `at` is where it happened (from [`Recorder::next_event`]).
    pub fn gc_event(&mut self, mut event: GcEvent, at: EventSeq) {
        let notable = self.notable.judge(&event);
        match self.tail.back_mut() {
            Some(chunk) => {
                event.event_index = at.0.saturating_sub(chunk.start) as usize;
                chunk.gc.push((event, notable));
            }
            None => {
                event.event_index = at.0 as usize;
                self.timeline.gc_events.push(event);
            }
        }
    }

    /// Adds an aggregated cycle report (sources aggregate identical paths themselves).
    pub fn cycle_report(&mut self, report: CycleReport) {
        self.timeline.cycle_reports.push(report);
    }

    pub fn oom(&mut self, report: OomReport) {
        self.timeline.oom = Some(report);
    }

    pub fn approximation(&mut self, note: impl Into<String>) {
        self.timeline.approximations.push(note.into());
    }

    /// The timeline so far (an open iteration stays open in the copy).
    pub fn snapshot(&self) -> Timeline {
        Recorder {
            timeline: self.timeline.clone(),
            head: self.head.clone(),
            middle: self.middle.clone(),
            tail: self.tail.clone(),
            store: self.store.clone(),
            live: self.live.clone(),
            head_bytes: self.head_bytes,
            tail_budget: self.tail_budget,
            ..Recorder::default()
        }
        .finish()
    }

    pub fn finish(self) -> Timeline {
        let Recorder {
            mut timeline,
            mut head,
            middle,
            tail,
            mut store,
            live,
            head_bytes: kept_bytes,
            ..
        } = self;
        // One allocation for every event kept: growing the list after the head was decoded
        // held the old and the new list at once.
        let kept: usize = middle
            .iter()
            .map(|piece| match piece {
                Piece::Kept { events, .. } => events.len(),
                Piece::Folded { .. } => 0,
            })
            .sum();
        timeline
            .events
            .reserve_exact(head.len() + kept + store.len());
        decode_head(&mut head, &mut timeline);
        let mut folded = Folded::default();
        let mut after_fold = false;
        for piece in middle {
            match piece {
                Piece::Folded { mut span, notable } => {
                    let at = timeline.events.len();
                    for mut event in notable {
                        event.event_index = at;
                        timeline.gc_events.push(event);
                    }
                    span.next_event = at;
                    folded.spans.push(span);
                    after_fold = true;
                }
                Piece::Kept {
                    chunk,
                    events,
                    live_before,
                    ..
                } => {
                    if after_fold {
                        folded.resumes.push(Resume {
                            event_index: timeline.events.len(),
                            live: live_before,
                        });
                    }
                    append(&mut timeline, chunk, events);
                    after_fold = false;
                }
            }
        }
        if after_fold {
            folded.resumes.push(Resume {
                event_index: timeline.events.len(),
                live: sorted_blocks(&live),
            });
        }
        timeline.events.reserve_exact(store.len());
        for chunk in tail {
            let (len, iteration) = (chunk.len, chunk.mark.iteration);
            append(&mut timeline, chunk, std::iter::empty());
            store.take_front(len, iteration, |e| timeline.events.push(e));
        }
        if !folded.spans.is_empty() {
            timeline
                .approximations
                .push(folding_note(&folded.spans, kept_bytes));
            timeline.folded = Some(folded);
        }
        timeline
    }

    /// Moves the oldest tail iteration into the head, a kept peak piece or a folded span.
    fn retire_oldest(&mut self) {
        let Some(chunk) = self.tail.pop_front() else {
            return;
        };
        let size = chunk_bytes(&chunk);
        self.tail_bytes -= size;
        if self.middle.is_empty() && self.head_bytes() + size <= self.head_bytes {
            self.join_head(chunk);
            return;
        }
        self.tail_allocated.retire(chunk.ordinal);
        self.tail_reserved.retire(chunk.ordinal);
        let later_allocated = self.tail_allocated.max();
        let later_reserved = self.tail_reserved.max();
        // The first iteration to reach a peak no later tail iteration exceeds.
        let allocated_peak =
            chunk.peak_allocated > self.best_allocated && chunk.peak_allocated >= later_allocated;
        let reserved_peak =
            chunk.peak_reserved > self.best_reserved && chunk.peak_reserved >= later_reserved;
        if allocated_peak || reserved_peak {
            self.release_peak_slots(allocated_peak, reserved_peak);
            let live_before = sorted_blocks(&self.live);
            let events = self.remember(&chunk, true);
            self.middle.push(Piece::Kept {
                chunk,
                events,
                live_before,
                holds_allocated_peak: allocated_peak,
                holds_reserved_peak: reserved_peak,
            });
        } else {
            self.remember(&chunk, false);
            self.fold(chunk);
        }
    }

    /// Moves a chunk leaving the tail into the head: its events go from the tail's store to
    /// the head's, its blocks and peaks are applied as [`Recorder::remember`] applies them.
    fn join_head(&mut self, chunk: Chunk) {
        let base = self.head.len();
        let (live, head) = (&mut self.live, &mut self.head);
        self.store
            .take_front(chunk.len, chunk.mark.iteration, |event| {
                apply(live, &event);
                head.push(&event);
            });
        self.best_allocated = self.best_allocated.max(chunk.peak_allocated);
        self.best_reserved = self.best_reserved.max(chunk.peak_reserved);
        append_mark(&mut self.timeline, chunk, base);
    }

    /// Bytes the head's records would take as whole [`MemoryEvent`]s (the budget counts
    /// them so, whatever they are stored in: which iterations stay in detail does not depend
    /// on the storage).
    fn head_bytes(&self) -> usize {
        let timeline = &self.timeline;
        self.head.len() * std::mem::size_of::<MemoryEvent>()
            + timeline.iterations.len() * std::mem::size_of::<IterationMark>()
            + timeline.gc_events.len() * std::mem::size_of::<GcEvent>()
    }

    /// Accounts for a chunk leaving the tail: takes its events out of the store, applies its
    /// blocks and peaks, and returns the events when `keep` (empty otherwise).
    fn remember(&mut self, chunk: &Chunk, keep: bool) -> Vec<MemoryEvent> {
        let mut kept = Vec::with_capacity(if keep { chunk.len } else { 0 });
        let live = &mut self.live;
        self.store
            .take_front(chunk.len, chunk.mark.iteration, |event| {
                apply(live, &event);
                if keep {
                    kept.push(event);
                }
            });
        self.best_allocated = self.best_allocated.max(chunk.peak_allocated);
        self.best_reserved = self.best_reserved.max(chunk.peak_reserved);
        kept
    }

    /// A later iteration holds a higher peak: earlier kept pieces give up that role, and
    /// fold once they hold none.
    fn release_peak_slots(&mut self, allocated: bool, reserved: bool) {
        let mut index = 0;
        while index < self.middle.len() {
            if let Piece::Kept {
                holds_allocated_peak,
                holds_reserved_peak,
                ..
            } = &mut self.middle[index]
            {
                *holds_allocated_peak &= !allocated;
                *holds_reserved_peak &= !reserved;
                if !*holds_allocated_peak && !*holds_reserved_peak {
                    let Piece::Kept { chunk, .. } = self.middle.remove(index) else {
                        unreachable!("matched above");
                    };
                    let span = summarize(&chunk);
                    self.middle.insert(index, span);
                    self.spans += 1;
                }
            }
            index += 1;
        }
    }

    /// Folds a chunk into the last span (a new one when the last is full or a kept piece).
    fn fold(&mut self, chunk: Chunk) {
        let piece = summarize(&chunk);
        match (self.middle.last_mut(), piece) {
            (
                Some(Piece::Folded { span, notable }),
                Piece::Folded {
                    span: new,
                    notable: more,
                },
            ) if span.iterations < self.span_width => {
                span.absorb(&new);
                notable.extend(more);
            }
            (_, piece) => {
                self.middle.push(piece);
                self.spans += 1;
            }
        }
        if self.spans > MAX_SPANS {
            self.span_width = self.span_width.saturating_mul(2);
            self.merge_neighbouring_spans();
        }
    }

    fn merge_neighbouring_spans(&mut self) {
        let mut merged: Vec<Piece> = Vec::with_capacity(self.middle.len());
        for piece in self.middle.drain(..) {
            match (merged.last_mut(), piece) {
                (
                    Some(Piece::Folded { span, notable }),
                    Piece::Folded {
                        span: next,
                        notable: more,
                    },
                ) if span.iterations + next.iterations <= self.span_width => {
                    span.absorb(&next);
                    notable.extend(more);
                }
                (_, piece) => merged.push(piece),
            }
        }
        self.middle = merged;
        self.spans = self
            .middle
            .iter()
            .filter(|p| matches!(p, Piece::Folded { .. }))
            .count();
    }
}

/// A chunk as a one-iteration span, keeping its notable collector runs.
fn summarize(chunk: &Chunk) -> Piece {
    let mark = &chunk.mark;
    let mut span = FoldedSpan {
        first_iteration: mark.iteration,
        last_iteration: mark.iteration,
        iterations: 1,
        completed: mark.completed as u32,
        events: chunk.len as u64,
        peak_allocated: chunk.peak_allocated.max(mark.peak_allocated),
        peak_reserved: chunk.peak_reserved,
        ..FoldedSpan::default()
    };
    if mark.completed {
        span.iteration_end(mark.iteration, mark.allocated_at_end);
    }
    let mut notable = Vec::new();
    for (event, keep) in &chunk.gc {
        if *keep {
            notable.push(event.clone());
        } else {
            span.collections[event.automatic as usize][event.generation.min(2) as usize] += 1;
            span.device_tensors_freed += event.device_tensors_freed;
            span.bytes_freed += event.bytes_freed;
        }
    }
    Piece::Folded { span, notable }
}

/// Bytes a chunk's records take as a kept piece holds them (its header with a list of whole
/// [`MemoryEvent`]s), whatever the store holds them in meanwhile: which iterations stay in
/// detail does not depend on the tail's storage.
fn chunk_bytes(chunk: &Chunk) -> usize {
    std::mem::size_of::<Chunk>() - std::mem::size_of::<usize>()
        + std::mem::size_of::<Vec<MemoryEvent>>()
        + chunk.len * std::mem::size_of::<MemoryEvent>()
        + chunk.gc.len() * std::mem::size_of::<(GcEvent, bool)>()
}

/// Appends a chunk and its events to the retained events, making its indexes absolute.
fn append(timeline: &mut Timeline, chunk: Chunk, events: impl IntoIterator<Item = MemoryEvent>) {
    let base = timeline.events.len();
    append_mark(timeline, chunk, base);
    timeline.events.extend(events);
}

/// Appends a chunk's mark and collector runs, its first event at `base`.
fn append_mark(timeline: &mut Timeline, chunk: Chunk, base: usize) {
    let mut mark = chunk.mark;
    mark.first_event = base;
    timeline.iterations.push(mark);
    for (mut event, _) in chunk.gc {
        event.event_index += base;
        timeline.gc_events.push(event);
    }
}

/// Decodes the head's events into the timeline (empty until now), each in the iteration of
/// the head mark it falls under (events before the first mark happened before the loop).
fn decode_head(head: &mut EventStore, timeline: &mut Timeline) {
    let total = head.len();
    let events = &mut timeline.events;
    events.reserve_exact(total);
    let marks = &timeline.iterations;
    let first = marks.first().map_or(total, |m| m.first_event);
    head.take_front(first, 0, |e| events.push(e));
    for (i, mark) in marks.iter().enumerate() {
        let end = marks.get(i + 1).map_or(total, |m| m.first_event);
        head.take_front(end - mark.first_event, mark.iteration, |e| events.push(e));
    }
}

fn apply(live: &mut FxHashMap<u64, LiveBlock>, event: &MemoryEvent) {
    match event.action {
        Action::Alloc => {
            live.insert(
                event.addr,
                LiveBlock {
                    addr: event.addr,
                    size: event.size,
                    stack: event.stack,
                    category: event.category,
                },
            );
        }
        Action::FreeRequested => {
            live.remove(&event.addr);
        }
        _ => {}
    }
}

fn sorted_blocks(live: &FxHashMap<u64, LiveBlock>) -> Vec<LiveBlock> {
    let mut blocks: Vec<LiveBlock> = live.values().copied().collect();
    blocks.sort_by_key(|b| b.addr);
    blocks
}

/// The note a folded timeline carries in its approximations.
fn folding_note(spans: &[FoldedSpan], kept_bytes: usize) -> String {
    let iterations: u64 = spans.iter().map(|s| s.iterations as u64).sum();
    let events: u64 = spans.iter().map(|s| s.events).sum();
    let runs: u64 = spans.iter().map(FoldedSpan::collections_total).sum();
    format!(
        "long run: full detail is kept for the first and last iterations (up to {} of \
         records each) and for those where allocated and reserved memory first \
         peaked; {iterations} other iterations ({events} allocator events, {runs} collector \
         runs) are folded into {} summaries. Iteration-end tables, charts and the steady-state \
         and growth checks use each summary's lowest, highest and last iteration ends; \
         collection counts and freed totals include the folded runs; an exported snapshot \
         holds only the kept events",
        crate::units::Bytes(kept_bytes as u64),
        spans.len()
    )
}
