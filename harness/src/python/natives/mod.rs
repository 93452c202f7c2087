//! The modelled natives: the `Native` registry of builtins, methods and modules, owned call
//! arguments and the call entry point. Name and module lookup, the torch functions, tensor
//! methods and subscripts are in the child modules; Python builtins are in `builtin_calls.rs`.
//!
//! Natives receive owned arguments and drop them when they return; whatever they store
//! (a list item, a dict value) takes its own reference.

use super::autograd::{self, Save};
use super::int_ops;
use super::interp::{Interpreter, R};
use crate::heap::{NativeId, ObjId, ObjKind, Sym, Value};
use crate::torch::{self, Category, DeviceKind, Dtype, GradFlow};
use ruff_python_ast::{Expr, Operator};

mod dist_calls;
mod functional_calls;
mod lookup;
mod subscript_index;
mod subscripts;
mod tensor_attrs;
mod tensor_methods;
mod tensor_ops;
mod torch_args;
mod torch_calls;

pub use lookup::*;
pub(in crate::python) use subscript_index::*;
pub(super) use subscripts::*;
pub(super) use tensor_attrs::*;
pub(super) use tensor_methods::*;
pub(super) use tensor_ops::*;
pub(super) use torch_args::*;
pub(super) use torch_calls::*;

macro_rules! natives {
    ($($variant:ident),* $(,)?) => {
        /// Every builtin function, method and module of the model.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u16)]
        pub enum Native { $($variant),* }
        const ALL: &[Native] = &[$(Native::$variant),*];
    };
}

natives!(
    // modules
    ModTorch,
    ModCuda,
    ModGc,
    ModAsyncio,
    ModNn,
    ModFunctional,
    ModAutograd,
    ModVariable,
    ModEngine,
    ModDist,
    ModOptim,
    ModCudaMemory,
    ModUtils,
    ModCheckpoint,
    Checkpoint,
    // builtins
    Zip,
    Super,
    Range,
    Len,
    Print,
    Int,
    Float,
    Str,
    Bool,
    Abs,
    Min,
    Max,
    Sum,
    List,
    Tuple,
    Dict,
    Object,
    IsInstance,
    IsSubclass,
    GetAttr,
    SetAttr,
    HasAttr,
    // gc
    GcCollect,
    GcEnable,
    GcDisable,
    GcIsEnabled,
    GcGetCount,
    GcGetThreshold,
    GcSetThreshold,
    GcFreeze,
    GcUnfreeze,
    GcGetFreezeCount,
    // asyncio
    AsyncioRun,
    AsyncioGather,
    AsyncioSleep,
    AsyncioCreateTask,
    AsyncioQueue,
    AsyncioWaitFor,
    // torch factories and functions
    Zeros,
    Ones,
    Empty,
    Rand,
    Randn,
    Full,
    Arange,
    TensorCtor,
    ZerosLike,
    OnesLike,
    EmptyLike,
    RandLike,
    RandnLike,
    FullLike,
    Matmul,
    Mm,
    Bmm,
    Add,
    Sub,
    Mul,
    Div,
    Relu,
    Dropout,
    SoftmaxFn,
    LogSoftmaxFn,
    GeluFn,
    LogFn,
    AbsFn,
    SqrtFn,
    NegFn,
    Sigmoid,
    Tanh,
    Exp,
    Cat,
    Stack,
    SumFn,
    MeanFn,
    DeviceCtor,
    // autograd
    NoGrad,
    EnableGrad,
    InferenceMode,
    AutogradBackward,
    AutogradGrad,
    RunBackward,
    FLinear,
    FMseLoss,
    FCrossEntropy,
    FEmbedding,
    FLayerNorm,
    FBatchNorm,
    FConv1d,
    FConv2d,
    FMaxPool2d,
    FAdaptiveAvgPool2d,
    FlattenFn,
    FNllLoss,
    FL1Loss,
    FSmoothL1Loss,
    FBce,
    FBceWithLogits,
    FLeakyRelu,
    FSilu,
    CheckpointSequential,
    Randint,
    // torch.distributed
    DistInit,
    DistGetRank,
    DistGetWorldSize,
    DistIsend,
    DistIrecv,
    DistSend,
    DistRecv,
    DistBatchIsendIrecv,
    DistBarrier,
    // torch.cuda
    CurrentDevice,
    SetDevice,
    RecordMemoryHistory,
    DumpSnapshot,
    MemoryAllocated,
    MemoryReserved,
    MaxMemoryAllocated,
    MaxMemoryReserved,
    ResetPeakMemoryStats,
    EmptyCache,
    Synchronize,
    IsAvailable,
    DeviceCount,
    MemGetInfo,
    MemoryStats,
    MemorySummary,
    NnParameter,
    ModLrScheduler,
    SetAllocatorSettings,
    LegacyFloatTensor,
    LegacyHalfTensor,
    LegacyDoubleTensor,
    LegacyLongTensor,
    LegacyCudaFloatTensor,
    LegacyCudaHalfTensor,
    LegacyCudaLongTensor,
    Linspace,
    Eye,
    // sys
    ModSys,
    SysExcInfo,
    // decorators and functools
    StaticMethodFn,
    ClassMethodFn,
    PropertyFn,
    ModFunctools,
    FunctoolsPartial,
    FunctoolsWraps,
    IdentityDecorator,
    PropertySetter,
    PropertyGetter,
    // iteration builtins
    Enumerate,
    MapFn,
    FilterFn,
    Reversed,
    Sorted,
    Any,
    All,
    NextFn,
    IterFn,
    // harmless stdlib modules (stdlib.rs)
    ModTyping,
    ModOs,
    ModMath,
    ModTime,
    ModRandom,
    ModItertools,
    ModCollections,
    ModDataclasses,
    ModWeakref,
    ModContextlib,
    ModLogging,
    ModWarnings,
    TypingName,
    Silent,
    OsGetenv,
    MathSqrt,
    MathExp,
    MathLog,
    MathCeil,
    MathFloor,
    MathIsfinite,
    TimeClock,
    TimeSleep,
    RandomSeed,
    RandomRandom,
    RandomRandint,
    RandomUniform,
    NullContext,
    GetLogger,
    Deque,
    ContextManager,
    Suppress,
    // copy (deepcopy.rs)
    ModCopy,
    CopyDeepcopy,
    CopyCopy,
    SetFn,
    FrozenSetFn,
    DefaultDictFn,
    OrderedDictFn,
    WeakrefRef,
    WeakrefFinalize,
    // amp (amp.rs)
    ModAmp,
    ModCudaAmp,
    Autocast,
    CudaAmpAutocast,
    FunctoolsLruCache,
    FunctoolsCache,
    ItertoolsChain,
    ItertoolsChainFromIterable,
    ItertoolsIslice,
    ItertoolsCount,
    ItertoolsRepeat,
    ItertoolsCycle,
    DataclassesDataclass,
    DataclassesField,
    DataclassesFields,
    DataclassesIsDataclass,
    DataclassesAsdict,
    DataclassesAstuple,
    DataclassesReplace,
    WeakrefWeakValueDictionary,
    WeakrefWeakKeyDictionary,
    WeakrefWeakSet,
    ItertoolsStarmap,
    ItertoolsTakewhile,
    ItertoolsDropwhile,
    ItertoolsAccumulate,
    ItertoolsPairwise,
    ItertoolsZipLongest,
    ItertoolsProduct,
    ItertoolsCombinations,
    ItertoolsPermutations,
    Repr,
    FScaledDotProductAttention,
    TorchTensor,
    FRelu,
    ReluInPlace,
    TypeFn,
    Round,
    DivMod,
    FKlDiv,
    FSoftplus,
    NormFn,
    LinalgVectorNorm,
    AddcmulFn,
    ModLinalg,
    FGroupNorm,
    FElu,
    FHardtanh,
    FRelu6,
    FMish,
    FHardswish,
    MathIsnan,
    MathIsinf,
    IsnanFn,
    IsinfFn,
    IsfiniteFn,
    ArgmaxFn,
    ArgminFn,
    ModNnUtils,
    ClipGradNorm,
    ClipGradValue,
    SysGetrefcount,
    MaxFn,
    MinFn,
    MaximumFn,
    MinimumFn,
    SortFn,
    TopkFn,
    FSoftmin,
    ParametersToVector,
    VectorToParameters,
    GcGetObjects,
    GcGetReferrers,
    GcGetReferents,
    GcIsTracked,
    FormatFn,
    HexFn,
    BinFn,
    OctFn,
    ChrFn,
    OrdFn,
    PowFn,
    EqFn,
    NeFn,
    LtFn,
    LeFn,
    GtFn,
    GeFn,
    AnyFn,
    AllFn,
    LogicalNotFn,
    LogicalAndFn,
    LogicalOrFn,
    IscloseFn,
    AllcloseFn,
    EqualFn,
    RemainderFn,
    FloorDivideFn,
    AddcdivFn,
    IsTensorFn,
    IsFloatingPointFn,
    IsGradEnabled,
    SetGradEnabled,
    IsInferenceModeEnabled,
    GradModeOffWasOn,
    GradModeOffWasOff,
    GradModeOnWasOn,
    GradModeOnWasOff,
    // torch.utils.data (data_loader.rs)
    ModData,
    RandomSplit,
    // select_ops.rs
    LogsumexpFn,
    WhereFn,
    // identity builtins (builtins_identity.rs)
    IdFn,
    HashFn,
    CallableFn,
    // more of `math` (stdlib.rs)
    MathCos,
    MathSin,
    MathTan,
    MathTanh,
    MathAtan,
    MathLog2,
    MathLog10,
    MathFabs,
    // collections.Counter (collections_counter.rs)
    CounterFn,
    // more of `random` (random_module.rs)
    RandomChoice,
    RandomShuffle,
    RandomSample,
    // `type(None)` (type_builtin.rs)
    NoneTypeFn,
    // traceback (traceback_module.rs)
    ModTraceback,
    TracebackFormatExc,
    TracebackPrintExc,
    TracebackFormatException,
    TracebackPrintException,
    TracebackClearFrames,
    // `vars(obj)` (instance_dict.rs)
    VarsFn,
    // `types` (types_module.rs)
    ModTypes,
    TypesMethodType,
    // torch.autograd.graph (saved_tensors_hooks.rs), torch.as_tensor (tensor_sharing.rs)
    ModAutogradGraph,
    SavedTensorsHooksFn,
    SaveOnCpuFn,
    AsTensorFn,
    // `collections.namedtuple`, `typing.NamedTuple` (namedtuples.rs)
    NamedtupleFn,
    TypingNamedTuple,
    NamedtupleNew,
    NamedtupleMake,
    NamedtupleReplace,
    NamedtupleAsdict,
    // `types.SimpleNamespace` (simple_namespace.rs)
    TypesSimpleNamespace,
    // `dataclasses.KW_ONLY` (dataclasses.rs): a sentinel only read as an annotation
    DataclassesKwOnly,
    // pointwise math, flips, interleaving (pointwise_math.rs)
    Log10Fn,
    Log2Fn,
    Log1pFn,
    Expm1Fn,
    Exp2Fn,
    RsqrtFn,
    ReciprocalFn,
    SignFn,
    FloorFn,
    CeilFn,
    RoundFn,
    TruncFn,
    ClampMinFn,
    ClampMaxFn,
    FlipFn,
    RollFn,
    TrilFn,
    TriuFn,
    CumprodFn,
    HypotFn,
    Atan2Fn,
    LogaddexpFn,
    LerpFn,
    OuterFn,
    RepeatInterleaveFn,
    // torch.nn.parallel (ddp.rs), more of torch.distributed (dist_calls.rs)
    ModNnParallel,
    DistIsInitialized,
    DistAllReduce,
    // cumsum (pointwise_math.rs), diff (differences.rs), einsum (einsum.rs)
    CumsumFn,
    DiffFn,
    EinsumFn,
    // `anext` (3.10+; vm/asyncgen_methods.rs)
    AnextFn,
);

impl Native {
    pub const fn id(self) -> NativeId {
        NativeId(self as u16)
    }
    pub fn from_id(id: NativeId) -> Option<Native> {
        ALL.get(id.0 as usize).copied()
    }
}

fn native(n: Native) -> Value {
    Value::Native(n.id())
}

/// The value of a builtin native (`int`, `list`, `type`...).
pub(super) fn native_value(n: Native) -> Value {
    native(n)
}

pub(super) fn module(n: Native) -> Value {
    Value::Module(n.id())
}

/// The empty tuple, a singleton in CPython: created once, never counted nor freed.
pub(super) fn constant_tuple(it: &mut Interpreter<'_>, items: Vec<Value>) -> Value {
    debug_assert!(
        items.is_empty(),
        "only the empty tuple is a shared constant"
    );
    match cached_constant(it, EMPTY_TUPLE_KEY, |_| Ok(items)) {
        Ok(v) => v,
        Err(_) => unreachable!("building () cannot fail"),
    }
}

/// Key of the empty tuple among the cached constants (no AST node has address 0).
const EMPTY_TUPLE_KEY: usize = 0;

/// A constant tuple of a code object (`co_consts`), keyed by its AST node's address: built
/// on first use and kept for the run, as the code object keeps it, so using it allocates
/// nothing and dropping a reference to it never frees it (which would move the generation-0
/// counter or a free list as no CPython object does).
pub(super) fn cached_constant<'a>(
    it: &mut Interpreter<'a>,
    key: usize,
    items: impl FnOnce(&mut Interpreter<'a>) -> super::interp::R<Vec<Value>>,
) -> super::interp::R<Value> {
    if let Some(&id) = it.constants.get(&key) {
        it.heap.incref(Value::Obj(id));
        return Ok(Value::Obj(id));
    }
    let items = items(it)?;
    let id = it.heap.insert_uncounted(ObjKind::Tuple(items));
    it.heap.incref(Value::Obj(id));
    it.constants.insert(key, id);
    Ok(Value::Obj(id))
}

/// Owned call arguments, dropped together when the native returns.
pub(super) struct Args {
    pub(super) pos: Vec<Value>,
    pub(super) kw: Vec<(Sym, Value)>,
}

impl Args {
    pub(super) fn kw(&self, it: &Interpreter<'_>, name: &str) -> Option<Value> {
        self.kw
            .iter()
            .find(|(k, _)| it.names.name(*k) == name)
            .map(|(_, v)| *v)
    }
    fn drop_all(self, it: &mut Interpreter<'_>) {
        it.heap.decref_all(self.pos);
        it.heap.decref_all(self.kw.into_iter().map(|(_, v)| v));
    }
}

/// Calls a native function.
pub(super) fn call(
    it: &mut Interpreter<'_>,
    id: NativeId,
    _receiver: Option<Value>,
    pos: Vec<Value>,
    kw: Vec<(Sym, Value)>,
) -> R<Value> {
    let args = Args { pos, kw };
    if let Some((name, allowed)) = Native::from_id(id).and_then(super::keywords::for_native)
        && let Err(e) = super::keywords::check(it, name, Some(allowed), &args.kw)
    {
        args.drop_all(it);
        return Err(e);
    }
    let result = match Native::from_id(id) {
        Some(n) => {
            // Builtin types called through `tp_call` on older releases (`heap/builtin_type_calls.rs`).
            let packed = builtin_type_call(n)
                .filter(|t| t.packs_call(it.heap.profile.version, !args.kw.is_empty()))
                .map(|_| (args.pos.len(), args.kw.len()));
            if let Some((len, kw)) = packed {
                it.varargs_call_begin(len, kw);
            }
            let result = super::builtin_calls::call_native(it, n, &args);
            if let Some((len, kw)) = packed {
                it.varargs_call_end(len, kw);
            }
            result
        }
        None => it.error("TypeError: unknown builtin"),
    };
    args.drop_all(it);
    result
}

/// The builtin types whose calls pack an argument tuple before they had a vectorcall.
fn builtin_type_call(n: Native) -> Option<crate::heap::BuiltinTypeCall> {
    use crate::heap::BuiltinTypeCall as T;
    match n {
        Native::Range => Some(T::Range),
        Native::List => Some(T::List),
        Native::Tuple => Some(T::Tuple),
        Native::Float => Some(T::Float),
        Native::Bool => Some(T::Bool),
        Native::Int => Some(T::Int),
        Native::Str => Some(T::Str),
        Native::SetFn => Some(T::Set),
        Native::FrozenSetFn => Some(T::FrozenSet),
        Native::Reversed => Some(T::Reversed),
        Native::MapFn => Some(T::Map),
        Native::FilterFn => Some(T::Filter),
        Native::Enumerate => Some(T::Enumerate),
        Native::Zip => Some(T::Zip),
        _ => None,
    }
}

pub(super) fn int_arg(it: &Interpreter<'_>, v: Value, what: &str) -> R<i64> {
    match v {
        Value::Int(i) => Ok(i),
        Value::Bool(b) => Ok(b as i64),
        _ => it.error(format!("TypeError: {what} must be an integer")),
    }
}

pub(super) fn float_of(v: Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(i as f64),
        Value::Float(f) => Some(f),
        Value::Bool(b) => Some(b as i64 as f64),
        _ => None,
    }
}

pub(super) fn new_tuple(it: &mut Interpreter<'_>, items: Vec<Value>) -> Value {
    Value::Obj(it.alloc(ObjKind::Tuple(items)))
}
