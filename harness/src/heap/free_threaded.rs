//! The collector of CPython's free-threaded builds (3.13t, 3.14t), from
//! `Python/gc_free_threading.c` (3.13.5: `record_allocation`, `record_deallocation`,
//! `gc_should_collect`, `gc_collect_internal`) and measured against a 3.13.5 free-threaded
//! build (see `reference/cpython-gc.md` §2c).
//!
//! There is one generation: every collection examines every tracked object. Allocations and
//! deallocations move a per-thread count that is added to the shared count only in steps of
//! 512, and a collection is due when the shared count exceeds both threshold 0 and a quarter of
//! the objects that survived the last collection. A collection zeroes the shared count but not
//! the thread's, so the garbage it frees is subtracted again: before the gh-142048 fix the shared
//! count goes that far below zero and the next collection comes that much later.

use super::schedule::CollectorState;
use super::{CollectionOutcome, CycleHit, Heap};

/// `LOCAL_ALLOC_COUNT_THRESHOLD`: a thread's count is flushed when it reaches ±512.
pub const LOCAL_FLUSH_STEP: i64 = 512;

#[derive(Debug, Clone)]
pub struct FreeThreadedState {
    /// The workload thread's buffered count (`_gc_thread_state.alloc_count`).
    pub local: i64,
    /// Dropped function objects that deferred reference counting keeps until the next
    /// collection frees them (see [`Heap::drop_top_level_function`]).
    pub deferred_garbage: u64,
    /// The shared count (`generations[0].count`); negative on unfixed releases.
    pub shared: i64,
    /// The release keeps the shared count from going below zero (gh-142048 fixed).
    pub negative_count_fixed: bool,
    /// Long-lived objects of the interpreter and its imports that the model does not hold:
    /// survivors of every collection, so part of `long_lived_total`.
    pub outside_objects: u64,
}

impl FreeThreadedState {
    pub fn new(outside_objects: u64, negative_count_fixed: bool) -> Self {
        FreeThreadedState {
            local: 0,
            deferred_garbage: 0,
            shared: 0,
            negative_count_fixed,
            outside_objects,
        }
    }

    /// `gc_should_collect`: the shared count is past threshold 0 and past a quarter of the
    /// survivors of the last collection (that second test is off when threshold 1 is 0).
    pub fn should_collect(&self, heap: &Heap) -> bool {
        let threshold = heap.thresholds[0] as i64;
        heap.enabled
            && threshold != 0
            && self.shared > threshold
            && (self.shared > (heap.long_lived_total / 4) as i64 || heap.thresholds[1] == 0)
    }

    /// Adds the thread's count to the shared one (unfixed releases let it go negative).
    fn flush(&mut self) {
        self.shared += self.local;
        self.local = 0;
        if self.negative_count_fixed {
            self.shared = self.shared.max(0);
        }
    }
}

impl Heap {
    fn free_threaded_state(&mut self) -> &mut FreeThreadedState {
        match &mut self.schedule {
            CollectorState::FreeThreaded(state) => state,
            _ => unreachable!("free-threaded bookkeeping under another collector"),
        }
    }

    /// `record_allocation`, `n` times: returns whether a flush found a collection due.
    pub(super) fn free_threaded_allocations(&mut self, n: u64) -> bool {
        let mut due = false;
        for _ in 0..n {
            let state = self.free_threaded_state();
            state.local += 1;
            if state.local >= LOCAL_FLUSH_STEP {
                state.flush();
                due |= !self.collecting && self.schedule_state_should_collect();
            }
        }
        self.mirror_free_threaded_count();
        due
    }

    /// `record_deallocation`.
    pub(super) fn free_threaded_deallocation(&mut self) {
        let state = self.free_threaded_state();
        state.local -= 1;
        if state.local <= -LOCAL_FLUSH_STEP {
            state.flush();
        }
        self.mirror_free_threaded_count();
    }

    /// A free-threaded build's shared count can start below zero (see `FreeThreadedState`).
    pub fn start_count_below_zero(&mut self, below: u64) {
        if let CollectorState::FreeThreaded(state) = &mut self.schedule {
            state.shared = -i64::try_from(below).unwrap_or(i64::MAX);
            self.mirror_free_threaded_count();
        }
    }

    /// A function object of code not nested in a function is made and its last reference
    /// dropped (a module-level class statement's body function). Free-threaded builds give
    /// such functions deferred reference counting (`PyFunction_NewWithQualName` checks
    /// `CO_NESTED`, 3.13 `Objects/funcobject.c`): dropping it frees nothing; the next
    /// collection finds it unreachable and frees it. Default builds free it at once, so the
    /// model counts nothing for it there. Returns whether a collection is due.
    pub fn drop_top_level_function(&mut self) -> bool {
        let CollectorState::FreeThreaded(state) = &mut self.schedule else {
            return false;
        };
        state.deferred_garbage += 1;
        self.free_threaded_allocations(1)
    }

    /// `gc.get_count()` on 3.13t flushes the calling thread's count first.
    pub fn flush_thread_count(&mut self) {
        if let CollectorState::FreeThreaded(state) = &mut self.schedule {
            state.flush();
            self.mirror_free_threaded_count();
        }
    }

    /// `gc.get_count()` as CPython returns it: on a free-threaded build the shared count is
    /// signed (below zero after a collection on unfixed releases).
    pub fn visible_counts(&self) -> [i64; 3] {
        let mut counts = self.counts.map(|c| c as i64);
        if let CollectorState::FreeThreaded(state) = &self.schedule {
            counts[0] = state.shared;
        }
        counts
    }

    fn schedule_state_should_collect(&self) -> bool {
        match &self.schedule {
            CollectorState::FreeThreaded(state) => state.should_collect(self),
            _ => false,
        }
    }

    /// `gc.get_count()[0]` shows the shared count (0 when it is below zero: the model's
    /// counts are unsigned).
    fn mirror_free_threaded_count(&mut self) {
        if let CollectorState::FreeThreaded(state) = &self.schedule {
            self.counts[0] = state.shared.max(0) as u64;
        }
    }

    /// `_PyObject_ClearFreeLists(freelists, 0)`: each cached object is freed through
    /// `PyObject_GC_Del`, one deallocation each.
    fn free_threaded_clear_free_lists(&mut self) {
        let cached = self.dict_free.len
            + self.list_free.len
            + self.frame_free.len
            + self.tuple_free.iter().map(|t| t.len).sum::<u32>();
        self.clear_free_lists();
        for _ in 0..cached {
            self.free_threaded_deallocation();
        }
    }

    /// A collection (`gc_collect_internal`): every tracked object; survivors' total becomes
    /// `long_lived_total`; the free lists are emptied. The generation is what the caller asked
    /// for (automatic ones are 0).
    pub(super) fn free_threaded_collect(
        &mut self,
        generation: u8,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        let mut counts = self.counts;
        if generation < 2 {
            counts[generation as usize + 1] += 1;
        }
        for count in counts.iter_mut().take(generation as usize + 1) {
            *count = 0;
        }
        // The shared count is zeroed before the garbage is freed; the thread's count is not.
        self.free_threaded_state().shared = 0;
        // `_PyGC_ClearAllFreeLists` runs before the garbage is deleted: the cached objects are
        // really freed (each one a deallocation).
        self.free_threaded_clear_free_lists();
        // Every tracked object in one set: all of them in generation 1, collected as
        // generations 0 - 1 (survivors land in 2).
        for id in self.generation_members(2) {
            self.move_to_generation(id, 1);
        }
        let mut outcome = self.collect(1, on_garbage_tensor);
        // The dropped functions deferred reference counting kept are garbage too.
        let deferred = std::mem::take(&mut self.free_threaded_state().deferred_garbage);
        for _ in 0..deferred {
            self.free_threaded_deallocation();
        }
        // `gc_collect_main` then clears the thread's free lists again, after the garbage was
        // deleted: what the garbage put there is freed too, and every collection (automatic
        // ones included, unlike the default build's generation-0 ones) leaves them empty.
        self.free_threaded_clear_free_lists();
        outcome.generation = generation;
        self.long_lived_pending = 0;
        self.long_lived_total = self.generation_sizes()[2];
        let outside = self.free_threaded_state().outside_objects;
        self.long_lived_total += outside;
        counts[0] = 0;
        self.counts = counts;
        self.mirror_free_threaded_count();
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::{Attrs, Class, GcProfile, ObjId, ObjKind, Sym, Value};
    use crate::scenario::PyVersion;

    fn heap(patch: Option<u8>, outside: u64) -> Heap {
        let version = PyVersion {
            minor: 13,
            patch,
            free_threaded: true,
        };
        Heap::new(GcProfile::for_version(version), [0, 0, 0], outside)
    }

    /// Allocates a two-instance cycle and drops it: garbage for the next collection.
    fn garbage_cycle(h: &mut Heap, class: ObjId) -> bool {
        let mut due = false;
        let mut ids = Vec::new();
        for _ in 0..2 {
            let kind = ObjKind::Instance {
                class,
                attrs: Attrs::Inline(Vec::new()),
            };
            due |= h.count_allocation(&kind);
            h.incref(Value::Obj(class));
            ids.push(h.insert(kind));
        }
        for (i, j) in [(0, 1), (1, 0)] {
            h.incref(Value::Obj(ids[j]));
            if let ObjKind::Instance {
                attrs: Attrs::Inline(items),
                ..
            } = h.kind_mut(ids[i])
            {
                items.push((Sym(1), Value::Obj(ids[j])));
            }
        }
        for id in ids {
            h.decref_id(id);
        }
        due
    }

    /// Runs cycles until `collections` automatic collections happened; returns the number of
    /// cycles made before each.
    fn schedule(h: &mut Heap, collections: usize) -> Vec<u64> {
        let class = h.insert(ObjKind::Class(Class {
            name: Sym(0),
            base: None,
            attrs: Vec::new(),
        }));
        let mut at = Vec::new();
        let mut made = 0;
        while at.len() < collections {
            made += 1;
            if garbage_cycle(h, class) && h.due_collection() == Some(0) {
                at.push(made);
                h.run_collection(0, |_, _| {});
            }
        }
        at
    }

    /// Fixed release, no outside objects: the count is flushed at 512, 1024, 1536, 2048; the
    /// first due point is 2048 (past 2000), at the 1024th two-object cycle. The collection frees
    /// 2048 objects: the thread count goes to -2048 in four flushes, clamped at zero each
    /// time, so every interval is the same 1024 cycles.
    #[test]
    fn fixed_release_collects_every_2048_allocations() {
        let mut h = heap(None, 0);
        let at = schedule(&mut h, 4);
        assert_eq!(at, vec![1024, 2048, 3072, 4096]);
    }

    /// Unfixed release (3.13.5t): after the first collection the 2048 freed objects take the
    /// shared count to -2048, so the next collection needs 2048 + 2048 allocations: 2048
    /// cycles later; that one frees 4096 objects, the next needs 4096 + 2048, and so on: the
    /// intervals grow by 1024 cycles each time (gh-142048's "quadratically increasing" delays).
    #[test]
    fn unfixed_release_drifts_collections_apart() {
        let mut h = heap(Some(5), 0);
        let at = schedule(&mut h, 4);
        assert_eq!(
            at,
            vec![
                1024,
                1024 + 2048,
                1024 + 2048 + 3072,
                1024 + 2048 + 3072 + 4096
            ]
        );
    }

    /// With 100 000 long-lived objects the count must also exceed 25 000: the first flush past
    /// it is at 25 088 (49 × 512), the 12 544th cycle.
    #[test]
    fn a_quarter_of_the_long_lived_objects_gates_collections() {
        let mut h = heap(None, 100_000);
        let at = schedule(&mut h, 1);
        assert_eq!(at, vec![12_544]);
    }

    fn local_and_deferred(h: &Heap) -> (i64, u64) {
        match &h.schedule {
            CollectorState::FreeThreaded(s) => (s.local, s.deferred_garbage),
            _ => unreachable!("a free-threaded heap"),
        }
    }

    /// A dropped module-level function is one more counted object until the next collection,
    /// which frees it: one deallocation more than a heap without it, so both end level.
    #[test]
    fn a_dropped_top_level_function_is_freed_by_the_next_collection() {
        let mut with = heap(Some(5), 0);
        let mut without = heap(Some(5), 0);
        assert!(!with.drop_top_level_function());
        assert_eq!(
            local_and_deferred(&with),
            (local_and_deferred(&without).0 + 1, 1)
        );
        with.run_collection(0, |_, _| {});
        without.run_collection(0, |_, _| {});
        assert_eq!(
            local_and_deferred(&with),
            (local_and_deferred(&without).0, 0)
        );
    }
}
