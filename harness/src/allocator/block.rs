//! Blocks and the structures that find them quickly: an arena with per-segment neighbour
//! links, the ordered free sets of the pools, and an address index of live blocks.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use super::config::PoolKind;
use super::free_set::FreeSet;

/// Index of a block in the [`Arena`].
pub(super) type BlockId = u32;
/// "No neighbour" in `prev` / `next`.
pub(super) const NONE: BlockId = BlockId::MAX;

/// A contiguous range of one segment, either handed to a caller or cached.
#[derive(Debug, Clone, Copy)]
pub(super) struct Block {
    pub addr: u64,
    pub size: u64,
    /// Bytes the caller asked for (0 while free).
    pub requested: u64,
    pub stream: u32,
    pub pool: PoolKind,
    pub allocated: bool,
    /// Neighbours in the same segment, by address.
    pub prev: BlockId,
    pub next: BlockId,
    /// The pool's best-fit search count when the block was cached; its age for
    /// `garbage_collection_threshold` is the count now minus this.
    pub gc_count_base: u64,
}

impl Block {
    /// Part of a segment that holds other blocks too.
    pub fn is_split(&self) -> bool {
        self.prev != NONE || self.next != NONE
    }
}

/// Block storage; removed blocks leave slots that later blocks reuse.
#[derive(Debug, Default)]
pub(super) struct Arena {
    blocks: Vec<Block>,
    vacant: Vec<BlockId>,
}

impl Arena {
    pub fn insert(&mut self, block: Block) -> BlockId {
        if let Some(id) = self.vacant.pop() {
            self.blocks[id as usize] = block;
            id
        } else {
            self.blocks.push(block);
            (self.blocks.len() - 1) as BlockId
        }
    }

    pub fn remove(&mut self, id: BlockId) {
        self.vacant.push(id);
    }

    pub fn get(&self, id: BlockId) -> &Block {
        &self.blocks[id as usize]
    }

    pub fn get_mut(&mut self, id: BlockId) -> &mut Block {
        &mut self.blocks[id as usize]
    }
}

/// Position of a free block in its pool: torch orders free blocks by stream, then size, then
/// address, so the first entry at or after `(stream, size, 0)` is the best fit on that stream.
pub(super) type FreeKey = (u32, u64, u64, BlockId);

/// One block pool: its free blocks and how many best-fit searches it has served (counted
/// only while garbage collection is enabled, like torch).
#[derive(Debug, Default)]
pub(super) struct Pool {
    pub free: FreeSet,
    /// The free blocks that are whole segments (not split), in the same order: what
    /// `empty_cache` releases, found without scanning the split fragments, so that repeated
    /// `empty_cache` calls cost what they release, not the size of the cache. A cached
    /// block's split state cannot change while it is cached (neighbours are merged only
    /// after they leave the pool), so membership is decided on entry.
    pub whole: FreeSet,
    pub free_block_searches: u64,
}

impl Pool {
    /// Caches a block under `key`.
    pub fn insert(&mut self, key: FreeKey, whole_segment: bool) {
        self.free.insert(key);
        if whole_segment {
            self.whole.insert(key);
        }
    }

    /// Takes the block under `key` out of the cache.
    pub fn remove(&mut self, key: &FreeKey) {
        if self.free.remove(key) {
            self.whole.remove(key);
        }
    }
}

pub(super) fn free_key(block: &Block, id: BlockId) -> FreeKey {
    (block.stream, block.size, block.addr, id)
}

/// Live blocks by address. Addresses are 512-byte aligned, so a multiplicative hash spreads
/// them well and is much cheaper than the default SipHash.
pub(super) type LiveIndex = HashMap<u64, BlockId, BuildHasherDefault<AddressHasher>>;

#[derive(Default)]
pub(super) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, value: u64) {
        let h = (self.0 ^ value).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = h ^ (h >> 29);
    }
}
