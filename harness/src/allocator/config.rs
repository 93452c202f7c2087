//! Allocator settings and the size arithmetic that depends on them: request rounding, pool
//! choice and segment sizes.

use crate::units::MIB;

/// Smallest block; every request is rounded up to a multiple of it (`kMinBlockSize`).
pub const MIN_BLOCK_SIZE: u64 = 512;
/// Largest rounded request served from the small pool (`kSmallSize`).
pub const SMALL_SIZE: u64 = MIB;
/// Segment size for small-pool requests (`kSmallBuffer`).
pub const SMALL_BUFFER: u64 = 2 * MIB;
/// Segment size for large-pool requests below [`MIN_LARGE_ALLOC`] (`kLargeBuffer`).
pub const LARGE_BUFFER: u64 = 20 * MIB;
/// Large requests from this size on get a segment of their own size, rounded (`kMinLargeAlloc`).
pub const MIN_LARGE_ALLOC: u64 = 10 * MIB;
/// Rounding of those large segments (`kRoundLarge`).
pub const ROUND_LARGE: u64 = 2 * MIB;
/// Requests of this size or more fail before reaching the allocator ("more than 1EB").
pub const ONE_EXBIBYTE: u64 = 1 << 60;
/// Intervals of `roundup_power2_divisions`: one per power of two from 1 MiB to 32 GiB and up.
pub const ROUNDUP_POWER2_INTERVALS: usize = 16;

/// Documentation link at the end of the OOM message in torch 2.11.
pub const OOM_DOCS_URL_2_11: &str = "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf";
/// Documentation link at the end of the OOM message in earlier 2.x releases.
pub const OOM_DOCS_URL_LEGACY: &str =
    "https://pytorch.org/docs/stable/notes/cuda.html#environment-variables";

/// Allocator settings. `Default` is PyTorch's default configuration (no
/// `PYTORCH_CUDA_ALLOC_CONF`, no memory fraction). `expandable_segments` is not modelled.
#[derive(Debug, Clone, PartialEq)]
pub struct AllocatorConfig {
    /// `max_split_size_mb` in bytes (`u64::MAX` = unset): cached blocks of at least this size
    /// are never split and never serve smaller requests, and a device miss first frees such
    /// blocks before flushing the whole cache.
    pub max_split_size: u64,
    /// `max_non_split_rounding_mb` in bytes: a request of at least `max_split_size` may take
    /// a cached block only if it is less than this much larger.
    pub max_non_split_rounding_size: u64,
    /// Divisions per power-of-two interval (`roundup_power2_divisions`); index 0 covers sizes
    /// below 2 MiB, index 15 everything from 32 GiB. 0 or 1 means plain 512-byte rounding.
    pub roundup_power2_divisions: [u64; ROUNDUP_POWER2_INTERVALS],
    /// `garbage_collection_threshold` (0 = off). Acts only together with `memory_fraction`.
    pub garbage_collection_threshold: f64,
    /// `torch.cuda.set_per_process_memory_fraction`: segments beyond this share of the
    /// device capacity are refused without asking the device.
    pub memory_fraction: Option<f64>,
    /// GPU index printed in the OOM message.
    pub device_index: u32,
    /// Link printed at the end of the OOM message (it changed between releases).
    pub oom_docs_url: &'static str,
}

impl Default for AllocatorConfig {
    fn default() -> Self {
        AllocatorConfig {
            max_split_size: u64::MAX,
            max_non_split_rounding_size: LARGE_BUFFER,
            roundup_power2_divisions: [0; ROUNDUP_POWER2_INTERVALS],
            garbage_collection_threshold: 0.0,
            memory_fraction: None,
            device_index: 0,
            oom_docs_url: OOM_DOCS_URL_2_11,
        }
    }
}

/// Which of the two block pools a request or block belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    /// Rounded requests up to 1 MiB, carved from 2 MiB segments.
    Small,
    /// Everything larger.
    Large,
}

impl AllocatorConfig {
    /// The block size a request of `size` bytes (< 1 EiB) occupies (`round_size`).
    pub fn round_size(&self, size: u64) -> u64 {
        if size < MIN_BLOCK_SIZE {
            return MIN_BLOCK_SIZE;
        }
        let divisions = self.divisions_for(size);
        if divisions > 1 && size > MIN_BLOCK_SIZE * divisions {
            roundup_power2_next_division(size, divisions)
        } else {
            size.div_ceil(MIN_BLOCK_SIZE) * MIN_BLOCK_SIZE
        }
    }

    /// The most bytes of segments the allocator may hold on a device of `capacity` bytes,
    /// when a memory fraction is set (`allowed_memory_maximum`).
    pub fn allowed_memory(&self, capacity: u64) -> Option<u64> {
        self.memory_fraction
            .map(|fraction| (fraction * capacity as f64) as u64)
    }

    /// Whether the age-based collection of cached segments runs on a cache miss.
    pub fn garbage_collection_enabled(&self) -> bool {
        self.memory_fraction.is_some() && self.garbage_collection_threshold > 0.0
    }

    /// The `roundup_power2_divisions` entry for `size`: intervals start at 1 MiB, one per
    /// power of two, the last one open-ended.
    fn divisions_for(&self, size: u64) -> u64 {
        let log_size = u64::from(size.ilog2());
        let interval_start = u64::from(SMALL_SIZE.ilog2());
        let index = log_size.saturating_sub(interval_start) as usize;
        self.roundup_power2_divisions[index.min(ROUNDUP_POWER2_INTERVALS - 1)]
    }
}

/// Rounds `size` up to the next of `divisions` equal steps between two powers of two;
/// powers of two stay as they are.
fn roundup_power2_next_division(size: u64, divisions: u64) -> u64 {
    if size.is_power_of_two() {
        return size;
    }
    let floor = 1u64 << size.ilog2();
    let step = floor >> divisions.ilog2();
    if step == 0 {
        return floor << 1;
    }
    let rounded_down = size & !(step - 1);
    if rounded_down == size {
        size
    } else {
        rounded_down + step
    }
}

/// The pool a rounded request is served from (`get_pool`).
pub fn pool_for(rounded: u64) -> PoolKind {
    if rounded <= SMALL_SIZE {
        PoolKind::Small
    } else {
        PoolKind::Large
    }
}

/// The size of the segment obtained from the device when no cached block fits a rounded
/// request (`get_allocation_size`): 2 MiB for small requests, 20 MiB for large ones below
/// 10 MiB, otherwise the request rounded up to 2 MiB.
pub fn allocation_size(rounded: u64) -> u64 {
    if rounded <= SMALL_SIZE {
        SMALL_BUFFER
    } else if rounded < MIN_LARGE_ALLOC {
        LARGE_BUFFER
    } else {
        rounded.div_ceil(ROUND_LARGE) * ROUND_LARGE
    }
}
