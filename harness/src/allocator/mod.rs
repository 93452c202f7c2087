//! A model of PyTorch's CUDA caching allocator (the native backend of
//! `c10/cuda/CUDACachingAllocator.cpp`, as of torch 2.11, default settings).
//!
//! Memory is taken from the device in segments and cut into blocks that are cached after
//! use instead of being returned. The mechanisms, in the order a request meets them:
//!
//! - **Rounding** (`round_size`): requests below 512 bytes become 512, others are rounded up
//!   to a multiple of 512 (or to a power-of-two division when `roundup_power2_divisions` is
//!   set).
//! - **Pools**: rounded sizes up to 1 MiB are served by the small pool, larger ones by the
//!   large pool; blocks never move between pools.
//! - **Best fit** (`get_free_block`): each pool keeps its free blocks ordered by (stream,
//!   size, address); the first one on the requesting stream that is large enough wins, so
//!   blocks are never shared across streams.
//! - **Segments** (`get_allocation_size`, `alloc_block`): on a miss, a new segment of 2 MiB
//!   (small pool), 20 MiB (large requests under 10 MiB) or the request rounded up to 2 MiB is
//!   obtained from the device.
//! - **Splitting** (`should_split`): the caller gets the low part of the block; the rest stays
//!   cached as its own block if at least 512 bytes remain (small pool) or more than 1 MiB
//!   (large pool). Otherwise the caller gets the whole block.
//! - **Free and coalescing** (`free_block`): a freed block merges with free neighbours of the
//!   same segment, so free space between two live blocks is always a single block.
//! - **Flush and retry**: when the device refuses a segment, every cached block that is a
//!   whole segment is returned (`release_cached_blocks`, the same as `empty_cache`) and the
//!   device is asked once more, counting a retry.
//! - **Out of memory**: if that fails too, an `oom` event is recorded and torch's message is
//!   built (note that it names the segment size, not the request).
//!
//! Settings from `PYTORCH_CUDA_ALLOC_CONF` that change these mechanisms are modelled too (see
//! [`AllocatorConfig`]): `max_split_size_mb` (oversize blocks are never split, serve only
//! oversize requests within `max_non_split_rounding_mb`, and are freed first on a device
//! miss), `roundup_power2_divisions`, and `garbage_collection_threshold` with a per-process
//! memory fraction (age-based release of cached segments, and a cap on reserved memory).
//!
//! Statistics follow `torch.cuda.memory_stats()`. The allocator talks to memory only through
//! [`DeviceMemory`]; [`SimulatedDevice`] is a device with a capacity and deterministic
//! addresses.
//!
//! Not modelled: `expandable_segments`, `record_stream` (frees complete at once), CUDA
//! graphs and private pools, and memory the CUDA context itself takes from the device.

mod block;
mod caching;
mod config;
mod device;
mod free_set;
mod layout;
mod oom;
mod stats;

#[cfg(test)]
mod tests;

pub use caching::{AllocatorEvent, CachingAllocator, UnknownAddress};
pub use config::{
    AllocatorConfig, LARGE_BUFFER, MIN_BLOCK_SIZE, MIN_LARGE_ALLOC, OOM_DOCS_URL_2_11,
    OOM_DOCS_URL_LEGACY, PoolKind, ROUND_LARGE, SMALL_BUFFER, SMALL_SIZE, allocation_size,
    pool_for,
};
pub use device::{DeviceMemory, SIMULATED_ALIGNMENT, SIMULATED_BASE_ADDRESS, SimulatedDevice};
pub use layout::{BlockInfo, BlockState, SegmentInfo};
pub use oom::OutOfMemory;
pub use stats::AllocatorStats;
