//! CPython's cycle collector (`gc_collect_main`), run on the modelled heap.
//!
//! A collection of generation `g` merges generations `0..=g` into one set S, subtracts the
//! references S holds on itself from every member's reference count, and treats members
//! still referenced from outside S (older generations, frames, untracked containers, C++
//! owners) as roots. What the roots cannot reach is garbage: it is counted (`collected`),
//! its references are cleared (`tp_clear`), and reference counting frees it. Survivors
//! are promoted one generation.

use super::{Edge, Heap, ObjId, ObjKind, UNTRACKED};
use rustc_hash::FxHashMap;

/// What one collection did.
#[derive(Debug, Clone, Default)]
pub struct CollectionOutcome {
    pub generation: u8,
    /// Unreachable tracked objects (CPython's `collected`).
    pub collected: u64,
    pub tensors_before: u64,
    pub tensors_after: u64,
}

/// A tensor found in the garbage, with the reference path that held it, computed before the
/// garbage is cleared so that reports can say why the collector (and not reference counting)
/// had to free it.
#[derive(Debug, Clone)]
pub struct CycleHit {
    pub tensor: ObjId,
    /// From the first object on a cycle down to the tensor: each object and the edge leaving it.
    pub holder_path: Vec<(ObjId, Edge)>,
    /// The cycle, starting and ending at the first object of `holder_path`.
    pub cycle: Vec<(ObjId, Edge)>,
}

/// Longest holder chain and cycle searched for a report; beyond it the path is cut.
const PATH_SEARCH_LIMIT: usize = 256;

impl Heap {
    /// The automatic collection that a due allocation triggers: the oldest generation whose
    /// count exceeds its threshold, except that a full collection waits until the objects
    /// promoted since the last one are at least a quarter of the long-lived ones.
    pub fn select_generation(&self) -> Option<u8> {
        (0..3u8).rev().find(|&g| {
            self.counts[g as usize] > self.thresholds[g as usize]
                && !(g == 2 && self.long_lived_pending < self.long_lived_total / 4)
        })
    }

    /// Collects generations `0..=generation`. `on_garbage_tensor` sees every tensor in the garbage
    /// while the garbage is still intact.
    pub fn collect(
        &mut self,
        generation: u8,
        mut on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        self.collecting = true;
        self.collection_scheduled = false;
        let tensors_before = self.tensors_alive;
        if generation < 2 {
            self.counts[generation as usize + 1] += 1;
        }
        for g in 0..=generation as usize {
            self.counts[g] = 0;
        }

        // S: generations 0..=generation, and each member's references from outside S.
        let members: Vec<ObjId> = (0..=generation)
            .flat_map(|g| self.generation_members(g))
            .collect();
        for (i, &id) in members.iter().enumerate() {
            self.set_collect_index(id, i as u32);
        }
        let mut gc_refs: Vec<i64> = members
            .iter()
            .map(|&id| self.get(id).refcount as i64)
            .collect();
        for &id in &members {
            self.traverse(id, |child, _| {
                if let Some(j) = self.collect_index(child) {
                    gc_refs[j] -= 1;
                }
            });
        }

        // Everything reachable from the roots survives.
        let mut reachable = vec![false; members.len()];
        let mut stack: Vec<usize> = (0..members.len()).filter(|&i| gc_refs[i] > 0).collect();
        for &i in &stack {
            reachable[i] = true;
        }
        while let Some(i) = stack.pop() {
            self.traverse(members[i], |child, _| {
                if let Some(j) = self.collect_index(child)
                    && !reachable[j]
                {
                    reachable[j] = true;
                    stack.push(j);
                }
            });
        }
        for &id in &members {
            self.set_collect_index(id, super::NO_LINK);
        }
        let (survivors, garbage): (Vec<ObjId>, Vec<ObjId>) = {
            let mut s = Vec::new();
            let mut g = Vec::new();
            for (i, &id) in members.iter().enumerate() {
                if reachable[i] { s.push(id) } else { g.push(id) }
            }
            (s, g)
        };

        // Survivors: tuples of atomic items are untracked, the rest promoted.
        let target = (generation + 1).min(2);
        for &id in &survivors {
            if self.untrackable_container(id, generation == 2) {
                self.untrack(id);
            } else {
                self.move_to_generation(id, target);
            }
        }
        if generation == 1 {
            self.long_lived_pending += survivors
                .iter()
                .filter(|&&id| self.get(id).generation == 2)
                .count() as u64;
        }

        // Report the tensors that the garbage holds (garbage themselves, or older tensors it
        // alone keeps alive) before it is torn down.
        if !garbage.is_empty() {
            let mut predecessors: FxHashMap<ObjId, Vec<(ObjId, Edge)>> = FxHashMap::default();
            for &id in &garbage {
                self.traverse(id, |child, edge| {
                    predecessors.entry(child).or_default().push((id, edge))
                });
            }
            let in_garbage: FxHashMap<ObjId, ()> = garbage.iter().map(|&id| (id, ())).collect();
            let mut tensors: Vec<ObjId> = predecessors
                .keys()
                .copied()
                .filter(|&id| matches!(self.get(id).kind, ObjKind::Tensor(_)))
                .collect();
            tensors.sort();
            for id in tensors {
                let hit = self.cycle_hit(id, &predecessors, &in_garbage);
                on_garbage_tensor(self, &hit);
            }
        }

        // Clear the garbage; reference counting frees it. Hold a reference to each member
        // while clearing so none is freed under our feet.
        for &id in &garbage {
            self.get_mut(id).refcount += 1;
        }
        for &id in &garbage {
            let refs = self.clear_references(id);
            self.decref_all(refs);
        }
        for &id in &garbage {
            self.decref_id(id);
            if self.is_alive(id) && self.get(id).generation != UNTRACKED {
                // Still referenced (a resurrected object): it survives like any other.
                self.move_to_generation(id, target);
            }
        }

        if generation == 2 {
            self.long_lived_pending = 0;
            self.long_lived_total = self.generation_sizes()[2];
            self.clear_free_lists();
        }
        self.collecting = false;
        CollectionOutcome {
            generation,
            collected: garbage.len() as u64,
            tensors_before,
            tensors_after: self.tensors_alive,
        }
    }

    /// `untrack_tuples` (every collection) and `untrack_dicts` (full collections, ≤ 3.13):
    /// a container whose items can never be part of a cycle leaves the collector's view.
    fn untrackable_container(&self, id: ObjId, full: bool) -> bool {
        match &self.get(id).kind {
            ObjKind::Tuple(items) => items.iter().all(|&v| !self.may_be_tracked(v)),
            ObjKind::Dict(items) if full => items
                .iter()
                .all(|&(k, v)| !self.may_be_tracked(k) && !self.may_be_tracked(v)),
            _ => false,
        }
    }

    /// Finds how a garbage tensor was held: walks back from the tensor (breadth first, over
    /// references inside the garbage) to the nearest object that lies on a cycle.
    fn cycle_hit(
        &self,
        tensor: ObjId,
        predecessors: &FxHashMap<ObjId, Vec<(ObjId, Edge)>>,
        in_garbage: &FxHashMap<ObjId, ()>,
    ) -> CycleHit {
        let mut towards_tensor: FxHashMap<ObjId, (ObjId, Edge)> = FxHashMap::default();
        let mut queue = std::collections::VecDeque::from([tensor]);
        while let Some(target) = queue.pop_front() {
            if towards_tensor.len() > PATH_SEARCH_LIMIT {
                break;
            }
            for &(holder, edge) in predecessors.get(&target).map(Vec::as_slice).unwrap_or(&[]) {
                if holder == tensor || towards_tensor.contains_key(&holder) {
                    continue;
                }
                towards_tensor.insert(holder, (target, edge));
                // Up to 3.10 attributes live in the instance's `__dict__`: name the instance.
                let holder = match self.instance_owning(holder, predecessors) {
                    Some(owner) => {
                        towards_tensor.insert(owner, (holder, Edge::Role("__dict__")));
                        owner
                    }
                    None => holder,
                };
                let cycle = self.shortest_cycle(holder, in_garbage);
                if !cycle.is_empty() {
                    let mut holder_path = Vec::new();
                    let mut cur = holder;
                    while cur != tensor {
                        let (child, edge) = towards_tensor[&cur];
                        holder_path.push((cur, edge));
                        cur = child;
                    }
                    return CycleHit {
                        tensor,
                        holder_path,
                        cycle,
                    };
                }
                queue.push_back(holder);
            }
        }
        CycleHit {
            tensor,
            holder_path: Vec::new(),
            cycle: Vec::new(),
        }
    }

    /// The instance whose `__dict__` is `dict`, if `dict` is one.
    fn instance_owning(
        &self,
        dict: ObjId,
        predecessors: &FxHashMap<ObjId, Vec<(ObjId, Edge)>>,
    ) -> Option<ObjId> {
        if !matches!(self.get(dict).kind, ObjKind::Dict(_)) {
            return None;
        }
        predecessors
            .get(&dict)?
            .iter()
            .find(|(owner, edge)| {
                *edge == Edge::Role("__dict__")
                    && matches!(self.get(*owner).kind, ObjKind::Instance { .. })
            })
            .map(|(owner, _)| *owner)
    }

    /// The shortest cycle through `start` within the garbage (empty if there is none).
    fn shortest_cycle(
        &self,
        start: ObjId,
        in_garbage: &FxHashMap<ObjId, ()>,
    ) -> Vec<(ObjId, Edge)> {
        let mut came_from: FxHashMap<ObjId, (ObjId, Edge)> = FxHashMap::default();
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(cur) = queue.pop_front() {
            if came_from.len() > PATH_SEARCH_LIMIT {
                break;
            }
            let mut reached_start = None;
            let mut children = Vec::new();
            self.traverse(cur, |child, edge| children.push((child, edge)));
            for (child, edge) in children {
                if child == start {
                    reached_start = Some(edge);
                    break;
                }
                if in_garbage.contains_key(&child) && !came_from.contains_key(&child) {
                    came_from.insert(child, (cur, edge));
                    queue.push_back(child);
                }
            }
            if let Some(last_edge) = reached_start {
                let mut path = vec![(cur, last_edge)];
                let mut node = cur;
                while node != start {
                    let (prev, edge) = came_from[&node];
                    path.push((prev, edge));
                    node = prev;
                }
                path.reverse();
                return path;
            }
        }
        Vec::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::heap::{Attrs, GcProfile, Sym, Value};
    use crate::scenario::PyVersion;

    fn heap(minor: u8) -> Heap {
        Heap::new(
            GcProfile::for_version(PyVersion::minor(minor)),
            [0, 0, 0],
            0,
        )
    }

    fn instance(h: &mut Heap, class: ObjId) -> ObjId {
        h.incref(Value::Obj(class));
        h.insert(ObjKind::Instance {
            class,
            attrs: Attrs::Inline(Vec::new()),
        })
    }

    fn set_attr(h: &mut Heap, obj: ObjId, name: u32, v: ObjId) {
        h.incref(Value::Obj(v));
        if let ObjKind::Instance {
            attrs: Attrs::Inline(items),
            ..
        } = h.kind_mut(obj)
        {
            items.push((Sym(name), Value::Obj(v)));
        }
    }

    fn class(h: &mut Heap) -> ObjId {
        h.insert(ObjKind::Class(crate::heap::Class {
            name: Sym(0),
            base: None,
            attrs: Vec::new(),
        }))
    }

    #[test]
    fn a_dropped_cycle_is_collected_and_a_referenced_one_survives_promoted() {
        let mut h = heap(11);
        let c = class(&mut h);
        let (a, b) = (instance(&mut h, c), instance(&mut h, c));
        set_attr(&mut h, a, 1, b);
        set_attr(&mut h, b, 1, a);
        let (x, y) = (instance(&mut h, c), instance(&mut h, c));
        set_attr(&mut h, x, 1, y);
        set_attr(&mut h, y, 1, x);
        // Drop our references to a and b: only their cycle holds them.
        h.decref_id(a);
        h.decref_id(b);
        let out = h.collect(0, |_, _| {});
        assert_eq!(out.collected, 2);
        assert!(!h.is_alive(a) && !h.is_alive(b));
        assert!(h.is_alive(x) && h.is_alive(y));
        assert_eq!(h.get(x).generation, 1, "survivors are promoted");
        assert_eq!(h.counts, [0, 1, 0]);
    }

    #[test]
    fn a_cycle_split_across_generations_survives_a_young_collection() {
        let mut h = heap(11);
        let c = class(&mut h);
        let a = instance(&mut h, c);
        h.collect(0, |_, _| {}); // a (held by us) is promoted to generation 1
        let b = instance(&mut h, c);
        set_attr(&mut h, a, 1, b);
        set_attr(&mut h, b, 1, a);
        h.decref_id(a);
        h.decref_id(b);
        assert_eq!(h.collect(0, |_, _| {}).collected, 0, "b is held by old a");
        assert!(h.is_alive(b));
        assert_eq!(h.collect(1, |_, _| {}).collected, 2);
        assert!(!h.is_alive(a));
    }

    #[test]
    fn tuples_of_atoms_are_untracked_by_a_collection() {
        let mut h = heap(11);
        let t = h.insert(ObjKind::Tuple(vec![Value::Int(1), Value::Int(2)]));
        assert_eq!(h.get(t).generation, 0);
        h.collect(0, |_, _| {});
        assert_eq!(h.get(t).generation, UNTRACKED);
    }

    #[test]
    fn generation_selection_follows_counts_and_the_long_lived_rule() {
        let mut h = heap(11);
        h.counts = [701, 0, 0];
        assert_eq!(h.select_generation(), Some(0));
        h.counts = [701, 11, 0];
        assert_eq!(h.select_generation(), Some(1));
        h.counts = [701, 11, 11];
        h.long_lived_total = 1000;
        h.long_lived_pending = 100;
        assert_eq!(
            h.select_generation(),
            Some(1),
            "pending < total/4 skips generation 2"
        );
        h.long_lived_pending = 250;
        assert_eq!(h.select_generation(), Some(2));
        h.counts = [700, 0, 0];
        assert_eq!(h.select_generation(), None);
    }
}
