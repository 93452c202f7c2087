//! The result tuple `enumerate` and `zip` keep between items (`en_result`, `result` in
//! CPython's `Objects/enumobject.c` and `Python/bltinmodule.c`): made when the iterator is,
//! and handed out again for the next item when nothing else holds it (a `for` loop that
//! unpacks each item drops its reference before asking for the next). Only when the caller
//! kept the previous item is a new tuple made. The kept tuple also keeps the last item's
//! values alive for as long as the iterator lives.
//!
//! Measured with `gc.get_count()` around a kept call right after `gc.collect()`
//! (`tests/gc_schedule_iterator_results.rs`): `enumerate(xs)` counts 3 (the enumerate, its
//! list iterator, its result tuple) and `zip(a, b)` 5 (the zip, its tuple of iterators, the
//! two iterators, its result tuple) on 3.8.18 – 3.15.2, besides the packed arguments of
//! `heap/builtin_type_calls.rs`.

//!
//! From 3.14 a tuple made holding only atoms starts untracked (measured:
//! `gc.is_tracked(tuple([None, None]))` is false on 3.14.10 and 3.15.2, true on 3.13.0), so the
//! result tuple does, and `_PyTuple_Recycle` tracks it again when it is first handed out again;
//! that tracking is not counted (measured: a kept `next(enumerate(xs))` counts 0 on 3.14.10).

use super::{Heap, ObjId, ObjKind, UNTRACKED, Value};

impl Heap {
    /// A result tuple was just made holding only `None`: from 3.14 such a tuple starts
    /// untracked.
    pub fn new_result_tuple(&mut self, id: ObjId) {
        if self.profile.version.minor >= 14 {
            self.untrack(id);
        }
    }

    /// Hands `result` out again holding `items` if the iterator is its only owner (CPython
    /// tests `Py_REFCNT(result) == 1`): the old items are released after the new ones are
    /// stored, and an untracked tuple is tracked again (uncounted). Returns the tuple (a new
    /// reference), or `items` back when a new tuple must be made.
    pub fn reuse_result_tuple(
        &mut self,
        result: Value,
        items: Vec<Value>,
    ) -> Result<Value, Vec<Value>> {
        let Value::Obj(id) = result else {
            return Err(items);
        };
        if self.get(id).refcount != 1 || !matches!(self.kind(id), ObjKind::Tuple(_)) {
            return Err(items);
        }
        let old = match &mut self.get_mut(id).kind {
            ObjKind::Tuple(held) => std::mem::replace(held, items),
            _ => unreachable!("checked above"),
        };
        if self.get(id).generation == UNTRACKED {
            self.track(id, 0);
        }
        self.incref(result);
        self.decref_all(old);
        Ok(result)
    }
}
