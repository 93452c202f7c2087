//! A snapshot of the segment layout (what torch's `memory_snapshot()["segments"]` lists), for
//! reports and exports.

use serde::Serialize;

use super::config::PoolKind;

/// One segment obtained from the device, with its blocks in address order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SegmentInfo {
    pub address: u64,
    pub total_size: u64,
    pub stream: u32,
    pub pool: PoolKind,
    /// Sum of the sizes of its live blocks.
    pub allocated_size: u64,
    /// Sum of the sizes their callers asked for.
    pub requested_size: u64,
    pub blocks: Vec<BlockInfo>,
}

/// One block of a segment. Blocks tile their segment without gaps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BlockInfo {
    pub address: u64,
    pub size: u64,
    /// Bytes the caller asked for; 0 for a cached block.
    pub requested_size: u64,
    pub state: BlockState,
}

/// Block states, named like the snapshot's `state` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockState {
    /// Handed to a caller.
    ActiveAllocated,
    /// Cached in a pool, free for reuse.
    Inactive,
}
