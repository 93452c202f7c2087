//! `gc.collect()` with PEP 442 finalizers in its garbage: CPython finalizes the garbage,
//! checks its reachability again and clears what is still unreachable, all in the one
//! collection. The model's collector cannot run workload code, so it queues the finalizers
//! and keeps the set (`heap/finalized_garbage.rs`); an explicit collection then runs them
//! here and clears what they left unreachable before returning its count.

use crate::python::interp::{Interpreter, R};

impl<'a> Interpreter<'a> {
    /// `gc.collect(generation)`: returns CPython's `collected`.
    pub(in crate::python) fn explicit_collect(&mut self, generation: u8) -> R<u64> {
        // A set an automatic collection kept is left to a later collection, as before.
        self.heap.forget_finalizing_garbage();
        let first = self.collect(generation, false);
        if !self.heap.has_finalizing_garbage() {
            return Ok(first);
        }
        self.run_pending_finalizers()?;
        self.heap.collecting = true;
        let left = self.heap.clear_finalized_garbage();
        self.heap.collecting = false;
        self.release_dropped_storages(None);
        Ok(first + left)
    }
}
