//! The object heap: Python objects with reference counts, CPython's tracked-object
//! generations, the generation-0 allocation counter with the free lists that bypass it, and
//! deallocation by reference counting.
//!
//! Only what decides *when* memory is released is modelled: which objects exist, who
//! references whom, which references the cycle collector can see (`traverse`), and the
//! bookkeeping CPython's collector uses to decide when to run. Values of ints, floats and
//! strings are plain data ([`Value`]), because CPython never tracks them.
//!
//! Tensors own no memory here: they point at a storage (see `crate::torch`); when a tensor
//! object is deallocated its storage id is queued in [`Heap::dropped_storage_refs`] for the
//! owner of the storages to release.

mod builtin_type_calls;
mod call_sites;
mod class_cycles;
mod collector;
mod exception_objects;
mod finalized_garbage;
mod free_lists;
mod free_threaded;
mod future_objects;
mod gc_callbacks;
mod generations;
mod generator_objects;
mod incremental;
mod instance_finalizers;
mod iterator_results;
mod objects;
mod profile;
mod schedule;
mod seq_iter_free;
mod set_table;
mod traverse;
mod unpack_sites;
mod weak_refs;
mod zombie_frames;

pub use builtin_type_calls::BuiltinTypeCall;
pub use collector::{CollectionOutcome, CycleHit};
pub use exception_objects::{ExceptionData, FrameData, FrameRelease, TracebackData};
pub use future_objects::{Callback, FutureData, FutureRole, FutureState, WaitFor};
pub use generator_objects::{GenState, GeneratorData};
pub use objects::*;
pub use profile::{Collector, GcProfile, Trigger};
pub use schedule::CollectorState;
pub use set_table::SetTable;
pub use traverse::Edge;
pub use weak_refs::WeakRegistry;

pub(crate) use free_lists::{FreeList, FreeListKind};
use generations::Generation;
pub(crate) use objects::NO_LINK;
use traverse::owned_references;

/// The object heap. See the module documentation.
pub struct Heap {
    objects: Vec<Option<Object>>,
    free_slots: Vec<u32>,
    pub profile: GcProfile,
    /// `gc.get_count()`.
    pub counts: [u64; 3],
    pub thresholds: [u64; 3],
    pub long_lived_total: u64,
    pub long_lived_pending: u64,
    pub enabled: bool,
    /// Set while a collection runs (CPython's `collecting` flag): no nested collections.
    pub collecting: bool,
    /// From 3.12, an allocation past the threshold only schedules a collection.
    pub collection_scheduled: bool,
    /// What the release's collector keeps besides the counts (see `schedule.rs`).
    pub schedule: CollectorState,
    generations: [Generation; 4],
    dict_free: FreeList,
    list_free: FreeList,
    tuple_free: [FreeList; 20],
    frame_free: FreeList,
    method_free: FreeList,
    /// 3.14+: the list-iterator and tuple-iterator free lists (`seq_iter_free.rs`).
    list_iter_free: FreeList,
    tuple_iter_free: FreeList,
    cfunction_free: FreeList,
    asyncgen_asend_free: FreeList,
    /// The free list each counted hidden loop iterator returns to, innermost last.
    loop_iterators: Vec<Option<FreeListKind>>,
    /// Tensor objects alive (any device).
    pub tensors_alive: u64,
    /// Storages whose last tensor object died, in order; drained by the storage owner.
    pub dropped_storage_refs: Vec<crate::torch::StorageId>,
    /// Reused buffer for deallocation cascades.
    dealloc_stack: Vec<ObjId>,
    /// ≤ 3.10: code objects with a zombie frame parked (`zombie_frames.rs`).
    parked_zombie_frames: rustc_hash::FxHashSet<u32>,
    /// ≤ 3.10: code objects that have had a frame.
    frame_codes_seen: rustc_hash::FxHashSet<u32>,
    /// Python functions in `gc.callbacks` (`gc_callbacks.rs`).
    pub gc_callbacks: u32,
    /// Reused buffer for a dying object's references.
    dealloc_children: Vec<ObjId>,
    /// Buffers the collector reuses.
    collect_scratch: collector::Scratch,
    /// PEP 442: generators whose count reached zero while suspended inside a `try` or
    /// `with`, resurrected (one reference, owned by this list) until the interpreter runs
    /// their finalizer (`close()`) and drops that reference.
    pub pending_finalizers: Vec<ObjId>,
    /// The garbage of the last collection that queued finalizers (`finalized_garbage.rs`).
    finalizing_garbage: Vec<ObjId>,
    /// Dicts that are instances of a dict subclass (`defaultdict`, `OrderedDict`), by id:
    /// their items stay an [`ObjKind::Dict`], so every dict operation applies unchanged.
    dict_flavours: rustc_hash::FxHashMap<u32, DictFlavour>,
    /// Weak references and finalizers (`weak_refs.rs`).
    pub weak: WeakRegistry,
    /// User `__del__` bookkeeping (`instance_finalizers.rs`).
    pub instance_finalizers: instance_finalizers::InstanceFinalizers,
    /// 3.13+: each call site's adaptive `CALL` for class calls (`call_sites.rs`).
    pub call_sites: call_sites::CallSites,
    /// Classes in their own reference cycle, by id (`class_cycles.rs`).
    class_cycles: rustc_hash::FxHashMap<u32, class_cycles::ClassCycle>,
    /// Unpacking sites that have run once (`unpack_sites.rs`).
    unpack_sites: unpack_sites::UnpackSites,
}

impl Heap {
    pub fn new(profile: GcProfile, start_counts: [u64; 3], long_lived_total: u64) -> Heap {
        let thresholds = profile.thresholds;
        Heap {
            objects: Vec::new(),
            free_slots: Vec::new(),
            profile,
            counts: start_counts,
            thresholds,
            long_lived_total,
            long_lived_pending: 0,
            enabled: true,
            collecting: false,
            collection_scheduled: false,
            schedule: CollectorState::new(profile.collector, long_lived_total, start_counts[0]),
            generations: [Generation::EMPTY; 4],
            dict_free: FreeList::new(profile::DICT_FREE_LIST),
            list_free: FreeList::new(profile::LIST_FREE_LIST),
            tuple_free: [FreeList::new(profile::TUPLE_FREE_LIST); 20],
            frame_free: FreeList::new(profile::FRAME_FREE_LIST),
            method_free: FreeList::new(profile.method_free_list_capacity),
            list_iter_free: FreeList::new(profile.seq_iter_free_list_capacity),
            tuple_iter_free: FreeList::new(profile.seq_iter_free_list_capacity),
            cfunction_free: FreeList::new(profile.cfunction_free_list_capacity),
            asyncgen_asend_free: FreeList::new(free_lists::ASYNC_GEN_ASEND_FREE_LIST),
            loop_iterators: Vec::new(),
            tensors_alive: 0,
            dropped_storage_refs: Vec::new(),
            dealloc_stack: Vec::new(),
            parked_zombie_frames: Default::default(),
            frame_codes_seen: Default::default(),
            gc_callbacks: 0,
            dealloc_children: Vec::new(),
            collect_scratch: Default::default(),
            pending_finalizers: Vec::new(),
            finalizing_garbage: Vec::new(),
            dict_flavours: Default::default(),
            weak: Default::default(),
            instance_finalizers: Default::default(),
            call_sites: Default::default(),
            class_cycles: Default::default(),
            unpack_sites: Default::default(),
        }
    }

    // ----- access -------------------------------------------------------------------------

    /// Whether `id` names a live object (ids are reused after a free).
    pub fn is_live(&self, id: ObjId) -> bool {
        self.objects.get(id.0 as usize).is_some_and(Option::is_some)
    }

    pub fn get(&self, id: ObjId) -> &Object {
        self.objects[id.0 as usize].as_ref().expect("live object")
    }

    pub fn get_mut(&mut self, id: ObjId) -> &mut Object {
        self.objects[id.0 as usize].as_mut().expect("live object")
    }

    pub fn kind(&self, id: ObjId) -> &ObjKind {
        &self.get(id).kind
    }

    pub fn kind_mut(&mut self, id: ObjId) -> &mut ObjKind {
        &mut self.get_mut(id).kind
    }

    pub fn is_alive(&self, id: ObjId) -> bool {
        matches!(self.objects.get(id.0 as usize), Some(Some(_)))
    }

    /// The kinds of every live object (for measuring the model's memory).
    pub fn live_kinds(&self) -> impl Iterator<Item = &ObjKind> {
        self.objects.iter().flatten().map(|o| &o.kind)
    }

    pub fn live_objects(&self) -> usize {
        self.objects.len() - self.free_slots.len()
    }

    /// Tracked objects in each generation (0, 1, 2, permanent).
    pub fn generation_sizes(&self) -> [u64; 4] {
        [
            self.generations[0].len,
            self.generations[1].len,
            self.generations[2].len,
            self.generations[3].len,
        ]
    }

    // ----- reference counting -------------------------------------------------------------

    #[inline]
    pub fn incref(&mut self, v: Value) {
        if let Value::Obj(id) | Value::BoundNative(_, id) = v {
            self.get_mut(id).refcount += 1;
        }
    }

    /// Drops one reference; deallocates the object (and what only it held) at zero.
    #[inline]
    pub fn decref(&mut self, v: Value) {
        if let Value::Obj(id) | Value::BoundNative(_, id) = v {
            self.decref_id(id);
        }
    }

    /// Small enough to inline at every call site: most decrefs leave the object alive, and
    /// the deallocation cascade is a separate, out-of-line call.
    #[inline]
    pub fn decref_id(&mut self, id: ObjId) {
        let obj = self.get_mut(id);
        debug_assert!(obj.refcount > 0, "decref of a dead reference");
        obj.refcount -= 1;
        if obj.refcount == 0 {
            self.dealloc_cascade(id);
        }
    }

    pub fn decref_all(&mut self, values: impl IntoIterator<Item = Value>) {
        for v in values {
            self.decref(v);
        }
    }

    /// Deallocates `first` and everything whose count drops to zero as a consequence,
    /// iteratively (deep chains must not overflow the Rust stack).
    #[inline(never)]
    fn dealloc_cascade(&mut self, first: ObjId) {
        let mut stack = std::mem::take(&mut self.dealloc_stack);
        stack.push(first);
        let mut children = std::mem::take(&mut self.dealloc_children);
        while let Some(id) = stack.pop() {
            if self.needs_instance_finalizer(id) {
                // `__del__` runs once, before the object goes (PEP 442).
                self.get_mut(id).refcount = 1;
                self.queue_instance_finalizer(id);
                continue;
            }
            if let Some(Object {
                kind: ObjKind::Generator(g),
                refcount,
                ..
            }) = self.objects[id.0 as usize].as_mut()
                && g.needs_finalizer()
            {
                // `tp_finalize` runs once, before the object goes (PEP 442).
                g.finalized = true;
                *refcount = 1;
                self.pending_finalizers.push(id);
                continue;
            }
            let obj = self.objects[id.0 as usize]
                .take()
                .expect("dealloc of live object");
            self.free_slots.push(id.0);
            self.instance_freed(id);
            if obj.generation != UNTRACKED {
                self.unlink(id, obj.generation, obj.prev, obj.next);
            }
            if let ObjKind::GradFn { node } = &obj.kind
                && let Some(Object {
                    kind: ObjKind::GradNode(n),
                    ..
                }) = self.objects[node.0 as usize].as_mut()
            {
                n.py_object = None;
            }
            self.weak_object_dies(id);
            if matches!(obj.kind, ObjKind::Class(_)) {
                self.call_sites.class_gone(id);
                self.class_cycle_freed(id);
            }
            let flavour = if self.dict_flavours.is_empty() {
                None
            } else {
                self.dict_flavours.remove(&id.0)
            };
            if let ObjKind::Frame(f) = &obj.kind {
                self.release_frame_object(f.release);
            } else if flavour.is_some() {
                self.note_gc_del(None);
            } else if !is_uncounted(&obj.kind) {
                // ≤ 3.10 a suspended generator's frame object goes with it.
                if let ObjKind::Generator(g) = &obj.kind
                    && let Some(release) = g.frame_release
                {
                    self.release_frame_object(release);
                }
                let free_list = self.free_list_kind(&obj.kind);
                self.note_gc_del(free_list);
            }
            children.clear();
            owned_references(
                obj.kind,
                &mut children,
                &mut self.dropped_storage_refs,
                &mut self.tensors_alive,
            );
            if let Some(DictFlavour {
                factory: Value::Obj(f) | Value::BoundNative(_, f),
                ..
            }) = flavour
            {
                children.push(f);
            }
            for child in children.drain(..) {
                let c = self.get_mut(child);
                c.refcount -= 1;
                if c.refcount == 0 {
                    stack.push(child);
                }
            }
        }
        self.dealloc_stack = stack;
        self.dealloc_children = children;
    }

    // ----- allocation and the generation-0 counter ------------------------------------------------

    /// Counts one GC-heap allocation of `kind` (unless a free list serves it) and reports
    /// whether the counter has passed threshold 0 so that a collection is due.
    /// The caller runs (≤ 3.11) or schedules (≥ 3.12) the collection *before* the new
    /// object exists, as CPython does inside `_PyObject_GC_Link`.
    pub fn count_allocation(&mut self, kind: &ObjKind) -> bool {
        if let Some(fl) = self.free_list_kind(kind)
            && self.free_list(fl).pop()
        {
            return false;
        }
        self.count_raw_allocations(1)
    }

    /// [`Heap::count_allocation`] for a tuple of `len` items, without building one.
    pub fn count_tuple_allocation(&mut self, len: usize) -> bool {
        if (1..20).contains(&len) && self.tuple_free[len].pop() {
            return false;
        }
        self.count_raw_allocations(1)
    }

    /// [`Heap::count_deallocation`] for a tuple of `len` items, without building one.
    pub fn count_tuple_deallocation(&mut self, len: usize) {
        let list = (1..20).contains(&len).then_some(FreeListKind::Tuple(len));
        self.note_gc_del(list);
    }

    /// An object of `kind`'s shape that the model does not keep (a temporary, or an internal
    /// object of a new class) is freed: onto its free list if there is room, else the
    /// counter drops. Pairs with a [`Heap::count_allocation`] of the same shape.
    pub fn count_deallocation(&mut self, kind: &ObjKind) {
        self.note_gc_del(self.free_list_kind(kind));
    }

    /// Counts `n` GC-heap allocations of objects the model does not keep individually
    /// (e.g. the internals of a new class). Returns whether a collection is due.
    pub fn count_raw_allocations(&mut self, n: u64) -> bool {
        if matches!(self.schedule, CollectorState::FreeThreaded(_)) {
            return self.free_threaded_allocations(n);
        }
        self.counts[0] += n;
        self.enabled
            && self.thresholds[0] != 0
            && !self.collecting
            && self.counts[0] > self.thresholds[0]
    }

    /// Places an object the collector never counts (a `range`, a code object's constant
    /// tuple) in the heap, untracked, with one reference.
    pub fn insert_uncounted(&mut self, kind: ObjKind) -> ObjId {
        let id = self.insert(kind);
        self.untrack(id);
        id
    }

    /// Places a new object in the heap with one reference (owned by the caller). Tracks it
    /// in generation 0 when its kind is tracked at creation.
    pub fn insert(&mut self, kind: ObjKind) -> ObjId {
        let tracked = match &kind {
            ObjKind::Dict(items) => items
                .iter()
                .any(|(k, v)| self.may_be_tracked(*k) || self.may_be_tracked(*v)),
            kind => !is_uncounted(kind),
        };
        if matches!(kind, ObjKind::Tensor(_)) {
            self.tensors_alive += 1;
        }
        let obj = Object {
            kind,
            refcount: 1,
            generation: UNTRACKED,
            prev: NO_LINK,
            next: NO_LINK,
            collect_index: NO_LINK,
        };
        let id = match self.free_slots.pop() {
            Some(slot) => {
                self.objects[slot as usize] = Some(obj);
                ObjId(slot)
            }
            None => {
                self.objects.push(Some(obj));
                ObjId(self.objects.len() as u32 - 1)
            }
        };
        if tracked {
            self.track(id, 0);
        }
        id
    }

    /// `_PyObject_GC_MAY_BE_TRACKED`: a GC object that is not an untracked tuple.
    pub fn may_be_tracked(&self, v: Value) -> bool {
        match v {
            Value::Obj(id) => {
                let o = self.get(id);
                !(matches!(o.kind, ObjKind::Tuple(_)) && o.generation == UNTRACKED)
            }
            Value::BoundNative(..) => true,
            _ => false,
        }
    }

    /// A dict starts untracked and becomes tracked once it holds a trackable key or value.
    /// Makes a new dict an instance of a dict subclass (taking over `factory`'s
    /// reference); tracks it, as such dicts always are.
    pub fn set_dict_flavour(&mut self, dict: ObjId, flavour: DictFlavour) {
        if self.get(dict).generation == UNTRACKED {
            self.track(dict, 0);
        }
        self.dict_flavours.insert(dict.0, flavour);
    }

    /// The dict subclass `dict` is an instance of, if any.
    pub fn dict_flavour(&self, dict: ObjId) -> Option<&DictFlavour> {
        self.dict_flavours.get(&dict.0)
    }

    pub fn maintain_dict_tracking(&mut self, dict: ObjId, stored: Value) {
        if self.get(dict).generation == UNTRACKED && self.may_be_tracked(stored) {
            self.track(dict, 0);
        }
    }
}

/// Objects that are not on CPython's GC heap: never counted, never tracked.
fn is_uncounted(kind: &ObjKind) -> bool {
    matches!(
        kind,
        ObjKind::Range { .. }
            | ObjKind::GradNode(_)
            | ObjKind::CppHandle { .. }
            | ObjKind::Wrapper(WrapperKind::RangeIter, _)
    )
}
