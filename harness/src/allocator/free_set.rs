//! The ordered set of a pool's free blocks.
//!
//! A pool usually caches a few dozen blocks, and every malloc and free searches, inserts and
//! removes keys in it. For that size a sorted vector searched by bisection costs a fraction of
//! a B-tree's pointer chasing (and allocates nothing), so the set starts as one; once it holds
//! more than [`SORTED_LIMIT`] keys, shifting the vector on every change would cost more than
//! the tree, so it turns into a `BTreeSet` for good. Both forms hold the same keys in the same
//! order, so the allocator's choices do not depend on the form.

use std::collections::BTreeSet;

use super::block::FreeKey;

/// The most keys kept in the sorted vector (a shift moves at most 32 KiB).
const SORTED_LIMIT: usize = 1024;

/// Free-block keys in ascending order (stream, size, address, id).
#[derive(Debug)]
pub(super) enum FreeSet {
    Sorted(Vec<FreeKey>),
    Tree(BTreeSet<FreeKey>),
}

impl Default for FreeSet {
    fn default() -> Self {
        FreeSet::Sorted(Vec::new())
    }
}

impl FreeSet {
    /// Adds `key`; false if it was already present.
    pub fn insert(&mut self, key: FreeKey) -> bool {
        match self {
            FreeSet::Sorted(keys) => match keys.binary_search(&key) {
                Ok(_) => false,
                Err(at) => {
                    if keys.len() < SORTED_LIMIT {
                        keys.insert(at, key);
                    } else {
                        let mut tree: BTreeSet<FreeKey> = keys.drain(..).collect();
                        tree.insert(key);
                        *self = FreeSet::Tree(tree);
                    }
                    true
                }
            },
            FreeSet::Tree(tree) => tree.insert(key),
        }
    }

    /// Removes `key`; false if it was absent.
    pub fn remove(&mut self, key: &FreeKey) -> bool {
        match self {
            FreeSet::Sorted(keys) => match keys.binary_search(key) {
                Ok(at) => {
                    keys.remove(at);
                    true
                }
                Err(_) => false,
            },
            FreeSet::Tree(tree) => tree.remove(key),
        }
    }

    /// The smallest key at or after `key`.
    pub fn first_from(&self, key: &FreeKey) -> Option<FreeKey> {
        match self {
            FreeSet::Sorted(keys) => keys.get(keys.partition_point(|k| k < key)).copied(),
            FreeSet::Tree(tree) => tree.range(key..).next().copied(),
        }
    }

    /// The keys before `key`, largest first.
    pub fn before_descending<'a>(
        &'a self,
        key: &FreeKey,
    ) -> Box<dyn Iterator<Item = FreeKey> + 'a> {
        match self {
            FreeSet::Sorted(keys) => {
                let end = keys.partition_point(|k| k < key);
                Box::new(keys[..end].iter().rev().copied())
            }
            FreeSet::Tree(tree) => Box::new(tree.range(..key).rev().copied()),
        }
    }

    /// Removes and returns the smallest key.
    pub fn pop_first(&mut self) -> Option<FreeKey> {
        match self {
            FreeSet::Sorted(keys) if keys.is_empty() => None,
            FreeSet::Sorted(keys) => Some(keys.remove(0)),
            FreeSet::Tree(tree) => tree.pop_first(),
        }
    }

    /// All keys in ascending order.
    pub fn iter(&self) -> Box<dyn Iterator<Item = FreeKey> + '_> {
        match self {
            FreeSet::Sorted(keys) => Box::new(keys.iter().copied()),
            FreeSet::Tree(tree) => Box::new(tree.iter().copied()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift64*), so the trace is the same on every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn key(&mut self) -> FreeKey {
            let stream = (self.next() % 3) as u32;
            let size = 512 * (1 + self.next() % 64);
            let addr = 512 * (self.next() % 4096);
            (stream, size, addr, (self.next() % 8) as u32)
        }
    }

    /// A seeded random trace of inserts, removes and queries, growing past the vector's limit
    /// and shrinking again, answers exactly like a `BTreeSet` at every step.
    #[test]
    fn the_free_set_answers_like_an_ordered_tree_across_both_forms() {
        for seed in [1u64, 7, 0x5EED] {
            let mut rng = Rng(seed);
            let (mut set, mut model) = (FreeSet::default(), BTreeSet::new());
            let mut became_tree = false;
            for step in 0..12_000 {
                // Grow for the first half, then mostly shrink.
                let insert_odds = if step < 6_000 { 3 } else { 1 };
                let key = rng.key();
                match rng.next() % 5 {
                    n if n < insert_odds => assert_eq!(set.insert(key), model.insert(key)),
                    3 => {
                        // Remove a present key half the time, a random one otherwise.
                        let victim = match model.iter().nth(step % model.len().max(1)) {
                            Some(&k) if rng.next().is_multiple_of(2) => k,
                            _ => key,
                        };
                        assert_eq!(set.remove(&victim), model.remove(&victim));
                    }
                    _ => assert_eq!(set.pop_first(), model.pop_first()),
                }
                became_tree |= matches!(set, FreeSet::Tree(_));
                let probe = rng.key();
                assert_eq!(set.first_from(&probe), model.range(probe..).next().copied());
                if step.is_multiple_of(97) {
                    assert!(set.iter().eq(model.iter().copied()));
                    assert!(
                        set.before_descending(&probe)
                            .eq(model.range(..probe).rev().copied())
                    );
                }
            }
            assert!(became_tree, "the trace never grew past the vector's limit");
            assert!(set.iter().eq(model.iter().copied()));
        }
    }
}
