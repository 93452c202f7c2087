//! `UNPACK_SEQUENCE` of a list or tuple (`a, b = xs`): the iterator its generic path makes.
//!
//! From 3.12 the instruction is quickened with a warm-up counter (value 1, as `CALL` is, see
//! `call_sites.rs`): a site's first run is the generic instruction, which unpacks through
//! `unpack_iterable` (`PyObject_GetIter`: a list or tuple iterator, allocated and freed once the
//! items are out), and its second specializes into `UNPACK_SEQUENCE_LIST`/`_TUPLE`/`_TWO_TUPLE`,
//! which make no iterator. Free-threaded 3.13 does not specialize (`ENABLE_SPECIALIZATION` is
//! off with `Py_GIL_DISABLED`), so every run is generic there. Up to 3.11 (3.11 runs a function's
//! first calls unquickened) the iterator is not modelled: it is freed at once, so it only moves
//! where inside the statement a collection could fire (approximation).
//!
//! Measured (`gc.collect()`, then `gc.get_count()` around a call of `def f(): a, b = xs`):
//! 3.14.10 and 3.15.2 count 1 for the first call and 0 for the second, the iterator staying on
//! 3.14's free list of list (tuple) iterators; 3.8.18 – 3.13.0 and 3.13.5t count 0 once the
//! function's frame is warm (`tests/gc_schedule_unpack_sites.rs`).

use super::{Heap, Value};
use rustc_hash::FxHashSet;

/// The unpacking sites that have run once (so are specialized from 3.12), by a key of the site.
#[derive(Debug, Default, Clone)]
pub struct UnpackSites {
    run: FxHashSet<usize>,
}

impl Heap {
    /// `UNPACK_SEQUENCE` at `site` of `value`: counts the generic path's iterator (from its
    /// free list on 3.14+) and frees it. Returns whether a collection is due.
    pub fn unpack_sequence(&mut self, site: usize, value: Value) -> bool {
        let version = self.profile.version;
        if version.minor < 12 || !self.may_be_sequence(value) {
            return false;
        }
        let specializes = !(version.minor == 13 && version.free_threaded);
        if !self.unpack_sites.run.insert(site) && specializes {
            return false;
        }
        let due = self.count_loop_iterator(value);
        self.free_loop_iterator();
        due
    }

    fn may_be_sequence(&self, value: Value) -> bool {
        matches!(value, Value::Obj(o)
            if matches!(self.kind(o), super::ObjKind::List(_) | super::ObjKind::Tuple(_)))
    }
}
