//! 3.14+'s free lists of `list_iterator` and `tuple_iterator` objects (10 each,
//! [`profile::SEQ_ITER_FREE_LIST_314`]): a freed iterator goes onto its list without lowering
//! the generation-0 counter and the next one of its type is taken from there uncounted, until
//! a full collection empties the lists (`_PyGC_ClearAllFreeLists`). Up to 3.13 the capacity
//! is 0, so every iterator is counted and its deallocation lowers the counter.
//!
//! Measured on 3.14.10 and 3.15.2 (`tests/gc_schedule_seq_iterators.rs`): after
//! `gc.collect()` `iter(xs)` counts 1, dropping it 0, a second `iter(xs)` 0 and then an
//! `iter(ts)` 1 (separate lists); dropping 20 list iterators lowers the count by 10.
//!
//! A `for` loop's hidden iterator uses the same lists: on 3.14 `GET_ITER` of a list or tuple
//! makes a real iterator; 3.15's virtual iterators make none
//! ([`profile::GcProfile::virtual_loop_iterators`]).
//!
//! The same header gives 3.14 a free list of builtin-method objects (16; 3.8 had one of 256,
//! gone in 3.9): `reversed(xs)` binds `list.__reversed__` for a moment, which on 3.9 – 3.13 is
//! counted and uncounted and on 3.8 and 3.14+ stays on that list (measured: `reversed(xs)`
//! after `gc.collect()` counts 3 on 3.8.18 and 2 on 3.9.18, with its argument tuple, 1 on
//! 3.10.13 – 3.13.0, 2 on 3.14.10 and 3.15.2).

use super::{FreeListKind, Heap, ObjKind, Value};

impl Heap {
    /// The free list a `SeqIter` wrapper (`items`: the sequence, the position) returns to:
    /// a list's or tuple's iterator (a tuple subclass's too). A `str_iterator` (marked by a
    /// third item) and a `dict_keyiterator` have none.
    pub(super) fn seq_iter_free_list(&self, items: &[Value]) -> Option<FreeListKind> {
        if items.len() != 2 {
            return None;
        }
        let Value::Obj(source) = items[0] else {
            return None;
        };
        match self.objects.get(source.0 as usize)?.as_ref()?.kind {
            ObjKind::List(_) => Some(FreeListKind::ListIter),
            ObjKind::Tuple(_) | ObjKind::StructSeq { .. } | ObjKind::NamedTuple { .. } => {
                Some(FreeListKind::TupleIter)
            }
            _ => None,
        }
    }

    /// `GET_ITER` of a loop over `iterable` (called only where CPython makes an iterator
    /// object): counts it unless its free list serves it, and remembers which free list it
    /// returns to for [`Heap::free_loop_iterator`]. Returns whether a collection is due.
    pub fn count_loop_iterator(&mut self, iterable: Value) -> bool {
        let list = match iterable {
            Value::Obj(o) => match self.kind(o) {
                ObjKind::List(_) => Some(FreeListKind::ListIter),
                ObjKind::Tuple(_) | ObjKind::NamedTuple { .. } => Some(FreeListKind::TupleIter),
                _ => None,
            },
            _ => None,
        };
        self.loop_iterators.push(list);
        if let Some(kind) = list
            && self.free_list(kind).pop()
        {
            return false;
        }
        self.count_raw_allocations(1)
    }

    /// Whether `GET_ITER` of a list or tuple makes an iterator object: up to 3.14 (3.14 from
    /// its free list when it can); 3.15's virtual iterators make none. Measured: a generator
    /// looping over a list, drained by `list(g())` right after `gc.collect()`, counts 2 on
    /// 3.14.10 (the list, and its iterator left on the free list) and 1 on 3.15.2.
    pub fn sequence_loops_make_iterators(&self) -> bool {
        !self.profile.virtual_loop_iterators
    }

    /// The end of a loop whose iterator [`Heap::count_loop_iterator`] counted: onto its free
    /// list if there is room, else the counter drops. Loops end innermost first; an iterator
    /// left behind by an exception only makes a later one's list a guess (approximate).
    pub fn free_loop_iterator(&mut self) {
        let list = self.loop_iterators.pop().flatten();
        self.note_gc_del(list);
    }

    /// A builtin method bound only for one call (`reversed(xs)`'s `__reversed__`): counted
    /// unless its free list (3.8, 3.14+) serves it, then freed onto that list. Returns whether a
    /// collection is due.
    pub fn count_temporary_cfunction(&mut self) -> bool {
        let due = !self.cfunction_free.pop() && self.count_raw_allocations(1);
        self.note_gc_del(Some(FreeListKind::CFunction));
        due
    }
}
