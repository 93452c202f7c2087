//! CPython's cycle collector (`gc_collect_main`), run on the modelled heap.
//!
//! A collection of generation `g` merges generations `0..=g` into one set S, subtracts the
//! references S holds on itself from every member's reference count, and treats members
//! still referenced from outside S (older generations, frames, untracked containers, C++
//! owners) as roots. What the roots cannot reach is garbage: it is counted (`collected`),
//! its references are cleared (`tp_clear`), and reference counting frees it. Survivors
//! are promoted one generation.

use super::{Edge, Heap, ObjId, ObjKind, UNTRACKED};

/// What one collection did.
#[derive(Debug, Clone, Default)]
pub struct CollectionOutcome {
    pub generation: u8,
    /// Unreachable tracked objects (CPython's `collected`).
    pub collected: u64,
    pub tensors_before: u64,
    pub tensors_after: u64,
    /// The garbage held a started generator suspended at a `yield`, which CPython closes
    /// before clearing it (`_PyGen_Finalize` → `gen_close`); see
    /// `GcProfile::generator_close_takes_running_frame`.
    pub closed_suspended_generator: bool,
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

/// Buffers a collection reuses from one run to the next, so that a warm collection makes no
/// heap allocation of its own. Report nodes: the examined set's members are nodes `0..M`
/// (their `collect_index`), tensors outside it that the garbage references get `M..` while
/// the report is built.
#[derive(Default)]
pub(super) struct Scratch {
    members: Vec<ObjId>,
    gc_refs: Vec<i64>,
    reachable: Vec<bool>,
    stack: Vec<u32>,
    survivors: Vec<ObjId>,
    garbage: Vec<ObjId>,
    /// By member: its position in `garbage` (`u32::MAX` for a survivor).
    garbage_of: Vec<u32>,
    refs: Vec<super::Value>,
    children: Vec<(ObjId, Edge)>,
    external: Vec<ObjId>,
    /// Every reference from the garbage to a report node, in the order of the garbage and
    /// of each object's traversal: (target node, holder, edge).
    triples: Vec<(u32, ObjId, Edge)>,
    /// By garbage position: where its references start in `triples` (one more entry at the
    /// end), so that a cycle search reads them instead of traversing the object again.
    succ_start: Vec<u32>,
    pred_start: Vec<u32>,
    cursor: Vec<u32>,
    preds: Vec<(ObjId, Edge)>,
    tensors: Vec<ObjId>,
    towards_stamp: Vec<u32>,
    towards: Vec<(ObjId, Edge)>,
    towards_epoch: u32,
    came_stamp: Vec<u32>,
    came: Vec<(ObjId, Edge)>,
    came_epoch: u32,
    queue: Vec<ObjId>,
    /// A cycle search's queue, of member indexes.
    queue2: Vec<u32>,
    hit: Option<CycleHit>,
    /// Collections in a row that examined less than a quarter of what the buffers hold.
    small_in_a_row: u32,
}

/// Buffers at or below this many entries are never given back.
const SCRATCH_FLOOR: usize = 4096;
/// Collections in a row that must use under a quarter of the buffers before they shrink,
/// so that a full collection every few young ones does not make them grow and shrink each time.
const SHRINK_AFTER: u32 = 8;

impl Scratch {
    /// Shrink policy: one large collection (a full collection of a big heap) must not pin
    /// its buffers for the rest of the run. After [`SHRINK_AFTER`] collections in a row
    /// that examined under a quarter of the largest set the buffers were sized for, every
    /// buffer is cut to twice what the last collection used (at least [`SCRATCH_FLOOR`]).
    fn relax(&mut self, examined: usize) {
        if self.members.capacity() <= SCRATCH_FLOOR || examined * 4 >= self.members.capacity() {
            self.small_in_a_row = 0;
            return;
        }
        self.small_in_a_row += 1;
        if self.small_in_a_row < SHRINK_AFTER {
            return;
        }
        self.small_in_a_row = 0;
        let nodes = examined + self.external.len();
        let edges = self.triples.len();
        fn cut<T>(v: &mut Vec<T>, used: usize) {
            let keep = (used * 2).max(SCRATCH_FLOOR);
            v.truncate(keep);
            v.shrink_to(keep);
        }
        cut(&mut self.members, examined);
        cut(&mut self.gc_refs, examined);
        cut(&mut self.reachable, examined);
        cut(&mut self.stack, examined);
        cut(&mut self.survivors, examined);
        cut(&mut self.garbage, examined);
        cut(&mut self.garbage_of, examined);
        cut(&mut self.succ_start, examined + 1);
        cut(&mut self.external, nodes);
        cut(&mut self.pred_start, nodes + 1);
        cut(&mut self.cursor, nodes);
        cut(&mut self.tensors, nodes);
        // Cut stamps keep their values: a stale stamp never equals a later epoch's.
        cut(&mut self.towards_stamp, nodes);
        cut(&mut self.towards, nodes);
        cut(&mut self.came_stamp, nodes);
        cut(&mut self.came, nodes);
        cut(&mut self.triples, edges);
        cut(&mut self.preds, edges);
        // Per-object buffers: what one object references, one search's queue.
        cut(&mut self.refs, 0);
        cut(&mut self.children, 0);
        cut(&mut self.queue, 0);
        cut(&mut self.queue2, 0);
    }

    /// Total entries the buffers can hold without growing (what `relax` bounds).
    #[cfg(test)]
    pub(super) fn capacity(&self) -> usize {
        self.members.capacity()
            + self.gc_refs.capacity()
            + self.reachable.capacity()
            + self.stack.capacity()
            + self.triples.capacity()
            + self.preds.capacity()
            + self.towards_stamp.capacity()
            + self.came_stamp.capacity()
    }
}

const NO_EDGE: (ObjId, Edge) = (ObjId(u32::MAX), Edge::Index(u32::MAX));

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
        let mut s = std::mem::take(&mut self.collect_scratch);

        // S: generations 0..=generation, and each member's references from outside S.
        s.members.clear();
        for g in 0..=generation {
            let mut cur = self.generations[g as usize].head;
            while cur != super::NO_LINK {
                s.members.push(ObjId(cur));
                cur = self.get(ObjId(cur)).next;
            }
        }
        let m = s.members.len();
        s.gc_refs.clear();
        for i in 0..m {
            let id = s.members[i];
            let o = self.get_mut(id);
            o.collect_index = i as u32;
            s.gc_refs.push(o.refcount as i64);
        }
        for &id in &s.members {
            let gc_refs = &mut s.gc_refs;
            self.traverse(id, |child, _| {
                if let Some(j) = self.collect_index(child) {
                    gc_refs[j] -= 1;
                }
            });
        }

        // Everything reachable from the roots survives.
        s.reachable.clear();
        s.reachable.resize(m, false);
        s.stack.clear();
        for i in 0..m {
            if s.gc_refs[i] > 0 {
                s.reachable[i] = true;
                s.stack.push(i as u32);
            }
        }
        while let Some(i) = s.stack.pop() {
            let (reachable, stack) = (&mut s.reachable, &mut s.stack);
            self.traverse(s.members[i as usize], |child, _| {
                if let Some(j) = self.collect_index(child)
                    && !reachable[j]
                {
                    reachable[j] = true;
                    stack.push(j as u32);
                }
            });
        }
        s.survivors.clear();
        s.garbage.clear();
        s.garbage_of.clear();
        s.garbage_of.resize(m, u32::MAX);
        for i in 0..m {
            if s.reachable[i] {
                s.survivors.push(s.members[i]);
            } else {
                s.garbage_of[i] = s.garbage.len() as u32;
                s.garbage.push(s.members[i]);
            }
        }

        // Survivors: tuples of atomic items are untracked, the rest promoted.
        let target = (generation + 1).min(2);
        for &id in &s.survivors {
            if self.untrackable_container(id, generation == 2) {
                self.untrack(id);
            } else {
                self.move_to_generation(id, target);
            }
        }
        if generation == 1 {
            self.long_lived_pending += s
                .survivors
                .iter()
                .filter(|&&id| self.get(id).generation == 2)
                .count() as u64;
        }

        // PEP 442: garbage with a `__del__` not yet run, or a generator suspended in a `try`
        // or `with` (its `tp_finalize` is `close()`, which runs `finally` blocks and exits),
        // is finalized before anything is cleared. The model cannot call into the workload
        // here, so those finalizers are queued (run before the next op, `vm/pep442.rs`) and
        // this garbage survives the collection like resurrected objects do; what their frees do
        // not reclaim, a later collection frees (approximation: CPython frees it in this same
        // collection unless a finalizer resurrected it, and does not count what they freed).
        let finalizing = s
            .garbage
            .iter()
            .any(|&id| self.needs_instance_finalizer(id) || self.generator_needs_finalizer(id));
        if finalizing {
            for gi in 0..s.garbage.len() {
                let id = s.garbage[gi];
                if self.needs_instance_finalizer(id) {
                    self.get_mut(id).refcount += 1;
                    self.queue_instance_finalizer(id);
                } else if self.generator_needs_finalizer(id) {
                    self.get_mut(id).refcount += 1;
                    self.queue_generator_finalizer(id);
                }
                self.move_to_generation(id, target);
            }
            // An explicit `gc.collect()` clears it once the finalizers ran (`finalized_garbage.rs`).
            self.keep_finalizing_garbage(&s.garbage);
            s.garbage.clear();
        }
        // Report the tensors that the garbage holds (garbage themselves, or older tensors it
        // alone keeps alive) before it is torn down.
        if !s.garbage.is_empty() {
            self.build_predecessors(&mut s, m);
            for k in 0..s.tensors.len() {
                let tensor = s.tensors[k];
                self.cycle_hit(tensor, &mut s, m);
                on_garbage_tensor(self, s.hit.as_ref().expect("set by cycle_hit"));
            }
            for &id in &s.external {
                self.set_collect_index(id, super::NO_LINK);
            }
        }
        for &id in &s.members {
            self.set_collect_index(id, super::NO_LINK);
        }

        let closed_suspended_generator = s.garbage.iter().any(|&id| {
            matches!(self.kind(id), ObjKind::Generator(g) if g.state == super::GenState::Suspended)
        });
        // PEP 442 for generators whose `close()` runs no code (`generator_objects.rs`).
        let mut refs = std::mem::take(&mut s.refs);
        self.close_silent_garbage_generators(&mut s.garbage, &mut refs);
        // A class's cycle also holds objects the model does not keep (`class_cycles.rs`).
        // (Only a class can have some: no hash lookup for the rest.)
        let hidden_garbage: u64 = s
            .garbage
            .iter()
            .filter(|&&id| matches!(self.kind(id), ObjKind::Class(_)))
            .map(|&id| self.class_cycle_hidden_objects(id))
            .sum();
        // Clear the garbage; reference counting frees it. Hold a reference to each member
        // while clearing so none is freed under our feet.
        for &id in &s.garbage {
            self.get_mut(id).refcount += 1;
        }
        for &id in &s.garbage {
            refs.clear();
            self.clear_references_into(id, &mut refs);
            for &v in &refs {
                self.decref(v);
            }
        }
        refs.clear();
        s.refs = refs;
        for &id in &s.garbage {
            self.decref_id(id);
            if self.is_alive(id) && self.get(id).generation != UNTRACKED {
                // Still referenced (a resurrected object): it survives like any other.
                self.move_to_generation(id, target);
            }
        }
        let collected = s.garbage.len() as u64 + hidden_garbage;
        s.relax(m);
        self.collect_scratch = s;

        if generation == 2 {
            self.long_lived_pending = 0;
            self.long_lived_total = self.generation_sizes()[2];
            self.clear_free_lists();
        }
        self.collecting = false;
        CollectionOutcome {
            generation,
            collected,
            tensors_before,
            tensors_after: self.tensors_alive,
            closed_suspended_generator,
        }
    }

    /// The report node of an object (see [`Scratch`]), if it has one.
    fn node(&self, id: ObjId) -> Option<usize> {
        self.collect_index(id)
    }

    /// The references each report node receives from the garbage, in the order of the
    /// garbage and of each object's traversal (what a map of vectors filled in that order
    /// holds), stored as one array with offsets; and the tensors among their targets.
    fn build_predecessors(&mut self, s: &mut Scratch, m: usize) {
        s.external.clear();
        s.triples.clear();
        s.succ_start.clear();
        for gi in 0..s.garbage.len() {
            let holder = s.garbage[gi];
            s.succ_start.push(s.triples.len() as u32);
            s.children.clear();
            let children = &mut s.children;
            self.traverse(holder, |child, edge| children.push((child, edge)));
            for ci in 0..s.children.len() {
                let (child, edge) = s.children[ci];
                let node = match self.node(child) {
                    Some(n) => n as u32,
                    // Only tensors are looked up outside the garbage.
                    None if matches!(self.get(child).kind, ObjKind::Tensor(_)) => {
                        let n = (m + s.external.len()) as u32;
                        s.external.push(child);
                        self.set_collect_index(child, n);
                        n
                    }
                    None => continue,
                };
                s.triples.push((node, holder, edge));
            }
        }
        s.succ_start.push(s.triples.len() as u32);
        let nodes = m + s.external.len();
        s.pred_start.clear();
        s.pred_start.resize(nodes + 1, 0);
        for &(t, _, _) in &s.triples {
            s.pred_start[t as usize + 1] += 1;
        }
        for i in 0..nodes {
            s.pred_start[i + 1] += s.pred_start[i];
        }
        s.cursor.clear();
        s.cursor.extend_from_slice(&s.pred_start[..nodes]);
        s.preds.clear();
        s.preds.resize(s.triples.len(), NO_EDGE);
        for &(t, holder, edge) in &s.triples {
            let c = &mut s.cursor[t as usize];
            s.preds[*c as usize] = (holder, edge);
            *c += 1;
        }
        s.tensors.clear();
        for n in 0..nodes {
            if s.pred_start[n + 1] > s.pred_start[n] {
                let id = if n < m {
                    s.members[n]
                } else {
                    s.external[n - m]
                };
                if matches!(self.get(id).kind, ObjKind::Tensor(_)) {
                    s.tensors.push(id);
                }
            }
        }
        s.tensors.sort_unstable();
        for stamps in [&mut s.towards_stamp, &mut s.came_stamp] {
            if stamps.len() < nodes {
                stamps.resize(nodes, 0);
            }
        }
        if s.towards.len() < nodes {
            s.towards.resize(nodes, NO_EDGE);
            s.came.resize(nodes, NO_EDGE);
        }
    }

    fn preds_of<'s>(&self, s: &'s Scratch, id: ObjId) -> &'s [(ObjId, Edge)] {
        match self.node(id) {
            Some(n) if n + 1 < s.pred_start.len() => {
                &s.preds[s.pred_start[n] as usize..s.pred_start[n + 1] as usize]
            }
            _ => &[],
        }
    }

    /// Finds how a garbage tensor was held: walks back from the tensor (breadth first, over
    /// references inside the garbage) to the nearest object that lies on a cycle. The hit
    /// is left in `s.hit`.
    fn cycle_hit(&self, tensor: ObjId, s: &mut Scratch, m: usize) {
        let mut hit = s.hit.take().unwrap_or(CycleHit {
            tensor,
            holder_path: Vec::new(),
            cycle: Vec::new(),
        });
        hit.tensor = tensor;
        hit.holder_path.clear();
        hit.cycle.clear();
        s.towards_epoch = s.towards_epoch.wrapping_add(1);
        if s.towards_epoch == 0 {
            s.towards_stamp.iter_mut().for_each(|x| *x = 0);
            s.towards_epoch = 1;
        }
        let epoch = s.towards_epoch;
        let mut towards_len = 0usize;
        let mut queue = std::mem::take(&mut s.queue);
        queue.clear();
        queue.push(tensor);
        let mut head = 0;
        'search: while head < queue.len() {
            let target = queue[head];
            head += 1;
            if towards_len > PATH_SEARCH_LIMIT {
                break;
            }
            let range = match self.node(target) {
                Some(n) if n + 1 < s.pred_start.len() => {
                    s.pred_start[n] as usize..s.pred_start[n + 1] as usize
                }
                _ => 0..0,
            };
            for k in range {
                let (holder, edge) = s.preds[k];
                let hn = self.node(holder).expect("holders are in the garbage");
                if holder == tensor || s.towards_stamp[hn] == epoch {
                    continue;
                }
                s.towards_stamp[hn] = epoch;
                s.towards[hn] = (target, edge);
                towards_len += 1;
                // Up to 3.10 attributes live in the instance's `__dict__`: name the instance.
                let holder = match self.instance_owning(holder, s) {
                    Some(owner) => {
                        let on = self.node(owner).expect("owners are in the garbage");
                        if s.towards_stamp[on] != epoch {
                            s.towards_stamp[on] = epoch;
                            towards_len += 1;
                        }
                        s.towards[on] = (holder, Edge::Role("__dict__"));
                        owner
                    }
                    None => holder,
                };
                self.shortest_cycle(holder, s, m, &mut hit.cycle);
                if !hit.cycle.is_empty() {
                    let mut cur = holder;
                    while cur != tensor {
                        let (child, edge) = s.towards[self.node(cur).expect("on the path")];
                        hit.holder_path.push((cur, edge));
                        cur = child;
                    }
                    break 'search;
                }
                queue.push(holder);
            }
        }
        s.queue = queue;
        s.hit = Some(hit);
    }

    /// The instance whose `__dict__` is `dict`, if `dict` is one.
    fn instance_owning(&self, dict: ObjId, s: &Scratch) -> Option<ObjId> {
        if !matches!(self.get(dict).kind, ObjKind::Dict(_)) {
            return None;
        }
        self.preds_of(s, dict)
            .iter()
            .find(|(owner, edge)| {
                *edge == Edge::Role("__dict__")
                    && matches!(self.get(*owner).kind, ObjKind::Instance { .. })
            })
            .map(|(owner, _)| *owner)
    }

    /// The shortest cycle through `start` within the garbage, into `path` (left empty if
    /// there is none).
    fn shortest_cycle(
        &self,
        start: ObjId,
        s: &mut Scratch,
        m: usize,
        path: &mut Vec<(ObjId, Edge)>,
    ) {
        path.clear();
        s.came_epoch = s.came_epoch.wrapping_add(1);
        if s.came_epoch == 0 {
            s.came_stamp.iter_mut().for_each(|x| *x = 0);
            s.came_epoch = 1;
        }
        let epoch = s.came_epoch;
        let mut came_len = 0usize;
        let start_node = self
            .node(start)
            .expect("cycle searches start in the garbage") as u32;
        let mut queue = std::mem::take(&mut s.queue2);
        queue.clear();
        queue.push(start_node);
        let mut head = 0;
        while head < queue.len() {
            let cur_node = queue[head] as usize;
            let cur = s.members[cur_node];
            head += 1;
            if came_len > PATH_SEARCH_LIMIT {
                break;
            }
            // The object's references to report nodes, in traversal order (what a fresh
            // traversal would visit, less those that can be neither the start nor garbage).
            let g = s.garbage_of[cur_node] as usize;
            let mut reached_start = None;
            for k in s.succ_start[g] as usize..s.succ_start[g + 1] as usize {
                let (cn, _, edge) = s.triples[k];
                if cn == start_node {
                    reached_start = Some(edge);
                    break;
                }
                let cn = cn as usize;
                if cn < m && !s.reachable[cn] && s.came_stamp[cn] != epoch {
                    s.came_stamp[cn] = epoch;
                    s.came[cn] = (cur, edge);
                    came_len += 1;
                    queue.push(cn as u32);
                }
            }
            if let Some(last_edge) = reached_start {
                path.push((cur, last_edge));
                let mut node = cur;
                while node != start {
                    let (prev, edge) = s.came[self.node(node).expect("visited")];
                    path.push((prev, edge));
                    node = prev;
                }
                path.reverse();
                break;
            }
        }
        s.queue2 = queue;
    }

    /// `untrack_tuples` (every collection) and `untrack_dicts` (full collections, ≤ 3.13):
    /// a container whose items can never be part of a cycle leaves the collector's view.
    fn untrackable_container(&self, id: ObjId, full: bool) -> bool {
        match &self.get(id).kind {
            ObjKind::Tuple(items) => items.iter().all(|&v| !self.may_be_tracked(v)),
            ObjKind::Dict(items) if full && self.dict_flavour(id).is_none() => items
                .iter()
                .all(|&(k, v)| !self.may_be_tracked(k) && !self.may_be_tracked(v)),
            _ => false,
        }
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

#[cfg(test)]
mod report_tests;
