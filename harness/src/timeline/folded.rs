//! What a long run's timeline keeps of the iterations the recorder folded away.
//!
//! A run of 10^8 cheap iterations cannot keep every allocator event: the recorder keeps full
//! detail for the first and last iterations and for the iterations where the peaks were first
//! reached, and folds the others into [`FoldedSpan`] summaries (at most [`MAX_SPANS`]). The
//! retained events stay one ordered `Vec`, so every index into it stays a plain index; a
//! [`Resume`] tells a reader replaying the events which blocks were live where the replay
//! jumps over a fold.

use super::{Category, StackId};
use serde::Serialize;

/// Most summaries a timeline holds; beyond it neighbouring summaries are merged.
pub const MAX_SPANS: usize = 512;

/// Iterations folded away, and where replays resume.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Folded {
    /// In iteration order.
    pub spans: Vec<FoldedSpan>,
    /// Where a retained stretch of events follows a fold, in event order.
    #[serde(skip)]
    pub resumes: Vec<Resume>,
}

/// A run of consecutive iterations summarised (their own events and collector runs dropped,
/// the notable collector runs kept in [`super::Timeline::gc_events`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FoldedSpan {
    pub first_iteration: u32,
    pub last_iteration: u32,
    pub iterations: u32,
    pub completed: u32,
    /// Allocator events dropped.
    pub events: u64,
    /// Collector runs dropped, by `[automatic as usize][generation]`.
    pub collections: [[u64; 3]; 2],
    /// Totals of the dropped collector runs.
    pub device_tensors_freed: u64,
    pub bytes_freed: u64,
    /// Highest allocated and reserved bytes within the span.
    pub peak_allocated: u64,
    pub peak_reserved: u64,
    /// Lowest, highest and last allocated bytes at a completed iteration's end, with the
    /// iteration (`None` when no iteration of the span completed).
    pub lowest_end: Option<(u32, u64)>,
    pub highest_end: Option<(u32, u64)>,
    pub last_end: Option<(u32, u64)>,
    /// Index into [`super::Timeline::events`] of the first retained event after the span.
    pub next_event: usize,
}

impl FoldedSpan {
    pub fn collections_total(&self) -> u64 {
        self.collections.iter().flatten().sum()
    }

    /// Adds a later span's figures (the two must be neighbours).
    pub fn absorb(&mut self, later: &FoldedSpan) {
        if self.iterations == 0 {
            *self = later.clone();
            return;
        }
        self.last_iteration = later.last_iteration;
        self.iterations += later.iterations;
        self.completed += later.completed;
        self.events += later.events;
        for (mine, theirs) in self.collections.iter_mut().zip(&later.collections) {
            for (a, b) in mine.iter_mut().zip(theirs) {
                *a += b;
            }
        }
        self.device_tensors_freed += later.device_tensors_freed;
        self.bytes_freed += later.bytes_freed;
        self.peak_allocated = self.peak_allocated.max(later.peak_allocated);
        self.peak_reserved = self.peak_reserved.max(later.peak_reserved);
        let pick =
            |a: Option<(u32, u64)>, b: Option<(u32, u64)>, better: fn(u64, u64) -> bool| match (
                a, b,
            ) {
                (Some(x), Some(y)) if better(y.1, x.1) => Some(y),
                (Some(x), _) => Some(x),
                (None, y) => y,
            };
        self.lowest_end = pick(self.lowest_end, later.lowest_end, |new, old| new < old);
        self.highest_end = pick(self.highest_end, later.highest_end, |new, old| new > old);
        self.last_end = later.last_end.or(self.last_end);
    }

    /// Records one completed iteration's end.
    pub fn iteration_end(&mut self, iteration: u32, allocated: u64) {
        let point = Some((iteration, allocated));
        if self.lowest_end.is_none_or(|(_, low)| allocated < low) {
            self.lowest_end = point;
        }
        if self.highest_end.is_none_or(|(_, high)| allocated > high) {
            self.highest_end = point;
        }
        self.last_end = point;
    }
}

/// A block live at some point of the run, as a replay of the events would hold it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiveBlock {
    pub addr: u64,
    /// Requested bytes (as the `Alloc` event recorded them).
    pub size: u64,
    pub stack: StackId,
    pub category: Option<Category>,
}

/// The live blocks just before the retained event at `event_index`, which follows a fold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume {
    pub event_index: usize,
    /// Sorted by address.
    pub live: Vec<LiveBlock>,
}
