//! A fast hasher for the reader's maps: frame-index keys of stacks and device addresses.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A multiply-rotate hasher for the frame-index keys of stacks: a million trace entries each
/// hash a list of some fifty small integers, where the default hasher's DoS resistance costs
/// more than the rest of the reading. The keys come from the file, but a collision only
/// slows the map down.
#[derive(Default)]
pub(super) struct FastHasher(u64);

impl Hasher for FastHasher {
    /// The multiplication mixes upwards; folding the high half down gives the table's low
    /// bits (its bucket index) that mixing too, for keys like 512-byte-aligned addresses.
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
    /// Eight bytes at a time: a `[u32]` key arrives here as one byte slice.
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(buf));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(buf) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Maps keyed by device address: one lookup or more per trace entry, so the fast hasher.
pub(super) type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<FastHasher>>;
