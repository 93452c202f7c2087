//! CPython 3.14.0 – 3.14.4's incremental collector, modelled from its source (`Python/gc.c`
//! of the incremental era). Not measured: no binary of these releases could be run here. Each
//! rule, with the function and line of the `gc.c` it was read from and what is approximated,
//! is listed in `docs/incremental-collector.md`; the comments below name the functions.
//!
//! The heap's generation lists take these roles:
//! - generation 0 is the young generation;
//! - generation 1 is the old "visited" space (scanned during the current pass);
//! - generation 2 is the old "pending" space (not yet scanned in this pass).
//!
//! The interpreter's own long-lived objects (modules, classes, torch's), which the model does
//! not hold one by one, are counted in `outside_objects`: they are in the heap size and are
//! marked by every pass's MARK step, and they are never garbage.

use super::schedule::CollectorState;
use super::{CollectionOutcome, CycleHit, Heap, NO_LINK, ObjId, UNTRACKED};

/// `SCAN_RATE_DIVISOR` (gc.c): the work owed grows by 1% of the heap at the default scale.
const SCAN_RATE_DIVISOR: i64 = 10;

/// Whether the next increment is the pass's MARK step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Mark,
    Collect,
}

#[derive(Debug, Clone)]
pub struct IncrementalState {
    pub phase: Phase,
    /// `gcstate->work_to_do`: how many objects the next increments should examine.
    pub work_to_do: i64,
    /// Long-lived objects of the interpreter and its imports that the model does not hold.
    pub outside_objects: u64,
}

impl IncrementalState {
    /// The state right after a completed pass (`completed_scavenge`: phase MARK, no work
    /// owed), as any full collection during the imports leaves it.
    pub fn new(outside_objects: u64) -> Self {
        IncrementalState {
            phase: Phase::Mark,
            work_to_do: 0,
            outside_objects,
        }
    }
}

impl Heap {
    fn incremental_state(&mut self) -> &mut IncrementalState {
        match &mut self.schedule {
            CollectorState::Incremental(state) => state,
            _ => unreachable!("incremental collection under another collector"),
        }
    }

    /// `gcstate->heap_size`: GC objects alive. The model counts the tracked ones it holds and
    /// the interpreter's own (CPython also counts untracked GC objects: an approximation).
    fn incremental_heap_size(&self) -> i64 {
        let [g0, g1, g2, permanent] = self.generation_sizes();
        let outside = match &self.schedule {
            CollectorState::Incremental(state) => state.outside_objects,
            _ => 0,
        };
        (g0 + g1 + g2 + permanent + outside) as i64
    }

    /// `scale_factor`: `old[0].threshold`, at least 2 (`assess_work_to_do`).
    fn incremental_scale(&self) -> i64 {
        (self.thresholds[1] as i64).max(2)
    }

    /// `gc.collect(0)` (`gc_collect_young`): the young generation alone; survivors join the
    /// visited space.
    pub(super) fn incremental_young(
        &mut self,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        // `Heap::collect(0)` promotes survivors to generation 1 (the visited space) and adds
        // one to `counts[1]`, as `gc_collect_young` adds one to the visited space's count.
        self.collect(0, on_garbage_tensor)
    }

    /// One increment (`gc_collect_increment`): what every automatic collection and
    /// `gc.collect(1)` run. Reported as generation 1.
    pub(super) fn incremental_increment(
        &mut self,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        let counts_before = self.counts;
        let scale = self.incremental_scale();
        // `assess_work_to_do`: the new objects, plus the heap over `SCAN_RATE_DIVISOR` times
        // the scale, capped at twice the new objects; the young count restarts from 0.
        let new_objects = self.counts[0] as i64;
        let heap_fraction =
            (self.incremental_heap_size() / SCAN_RATE_DIVISOR / scale).min(new_objects * 2);
        self.counts[0] = 0;
        // Running the collection consumes the eval breaker's request, whatever it does.
        self.collection_scheduled = false;
        self.incremental_state().work_to_do += new_objects + heap_fraction;
        // `gc_collect_increment`: while the work owed is negative (after a MARK step that
        // marked more than the new objects pay for), the increment returns at once: no MARK,
        // no collection, nothing freed, though callbacks still see a generation-1 collection.
        if self.incremental_state().work_to_do < 0 {
            return CollectionOutcome {
                generation: 1,
                collected: 0,
                tensors_before: self.tensors_alive,
                tensors_after: self.tensors_alive,
                closed_suspended_generator: false,
            };
        }

        if self.incremental_state().phase == Phase::Mark {
            // `mark_at_start`: everything reachable from the global roots and the stacks
            // moves to the visited space; nothing is freed. Both `mark_at_start` and its
            // caller subtract the marked objects from `work_to_do` (CPython gh-141890).
            let marked = self.mark_reachable_into_visited();
            let state = self.incremental_state();
            let marked = marked as i64 + state.outside_objects as i64;
            state.work_to_do -= 2 * marked;
            state.phase = Phase::Collect;
            return CollectionOutcome {
                generation: 1,
                collected: 0,
                tensors_before: self.tensors_alive,
                tensors_after: self.tensors_alive,
                closed_suspended_generator: false,
            };
        }

        // The increment: all of the young generation, then objects from the head of the
        // pending space, each with everything pending it reaches, until it holds
        // `work_to_do` objects.
        let mut increment_size = self.generation_sizes()[0] as i64;
        while increment_size < self.incremental_state().work_to_do {
            let head = self.generations[2].head;
            if head == NO_LINK {
                break;
            }
            increment_size += 1 + self.pull_into_increment(ObjId(head));
        }
        let mut outcome = self.collect(0, on_garbage_tensor);
        outcome.generation = 1;
        // An increment moves no count but the young one.
        self.counts[1] = counts_before[1];
        self.counts[2] = counts_before[2];
        // The increment's objects are the work done.
        self.incremental_state().work_to_do -= increment_size;
        if self.generations[2].head == NO_LINK {
            self.completed_scavenge();
        }
        outcome
    }

    /// `gc.collect()` (`gc_collect_full`): every generation and space at once, then a new
    /// pass starts.
    pub(super) fn incremental_full(
        &mut self,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        // Survivors land in generation 2, the pending space: where `completed_scavenge`'s
        // flip puts them. Counts and free lists are cleared as `gc_collect_full` does.
        let outcome = self.collect(2, on_garbage_tensor);
        let state = self.incremental_state();
        state.work_to_do = 0;
        state.phase = Phase::Mark;
        outcome
    }

    /// `completed_scavenge`: the pending space is empty, so the visited space becomes the
    /// pending one for the next pass, which starts with a MARK step owing no work.
    fn completed_scavenge(&mut self) {
        for id in self.generation_members(1) {
            self.move_to_generation(id, 2);
        }
        let state = self.incremental_state();
        state.work_to_do = 0;
        state.phase = Phase::Mark;
    }

    /// `expand_region_transitively_reachable`: moves `first` into the increment (generation
    /// 0) with every pending object it reaches; returns how many were added besides `first`.
    fn pull_into_increment(&mut self, first: ObjId) -> i64 {
        self.move_to_generation(first, 0);
        let mut added = 0;
        let mut stack = vec![first];
        let mut children = Vec::new();
        while let Some(id) = stack.pop() {
            children.clear();
            self.traverse(id, |child, _| children.push(child));
            for &child in &children {
                if self.get(child).generation == 2 {
                    self.move_to_generation(child, 0);
                    added += 1;
                    stack.push(child);
                }
            }
        }
        added
    }

    /// The MARK step: objects of the young generation and the pending space that something
    /// outside the collector's view (frames, module globals, C++ owners, untracked
    /// containers) reaches, directly or through other tracked objects, move to the visited
    /// space. Returns how many moved.
    ///
    /// CPython starts from the module dicts, builtins, static types and the thread stacks;
    /// the model starts from every object with references from outside the tracked set,
    /// which also counts objects that only C++ holds (they would be scanned by a later
    /// increment instead, and survive it): only `work_to_do` can differ.
    fn mark_reachable_into_visited(&mut self) -> u64 {
        let members: Vec<ObjId> = [0u8, 2]
            .into_iter()
            .flat_map(|g| self.generation_members(g))
            .collect();
        for (i, &id) in members.iter().enumerate() {
            self.set_collect_index(id, i as u32);
        }
        let mut external: Vec<i64> = members
            .iter()
            .map(|&id| i64::from(self.get(id).refcount))
            .collect();
        for &id in &members {
            self.traverse(id, |child, _| {
                if let Some(j) = self.collect_index(child) {
                    external[j] -= 1;
                }
            });
        }
        let mut reached = vec![false; members.len()];
        let mut stack: Vec<usize> = (0..members.len()).filter(|&i| external[i] > 0).collect();
        for &i in &stack {
            reached[i] = true;
        }
        while let Some(i) = stack.pop() {
            self.traverse(members[i], |child, _| {
                if let Some(j) = self.collect_index(child)
                    && !reached[j]
                {
                    reached[j] = true;
                    stack.push(j);
                }
            });
        }
        for &id in &members {
            self.set_collect_index(id, NO_LINK);
        }
        let mut moved = 0;
        for (i, &id) in members.iter().enumerate() {
            if reached[i] && self.get(id).generation != UNTRACKED {
                self.move_to_generation(id, 1);
                moved += 1;
            }
        }
        moved
    }
}

#[cfg(test)]
#[path = "incremental_tests.rs"]
mod tests;
