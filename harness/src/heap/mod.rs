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
mod free_threaded;
mod future_objects;
mod gc_callbacks;
mod generator_objects;
mod incremental;
mod instance_finalizers;
mod iterator_results;
mod profile;
mod schedule;
mod seq_iter_free;
mod set_table;
mod weak_refs;
mod zombie_frames;

pub use builtin_type_calls::BuiltinTypeCall;
pub use collector::{CollectionOutcome, CycleHit};
pub use exception_objects::{ExceptionData, FrameData, FrameRelease, TracebackData};
pub use future_objects::{Callback, FutureData, FutureRole, FutureState, WaitFor};
pub use generator_objects::{GenState, GeneratorData};
pub use profile::{Collector, GcProfile, Trigger};
pub use schedule::CollectorState;
pub use set_table::SetTable;
pub use weak_refs::WeakRegistry;

use crate::torch::TensorData;

/// An interned identifier or string constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// A reference to a heap object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjId(pub u32);

/// Builtin callables and modules; not heap objects (CPython's are long-lived and untracked
/// from the workload's point of view).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NativeId(pub u16);

/// A Python value as the interpreter sees it. Copyable: reference counts of heap objects
/// are managed explicitly by whoever stores or drops a `Value::Obj`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Sym),
    Obj(ObjId),
    /// A builtin function or method of a module (`torch.zeros`, `len`, `gc.collect`).
    Native(NativeId),
    /// A builtin module (`torch`, `torch.cuda`, `gc`, `asyncio`).
    Module(NativeId),
    /// `torch.float32` and friends.
    Dtype(crate::torch::Dtype),
    /// `torch.device("cuda")` or a device string resolved.
    Device(crate::torch::DeviceKind),
    /// A builtin method bound to a receiver (`lst.append` as a value, `t.view`).
    BoundNative(NativeId, ObjId),
}

impl Value {
    pub fn obj(self) -> Option<ObjId> {
        match self {
            Value::Obj(id) => Some(id),
            _ => None,
        }
    }
}

/// Generation tag of a tracked object; `UNTRACKED` objects are invisible to the collector.
pub const UNTRACKED: u8 = u8::MAX;
/// `gc.freeze()` moves objects here; collections never look at it.
pub const PERMANENT: u8 = 3;
const NO_LINK: u32 = u32::MAX;

/// Attributes of an instance. From 3.11 the values live inline in the instance; up to 3.10
/// every instance gets a separate `__dict__` dict object on its first attribute store.
#[derive(Debug, Clone)]
pub enum Attrs {
    Inline(Vec<(Sym, Value)>),
    /// The instance's `__dict__` (a [`ObjKind::Dict`]), created lazily.
    Dict(Option<ObjId>),
}

#[derive(Debug, Clone)]
pub struct Function {
    /// Index of the function's code in the interpreter's code table.
    pub code: u32,
    pub name: Sym,
    /// Closure tuple of cells (`__closure__`), if the function has free variables.
    pub closure: Option<ObjId>,
    /// Default values of trailing parameters.
    pub defaults: Vec<Value>,
    /// `__dict__`, made by the first attribute stored on the function (`fn.calls = 0`).
    pub dict: Option<ObjId>,
}

#[derive(Debug, Clone)]
pub struct Class {
    pub name: Sym,
    pub base: Option<ObjId>,
    /// Class attributes and methods, in definition order.
    pub attrs: Vec<(Sym, Value)>,
}

/// What a heap object is.
#[derive(Debug, Clone)]
pub enum ObjKind {
    Instance {
        class: ObjId,
        attrs: Attrs,
    },
    Class(Class),
    Function(Function),
    Cell(Option<Value>),
    Tuple(Vec<Value>),
    List(Vec<Value>),
    /// Keys are ints or strings (the interpreter rejects other keys).
    Dict(Vec<(Value, Value)>),
    BoundMethod {
        func: ObjId,
        receiver: Value,
    },
    /// An asyncio future, task or gathering future (`future_objects.rs`).
    Future(Box<FutureData>),
    Tensor(TensorData),
    /// A generator with its suspended frame (`generator_objects.rs`).
    Generator(Box<GeneratorData>),
    /// `torch.Size`: a tuple subclass, so it is tracked and counted but never served by
    /// the tuple free list nor untracked by a collection.
    Size(Vec<i64>),
    /// An autograd graph node (C++ `Node`): never tracked or counted. What it holds (saved
    /// tensors, next nodes, a custom Function's ctx, a leaf) is held through C++, so the
    /// collector sees its targets as externally referenced roots.
    GradNode(Box<crate::torch::GradNode>),
    /// The Python object of a built-in node, created when `.grad_fn` is first read.
    GradFn {
        node: ObjId,
    },
    /// A C++ object exposed through pybind11 (a `Work` handle): untracked, uncounted, and
    /// its references are invisible to the collector.
    CppHandle {
        type_name: &'static str,
        held: Vec<Value>,
    },
    /// `range(...)`: not a GC object in CPython, so never counted or tracked.
    Range {
        start: i64,
        stop: i64,
        step: i64,
    },
    /// An exception instance (see [`ExceptionData`]).
    Exception(Box<ExceptionData>),
    /// A traceback entry.
    Traceback(TracebackData),
    /// A frame object, materialised when something takes the frame.
    Frame(Box<FrameData>),
    /// A builtin wrapper around callables: `staticmethod(f)`, `classmethod(f)`,
    /// `property(fget, fset)`, `functools.partial(f, args, kwargs)`.
    Wrapper(WrapperKind, Vec<Value>),
    /// `collections.deque`: a GC object holding its items, oldest first; with a `maxlen`
    /// an append past it drops the item at the other end (and the reference it held).
    Deque {
        items: Vec<Value>,
        maxlen: Option<usize>,
    },
    /// `set` or (`frozen`) `frozenset`: always GC-tracked, even empty or holding only
    /// atoms (CPython never untracks sets).
    Set {
        table: Box<SetTable>,
        frozen: bool,
    },
    /// A `PyStructSequence` made in C (`torch.return_types.max`): a tuple subclass whose
    /// items are also named fields. `PyStructSequence_New` allocates it on the GC heap
    /// (counted) but never tracks it, and as no exact tuple it is never untracked either.
    StructSeq {
        ty: &'static StructSeqType,
        items: Vec<Value>,
    },
    /// An instance of a `collections.namedtuple` / `typing.NamedTuple` class: a tuple
    /// subclass made by `tuple.__new__(cls, ...)` (`PyType_GenericAlloc`), so it is counted,
    /// tracked, holds its class, and is never untracked by a collection nor served by the
    /// tuple free list (python/namedtuples.rs).
    NamedTuple {
        class: ObjId,
        items: Vec<Value>,
    },
}

/// The type of a [`ObjKind::StructSeq`]: its dotted name and field names (all in sequence).
#[derive(Debug, PartialEq, Eq)]
pub struct StructSeqType {
    /// `tp_name`, e.g. `torch.return_types.max`.
    pub name: &'static str,
    pub fields: &'static [&'static str],
}

/// Which dict subclass a flavoured dict is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DictSubclass {
    DefaultDict,
    OrderedDict,
    Counter,
}

/// A dict subclass instance's state beyond its items. Such a dict is always GC-tracked,
/// never untracked by a collection (`_PyDict_MaybeUntrack` is for exact dicts) and never
/// served by or returned to the dict free list (CPython's only takes exact dicts).
#[derive(Debug, Clone, Copy)]
pub struct DictFlavour {
    pub subclass: DictSubclass,
    /// `defaultdict.default_factory` (a reference the dict owns), `None` for others.
    pub factory: Value,
}

/// What an [`ObjKind::Wrapper`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WrapperKind {
    StaticMethod,
    ClassMethod,
    /// Items: the getter, then the setter or `None`.
    Property,
    /// Items: the function, the tuple of stored arguments, the dict of stored keywords.
    Partial,
    /// Lazy iterators. `enumerate`: the source, its position, the count, the result tuple it
    /// hands out again (`iterator_results.rs`).
    Enumerate,
    /// `map(f, source)` and `filter(f, source)`: the function, the source, its position.
    Map,
    Filter,
    /// `reversed(seq)`: the sequence, the index of the next item from the end.
    Reversed,
    /// `contextlib.nullcontext(x)`: what `__enter__` returns.
    NullContext,
    /// `iter(seq)` of a list, tuple or dict (`list_iterator`, `tuple_iterator`,
    /// `dict_keyiterator`: GC objects): the sequence, the index of the next item.
    SeqIter,
    /// `zip(a, b, ...)`: the tuple of one iterator per source, the result tuple it hands out
    /// again (`iterator_results.rs`); no items for `zip()`.
    Zip,
    /// A `@contextlib.contextmanager` function: its closure tuple (a cell holding the
    /// generator function) and its `__dict__`.
    ContextManagerFunction,
    /// A function decorated with `@torch.no_grad()` (or a sibling): its closure tuple (cells
    /// holding the grad-mode manager and the function) and its `__dict__`.
    GradModeFunction,
    /// `_GeneratorContextManager`: the generator, then the function, argument tuple and
    /// keyword dict of the call (`None` after `__enter__`).
    GeneratorContextManager,
    /// `contextlib.suppress(*exceptions)`: the tuple of exceptions.
    Suppress,
    /// `iter(range(...))`: the range, the index of the next item. Not a GC object.
    RangeIter,
    /// `weakref.ref(obj, callback)`: the callback or `None` (the target is in the heap's
    /// weak registry, unowned).
    WeakRef,
    /// `weakref.finalize(obj, func, *args)`: the function, the tuple of arguments.
    Finalize,
    /// `torch.autocast(...)`: its dtype, whether enabled, the dtype it replaced (or `None`).
    Autocast,
    /// `functools.lru_cache` wrapper: the function, `maxsize`, hits, misses, then the cached
    /// key, result pairs (least recently used first).
    LruCache,
    /// What `functools.lru_cache(maxsize)` returns: `maxsize`.
    LruCacheDecorator,
    /// `itertools.chain`: the iterator over the sources, the current source's iterator.
    Chain,
    /// `itertools.islice`: the source iterator, the next index to yield, the stop (`None`:
    /// none), the step, how many items were read.
    Islice,
    /// `itertools.count`: the next value, the step.
    Count,
    /// `itertools.repeat`: the object, the repetitions left (`None`: endless).
    Repeat,
    /// `itertools.cycle`: the source iterator, the list of saved items, the index into it
    /// (-1 during the first pass).
    Cycle,
    /// What `dataclasses.dataclass(**options)` returns: the options (python/dataclasses.rs).
    DataclassDecorator,
    /// `dataclasses.Field`: name, whether it has a default, the default, the factory or
    /// `None`, `init`, `kw_only` (`None`: the class's).
    DataclassField,
    /// A dataclass's generated `__init__`: whether frozen, then its `Field`s in order.
    DataclassInit,
    /// A dataclass's generated `__eq__`.
    DataclassEq,
    /// A frozen dataclass's `__setattr__`, which refuses every store.
    DataclassFrozenSetattr,
    /// `weakref.WeakValueDictionary`: key, entry reference pairs (python/weak_containers.rs).
    WeakValueDict,
    /// `weakref.WeakKeyDictionary`: entry reference, value pairs.
    WeakKeyDict,
    /// `weakref.WeakSet`: entry references.
    WeakSet,
    /// `itertools.starmap`, `takewhile`, `dropwhile`: the function, the source iterator, a
    /// flag (python/itertools_more.rs).
    Starmap,
    TakeWhile,
    DropWhile,
    /// `itertools.accumulate`: the source, the function, the total, whether it has one,
    /// whether `initial` is still to come.
    Accumulate,
    /// `itertools.pairwise`: the source, the previous item, whether one was read.
    Pairwise,
    /// `itertools.zip_longest`: the fill value, then the iterators (`None` once exhausted).
    ZipLongest,
    /// `itertools.product`, `combinations`, `permutations`: the pool(s), state, indices.
    Product,
    Combinations,
    Permutations,
    /// A method of a builtin container taken as a value (`d.get`, `lst.append`): the
    /// receiver, the method's name (python/function_attrs.rs).
    BuiltinMethod,
    /// `torch.autograd.graph.saved_tensors_hooks`: `pack`, `unpack`; `save_on_cpu`: `None`,
    /// `None`, `pin_memory` (python/saved_tensors_hooks.rs).
    SavedTensorsHooks,
}

impl ObjKind {
    /// The type name CPython would print (`type(x).__name__`), for reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            ObjKind::Instance { .. } => "object",
            ObjKind::Class(_) => "type",
            ObjKind::Function(_) => "function",
            ObjKind::Cell(_) => "cell",
            ObjKind::Tuple(_) => "tuple",
            ObjKind::List(_) => "list",
            ObjKind::Dict(_) => "dict",
            ObjKind::BoundMethod { .. } => "method",
            ObjKind::Future(f) => f.type_name(),
            ObjKind::Tensor(_) => "Tensor",
            ObjKind::GradNode(n) => n.name,
            ObjKind::GradFn { .. } => "grad_fn",
            ObjKind::CppHandle { type_name, .. } => type_name,
            ObjKind::Range { .. } => "range",
            ObjKind::Size(_) => "Size",
            ObjKind::StructSeq { ty, .. } => ty.name.rsplit('.').next().unwrap_or(ty.name),
            ObjKind::NamedTuple { .. } => "namedtuple",
            ObjKind::Exception(_) => "exception",
            ObjKind::Traceback(_) => "traceback",
            ObjKind::Frame(_) => "frame",
            ObjKind::Generator(g) if g.coroutine => "coroutine",
            ObjKind::Generator(_) => "generator",
            ObjKind::Wrapper(WrapperKind::StaticMethod, _) => "staticmethod",
            ObjKind::Wrapper(WrapperKind::ClassMethod, _) => "classmethod",
            ObjKind::Wrapper(WrapperKind::Property, _) => "property",
            ObjKind::Wrapper(WrapperKind::Partial, _) => "functools.partial",
            ObjKind::Wrapper(WrapperKind::Enumerate, _) => "enumerate",
            ObjKind::Wrapper(WrapperKind::Map, _) => "map",
            ObjKind::Wrapper(WrapperKind::Filter, _) => "filter",
            ObjKind::Wrapper(WrapperKind::Reversed, _) => "list_reverseiterator",
            ObjKind::Wrapper(WrapperKind::NullContext, _) => "nullcontext",
            ObjKind::Wrapper(WrapperKind::SeqIter, _) => "iterator",
            ObjKind::Wrapper(WrapperKind::Zip, _) => "zip",
            ObjKind::Wrapper(WrapperKind::ContextManagerFunction, _) => "function",
            ObjKind::Wrapper(WrapperKind::GradModeFunction, _) => "function",
            ObjKind::Wrapper(WrapperKind::GeneratorContextManager, _) => "_GeneratorContextManager",
            ObjKind::Wrapper(WrapperKind::Suppress, _) => "suppress",
            ObjKind::Wrapper(WrapperKind::RangeIter, _) => "range_iterator",
            ObjKind::Wrapper(WrapperKind::WeakRef, _) => "weakref.ReferenceType",
            ObjKind::Wrapper(WrapperKind::Finalize, _) => "weakref.finalize",
            ObjKind::Wrapper(WrapperKind::Autocast, _) => "autocast",
            ObjKind::Wrapper(WrapperKind::LruCache, _) => "functools._lru_cache_wrapper",
            ObjKind::Wrapper(WrapperKind::LruCacheDecorator, _) => "function",
            ObjKind::Wrapper(WrapperKind::Chain, _) => "itertools.chain",
            ObjKind::Wrapper(WrapperKind::Islice, _) => "itertools.islice",
            ObjKind::Wrapper(WrapperKind::Count, _) => "itertools.count",
            ObjKind::Wrapper(WrapperKind::Repeat, _) => "itertools.repeat",
            ObjKind::Wrapper(WrapperKind::Cycle, _) => "itertools.cycle",
            ObjKind::Wrapper(WrapperKind::DataclassDecorator, _) => "function",
            ObjKind::Wrapper(WrapperKind::DataclassField, _) => "Field",
            ObjKind::Wrapper(WrapperKind::DataclassInit, _) => "function",
            ObjKind::Wrapper(WrapperKind::DataclassEq, _) => "function",
            ObjKind::Wrapper(WrapperKind::DataclassFrozenSetattr, _) => "function",
            ObjKind::Wrapper(WrapperKind::WeakValueDict, _) => "WeakValueDictionary",
            ObjKind::Wrapper(WrapperKind::WeakKeyDict, _) => "WeakKeyDictionary",
            ObjKind::Wrapper(WrapperKind::WeakSet, _) => "WeakSet",
            ObjKind::Wrapper(WrapperKind::Starmap, _) => "itertools.starmap",
            ObjKind::Wrapper(WrapperKind::TakeWhile, _) => "itertools.takewhile",
            ObjKind::Wrapper(WrapperKind::DropWhile, _) => "itertools.dropwhile",
            ObjKind::Wrapper(WrapperKind::Accumulate, _) => "itertools.accumulate",
            ObjKind::Wrapper(WrapperKind::Pairwise, _) => "itertools.pairwise",
            ObjKind::Wrapper(WrapperKind::ZipLongest, _) => "itertools.zip_longest",
            ObjKind::Wrapper(WrapperKind::Product, _) => "itertools.product",
            ObjKind::Wrapper(WrapperKind::Combinations, _) => "itertools.combinations",
            ObjKind::Wrapper(WrapperKind::Permutations, _) => "itertools.permutations",
            ObjKind::Wrapper(WrapperKind::BuiltinMethod, _) => "builtin_function_or_method",
            ObjKind::Wrapper(WrapperKind::SavedTensorsHooks, _) => "saved_tensors_hooks",
            ObjKind::Deque { .. } => "deque",
            ObjKind::Set { frozen: false, .. } => "set",
            ObjKind::Set { frozen: true, .. } => "frozenset",
        }
    }
}

#[derive(Debug, Clone)]
pub struct Object {
    pub kind: ObjKind,
    pub refcount: u32,
    /// Generation (0..=2), [`PERMANENT`] or [`UNTRACKED`].
    pub generation: u8,
    prev: u32,
    next: u32,
    /// A collection's index of the object in the set it examines (`NO_LINK` outside one):
    /// CPython keeps `gc_refs` in the object header for the same reason.
    collect_index: u32,
}

/// A free list that serves allocations without moving the generation-0 counter.
#[derive(Debug, Clone, Copy, Default)]
struct FreeList {
    len: u32,
    capacity: u32,
}

impl FreeList {
    fn new(capacity: u32) -> Self {
        FreeList { len: 0, capacity }
    }
    /// An allocation: true when it was served from the list.
    fn pop(&mut self) -> bool {
        if self.len > 0 {
            self.len -= 1;
            true
        } else {
            false
        }
    }
    /// A deallocation: true when the object went onto the list.
    fn push(&mut self) -> bool {
        if self.len < self.capacity {
            self.len += 1;
            true
        } else {
            false
        }
    }
}

/// Which free list (if any) serves an object kind.
#[derive(Debug, Clone, Copy)]
enum FreeListKind {
    Dict,
    List,
    Tuple(usize),
    /// 3.8's bound-method free list (none from 3.9 on: capacity 0).
    Method,
    /// 3.14+: `list_iterator` and `tuple_iterator` (`seq_iter_free.rs`).
    ListIter,
    TupleIter,
    /// 3.14+: builtin-method objects (`seq_iter_free.rs`).
    CFunction,
}

/// One generation's intrusive list head and counters.
#[derive(Debug, Clone, Copy)]
struct Generation {
    head: u32,
    tail: u32,
    len: u64,
}

impl Generation {
    const EMPTY: Generation = Generation {
        head: NO_LINK,
        tail: NO_LINK,
        len: 0,
    };
}

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
            dict_flavours: Default::default(),
            weak: Default::default(),
            instance_finalizers: Default::default(),
            call_sites: Default::default(),
            class_cycles: Default::default(),
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

    fn free_list_kind(&self, kind: &ObjKind) -> Option<FreeListKind> {
        match kind {
            ObjKind::Wrapper(WrapperKind::SeqIter, items) => self.seq_iter_free_list(items),
            ObjKind::Dict(_) => Some(FreeListKind::Dict),
            ObjKind::List(_) => Some(FreeListKind::List),
            ObjKind::Tuple(items) if (1..20).contains(&items.len()) => {
                Some(FreeListKind::Tuple(items.len()))
            }
            ObjKind::BoundMethod { .. } => Some(FreeListKind::Method),
            _ => None,
        }
    }

    fn free_list(&mut self, kind: FreeListKind) -> &mut FreeList {
        match kind {
            FreeListKind::Dict => &mut self.dict_free,
            FreeListKind::List => &mut self.list_free,
            FreeListKind::Tuple(n) => &mut self.tuple_free[n],
            FreeListKind::Method => &mut self.method_free,
            FreeListKind::ListIter => &mut self.list_iter_free,
            FreeListKind::TupleIter => &mut self.tuple_iter_free,
            FreeListKind::CFunction => &mut self.cfunction_free,
        }
    }

    /// `PyObject_GC_Del`: the counter drops unless the object went onto a free list.
    fn note_gc_del(&mut self, free_list: Option<FreeListKind>) {
        if let Some(kind) = free_list
            && self.free_list(kind).push()
        {
            return;
        }
        if matches!(self.schedule, CollectorState::FreeThreaded(_)) {
            return self.free_threaded_deallocation();
        }
        self.counts[0] = self.counts[0].saturating_sub(1);
    }

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

    // ----- generation lists ---------------------------------------------------------------

    pub fn track(&mut self, id: ObjId, generation: u8) {
        let tail = self.generations[generation as usize].tail;
        {
            let o = self.get_mut(id);
            debug_assert_eq!(o.generation, UNTRACKED);
            o.generation = generation;
            o.prev = tail;
            o.next = NO_LINK;
        }
        if tail == NO_LINK {
            self.generations[generation as usize].head = id.0;
        } else {
            self.get_mut(ObjId(tail)).next = id.0;
        }
        let g = &mut self.generations[generation as usize];
        g.tail = id.0;
        g.len += 1;
    }

    pub fn untrack(&mut self, id: ObjId) {
        let (generation, prev, next) = {
            let o = self.get(id);
            (o.generation, o.prev, o.next)
        };
        if generation == UNTRACKED {
            return;
        }
        self.unlink(id, generation, prev, next);
        let o = self.get_mut(id);
        o.generation = UNTRACKED;
        o.prev = NO_LINK;
        o.next = NO_LINK;
    }

    fn unlink(&mut self, _id: ObjId, generation: u8, prev: u32, next: u32) {
        if prev == NO_LINK {
            self.generations[generation as usize].head = next;
        } else {
            self.get_mut(ObjId(prev)).next = next;
        }
        if next == NO_LINK {
            self.generations[generation as usize].tail = prev;
        } else {
            self.get_mut(ObjId(next)).prev = prev;
        }
        self.generations[generation as usize].len -= 1;
    }

    /// Members of a generation, oldest first.
    pub fn generation_members(&self, generation: u8) -> Vec<ObjId> {
        let mut out = Vec::with_capacity(self.generations[generation as usize].len as usize);
        let mut cur = self.generations[generation as usize].head;
        while cur != NO_LINK {
            out.push(ObjId(cur));
            cur = self.get(ObjId(cur)).next;
        }
        out
    }

    /// The object's index in the collection under way, if it is in the examined set.
    fn collect_index(&self, id: ObjId) -> Option<usize> {
        let i = self.get(id).collect_index;
        (i != NO_LINK).then_some(i as usize)
    }

    fn set_collect_index(&mut self, id: ObjId, index: u32) {
        self.get_mut(id).collect_index = index;
    }

    /// Moves a tracked object to another generation (promotion, `gc.freeze()`).
    pub fn move_to_generation(&mut self, id: ObjId, generation: u8) {
        if self.get(id).generation == generation {
            return;
        }
        self.untrack(id);
        self.track(id, generation);
    }

    /// Fills every free list, as in a process that has been running a while.
    pub fn fill_free_lists(&mut self) {
        for list in [
            &mut self.dict_free,
            &mut self.list_free,
            &mut self.frame_free,
            &mut self.method_free,
        ]
        .into_iter()
        .chain(self.tuple_free.iter_mut().skip(1))
        {
            list.len = list.capacity;
        }
    }

    /// Empties every free list, as a full collection does (`clear_freelists`).
    pub fn clear_free_lists(&mut self) {
        self.dict_free.len = 0;
        self.list_free.len = 0;
        for t in &mut self.tuple_free {
            t.len = 0;
        }
        self.frame_free.len = 0;
        self.method_free.len = 0;
        self.list_iter_free.len = 0;
        self.tuple_iter_free.len = 0;
        self.cfunction_free.len = 0;
    }

    /// A bound method the model does not keep (one a class statement creates and drops):
    /// counted unless 3.8's free list serves it, then returned to that list.
    pub fn count_temporary_method(&mut self) -> bool {
        let due = !self.method_free.pop() && self.count_raw_allocations(1);
        self.note_gc_del(Some(FreeListKind::Method));
        due
    }

    // ----- traversal ----------------------------------------------------------------------

    /// The references of `id` that CPython's `tp_traverse` visits, with a label for reports
    /// (attribute name, index, or role). References the collector cannot see (a view's base
    /// tensor, held by C++) are not listed: they make their target a root.
    pub fn traverse(&self, id: ObjId, mut visit: impl FnMut(ObjId, Edge)) {
        let mut value = |v: Value, edge: Edge| {
            if let Value::Obj(c) | Value::BoundNative(_, c) = v {
                visit(c, edge);
            }
        };
        match &self.get(id).kind {
            ObjKind::Instance { class, attrs } => {
                value(Value::Obj(*class), Edge::Role("__class__"));
                match attrs {
                    Attrs::Inline(items) => {
                        for (name, v) in items {
                            value(*v, Edge::Attr(*name));
                        }
                    }
                    Attrs::Dict(Some(d)) => value(Value::Obj(*d), Edge::Role("__dict__")),
                    Attrs::Dict(None) => {}
                }
            }
            ObjKind::Class(c) => {
                if let Some(b) = c.base {
                    value(Value::Obj(b), Edge::Role("__base__"));
                }
                if self.class_self_reference(id) {
                    value(Value::Obj(id), Edge::Role("__mro__"));
                }
                for (name, v) in &c.attrs {
                    value(*v, Edge::Attr(*name));
                }
            }
            ObjKind::Function(f) => {
                if let Some(c) = f.closure {
                    value(Value::Obj(c), Edge::Role("__closure__"));
                }
                for d in &f.defaults {
                    value(*d, Edge::Role("__defaults__"));
                }
                if let Some(d) = f.dict {
                    value(Value::Obj(d), Edge::Role("__dict__"));
                }
            }
            ObjKind::Cell(v) => {
                if let Some(v) = v {
                    value(*v, Edge::Role("cell_contents"));
                }
            }
            ObjKind::Tuple(items) | ObjKind::List(items) => {
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
            ObjKind::Dict(items) => {
                if let Some(f) = self.dict_flavours.get(&id.0) {
                    value(f.factory, Edge::Role("default_factory"));
                }
                for (k, v) in items {
                    value(*k, Edge::Role("key"));
                    let edge = match k {
                        Value::Str(s) => Edge::Key(*s),
                        _ => Edge::Role("value"),
                    };
                    value(*v, edge);
                }
            }
            ObjKind::BoundMethod { func, receiver } => {
                value(Value::Obj(*func), Edge::Role("__func__"));
                value(*receiver, Edge::Role("__self__"));
            }
            ObjKind::Future(f) => f.traverse(&mut value),
            ObjKind::Tensor(t) => {
                t.traverse(&mut value);
                // THPVariable_traverse visits a custom Function's ctx (the PyNode's object)
                // when this tensor is the node's only owner.
                if let Some(node) = t.grad_fn
                    && let Some(Object {
                        kind: ObjKind::GradNode(n),
                        refcount: 1,
                        ..
                    }) = self.objects[node.0 as usize].as_ref()
                    && let Some(ctx) = n.ctx
                {
                    value(Value::Obj(ctx), Edge::Role("grad_fn"));
                }
            }
            ObjKind::GradFn { .. } => {}
            ObjKind::GradNode(_) | ObjKind::CppHandle { .. } => {}
            ObjKind::Range { .. } | ObjKind::Size(_) => {}
            ObjKind::Exception(e) => exception_objects::traverse_exception(e, &mut value),
            ObjKind::Traceback(t) => exception_objects::traverse_traceback(t, &mut value),
            ObjKind::Frame(f) => exception_objects::traverse_frame(f, &mut value),
            ObjKind::Generator(g) => g.traverse(&mut value),
            ObjKind::Wrapper(_, items) => {
                for v in items {
                    value(*v, Edge::Role("__func__"));
                }
            }
            ObjKind::Deque { items, .. } => {
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
            ObjKind::Set { table, .. } => {
                for v in table.items() {
                    value(v, Edge::Role("set item"));
                }
            }
            ObjKind::StructSeq { ty, items } => {
                for (field, v) in ty.fields.iter().zip(items) {
                    value(*v, Edge::Role(field));
                }
            }
            ObjKind::NamedTuple { class, items } => {
                value(Value::Obj(*class), Edge::Role("__class__"));
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
        }
    }

    /// `tp_clear`: drops the references an object holds so that a garbage cycle falls
    /// apart; returns them for the caller to release.
    pub fn clear_references(&mut self, id: ObjId) -> Vec<Value> {
        let mut out = Vec::new();
        self.clear_references_into(id, &mut out);
        out
    }

    /// [`Heap::clear_references`] appending to `out`.
    pub fn clear_references_into(&mut self, id: ObjId, out: &mut Vec<Value>) {
        if self.take_class_self_reference(id) {
            out.push(Value::Obj(id));
        }
        match &mut self.get_mut(id).kind {
            ObjKind::Instance { attrs, .. } => match attrs {
                Attrs::Inline(items) => out.extend(items.drain(..).map(|(_, v)| v)),
                Attrs::Dict(d) => out.extend(d.take().map(Value::Obj)),
            },
            ObjKind::Class(c) => {
                out.extend(c.attrs.drain(..).map(|(_, v)| v));
                out.extend(c.base.take().map(Value::Obj));
            }
            ObjKind::Function(f) => {
                out.extend(f.closure.take().map(Value::Obj));
                out.append(&mut f.defaults);
                out.extend(f.dict.take().map(Value::Obj));
            }
            ObjKind::Cell(v) => out.extend(v.take()),
            // Tuples have no `tp_clear`: they keep their items (and their size, which picks
            // their free list) until a referrer's clearing frees them.
            ObjKind::Tuple(_) => {}
            ObjKind::List(items) => out.append(items),
            ObjKind::Dict(items) => {
                for (k, v) in items.drain(..) {
                    out.push(k);
                    out.push(v);
                }
            }
            // A bound method's references are cleared when it is deallocated.
            ObjKind::BoundMethod { .. } => {}
            ObjKind::Future(f) => f.clear(out),
            ObjKind::Tensor(t) => t.clear_python_references(out),
            ObjKind::GradFn { .. } | ObjKind::GradNode(_) | ObjKind::CppHandle { .. } => {}
            ObjKind::Range { .. } | ObjKind::Size(_) => {}
            ObjKind::Exception(e) => exception_objects::clear_exception(e, out),
            ObjKind::Traceback(t) => exception_objects::clear_traceback(t, out),
            ObjKind::Frame(f) => exception_objects::clear_frame(f, out),
            ObjKind::Generator(g) => g.clear_frame(out),
            ObjKind::Wrapper(_, items) => out.append(items),
            ObjKind::Deque { items, .. } => out.append(items),
            ObjKind::Set { table, .. } => out.append(&mut table.drain()),
            // Like a tuple, a struct sequence has no `tp_clear`.
            ObjKind::StructSeq { .. } | ObjKind::NamedTuple { .. } => {}
        }
        if let Some(f) = self.dict_flavours.get_mut(&id.0) {
            out.push(std::mem::replace(&mut f.factory, Value::None));
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

/// A labelled reference, for reference paths in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    Attr(Sym),
    Key(Sym),
    Index(u32),
    Role(&'static str),
}

/// Moves the references a dying object owns into `out` (all of them, visible to the
/// collector or not) and queues a tensor's storage for release.
fn owned_references(
    kind: ObjKind,
    out: &mut Vec<ObjId>,
    dropped_storage_refs: &mut Vec<crate::torch::StorageId>,
    tensors_alive: &mut u64,
) {
    let mut push = |v: Value| {
        if let Value::Obj(id) | Value::BoundNative(_, id) = v {
            out.push(id);
        }
    };
    match kind {
        ObjKind::Instance { class, attrs } => {
            push(Value::Obj(class));
            match attrs {
                Attrs::Inline(items) => items.into_iter().for_each(|(_, v)| push(v)),
                Attrs::Dict(d) => d.into_iter().for_each(|d| push(Value::Obj(d))),
            }
        }
        ObjKind::Class(c) => {
            c.attrs.into_iter().for_each(|(_, v)| push(v));
            c.base.into_iter().for_each(|b| push(Value::Obj(b)));
        }
        ObjKind::Function(f) => {
            f.closure.into_iter().for_each(|c| push(Value::Obj(c)));
            f.defaults.into_iter().for_each(&mut push);
            f.dict.into_iter().for_each(|d| push(Value::Obj(d)));
        }
        ObjKind::Cell(v) => v.into_iter().for_each(&mut push),
        ObjKind::Tuple(items) | ObjKind::List(items) => items.into_iter().for_each(&mut push),
        ObjKind::Dict(items) => items.into_iter().for_each(|(k, v)| {
            push(k);
            push(v);
        }),
        ObjKind::BoundMethod { func, receiver } => {
            push(Value::Obj(func));
            push(receiver);
        }
        ObjKind::Future(f) => f.references(&mut push),
        ObjKind::Tensor(t) => {
            *tensors_alive -= 1;
            t.release(&mut push, dropped_storage_refs);
        }
        ObjKind::GradNode(n) => n.release(&mut push, dropped_storage_refs),
        ObjKind::GradFn { node } => push(Value::Obj(node)),
        ObjKind::CppHandle { held, .. } => held.into_iter().for_each(&mut push),
        ObjKind::Range { .. } | ObjKind::Size(_) => {}
        ObjKind::Exception(e) => exception_objects::exception_references(*e, &mut push),
        ObjKind::Traceback(t) => exception_objects::traceback_references(t, &mut push),
        ObjKind::Frame(f) => exception_objects::frame_references(*f, &mut push),
        ObjKind::Generator(g) => g.references(&mut push),
        ObjKind::Wrapper(_, items) => items.into_iter().for_each(&mut push),
        ObjKind::Deque { items, .. } => items.into_iter().for_each(&mut push),
        ObjKind::Set { table, .. } => table.items().for_each(&mut push),
        ObjKind::StructSeq { items, .. } => items.into_iter().for_each(&mut push),
        ObjKind::NamedTuple { class, items } => {
            push(Value::Obj(class));
            items.into_iter().for_each(&mut push);
        }
    }
}
