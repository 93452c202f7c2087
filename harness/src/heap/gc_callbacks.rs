//! What a collection allocates for the Python functions in `gc.callbacks` (a calibration
//! probe's logger, a user's monitoring hook), which moves the generation-0 counter and the free
//! lists like any other allocation (Modules/gcmodule.c `invoke_gc_callback`, v3.8 – v3.11;
//! Python/gc.c `do_gc_callback`, v3.12 on; read in CPython's sources).
//!
//! Each collection runs the callbacks twice: phase "start" before the collector resets the
//! counts, phase "stop" after. A phase builds one info dict (`Py_BuildValue("{sisnsn}")`) and
//! calls each callback with its two arguments on the C stack (`PyObject_CallFunction(cb, "sO",
//! ...)` builds a small stack, not a tuple, up to 3.11; `PyObject_Vectorcall` from 3.12; measured
//! on 3.8.18 with `sys._debugmallocstats()`: the 2-tuple free list is the same with and without
//! a callback, the dict free list one longer after a collection that began with it empty). Up
//! to 3.10 the call runs in a frame object of the callback's code. All of them go back to their free lists
//! when the phase ends, so a phase moves the counter only when a free list is empty, and
//! the "start" phase then leaves one more entry on that list than the workload alone would.
//! The callbacks' own bodies are taken to allocate no GC objects (the probe's appends one int
//! per value to a list).

use super::{FreeListKind, Heap};

/// The code key of the callbacks' frames (≤ 3.10): apart from function code indexes (from 0
/// up) and comprehension keys (from `u32::MAX` down).
const CALLBACK_CODE: u32 = u32::MAX / 2;

impl Heap {
    /// One phase of `invoke_gc_callback`; nothing when `gc.callbacks` is empty.
    pub(super) fn gc_callbacks_phase(&mut self) {
        if self.gc_callbacks == 0 {
            return;
        }
        // CPython's `collecting` flag is still set: these allocations never start a collection.
        let collecting = std::mem::replace(&mut self.collecting, true);
        self.temporary_object(FreeListKind::Dict, |heap| {
            if heap.profile.frame_objects {
                for _ in 0..heap.gc_callbacks {
                    heap.take_frame(CALLBACK_CODE);
                    heap.release_frame_of(CALLBACK_CODE);
                }
            }
        });
        self.collecting = collecting;
    }

    /// An object served by `list` (or counted) that lives while `during` runs, then goes back
    /// onto `list` (or is freed).
    fn temporary_object(&mut self, list: FreeListKind, during: impl FnOnce(&mut Heap)) {
        if !self.free_list(list).pop() {
            self.count_raw_allocations(1);
        }
        during(self);
        self.note_gc_del(Some(list));
    }
}
