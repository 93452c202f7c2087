//! `gc.collect()` with PEP 442 finalizers in its garbage: CPython finalizes the garbage,
//! checks its reachability again and clears what is still unreachable, all in the one
//! collection. The model's collector cannot run workload code, so it queues the finalizers
//! and keeps the set (`heap/finalized_garbage.rs`); an explicit collection then runs them
//! here and clears what they left unreachable before returning its count.
//!
//! Outside a collection CPython runs `__del__` and weakref callbacks inside the decref that
//! drops the last reference (`subtype_dealloc` → `PyObject_CallFinalizerFromDealloc`,
//! `handle_callbacks`). The model's decref cannot call workload code, so it queues them and
//! the expression loop runs the queue before its next op ([`Interpreter::run_due_finalizers`]),
//! the statement's end runs what is left: no workload code runs in between, so what a
//! finalizer prints or logs comes where CPython's does. Approximation: a native that calls
//! back into workload code (a `key=` function, `map`) may drop references between its
//! callbacks, whose finalizers then wait for the op's end.

use crate::python::interp::{Interpreter, R};

impl<'a> Interpreter<'a> {
    /// Runs the finalizers and weak callbacks queued since the last op, if any (one branch
    /// when there are none).
    #[inline]
    pub(in crate::python) fn run_due_finalizers(&mut self) -> R<()> {
        if self.heap.pending_finalizers.is_empty() && self.heap.weak.pending.is_empty() {
            return Ok(());
        }
        self.run_queued_finalizers()
    }

    /// Runs the queued finalizers, in queue order, each to its end before the next: the
    /// queue is taken first, so the ops of one finalizer run only what it queues itself
    /// (nested, as CPython's decref inside a `__del__` runs it). What an error leaves
    /// unrun goes back to the front of the queue.
    #[cold]
    fn run_queued_finalizers(&mut self) -> R<()> {
        self.run_finalizer_batch()?;
        if !self.heap.weak.pending.is_empty() {
            self.run_weak_callbacks()?;
        }
        Ok(())
    }

    /// The queued `__del__`s and generator `close()`s (see [`Self::run_queued_finalizers`]).
    fn run_finalizer_batch(&mut self) -> R<()> {
        let batch = std::mem::take(&mut self.heap.pending_finalizers);
        for (i, &id) in batch.iter().enumerate() {
            self.heap.pending_finalizers.push(id);
            if let Err(e) = self.run_pending_finalizers() {
                let rest = std::mem::take(&mut self.heap.pending_finalizers);
                self.heap.pending_finalizers = batch[i + 1..].to_vec();
                self.heap.pending_finalizers.extend(rest);
                return Err(e);
            }
        }
        Ok(())
    }

    /// `gc.collect(generation)`: returns CPython's `collected`.
    pub(in crate::python) fn explicit_collect(&mut self, generation: u8) -> R<u64> {
        // A set an automatic collection kept is left to a later collection, as before.
        self.heap.forget_finalizing_garbage();
        let first = self.collect(generation, false);
        if !self.heap.has_finalizing_garbage() {
            return Ok(first);
        }
        self.run_finalizer_batch()?;
        self.heap.collecting = true;
        let left = self.heap.clear_finalized_garbage();
        self.heap.collecting = false;
        self.release_dropped_storages(None);
        Ok(first + left)
    }
}
