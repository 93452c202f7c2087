//! PEP 442's second half for an explicit `gc.collect()`: garbage that held finalizers
//! (`__del__` not yet run, a generator suspended in a `try`/`with`) survives the collector's
//! first pass (`collector.rs` queues the finalizers and keeps the set here); once the
//! interpreter has run them, the set is checked for reachability again and what is still
//! unreachable is cleared and counted in the same collection, as CPython's
//! `gc_collect_main` does (`finalize_garbage`, `handle_resurrected_objects`,
//! `delete_garbage`; only what finalization left is counted). Objects a finalizer made
//! reachable again survive in the generation they were moved to; up to 3.8 one such
//! object keeps the whole set there (`GcProfile::resurrection_keeps_unreachable`). Automatic collections
//! keep the older approximation (the model runs no workload code inside an allocation):
//! a later collection frees what the finalizers did not. Approximation: the collection's
//! timeline event counts the first pass only, and tensors freed by the second pass carry
//! no cycle path.

use super::{Heap, ObjId, UNTRACKED};

impl Heap {
    /// Keeps the garbage whose finalizers the collector queued (replacing an older set
    /// that nobody finished).
    pub(super) fn keep_finalizing_garbage(&mut self, garbage: &[ObjId]) {
        self.finalizing_garbage.clear();
        self.finalizing_garbage.extend_from_slice(garbage);
    }

    /// Whether the last collection left garbage waiting for its finalizers.
    pub fn has_finalizing_garbage(&self) -> bool {
        !self.finalizing_garbage.is_empty()
    }

    /// Forgets the kept set (an automatic collection: a later one frees it).
    pub fn forget_finalizing_garbage(&mut self) {
        self.finalizing_garbage.clear();
    }

    /// After the finalizers ran: the kept set's members no reference from outside the set
    /// reaches are cleared; returns how many (CPython's `collected` for them). Generators
    /// whose `close()` runs no code are closed first, as `finalize_garbage` closes them.
    pub fn clear_finalized_garbage(&mut self) -> u64 {
        let mut set = std::mem::take(&mut self.finalizing_garbage);
        set.retain(|&id| self.is_alive(id) && self.get(id).generation != UNTRACKED);
        let mut refs = Vec::new();
        self.close_silent_garbage_generators(&mut set, &mut refs);
        set.sort_unstable_by_key(|id| id.0);
        set.dedup();
        let index = |set: &[ObjId], id: ObjId| set.binary_search_by_key(&id.0, |m| m.0).ok();
        let mut gc_refs: Vec<i64> = set.iter().map(|&id| self.get(id).refcount as i64).collect();
        for &id in &set {
            self.traverse(id, |child, _| {
                if let Some(j) = index(&set, child) {
                    gc_refs[j] -= 1;
                }
            });
        }
        let mut reachable: Vec<bool> = gc_refs.iter().map(|&r| r > 0).collect();
        let mut stack: Vec<usize> = (0..set.len()).filter(|&i| reachable[i]).collect();
        while let Some(i) = stack.pop() {
            self.traverse(set[i], |child, _| {
                if let Some(j) = index(&set, child)
                    && !reachable[j]
                {
                    reachable[j] = true;
                    stack.push(j);
                }
            });
        }
        // ≤ 3.8: one resurrected member keeps the whole set (see the profile's flag).
        if self.profile.resurrection_keeps_unreachable && reachable.iter().any(|&r| r) {
            return 0;
        }
        let garbage: Vec<ObjId> = (0..set.len())
            .filter(|&i| !reachable[i])
            .map(|i| set[i])
            .collect();
        let hidden: u64 = garbage
            .iter()
            .map(|&id| self.class_cycle_hidden_objects(id))
            .sum();
        // Cleared as the first pass clears: each member held while references go.
        for &id in &garbage {
            self.get_mut(id).refcount += 1;
        }
        for &id in &garbage {
            refs.clear();
            self.clear_references_into(id, &mut refs);
            for &v in &refs {
                self.decref(v);
            }
        }
        for &id in &garbage {
            self.decref_id(id);
        }
        garbage.len() as u64 + hidden
    }
}
