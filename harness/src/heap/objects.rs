//! The objects of the heap: values, object kinds and the per-object header (reference count,
//! generation links) that CPython keeps in each GC object.

use super::{ExceptionData, FrameData, FutureData, GeneratorData, SetTable, TracebackData};
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
pub(crate) const NO_LINK: u32 = u32::MAX;

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
    /// `agen.asend(v)` / `agen.__anext__()` (`async_generator_asend`): the generator, the
    /// value to send first, the state (0 not awaited yet, 1 awaiting, 2 done;
    /// python/vm/asyncgen_methods.rs).
    AsyncGenASend,
    /// `agen.athrow(e)` / `agen.aclose()` (`async_generator_athrow`): the generator, the
    /// argument tuple (`None` for `aclose()`), the state as for `AsyncGenASend`.
    AsyncGenAThrow,
    /// `anext(aiter, default)` (`anext_awaitable`, 3.10+): the awaitable of `__anext__()`,
    /// the default.
    AnextAwaitable,
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
            ObjKind::Wrapper(WrapperKind::AsyncGenASend, _) => "async_generator_asend",
            ObjKind::Wrapper(WrapperKind::AsyncGenAThrow, _) => "async_generator_athrow",
            ObjKind::Wrapper(WrapperKind::AnextAwaitable, _) => "anext_awaitable",
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
    pub(crate) prev: u32,
    pub(crate) next: u32,
    /// A collection's index of the object in the set it examines (`NO_LINK` outside one):
    /// CPython keeps `gc_refs` in the object header for the same reason.
    pub(crate) collect_index: u32,
}
