//! The hash table of a `set` or `frozenset`, laid out as CPython lays it out, so that
//! iteration order (and `pop`) follow the interpreter's: open addressing over a power-of-two
//! table (8 slots at least), up to 9 linear probes from the home slot when they fit before
//! the table's end, then the perturbed jump `i = i*5 + 1 + (perturb >>= 5)`; a table more
//! than 3/5 full (deleted slots included) grows to the smallest power of two above 4×
//! (2× past 50,000) the live entries, re-inserting in slot order. Deleted entries stay as
//! dummies until the next resize, and insertion never reuses them (3.7+). Equality of
//! keys is the caller's: lookups take an equality test.

use super::Value;

const MIN_SIZE: usize = 8;
const LINEAR_PROBES: usize = 9;
const PERTURB_SHIFT: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    Empty,
    Dummy,
    Full(i64, Value),
}

#[derive(Debug, Clone)]
pub struct SetTable {
    slots: Vec<Slot>,
    /// Live entries plus dummies.
    fill: usize,
    used: usize,
    /// Where `pop` looks first (CPython's `finger`).
    finger: usize,
    /// The last key [`SetTable::nth`] found, as (index, slot), so that a loop asking for
    /// the next index resumes there instead of walking the table from the start (as
    /// CPython's set iterator keeps its position). Forgotten on every change.
    cursor: std::cell::Cell<Option<(usize, usize)>>,
}

impl Default for SetTable {
    fn default() -> Self {
        SetTable {
            slots: vec![Slot::Empty; MIN_SIZE],
            fill: 0,
            used: 0,
            finger: 0,
            cursor: std::cell::Cell::new(None),
        }
    }
}

/// The slots a hash visits, in order (endless; callers stop at a match or an empty slot).
fn probe_sequence(hash: i64, mask: usize) -> impl Iterator<Item = usize> {
    let mut perturb = hash as u64;
    let mut home = (hash as u64 as usize) & mask;
    let mut step = 0usize;
    std::iter::from_fn(move || {
        let linear = if home + LINEAR_PROBES <= mask {
            LINEAR_PROBES
        } else {
            0
        };
        let out = home + step;
        if step < linear {
            step += 1;
        } else {
            step = 0;
            perturb >>= PERTURB_SHIFT;
            home = (home
                .wrapping_mul(5)
                .wrapping_add(1)
                .wrapping_add(perturb as usize))
                & mask;
        }
        Some(out)
    })
}

impl SetTable {
    pub fn len(&self) -> usize {
        self.used
    }

    pub fn is_empty(&self) -> bool {
        self.used == 0
    }

    /// The live entries in slot order (CPython's iteration order).
    pub fn items(&self) -> impl Iterator<Item = Value> + '_ {
        self.entries().map(|(_, v)| v)
    }

    /// (hash, key) of the live entries in slot order.
    pub fn entries(&self) -> impl Iterator<Item = (i64, Value)> + '_ {
        self.slots.iter().filter_map(|s| match s {
            Slot::Full(h, v) => Some((*h, *v)),
            _ => None,
        })
    }

    /// The slot holding a key equal to `key` (same hash, then `eq`).
    pub fn find(&self, hash: i64, mut eq: impl FnMut(Value) -> bool) -> Option<usize> {
        for i in probe_sequence(hash, self.slots.len() - 1) {
            match self.slots[i] {
                Slot::Empty => return None,
                Slot::Full(h, v) if h == hash && eq(v) => return Some(i),
                _ => {}
            }
        }
        None
    }

    /// Inserts a key known to be absent (the caller ran [`SetTable::find`]), taking over its
    /// reference; grows the table when it is too full.
    pub fn insert_new(&mut self, hash: i64, key: Value) {
        self.cursor.set(None);
        self.insert_clean(hash, key);
        self.fill += 1;
        self.used += 1;
        if self.fill * 5 >= (self.slots.len() - 1) * 3 {
            let minused = if self.used > 50_000 {
                self.used * 2
            } else {
                self.used * 4
            };
            self.resize(minused);
        }
    }

    /// Puts a key in the first empty slot of its probe sequence (no counters touched).
    fn insert_clean(&mut self, hash: i64, key: Value) {
        let mask = self.slots.len() - 1;
        let at = probe_sequence(hash, mask)
            .find(|&i| self.slots[i] == Slot::Empty)
            .expect("a set table always has an empty slot");
        self.slots[at] = Slot::Full(hash, key);
    }

    /// Rebuilds the table with room for `minused` entries, re-inserting in slot order and
    /// dropping the dummies.
    pub fn resize(&mut self, minused: usize) {
        self.cursor.set(None);
        let mut size = MIN_SIZE;
        while size <= minused {
            size <<= 1;
        }
        let old = std::mem::replace(&mut self.slots, vec![Slot::Empty; size]);
        for slot in old {
            if let Slot::Full(h, v) = slot {
                self.insert_clean(h, v);
            }
        }
        self.fill = self.used;
    }

    /// Makes room before merging `incoming` entries (CPython's `set_merge` grows once, to
    /// twice the combined size, when they would overfill the table).
    pub fn reserve_for_merge(&mut self, incoming: usize) {
        self.cursor.set(None);
        if (self.fill + incoming) * 5 >= (self.slots.len() - 1) * 3 {
            self.resize((self.used + incoming) * 2);
        }
    }

    /// Whether nothing (not even a dummy) was ever left in the table.
    pub fn never_filled(&self) -> bool {
        self.fill == 0
    }

    /// Appends entries to a never-filled table without equality checks (merging the
    /// entries of another set, which holds no duplicates).
    pub fn insert_distinct(&mut self, hash: i64, key: Value) {
        self.cursor.set(None);
        self.insert_clean(hash, key);
        self.fill += 1;
        self.used += 1;
    }

    /// Copies another table's layout into a never-filled table of the same size (no
    /// dummies in either): what `set_merge` does when the sizes match.
    pub fn same_layout_as(&self, other: &SetTable) -> bool {
        self.fill == 0 && self.slots.len() == other.slots.len() && other.fill == other.used
    }

    /// Takes another table's slots as they are (see [`SetTable::same_layout_as`]); the
    /// caller owns new references to the keys.
    pub fn copy_layout(&mut self, other: &SetTable) {
        self.cursor.set(None);
        self.slots = other.slots.clone();
        self.fill = other.fill;
        self.used = other.used;
    }

    /// Removes the key in slot `at`, leaving a dummy; returns the key's reference.
    pub fn remove_at(&mut self, at: usize) -> Value {
        self.cursor.set(None);
        let Slot::Full(_, v) = std::mem::replace(&mut self.slots[at], Slot::Dummy) else {
            unreachable!("remove_at on a live slot")
        };
        self.used -= 1;
        v
    }

    /// `set.pop()`: the first live slot from the finger on, wrapping around.
    pub fn pop(&mut self) -> Option<Value> {
        self.cursor.set(None);
        if self.used == 0 {
            return None;
        }
        let n = self.slots.len();
        let mut at = self.finger % n;
        while !matches!(self.slots[at], Slot::Full(..)) {
            at = (at + 1) % n;
        }
        self.finger = at + 1;
        Some(self.remove_at(at))
    }

    /// Empties the table back to its minimal size; returns the keys' references.
    pub fn clear(&mut self) -> Vec<Value> {
        self.cursor.set(None);
        let keys = self.items().collect();
        *self = SetTable::default();
        keys
    }

    /// The `index`-th live key in slot order.
    pub fn nth(&self, index: usize) -> Option<Value> {
        let (skip, from) = match self.cursor.get() {
            Some((i, slot)) if i < index => (index - i - 1, slot + 1),
            Some((i, slot)) if i == index => (0, slot),
            _ => (index, 0),
        };
        let found = self.slots[from.min(self.slots.len())..]
            .iter()
            .enumerate()
            .filter_map(|(k, s)| match s {
                Slot::Full(_, v) => Some((from + k, *v)),
                _ => None,
            })
            .nth(skip);
        self.cursor.set(found.map(|(slot, _)| (index, slot)));
        found.map(|(_, v)| v)
    }

    /// Moves every key out (for deallocation and `tp_clear`).
    pub fn drain(&mut self) -> Vec<Value> {
        self.clear()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(keys: &[i64]) -> SetTable {
        let mut t = SetTable::default();
        for &k in keys {
            if t.find(k, |v| v == Value::Int(k)).is_none() {
                t.insert_new(k, Value::Int(k));
            }
        }
        t
    }

    fn order(t: &SetTable) -> Vec<i64> {
        t.items()
            .map(|v| match v {
                Value::Int(i) => i,
                _ => unreachable!(),
            })
            .collect()
    }

    /// Measured on CPython 3.6 – 3.15: `s = set(); for x in (5, 1, 9, 17, 3, 33): s.add(x)`
    /// iterates as `[1, 33, 3, 5, 9, 17]` (the fifth add grows 8 slots to 32, then 33's
    /// home slot 1 is taken and the linear probe puts it in slot 2).
    #[test]
    fn small_ints_iterate_in_cpython_s_order() {
        assert_eq!(order(&build(&[5, 1, 9, 17, 3, 33])), [1, 33, 3, 5, 9, 17]);
    }

    /// A merge into an empty table: grown to 16 slots for 6 incoming keys, then re-inserted
    /// in the source's slot order: measured `[1, 33, 3, 17, 5, 9]` for the constant display
    /// `{5, 1, 9, 17, 3, 33}` on 3.9 – 3.15 (`BUILD_SET` + `SET_UPDATE` of a frozenset).
    #[test]
    fn merging_into_an_empty_table_reorders_as_cpython() {
        let source = build(&[5, 1, 9, 17, 3, 33]);
        let mut t = SetTable::default();
        t.reserve_for_merge(source.len());
        for (h, v) in source.entries() {
            t.insert_distinct(h, v);
        }
        assert_eq!(order(&t), [1, 33, 3, 17, 5, 9]);
    }

    /// In 8 slots (no room for linear probes) 1, 9 and 17 share home slot 1: 9 jumps to
    /// slot 6 and 17 on to slot 7. Removing 1 leaves a dummy that a lookup of 17 passes.
    #[test]
    fn removal_leaves_a_dummy_that_lookups_skip() {
        let mut t = build(&[1, 9, 17]);
        assert_eq!(order(&t), [1, 9, 17]);
        let at = t.find(1, |v| v == Value::Int(1)).expect("1 is there");
        t.remove_at(at);
        assert!(t.find(17, |v| v == Value::Int(17)).is_some());
        assert_eq!(t.len(), 2);
        assert_eq!(t.pop(), Some(Value::Int(9)));
        assert_eq!(t.pop(), Some(Value::Int(17)));
        assert_eq!(t.pop(), None);
    }
}
