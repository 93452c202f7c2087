//! The Timeline: where every source meets and every consumer reads.
//!
//! A model run, a replayed snapshot or a real-GPU run each produce one [`Timeline`]; checks,
//! reports and exports only read it and never learn which source made it. It holds the
//! allocator events in order (with the workload stack that caused each), the iteration
//! boundaries, the collector's runs, and the reference paths that kept collected tensors alive.

mod folded;
mod recorder;
mod stacks;
mod store;

pub use folded::{Folded, FoldedSpan, LiveBlock, MAX_SPANS, Resume};
pub use recorder::{EventSeq, HEAD_BYTES, Recorder, TAIL_BYTES};

pub use stacks::{Frame, StackId, StackNode, StackTable, StackTrie};

use serde::Serialize;

/// One allocator action, named like the `action` field of PyTorch's snapshot trace entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// A block handed to the caller (`size` = the bytes requested, unrounded).
    Alloc,
    /// The caller gave a block back (`size` = the bytes it requested).
    FreeRequested,
    /// The block is back in the cache (same size as the request; later than `FreeRequested`
    /// only when the block had uses on other streams).
    FreeCompleted,
    /// A new segment was obtained from the device (`size` = segment bytes).
    SegmentAlloc,
    /// A cached segment was returned to the device.
    SegmentFree,
    /// Expandable segments: pages mapped into a segment.
    SegmentMap,
    /// Expandable segments: pages unmapped.
    SegmentUnmap,
    /// An allocation failed (`size` = rounded request; `device_free` set).
    Oom,
}

/// What an allocation holds, as PyTorch's memory profiler classifies it
/// (`torch.profiler._memory_profiler.Category`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    Parameter,
    Gradient,
    OptimizerState,
    Activation,
    Input,
    #[default]
    Temporary,
}

impl Category {
    pub fn name(self) -> &'static str {
        match self {
            Category::Parameter => "parameter",
            Category::Gradient => "gradient",
            Category::OptimizerState => "optimizer_state",
            Category::Activation => "activation",
            Category::Input => "input",
            Category::Temporary => "temporary",
        }
    }
}

/// One allocator event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemoryEvent {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    pub stream: u32,
    /// The stack that caused the event (interned in [`Timeline::stacks`]).
    pub stack: StackId,
    /// The iteration the event happened in, if it happened inside one.
    pub iteration: Option<u32>,
    /// Bytes allocated (sum of rounded live block sizes) right after the event.
    pub allocated: u64,
    /// Bytes reserved (sum of segment sizes) right after the event.
    pub reserved: u64,
    /// Free device memory reported with an OOM event.
    pub device_free: Option<u64>,
    /// What an `Alloc` event's block holds, when the source knows (the workload model
    /// does; a recorded snapshot does not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<Category>,
}

/// State at one iteration boundary. Iterations are the passes of the workload's outermost
/// loop unless the workload marks them explicitly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IterationMark {
    /// Counts from 0, like the loop variable.
    pub iteration: u32,
    /// Index into [`Timeline::events`] of the first event of this iteration (of the retained
    /// events: see [`Timeline::folded`]).
    pub first_event: usize,
    /// Allocated and reserved bytes when the iteration began.
    pub allocated_at_start: u64,
    pub reserved_at_start: u64,
    /// Allocated and reserved bytes when it ended (equal to the next mark's start values).
    pub allocated_at_end: u64,
    pub reserved_at_end: u64,
    /// Highest allocated bytes during the iteration.
    pub peak_allocated: u64,
    /// Device tensors (storages) alive when the iteration ended.
    pub device_tensors_at_end: u64,
    /// Whether the iteration ran to its end (false for the one an OOM interrupted).
    pub completed: bool,
}

/// One run of the cycle collector.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcEvent {
    /// Iteration during which it ran (`None`: before the first or after the last iteration).
    pub iteration: Option<u32>,
    /// Iterations begun when it ran: 0 for a collection before the loop, which tells it apart
    /// from one after the loop when no memory event lies between them.
    pub iterations_begun: u32,
    pub generation: u8,
    /// Triggered by the allocation threshold (true) or by `gc.collect()` (false).
    pub automatic: bool,
    /// Unreachable tracked objects found, as CPython's `gc.callbacks` report `collected`.
    pub objects_collected: u64,
    /// Tensor objects (Python-side, any device) alive before and after the collection.
    pub tensors_alive_before: u64,
    pub tensors_alive_after: u64,
    /// Device storages released because of this collection, and their bytes.
    pub device_tensors_freed: u64,
    pub bytes_freed: u64,
    /// Index into [`Timeline::events`] where the collection happened (of the retained events:
    /// a run kept from a folded iteration points at the first event after the fold).
    pub event_index: usize,
    /// Workload line whose execution triggered it (the `gc.collect()` call, or the allocation).
    pub line: Option<u32>,
    /// The collector's counters (`gc.get_count()`) when it started.
    pub counts_before: [u64; 3],
}

/// Why the collector, and not reference counting, freed some device tensors: the reference
/// path from a cycle to the tensor, like PyTorch's `warn_tensor_cycles`. Identical paths are
/// aggregated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CycleReport {
    /// How the tensor hangs off the cycle, e.g. `Node.tensor`.
    pub holder_path: String,
    /// The cycle itself, e.g. `Node -[link]-> Node -[link]-> Node`.
    pub cycle: String,
    /// Tensor shape and dtype, e.g. `float32[67108864]`.
    pub tensor: String,
    /// Bytes of one such tensor's storage.
    pub bytes_each: u64,
    /// Where the storage was allocated.
    pub alloc_site: StackId,
    /// How many tensors were freed through this path, in how many collections.
    pub count: u64,
    pub bytes_total: u64,
    /// Iteration of the first collection that freed one.
    pub first_iteration: Option<u32>,
}

/// The out-of-memory error that ended a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OomReport {
    pub iteration: Option<u32>,
    /// Bytes the workload asked for.
    pub requested_bytes: u64,
    /// The message PyTorch would print.
    pub message: String,
    /// Workload stack of the failing allocation.
    pub stack: StackId,
}

/// A memory timeline. See the module documentation.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timeline {
    /// Device capacity in bytes (what PyTorch reports as total memory).
    pub device_capacity: u64,
    pub events: Vec<MemoryEvent>,
    pub stacks: StackTable,
    pub iterations: Vec<IterationMark>,
    pub gc_events: Vec<GcEvent>,
    pub cycle_reports: Vec<CycleReport>,
    pub oom: Option<OomReport>,
    /// Where the source is known to approximate reality; reports print these verbatim.
    pub approximations: Vec<String>,
    /// What the CUDA driver reported when the run drove a real device (`device: cuda`). Not
    /// part of the golden text (it depends on the machine); the human and JSON reports show it.
    pub driver: Option<DriverObservation>,
    /// A long run's iterations folded into summaries (`None`: every event is here). Not part
    /// of the golden text; the approximations say what folding changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<Folded>,
    /// What the workload printed (`cargo gpumem run` shows it). Not part of the golden text
    /// or the JSON report.
    #[serde(skip)]
    pub printed: crate::python::Printed,
}

/// The driver's view of a run on a real device, next to the model's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DriverObservation {
    pub ordinal: u32,
    /// The device's name as the driver reports it.
    pub device_name: String,
    /// Total device memory as the driver reports it.
    pub total_bytes: u64,
    /// Device memory in use (total minus the driver's free figure) before the run's first
    /// allocation: the CUDA context and every other process on the card.
    pub used_before_run: u64,
    /// One sample at the end of every iteration.
    pub samples: Vec<DriverSample>,
}

/// Model and driver figures at one iteration boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DriverSample {
    pub iteration: u32,
    /// Bytes the caching-allocator model holds in segments.
    pub model_reserved: u64,
    /// Device memory in use according to the driver (`cuMemGetInfo`: total − free).
    pub driver_used: u64,
}

impl Timeline {
    /// Highest allocated bytes over the whole run.
    pub fn peak_allocated(&self) -> u64 {
        self.events.iter().map(|e| e.allocated).max().unwrap_or(0)
    }

    /// Highest reserved bytes over the whole run.
    pub fn peak_reserved(&self) -> u64 {
        self.events.iter().map(|e| e.reserved).max().unwrap_or(0)
    }

    /// Iterations that ran to completion (folded ones included).
    pub fn iterations_completed(&self) -> u32 {
        self.iterations.iter().filter(|m| m.completed).count() as u32
            + self.folded_spans().iter().map(|s| s.completed).sum::<u32>()
    }

    /// Iterations begun (folded ones included).
    pub fn iteration_count(&self) -> u32 {
        self.iterations.len() as u32
            + self
                .folded_spans()
                .iter()
                .map(|s| s.iterations)
                .sum::<u32>()
    }

    /// The summaries of folded iterations (empty for a timeline that kept everything).
    pub fn folded_spans(&self) -> &[FoldedSpan] {
        self.folded.as_ref().map_or(&[], |f| &f.spans)
    }

    /// Collector runs of one kind, folded ones included.
    pub fn collections(&self, automatic: bool, generation: u8) -> u64 {
        let kept = self
            .gc_events
            .iter()
            .filter(|g| g.automatic == automatic && g.generation == generation)
            .count() as u64;
        let folded: u64 = self
            .folded_spans()
            .iter()
            .map(|s| s.collections[automatic as usize][generation.min(2) as usize])
            .sum();
        kept + folded
    }

    /// Collector runs of every kind, folded ones included.
    pub fn collections_total(&self) -> u64 {
        self.gc_events.len() as u64
            + self
                .folded_spans()
                .iter()
                .map(FoldedSpan::collections_total)
                .sum::<u64>()
    }

    /// Device tensors and bytes the collector freed, folded runs included.
    pub fn collector_freed(&self) -> (u64, u64) {
        let mut tensors: u64 = self.gc_events.iter().map(|g| g.device_tensors_freed).sum();
        let mut bytes: u64 = self.gc_events.iter().map(|g| g.bytes_freed).sum();
        for span in self.folded_spans() {
            tensors += span.device_tensors_freed;
            bytes += span.bytes_freed;
        }
        (tensors, bytes)
    }

    /// Index of the event where allocated memory first reached its peak.
    pub fn peak_event_index(&self) -> Option<usize> {
        let peak = self.peak_allocated();
        self.events
            .iter()
            .position(|e| e.allocated == peak && peak > 0)
    }
}

#[cfg(test)]
mod head_tests;
