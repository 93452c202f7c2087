//! A snapshot as typed data: the dict shape `torch.cuda.memory._snapshot()` returns (reference
//! torch-memory.md §1), with every optional field of torch 2.1 to 2.11 made explicit. Stacks
//! are interned like a Timeline's, so a snapshot of a million trace entries that share a few
//! hundred stacks stores each stack once.

use crate::timeline::{StackId, StackTable};

#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// All devices' segments, in file order (sorted by address within each device).
    pub segments: Vec<Segment>,
    /// `device_traces[d]`: device `d`'s trace, oldest first.
    pub device_traces: Vec<Vec<TraceEntry>>,
    /// Absent before torch 2.3.
    pub allocator_settings: Option<AllocatorSettings>,
    /// `external_annotations` (torch 2.5+): kept as (device, stage, name, time_us).
    pub annotations: Vec<Annotation>,
    pub stacks: StackTable,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub device: u32,
    pub address: u64,
    pub total_size: u64,
    pub allocated_size: u64,
    pub active_size: u64,
    pub requested_size: u64,
    /// `int64(cudaStream_t)`: 0 is the default stream, others are pointer values.
    pub stream: u64,
    pub segment_type: SegmentType,
    pub pool_id: (i64, i64),
    pub is_expandable: bool,
    /// Stack of the cudaMalloc (the empty stack when not recorded).
    pub frames: StackId,
    pub blocks: Vec<Block>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegmentType {
    Small,
    Large,
}

impl SegmentType {
    pub fn name(self) -> &'static str {
        match self {
            SegmentType::Small => "small",
            SegmentType::Large => "large",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    pub address: u64,
    pub size: u64,
    /// The request of the last allocation that used the block (stale for inactive blocks).
    pub requested_size: u64,
    pub state: BlockState,
    pub frames: StackId,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockState {
    ActiveAllocated,
    /// Freed by the caller, waiting on events of other streams.
    ActivePendingFree,
    Inactive,
}

impl BlockState {
    pub fn name(self) -> &'static str {
        match self {
            BlockState::ActiveAllocated => "active_allocated",
            BlockState::ActivePendingFree => "active_pending_free",
            BlockState::Inactive => "inactive",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct TraceEntry {
    pub action: TraceAction,
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
    /// Absent before torch 2.2.
    pub time_us: Option<i64>,
    /// Only on `oom` entries.
    pub device_free: Option<u64>,
    /// `None` when the entry has no `frames` key (no stack recorded for it).
    pub frames: Option<StackId>,
}

/// The `action` of a trace entry. Names that no release of torch 2.1–2.11 writes to a trace
/// the allocator model replays (`user_defined`, `annotate`, future ones) are kept as `Other`
/// and skipped, as PyTorch's own viewers skip them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceAction {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
    Snapshot,
    Other(String),
}

impl TraceAction {
    pub fn parse(name: &str) -> TraceAction {
        match name {
            "alloc" => TraceAction::Alloc,
            "free_requested" => TraceAction::FreeRequested,
            "free_completed" => TraceAction::FreeCompleted,
            "segment_alloc" => TraceAction::SegmentAlloc,
            "segment_free" => TraceAction::SegmentFree,
            "segment_map" => TraceAction::SegmentMap,
            "segment_unmap" => TraceAction::SegmentUnmap,
            "oom" => TraceAction::Oom,
            "snapshot" => TraceAction::Snapshot,
            other => TraceAction::Other(other.to_string()),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            TraceAction::Alloc => "alloc",
            TraceAction::FreeRequested => "free_requested",
            TraceAction::FreeCompleted => "free_completed",
            TraceAction::SegmentAlloc => "segment_alloc",
            TraceAction::SegmentFree => "segment_free",
            TraceAction::SegmentMap => "segment_map",
            TraceAction::SegmentUnmap => "segment_unmap",
            TraceAction::Oom => "oom",
            TraceAction::Snapshot => "snapshot",
            TraceAction::Other(name) => name,
        }
    }
}

/// The allocator settings a snapshot records (torch 2.3+), as far as they change block layout.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocatorSettings {
    /// The raw `PYTORCH_CUDA_ALLOC_CONF` string ("" when unset).
    pub alloc_conf: std::sync::Arc<str>,
    /// `None` when unlimited (recorded as -1).
    pub max_split_size: Option<u64>,
    pub garbage_collection_threshold: f64,
    pub expandable_segments: bool,
    /// Divisions of the 16 power-of-two intervals from 1 MiB up (0 = off).
    pub roundup_power2_divisions: [u64; 16],
}

#[derive(Debug, Clone, PartialEq)]
pub struct Annotation {
    pub device: u32,
    /// Shared like frame strings: one allocation per distinct string of the pickle.
    pub stage: std::sync::Arc<str>,
    pub name: std::sync::Arc<str>,
    pub time_us: Option<i64>,
}
