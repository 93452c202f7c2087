//! Allocation of GC-heap objects, the collector runs it triggers, and the
//! aggregation of device tensors freed by the collector into cycle reports.

use super::Interpreter;
use crate::heap::{CycleHit, Edge, Heap, ObjId, ObjKind, Trigger};
use crate::python::Interner;
use crate::timeline::{GcEvent, StackId};
use crate::torch::{DeviceKind, Dtype};
use rustc_hash::FxHashMap;
use std::rc::Rc;

impl<'a> Interpreter<'a> {
    // ----- allocation, collection ----------------------------------------------------------

    /// Allocates a GC-heap object (see the module documentation).
    pub(in crate::python) fn alloc(&mut self, kind: ObjKind) -> ObjId {
        if self.heap.count_allocation(&kind) {
            self.collection_due();
        }
        self.heap.insert(kind)
    }

    /// Counts `n` GC-heap objects the model does not keep individually. CPython allocates
    /// them one by one, and up to 3.11 collects inside the first allocation over the
    /// threshold: the rest count towards the next period.
    pub(in crate::python) fn count_untracked_allocations(&mut self, n: u64) {
        for _ in 0..n {
            if self.heap.count_raw_allocations(1) {
                self.collection_due();
            }
        }
    }

    /// A tuple that lives only for one C call (`type(name, bases, ns)`'s arguments):
    /// allocated, then freed onto its free list, so it moves the counter only when that free
    /// list is empty.
    pub(super) fn temporary_tuple(&mut self, len: usize) {
        self.argument_tuple_begin(len);
        self.argument_tuple_end(len);
    }

    pub(in crate::python) fn collection_due(&mut self) {
        match self.heap.profile.trigger {
            Trigger::InsideAllocation => self.automatic_collection(),
            Trigger::NextStatement => self.heap.collection_scheduled = true,
        }
    }

    /// 3.12+: a scheduled collection runs where CPython checks its eval breaker: on entering
    /// a Python function (`RESUME`), on a loop's back edge (`JUMP_BACKWARD`) and after a call
    /// into C returns (`CALL`).
    pub(in crate::python) fn eval_breaker(&mut self) {
        if self.heap.collection_scheduled {
            self.automatic_collection();
        }
    }

    fn automatic_collection(&mut self) {
        match self.heap.due_collection() {
            Some(generation) => {
                self.collect(generation, true);
            }
            None => self.heap.collection_scheduled = false,
        }
    }

    /// Runs one collection and records it; returns CPython's `collected`.
    pub(in crate::python) fn collect(&mut self, generation: u8, automatic: bool) -> u64 {
        self.release_dropped_storages(None);
        let at = self.recorder.next_event();
        let counts_before = self.heap.counts;
        // Scratch map reused from collection to collection: no allocation once warm.
        let mut paths = std::mem::take(&mut self.cycle_paths_scratch);
        paths.clear();
        let names = &self.names;
        let described = &mut self.described_hits;
        let path_texts = &mut self.cycle_path_texts;
        // One buffer for every hit's signature: a known shape is found without a new key.
        let mut signature = Vec::new();
        let outcome = self
            .heap
            .run_collection(generation, |heap, hit: &CycleHit| {
                if let ObjKind::Tensor(t) = heap.kind(hit.tensor)
                    && t.device == DeviceKind::Cuda
                {
                    // Paths repeat from iteration to iteration: format each shape once.
                    hit_signature(heap, hit, &mut signature);
                    let path = match described.get(signature.as_slice()) {
                        Some(&path) => path,
                        None => {
                            let (holder, cycle) = describe_hit(heap, names, hit);
                            let path = path_texts.intern(holder, cycle);
                            described.insert(signature.clone(), path);
                            path
                        }
                    };
                    paths.insert(t.storage, path);
                }
            });
        if outcome.closed_suspended_generator
            && self.heap.profile.generator_close_takes_running_frame
        {
            self.frame_object_from_generator_close();
        }
        // At most one freed storage per dropped reference: sized once, not regrown.
        let mut freed = Vec::with_capacity(self.heap.dropped_storage_refs.len());
        self.release_dropped_storages(Some(&mut freed));
        let bytes_freed = freed.iter().map(|(_, s)| s.bytes).sum();
        let device_tensors_freed = freed.len() as u64;
        let iteration = self.recorder.iteration();
        for (id, storage) in freed {
            let path = paths.remove(&id).unwrap_or(CyclePathTexts::NO_PATH);
            let key = CycleKey {
                path,
                dtype: storage.dtype,
                shape: storage.shape,
                category: storage.category,
                bytes: storage.bytes,
                site: storage.alloc_stack,
            };
            let next = self.cycle_tally.len();
            let index = *self.cycle_tally.entry(key).or_insert(next);
            if index == next {
                self.cycle_totals.push((0, iteration));
            }
            self.cycle_totals[index].0 += 1;
        }
        self.cycle_paths_scratch = paths;
        let line = self.frames.last().map(|f| f.line);
        self.recorder.gc_event(
            GcEvent {
                iteration: self.recorder.iteration(),
                iterations_begun: self.recorder.iterations_begun(),
                generation: outcome.generation,
                automatic,
                objects_collected: outcome.collected,
                tensors_alive_before: outcome.tensors_before,
                tensors_alive_after: outcome.tensors_after,
                device_tensors_freed,
                bytes_freed,
                event_index: 0,
                line,
                counts_before,
            },
            at,
        );
        outcome.collected
    }
}

/// What the collector's report aggregates device tensors by.
#[derive(PartialEq, Eq, Hash)]
pub(super) struct CycleKey {
    /// The holder path and cycle, as an index into [`CyclePathTexts`]: hashed as a number,
    /// not as text, once per freed tensor.
    pub(super) path: u32,
    pub(super) dtype: Dtype,
    pub(super) shape: Box<[i64]>,
    pub(super) category: crate::torch::Category,
    pub(super) bytes: u64,
    pub(super) site: StackId,
}

/// The rendered (holder path, cycle) pairs, each text once; equal texts share an index
/// even when their path shapes differ.
pub(super) struct CyclePathTexts {
    texts: Vec<(Rc<str>, Rc<str>)>,
    index: FxHashMap<(Rc<str>, Rc<str>), u32>,
}

impl Default for CyclePathTexts {
    fn default() -> Self {
        let mut texts = CyclePathTexts {
            texts: Vec::new(),
            index: FxHashMap::default(),
        };
        texts.intern(String::new(), String::new());
        texts
    }
}

impl CyclePathTexts {
    /// A freed tensor the cycle search found no path for: both texts empty.
    pub(super) const NO_PATH: u32 = 0;

    pub(super) fn intern(&mut self, holder: String, cycle: String) -> u32 {
        let key: (Rc<str>, Rc<str>) = (holder.into(), cycle.into());
        if let Some(&path) = self.index.get(&key) {
            return path;
        }
        let path = self.texts.len() as u32;
        self.texts.push(key.clone());
        self.index.insert(key, path);
        path
    }

    pub(super) fn get(&self, path: u32) -> &(Rc<str>, Rc<str>) {
        &self.texts[path as usize]
    }
}

/// One step of a hit's path, compared cheaply: the object's label (class or function name,
/// or its kind) and the edge (a role is compared by the address of its static text).
pub(super) type SignatureStep = (u8, u32, std::mem::Discriminant<ObjKind>, u8, u64);

/// The shape of a hit's paths, to format each shape once (written into `out`).
fn hit_signature(heap: &Heap, hit: &CycleHit, out: &mut Vec<SignatureStep>) {
    let step = |id: ObjId, edge: Edge| -> SignatureStep {
        let kind = heap.kind(id);
        let (tag, name) = match kind {
            ObjKind::Instance { class, .. } => match heap.kind(*class) {
                ObjKind::Class(c) => (0, c.name.0),
                _ => (1, 0),
            },
            ObjKind::Function(f) => (2, f.name.0),
            ObjKind::Class(c) => (3, c.name.0),
            _ => (4, 0),
        };
        let (edge_tag, edge_value) = match edge {
            Edge::Attr(s) => (0, u64::from(s.0)),
            Edge::Key(s) => (1, u64::from(s.0)),
            Edge::Index(i) => (2, u64::from(i)),
            Edge::Role(r) => (3, r.as_ptr() as u64),
        };
        (
            tag,
            name,
            std::mem::discriminant(kind),
            edge_tag,
            edge_value,
        )
    };
    out.clear();
    out.extend(hit.holder_path.iter().map(|&(o, e)| step(o, e)));
    // A step no object can produce separates the holder path from the cycle.
    if let Some(&(first, _)) = hit.holder_path.first() {
        out.push((
            u8::MAX,
            0,
            std::mem::discriminant(heap.kind(first)),
            u8::MAX,
            0,
        ));
    }
    out.extend(hit.cycle.iter().map(|&(o, e)| step(o, e)));
}

/// Renders a cycle hit as `Node.tensor` and `Node.link → Node.link → Node`.
fn describe_hit(heap: &Heap, names: &Interner, hit: &CycleHit) -> (String, String) {
    let label = |id: ObjId| -> String {
        match heap.kind(id) {
            ObjKind::Instance { class, .. } => match heap.kind(*class) {
                ObjKind::Class(c) => names.name(c.name).to_string(),
                _ => "object".into(),
            },
            ObjKind::Function(f) => format!("function {}", names.name(f.name)),
            ObjKind::Class(c) => format!("class {}", names.name(c.name)),
            other => other.type_name().to_string(),
        }
    };
    let edge = |e: Edge| -> String {
        match e {
            Edge::Attr(s) => format!(".{}", names.name(s)),
            Edge::Key(s) => format!("['{}']", names.name(s)),
            Edge::Index(i) => format!("[{i}]"),
            Edge::Role(r) => format!(".{r}"),
        }
    };
    // Steps, with an instance's `__dict__` folded into plain attribute access.
    let steps = |path: &[(ObjId, Edge)]| -> Vec<String> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < path.len() {
            let (obj, e) = path[i];
            if e == Edge::Role("__dict__")
                && let Some(&(_, Edge::Key(k))) = path.get(i + 1)
            {
                out.push(format!("{}.{}", label(obj), names.name(k)));
                i += 2;
                continue;
            }
            out.push(format!("{}{}", label(obj), edge(e)));
            i += 1;
        }
        out
    };
    let holder = steps(&hit.holder_path).join(" → ");
    let cycle = if hit.cycle.is_empty() {
        String::new()
    } else {
        let mut parts = steps(&hit.cycle);
        parts.push(label(hit.cycle[0].0));
        parts.join(" → ")
    };
    (holder, cycle)
}
