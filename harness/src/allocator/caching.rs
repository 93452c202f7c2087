//! The caching allocator itself: malloc, free, empty_cache over the two pools.

use std::collections::BTreeMap;

use crate::timeline::Action;

use super::block::{Arena, Block, BlockId, FreeKey, LiveIndex, NONE, Pool, free_key};
use super::config::{
    AllocatorConfig, MIN_BLOCK_SIZE, ONE_EXBIBYTE, PoolKind, SMALL_SIZE, allocation_size, pool_for,
};
use super::device::{DeviceMemory, SimulatedDevice};
use super::layout::{BlockInfo, BlockState, SegmentInfo};
use super::oom::{EXABYTE_MESSAGE, OomFacts, OutOfMemory, oom_message};
use super::stats::AllocatorStats;

/// One allocator event, in the vocabulary of torch's trace entries. Sizes follow torch:
/// `alloc` / `free_*` carry the unrounded request, `segment_*` the segment size, `oom` the
/// rounded request (with `addr` 0 and `device_free` set).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocatorEvent {
    pub action: Action,
    pub addr: u64,
    pub size: u64,
    pub stream: u32,
    pub device_free: Option<u64>,
}

impl AllocatorEvent {
    fn new(action: Action, addr: u64, size: u64, stream: u32) -> Self {
        AllocatorEvent {
            action,
            addr,
            size,
            stream,
            device_free: None,
        }
    }
}

/// `free` was given an address that is not a live allocation of this allocator.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("free of address {addr:#x}, which is not a live allocation")]
pub struct UnknownAddress {
    pub addr: u64,
}

/// PyTorch's CUDA caching allocator for one device (see the module documentation).
pub struct CachingAllocator<D: DeviceMemory = SimulatedDevice> {
    device: D,
    config: AllocatorConfig,
    blocks: Arena,
    small_pool: Pool,
    large_pool: Pool,
    live: LiveIndex,
    /// Segment base address → the block at that address (always the segment's first block:
    /// splits keep the low part and merges keep the lower block).
    segments: BTreeMap<u64, BlockId>,
    stats: AllocatorStats,
}

impl<D: DeviceMemory> CachingAllocator<D> {
    pub fn new(device: D, config: AllocatorConfig) -> Self {
        CachingAllocator {
            device,
            config,
            blocks: Arena::default(),
            small_pool: Pool::default(),
            large_pool: Pool::default(),
            live: LiveIndex::default(),
            segments: BTreeMap::new(),
            stats: AllocatorStats::default(),
        }
    }

    pub fn config(&self) -> &AllocatorConfig {
        &self.config
    }

    /// Settings changed while running (`torch.cuda.memory._set_allocator_settings`); they
    /// apply to the requests that follow.
    pub fn config_mut(&mut self) -> &mut AllocatorConfig {
        &mut self.config
    }

    pub fn stats(&self) -> &AllocatorStats {
        &self.stats
    }

    pub fn reset_peak_stats(&mut self) {
        self.stats.reset_peaks();
    }

    pub fn device(&self) -> &D {
        &self.device
    }

    pub fn device_mut(&mut self) -> &mut D {
        &mut self.device
    }

    /// Allocates `size` bytes on `stream`; pushes the events it causes (`segment_alloc`,
    /// `alloc`, or `segment_free`…, `oom`) to `events`.
    ///
    /// A request of 0 bytes returns address 0 without touching the allocator, like torch's
    /// allocator; a request of 1 EiB or more fails with torch's "more than 1EB" message and no
    /// event, since torch rejects it before the allocator runs.
    pub fn malloc(
        &mut self,
        size: u64,
        stream: u32,
        events: &mut Vec<AllocatorEvent>,
    ) -> Result<u64, OutOfMemory> {
        if size == 0 {
            return Ok(0);
        }
        if size >= ONE_EXBIBYTE {
            return Err(OutOfMemory {
                requested: size,
                rounded: size,
                alloc_size: size,
                device_free: self.device.free_bytes(),
                message: EXABYTE_MESSAGE.to_string(),
            });
        }
        let rounded = self.config.round_size(size);
        let pool = pool_for(rounded);
        let alloc_size = allocation_size(rounded);

        // Registered free-memory callbacks (CUDA IPC collection) would run on a miss before a
        // second search; they release nothing in a single process.
        let mut found = self.take_free_block(pool, stream, rounded);
        if found.is_none() {
            if self.config.garbage_collection_enabled() {
                self.garbage_collect_cached_blocks(events);
            }
            found = self.alloc_segment(alloc_size, stream, pool, events);
        }
        if found.is_none() && self.release_available_cached_blocks(pool, stream, rounded, events) {
            found = self.alloc_segment(alloc_size, stream, pool, events);
        }
        if found.is_none() {
            self.release_cached_blocks(events);
            self.stats.num_alloc_retries += 1;
            found = self.alloc_segment(alloc_size, stream, pool, events);
        }
        match found {
            Some(id) => Ok(self.hand_out(id, rounded, size, events)),
            None => Err(self.out_of_memory(size, rounded, alloc_size, stream, events)),
        }
    }

    /// Frees the allocation at `addr`, pushing `free_requested` and `free_completed`, and
    /// returns its block to the cache, merged with free neighbours of its segment. Address 0
    /// (what a 0-byte malloc returns) is a no-op; any other address that is not live is an
    /// error and changes nothing.
    pub fn free(
        &mut self,
        addr: u64,
        events: &mut Vec<AllocatorEvent>,
    ) -> Result<(), UnknownAddress> {
        if addr == 0 {
            return Ok(());
        }
        let id = self.live.remove(&addr).ok_or(UnknownAddress { addr })?;
        let block = self.blocks.get_mut(id);
        let (size, requested, stream) = (block.size, block.requested, block.stream);
        block.allocated = false;
        block.requested = 0;
        events.push(AllocatorEvent::new(
            Action::FreeRequested,
            addr,
            requested,
            stream,
        ));
        events.push(AllocatorEvent::new(
            Action::FreeCompleted,
            addr,
            requested,
            stream,
        ));
        self.stats.block_freed(size, requested);
        self.cache_block(id);
        Ok(())
    }

    /// Returns every cached segment that holds no live block to the device (`empty_cache`),
    /// pushing one `segment_free` per segment.
    pub fn empty_cache(&mut self, events: &mut Vec<AllocatorEvent>) {
        self.release_cached_blocks(events);
    }

    /// The segment layout, segments in address order.
    pub fn segments(&self) -> Vec<SegmentInfo> {
        self.segments
            .iter()
            .map(|(&address, &head)| {
                let first = self.blocks.get(head);
                let mut info = SegmentInfo {
                    address,
                    total_size: 0,
                    stream: first.stream,
                    pool: first.pool,
                    allocated_size: 0,
                    requested_size: 0,
                    blocks: Vec::new(),
                };
                let mut id = head;
                while id != NONE {
                    let b = self.blocks.get(id);
                    info.total_size += b.size;
                    if b.allocated {
                        info.allocated_size += b.size;
                        info.requested_size += b.requested;
                    }
                    info.blocks.push(BlockInfo {
                        address: b.addr,
                        size: b.size,
                        requested_size: b.requested,
                        state: if b.allocated {
                            BlockState::ActiveAllocated
                        } else {
                            BlockState::Inactive
                        },
                    });
                    id = b.next;
                }
                info
            })
            .collect()
    }

    fn pool(&self, pool: PoolKind) -> &Pool {
        match pool {
            PoolKind::Small => &self.small_pool,
            PoolKind::Large => &self.large_pool,
        }
    }

    fn pool_mut(&mut self, pool: PoolKind) -> &mut Pool {
        match pool {
            PoolKind::Small => &mut self.small_pool,
            PoolKind::Large => &mut self.large_pool,
        }
    }

    /// Caches block `id` in its pool (`insert_into_blocks`), starting its age.
    fn insert_into_pool(&mut self, id: BlockId) {
        let kind = self.blocks.get(id).pool;
        let searches = self.pool(kind).free_block_searches;
        let block = self.blocks.get_mut(id);
        block.gc_count_base = searches;
        let (key, whole) = (free_key(block, id), !block.is_split());
        self.pool_mut(kind).insert(key, whole);
    }

    /// Best fit (`get_free_block`): the smallest cached block of the pool on the same stream
    /// that holds `rounded` bytes, lowest address among equals. Removes it from the pool.
    /// With `max_split_size` set, an oversize block serves only an oversize request, and
    /// only if it exceeds it by less than `max_non_split_rounding_size`.
    fn take_free_block(&mut self, pool: PoolKind, stream: u32, rounded: u64) -> Option<BlockId> {
        let gc = self.config.garbage_collection_enabled();
        let (max_split, max_rounding) = (
            self.config.max_split_size,
            self.config.max_non_split_rounding_size,
        );
        let pool = self.pool_mut(pool);
        if gc {
            pool.free_block_searches += 1;
        }
        let key = pool.free.first_from(&(stream, rounded, 0, 0))?;
        let (block_stream, block_size) = (key.0, key.1);
        if block_stream != stream
            || (rounded < max_split && block_size >= max_split)
            || (rounded >= max_split && block_size >= rounded.saturating_add(max_rounding))
        {
            return None;
        }
        pool.remove(&key);
        Some(key.3)
    }

    /// Obtains a new segment from the device (`alloc_block`): one unsplit block, not yet in
    /// any pool. Pushes `segment_alloc` on success.
    fn alloc_segment(
        &mut self,
        alloc_size: u64,
        stream: u32,
        pool: PoolKind,
        events: &mut Vec<AllocatorEvent>,
    ) -> Option<BlockId> {
        // With a memory fraction set, the allocator refuses without asking the device.
        if let Some(allowed) = self.config.allowed_memory(self.device.capacity())
            && self.stats.reserved_bytes.saturating_add(alloc_size) > allowed
        {
            return None;
        }
        let addr = self.device.malloc(alloc_size)?;
        let id = self.blocks.insert(Block {
            addr,
            size: alloc_size,
            requested: 0,
            stream,
            pool,
            allocated: false,
            prev: NONE,
            next: NONE,
            gc_count_base: 0,
        });
        self.segments.insert(addr, id);
        self.stats.segment_allocated(alloc_size);
        events.push(AllocatorEvent::new(
            Action::SegmentAlloc,
            addr,
            alloc_size,
            stream,
        ));
        Some(id)
    }

    /// Whether handing out `rounded` bytes of a block leaves a remainder worth keeping as a
    /// separate free block (`should_split`).
    fn should_split(&self, pool: PoolKind, rounded: u64, remaining: u64) -> bool {
        match pool {
            PoolKind::Small => remaining >= MIN_BLOCK_SIZE,
            PoolKind::Large => rounded < self.config.max_split_size && remaining > SMALL_SIZE,
        }
    }

    /// Gives block `id` to the caller (`alloc_found_block`): the low `rounded` bytes are
    /// handed out and the rest, if big enough, goes back to the pool as a new free block.
    fn hand_out(
        &mut self,
        id: BlockId,
        rounded: u64,
        requested: u64,
        events: &mut Vec<AllocatorEvent>,
    ) -> u64 {
        let block = *self.blocks.get(id);
        let already_split = block.is_split();
        let remaining = block.size - rounded;
        if self.should_split(block.pool, rounded, remaining) {
            let rest = self.blocks.insert(Block {
                addr: block.addr + rounded,
                size: remaining,
                requested: 0,
                stream: block.stream,
                pool: block.pool,
                allocated: false,
                prev: id,
                next: block.next,
                gc_count_base: 0,
            });
            if block.next != NONE {
                self.blocks.get_mut(block.next).prev = rest;
            }
            let b = self.blocks.get_mut(id);
            b.next = rest;
            b.size = rounded;
            self.insert_into_pool(rest);
            if already_split {
                // A cached fragment shrank by the bytes handed out.
                self.stats.inactive_split_bytes -= rounded;
            } else {
                self.stats.inactive_split_blocks += 1;
                self.stats.inactive_split_bytes += remaining;
            }
        } else if already_split {
            self.stats.inactive_split_blocks -= 1;
            self.stats.inactive_split_bytes -= block.size;
        }
        let b = self.blocks.get_mut(id);
        b.allocated = true;
        b.requested = requested;
        let (addr, size, stream) = (b.addr, b.size, b.stream);
        self.live.insert(addr, id);
        self.stats.block_allocated(size, requested);
        events.push(AllocatorEvent::new(Action::Alloc, addr, requested, stream));
        addr
    }

    /// Puts a freed block back into its pool (`free_block`), first merging it with the free
    /// neighbours of its segment so that free space between live blocks is one block.
    fn cache_block(&mut self, id: BlockId) {
        let mut survivor = id;
        let prev = self.blocks.get(id).prev;
        if prev != NONE && !self.blocks.get(prev).allocated {
            self.uncache_neighbour(prev);
            self.merge_with_next(prev);
            survivor = prev;
        }
        let next = self.blocks.get(survivor).next;
        if next != NONE && !self.blocks.get(next).allocated {
            self.uncache_neighbour(next);
            self.merge_with_next(survivor);
        }
        let block = self.blocks.get(survivor);
        if block.is_split() {
            self.stats.inactive_split_blocks += 1;
            self.stats.inactive_split_bytes += block.size;
        }
        self.insert_into_pool(survivor);
    }

    /// Takes a cached neighbour of a freed block out of its pool before the merge. Having a
    /// neighbour, it was an inactive split block.
    fn uncache_neighbour(&mut self, id: BlockId) {
        let block = self.blocks.get(id);
        let (key, pool, size) = (free_key(block, id), block.pool, block.size);
        self.pool_mut(pool).remove(&key);
        self.stats.inactive_split_blocks -= 1;
        self.stats.inactive_split_bytes -= size;
    }

    /// Extends block `id` over the block after it, which disappears.
    fn merge_with_next(&mut self, id: BlockId) {
        let upper_id = self.blocks.get(id).next;
        let (upper_size, upper_next) = {
            let upper = self.blocks.get(upper_id);
            (upper.size, upper.next)
        };
        let b = self.blocks.get_mut(id);
        b.size += upper_size;
        b.next = upper_next;
        if upper_next != NONE {
            self.blocks.get_mut(upper_next).prev = id;
        }
        self.blocks.remove(upper_id);
    }

    /// Returns every cached block that is a whole segment to the device
    /// (`release_cached_blocks`): the large pool, then the small pool, each in pool order
    /// (stream, size, address). Split segments stay.
    fn release_cached_blocks(&mut self, events: &mut Vec<AllocatorEvent>) {
        for pool in [PoolKind::Large, PoolKind::Small] {
            // Only whole segments are released: take them from their own index.
            while let Some(key) = self.pool_mut(pool).whole.pop_first() {
                self.release_block(pool, key, events);
            }
        }
    }

    /// Returns a cached whole segment to the device (`release_block`).
    fn release_block(&mut self, pool: PoolKind, key: FreeKey, events: &mut Vec<AllocatorEvent>) {
        self.pool_mut(pool).remove(&key);
        let (stream, size, addr, id) = key;
        self.device.free(addr, size);
        self.segments.remove(&addr);
        self.blocks.remove(id);
        self.stats.segment_freed(size);
        events.push(AllocatorEvent::new(Action::SegmentFree, addr, size, stream));
    }

    /// With `max_split_size` set, frees oversize cached segments of the stream before the
    /// whole cache is flushed (`release_available_cached_blocks`): the smallest one of at
    /// least max(request, max_split_size) bytes, or else the largest ones downwards until
    /// that many bytes are freed. Whether enough was freed decides a second device try.
    fn release_available_cached_blocks(
        &mut self,
        pool: PoolKind,
        stream: u32,
        rounded: u64,
        events: &mut Vec<AllocatorEvent>,
    ) -> bool {
        let max_split = self.config.max_split_size;
        if max_split == u64::MAX {
            return false;
        }
        let wanted = rounded.max(max_split);
        let search = (stream, wanted, 0, 0);
        let free = &self.pool(pool).free;
        if let Some(key) = free.first_from(&search)
            && key.0 == stream
        {
            // Oversize blocks are never split, so this is a whole segment.
            if self.blocks.get(key.3).is_split() {
                return false;
            }
            self.release_block(pool, key, events);
            return true;
        }
        let mut released = 0;
        let mut victims = Vec::new();
        for key in free.before_descending(&search) {
            if released >= wanted || key.1 < max_split || key.0 != stream {
                break;
            }
            // Oversize blocks are never split, so each is a whole segment.
            if !self.blocks.get(key.3).is_split() {
                released += key.1;
                victims.push(key);
            }
        }
        for key in victims {
            self.release_block(pool, key, events);
        }
        released >= wanted
    }

    /// With a memory fraction and `garbage_collection_threshold` set, on a cache miss while
    /// the reserved bytes exceed threshold × allowed: frees whole cached large-pool segments
    /// whose age (best-fit searches since they were cached) is at least the average age,
    /// repeating until the excess is reclaimed or nothing more can be freed
    /// (`garbage_collect_cached_blocks`).
    fn garbage_collect_cached_blocks(&mut self, events: &mut Vec<AllocatorEvent>) {
        let Some(allowed) = self.config.allowed_memory(self.device.capacity()) else {
            return;
        };
        let threshold = (self.config.garbage_collection_threshold * allowed as f64) as u64;
        let reserved = self.stats.reserved_bytes;
        if reserved <= threshold {
            return;
        }
        let target = reserved - threshold;
        let now = self.large_pool.free_block_searches;
        let age = |block: &Block| now - block.gc_count_base;
        let (mut total_age, mut freeable) = (0u64, 0u64);
        for (_, _, _, id) in self.large_pool.whole.iter() {
            total_age += age(self.blocks.get(id));
            freeable += 1;
        }
        let mut reclaimed = 0;
        let mut freed_one = true;
        while reclaimed < target && freed_one && freeable > 0 {
            let age_threshold = total_age as f64 / freeable as f64;
            freed_one = false;
            let victims: Vec<_> = self
                .large_pool
                .whole
                .iter()
                .filter(|&(_, _, _, id)| age(self.blocks.get(id)) as f64 >= age_threshold)
                .collect();
            for key in victims {
                freed_one = true;
                reclaimed += key.1;
                total_age -= age(self.blocks.get(key.3));
                freeable -= 1;
                self.release_block(PoolKind::Large, key, events);
            }
        }
    }

    /// Records the failure (`oom` event, `num_ooms`) and builds torch's error.
    fn out_of_memory(
        &mut self,
        requested: u64,
        rounded: u64,
        alloc_size: u64,
        stream: u32,
        events: &mut Vec<AllocatorEvent>,
    ) -> OutOfMemory {
        let device_free = self.device.free_bytes();
        events.push(AllocatorEvent {
            device_free: Some(device_free),
            ..AllocatorEvent::new(Action::Oom, 0, rounded, stream)
        });
        self.stats.num_ooms += 1;
        let message = oom_message(&OomFacts {
            alloc_size,
            device_index: self.config.device_index,
            capacity: self.device.capacity(),
            device_free,
            process_used: self.device.process_used_bytes(),
            allocated: self.stats.allocated_bytes,
            reserved: self.stats.reserved_bytes,
            allowed: self.config.allowed_memory(self.device.capacity()),
            docs_url: self.config.oom_docs_url,
        });
        OutOfMemory {
            requested,
            rounded,
            alloc_size,
            device_free,
            message,
        }
    }
}

#[cfg(test)]
impl<D: DeviceMemory> CachingAllocator<D> {
    /// Panics unless the internal structures agree with each other: blocks tile their
    /// segments, no two free neighbours are left unmerged, the pools hold exactly the free
    /// blocks, the live index exactly the allocated ones, and the stats match.
    pub(super) fn assert_consistent(&self) {
        let mut free_keys = Vec::new();
        let (mut allocated, mut requested, mut reserved, mut live) = (0, 0, 0, 0);
        let (mut split_blocks, mut split_bytes) = (0, 0);
        for (&base, &head) in &self.segments {
            let first = self.blocks.get(head);
            assert_eq!(first.addr, base);
            assert_eq!(first.prev, NONE);
            let (mut id, mut end, mut prev_free) = (head, base, false);
            while id != NONE {
                let b = self.blocks.get(id);
                assert_eq!(b.addr, end, "blocks tile the segment");
                assert_eq!((b.stream, b.pool), (first.stream, first.pool));
                if b.next != NONE {
                    assert_eq!(self.blocks.get(b.next).prev, id);
                }
                end += b.size;
                if b.allocated {
                    allocated += b.size;
                    requested += b.requested;
                    live += 1;
                    assert_eq!(self.live.get(&b.addr), Some(&id));
                    prev_free = false;
                } else {
                    assert!(!prev_free, "adjacent free blocks were not merged");
                    prev_free = true;
                    free_keys.push((b.pool, free_key(b, id)));
                    if b.is_split() {
                        split_blocks += 1;
                        split_bytes += b.size;
                    }
                }
                id = b.next;
            }
            reserved += end - base;
        }
        assert_eq!(self.live.len() as u64, live);
        let mut pooled: Vec<_> = self
            .small_pool
            .free
            .iter()
            .map(|k| (PoolKind::Small, k))
            .collect();
        pooled.extend(self.large_pool.free.iter().map(|k| (PoolKind::Large, k)));
        free_keys.sort();
        pooled.sort();
        assert_eq!(free_keys, pooled, "pools hold exactly the free blocks");
        for pool in [&self.small_pool, &self.large_pool] {
            let whole: Vec<_> = pool
                .free
                .iter()
                .filter(|&(_, _, _, id)| !self.blocks.get(id).is_split())
                .collect();
            assert!(
                whole.iter().copied().eq(pool.whole.iter()),
                "the whole-segment index holds exactly the unsplit free blocks"
            );
        }
        let s = &self.stats;
        assert_eq!(s.allocated_bytes, allocated);
        assert_eq!(s.requested_bytes, requested);
        assert_eq!(s.reserved_bytes, reserved);
        assert_eq!(s.allocations, live);
        assert_eq!(s.segments, self.segments.len() as u64);
        assert_eq!(
            (s.inactive_split_blocks, s.inactive_split_bytes),
            (split_blocks, split_bytes)
        );
        assert_eq!(self.device.capacity() - self.device.free_bytes(), reserved);
    }
}
