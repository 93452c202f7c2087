//! The modelled natives: the `Native` registry of builtins, methods and modules, module
//! lookup, owned call arguments and the call entry point. The torch functions, tensor
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

mod subscripts;
mod tensor_methods;
mod tensor_ops;
mod torch_calls;

pub(super) use subscripts::*;
pub(super) use tensor_methods::*;
pub(super) use tensor_ops::*;
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
    // `collections.namedtuple`, `typing.NamedTuple` (namedtuples.rs)
    NamedtupleFn,
    TypingNamedTuple,
    NamedtupleNew,
    NamedtupleMake,
    NamedtupleReplace,
    NamedtupleAsdict,
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

/// Names bound before the workload starts: scenarios may use `torch`, `gc` and `asyncio`
/// without importing them.
pub fn preloaded_globals() -> Vec<(&'static str, Value)> {
    vec![
        ("torch", module(Native::ModTorch)),
        ("gc", module(Native::ModGc)),
        ("asyncio", module(Native::ModAsyncio)),
    ]
}

pub fn module_named(name: &str) -> Option<Value> {
    Some(match name {
        "torch" => module(Native::ModTorch),
        "torch.cuda" => module(Native::ModCuda),
        "torch.nn" => module(Native::ModNn),
        "torch.nn.functional" => module(Native::ModFunctional),
        "torch.autograd" => module(Native::ModAutograd),
        "torch.autograd.variable" => module(Native::ModAutograd),
        "torch.distributed" => module(Native::ModDist),
        "torch.optim" => module(Native::ModOptim),
        "torch.cuda.memory" => module(Native::ModCudaMemory),
        "torch.optim.lr_scheduler" => module(Native::ModLrScheduler),
        "torch.utils" => module(Native::ModUtils),
        "torch.utils.checkpoint" => module(Native::ModCheckpoint),
        "torch.amp" => module(Native::ModAmp),
        "torch.cuda.amp" => module(Native::ModCudaAmp),
        "torch.linalg" => module(Native::ModLinalg),
        "torch.nn.utils" => module(Native::ModNnUtils),
        "torch.utils.data" => module(Native::ModData),
        "gc" => module(Native::ModGc),
        "asyncio" => module(Native::ModAsyncio),
        "sys" => module(Native::ModSys),
        "functools" => module(Native::ModFunctools),
        other => {
            let (_, n) = super::stdlib::MODULES.iter().find(|(m, _)| *m == other)?;
            module(*n)
        }
    })
}

pub fn module_display(id: NativeId) -> &'static str {
    match Native::from_id(id) {
        Some(Native::ModTorch) => "torch",
        Some(Native::ModCuda) => "torch.cuda",
        Some(Native::ModNn) => "torch.nn",
        Some(Native::ModFunctional) => "torch.nn.functional",
        Some(Native::ModAutograd) => "torch.autograd",
        Some(Native::ModVariable) => "torch.autograd.Variable",
        Some(Native::ModEngine) => "Variable._execution_engine",
        Some(Native::ModDist) => "torch.distributed",
        Some(Native::ModOptim) => "torch.optim",
        Some(Native::ModCudaMemory) => "torch.cuda.memory",
        Some(Native::ModLrScheduler) => "torch.optim.lr_scheduler",
        Some(Native::ModUtils) => "torch.utils",
        Some(Native::ModCheckpoint) => "torch.utils.checkpoint",
        Some(Native::ModAmp) => "torch.amp",
        Some(Native::ModCudaAmp) => "torch.cuda.amp",
        Some(Native::ModLinalg) => "torch.linalg",
        Some(Native::ModNnUtils) => "torch.nn.utils",
        Some(Native::ModData) => "torch.utils.data",
        Some(Native::ModGc) => "gc",
        Some(Native::ModAsyncio) => "asyncio",
        Some(Native::ModSys) => "sys",
        Some(Native::ModFunctools) => "functools",
        Some(n) if super::stdlib::MODULES.iter().any(|(_, m)| *m == n) => super::stdlib::MODULES
            .iter()
            .find(|(_, m)| *m == n)
            .map_or("module", |(name, _)| name),
        _ => "module",
    }
}

/// The dotted name of a module value (`torch.nn`), or `""`.
pub fn module_display_of(m: Value) -> &'static str {
    match m {
        Value::Module(id) => module_display(id),
        _ => "",
    }
}

/// The grad mode a `with` item sets (`torch.no_grad()` → off).
pub fn grad_mode_of(n: NativeId) -> Option<bool> {
    match Native::from_id(n)? {
        Native::NoGrad | Native::InferenceMode => Some(false),
        Native::EnableGrad => Some(true),
        Native::GradModeOffWasOn | Native::GradModeOffWasOff => Some(false),
        Native::GradModeOnWasOn | Native::GradModeOnWasOff => Some(true),
        _ => None,
    }
}

/// The grad mode a `with` item restores on exit when it is not the mode at entry:
/// `torch.set_grad_enabled(mode)` switches the mode when it is called, and its `__exit__`
/// restores the mode from before that call (`self.prev`).
pub fn grad_mode_restored(n: NativeId) -> Option<bool> {
    match Native::from_id(n)? {
        Native::GradModeOffWasOn | Native::GradModeOnWasOn => Some(true),
        Native::GradModeOffWasOff | Native::GradModeOnWasOff => Some(false),
        _ => None,
    }
}

pub fn builtin(name: &str) -> Option<Value> {
    use Native::*;
    Some(native(match name {
        "range" => Range,
        "len" => Len,
        "print" => Print,
        "int" => Int,
        "float" => Float,
        "str" => Str,
        "bool" => Bool,
        "abs" => Abs,
        "min" => Min,
        "max" => Max,
        "sum" => Sum,
        "list" => List,
        "tuple" => Tuple,
        "dict" => Dict,
        "object" => Object,
        "isinstance" => IsInstance,
        "issubclass" => IsSubclass,
        "staticmethod" => StaticMethodFn,
        "enumerate" => Enumerate,
        "map" => MapFn,
        "filter" => FilterFn,
        "reversed" => Reversed,
        "sorted" => Sorted,
        "any" => Any,
        "all" => All,
        "classmethod" => ClassMethodFn,
        "property" => PropertyFn,
        "getattr" => GetAttr,
        "setattr" => SetAttr,
        "hasattr" => HasAttr,
        "zip" => Zip,
        "super" => Super,
        "next" => NextFn,
        "iter" => IterFn,
        "set" => SetFn,
        "frozenset" => FrozenSetFn,
        "repr" => Repr,
        "type" => TypeFn,
        "round" => Round,
        "divmod" => DivMod,
        "format" => FormatFn,
        "hex" => HexFn,
        "bin" => BinFn,
        "oct" => OctFn,
        "chr" => ChrFn,
        "ord" => OrdFn,
        "pow" => PowFn,
        "id" => IdFn,
        "hash" => HashFn,
        "callable" => CallableFn,
        "vars" => VarsFn,
        _ => return None,
    }))
}

/// `module.attr`.
pub fn module_attr(m: Value, attr: &str) -> Option<Value> {
    use Native::*;
    let Value::Module(id) = m else { return None };
    if let Some(v) = super::stdlib::module_attr(Native::from_id(id)?, attr) {
        return Some(v);
    }
    let n = match (Native::from_id(id)?, attr) {
        (ModTorch, "cuda") => return Some(module(ModCuda)),
        (ModTorch, "nn") => return Some(module(ModNn)),
        (ModTorch, "autograd") => return Some(module(ModAutograd)),
        (ModTorch, "distributed") => return Some(module(ModDist)),
        (ModTorch, "optim") => return Some(module(ModOptim)),
        (ModNn, "functional") => return Some(module(ModFunctional)),
        (ModAutograd, "Variable") => return Some(module(ModVariable)),
        (ModAutograd, "variable") => return Some(module(ModAutograd)),
        (ModVariable, "_execution_engine") => return Some(module(ModEngine)),
        (ModCuda, "memory") => return Some(module(ModCudaMemory)),
        (ModOptim, "lr_scheduler") => return Some(module(ModLrScheduler)),
        (ModTorch, "utils") => return Some(module(ModUtils)),
        (ModUtils, "checkpoint") => return Some(module(ModCheckpoint)),
        (ModCheckpoint, "checkpoint") => Checkpoint,
        (ModCheckpoint, "checkpoint_sequential") => CheckpointSequential,
        // `torch.autograd` re-exports the grad-mode managers, as PyTorch does.
        (ModTorch | ModAutograd, "no_grad") => NoGrad,
        (ModTorch | ModAutograd, "enable_grad") => EnableGrad,
        (ModTorch | ModAutograd, "inference_mode") => InferenceMode,
        (ModAutograd, "backward") => AutogradBackward,
        (ModAutograd, "grad") => AutogradGrad,
        (ModEngine, "run_backward") => RunBackward,
        (ModFunctional, "linear") => FLinear,
        (ModFunctional, "mse_loss") => FMseLoss,
        (ModFunctional, "cross_entropy") => FCrossEntropy,
        (ModFunctional, "embedding") => FEmbedding,
        (ModFunctional | ModTorch, "layer_norm") => FLayerNorm,
        (ModFunctional | ModTorch, "batch_norm") => FBatchNorm,
        (ModFunctional | ModTorch, "conv1d") => FConv1d,
        (ModFunctional | ModTorch, "conv2d") => FConv2d,
        (ModFunctional | ModTorch, "max_pool2d") => FMaxPool2d,
        (ModFunctional, "adaptive_avg_pool2d") => FAdaptiveAvgPool2d,
        (ModTorch, "flatten") => FlattenFn,
        (ModFunctional, "nll_loss") => FNllLoss,
        (ModFunctional, "l1_loss") => FL1Loss,
        (ModFunctional, "smooth_l1_loss") => FSmoothL1Loss,
        (ModFunctional, "binary_cross_entropy") => FBce,
        (ModFunctional | ModTorch, "binary_cross_entropy_with_logits") => FBceWithLogits,
        (ModFunctional, "leaky_relu") => FLeakyRelu,
        (ModFunctional, "silu") => FSilu,
        (ModFunctional, "scaled_dot_product_attention") => FScaledDotProductAttention,
        (ModTorch, "randint") => Randint,
        (ModFunctional, "relu") => FRelu,
        (ModFunctional | ModTorch, "relu_") => ReluInPlace,
        (ModFunctional | ModTorch, "dropout") => Dropout,
        (ModFunctional | ModTorch, "softmax") => SoftmaxFn,
        (ModFunctional | ModTorch, "log_softmax") => LogSoftmaxFn,
        (ModFunctional, "gelu") => GeluFn,
        (ModFunctional, "sigmoid") => Sigmoid,
        (ModFunctional, "tanh") => Tanh,
        (ModTorch, "log") => LogFn,
        (ModTorch, "abs") => AbsFn,
        (ModTorch, "sqrt") => SqrtFn,
        (ModTorch, "neg") => NegFn,
        (ModDist, "init_process_group") => DistInit,
        (ModDist, "get_rank") => DistGetRank,
        (ModDist, "get_world_size") => DistGetWorldSize,
        (ModDist, "isend") => DistIsend,
        (ModDist, "irecv") => DistIrecv,
        (ModDist, "send") => DistSend,
        (ModDist, "recv") => DistRecv,
        (ModDist, "batch_isend_irecv") => DistBatchIsendIrecv,
        (ModDist, "barrier") => DistBarrier,
        (ModCuda, "current_device") => CurrentDevice,
        (ModTorch, "amp") => return Some(module(ModAmp)),
        (ModCuda, "amp") => return Some(module(ModCudaAmp)),
        (ModTorch | ModAmp, "autocast") => Autocast,
        (ModCudaAmp, "autocast") => CudaAmpAutocast,
        (ModCuda, "set_device") => SetDevice,
        (ModCudaMemory, "_record_memory_history") => RecordMemoryHistory,
        (ModCudaMemory, "_dump_snapshot") => DumpSnapshot,
        (ModCudaMemory, "_set_allocator_settings") => SetAllocatorSettings,
        (ModTorch, name) if Dtype::from_name(name).is_some() => {
            return Dtype::from_name(name).map(Value::Dtype);
        }
        (ModTorch, "zeros") => Zeros,
        (ModTorch, "ones") => Ones,
        (ModTorch, "empty") => Empty,
        (ModTorch, "rand") => Rand,
        (ModTorch, "randn") => Randn,
        (ModTorch, "full") => Full,
        (ModTorch, "arange") => Arange,
        (ModTorch, "tensor") => TensorCtor,
        (ModTorch, "zeros_like") => ZerosLike,
        (ModTorch, "ones_like") => OnesLike,
        (ModTorch, "empty_like") => EmptyLike,
        (ModTorch, "rand_like") => RandLike,
        (ModTorch, "randn_like") => RandnLike,
        (ModTorch, "full_like") => FullLike,
        (ModTorch, "matmul") => Matmul,
        (ModTorch, "mm") => Mm,
        (ModTorch, "bmm") => Bmm,
        (ModTorch, "add") => Add,
        (ModTorch, "sub") => Sub,
        (ModTorch, "mul") => Mul,
        (ModTorch, "div") => Div,
        (ModTorch, "relu") => Relu,
        (ModTorch, "sigmoid") => Sigmoid,
        (ModTorch, "tanh") => Tanh,
        (ModTorch, "exp") => Exp,
        (ModTorch, "cat") => Cat,
        (ModTorch, "stack") => Stack,
        (ModTorch, "sum") => SumFn,
        (ModTorch, "mean") => MeanFn,
        (ModTorch, "device") => DeviceCtor,
        (ModCuda, "memory_allocated") => MemoryAllocated,
        (ModCuda, "memory_reserved") => MemoryReserved,
        (ModCuda, "max_memory_allocated") => MaxMemoryAllocated,
        (ModCuda, "max_memory_reserved") => MaxMemoryReserved,
        (ModCuda, "reset_peak_memory_stats") => ResetPeakMemoryStats,
        (ModCuda, "empty_cache") => EmptyCache,
        (ModCuda, "synchronize") => Synchronize,
        (ModCuda, "is_available") => IsAvailable,
        (ModCuda, "device_count") => DeviceCount,
        (ModCuda, "mem_get_info") => MemGetInfo,
        (ModCuda | ModCudaMemory, "memory_stats") => MemoryStats,
        (ModNn, "Parameter") => NnParameter,
        (ModTorch, "Tensor") => TorchTensor,
        (ModTorch, "FloatTensor") => LegacyFloatTensor,
        (ModTorch, "HalfTensor") => LegacyHalfTensor,
        (ModTorch, "DoubleTensor") => LegacyDoubleTensor,
        (ModTorch, "LongTensor") => LegacyLongTensor,
        (ModCuda, "FloatTensor") => LegacyCudaFloatTensor,
        (ModCuda, "HalfTensor") => LegacyCudaHalfTensor,
        (ModCuda, "LongTensor") => LegacyCudaLongTensor,
        (ModTorch, "linspace") => Linspace,
        (ModTorch, "eye") => Eye,
        (ModCuda | ModCudaMemory, "memory_summary") => MemorySummary,
        (ModGc, "collect") => GcCollect,
        (ModGc, "enable") => GcEnable,
        (ModGc, "disable") => GcDisable,
        (ModGc, "isenabled") => GcIsEnabled,
        (ModGc, "get_count") => GcGetCount,
        (ModGc, "get_threshold") => GcGetThreshold,
        (ModGc, "set_threshold") => GcSetThreshold,
        (ModGc, "freeze") => GcFreeze,
        (ModGc, "unfreeze") => GcUnfreeze,
        (ModGc, "get_freeze_count") => GcGetFreezeCount,
        (ModAsyncio, "run") => AsyncioRun,
        (ModAsyncio, "gather") => AsyncioGather,
        (ModAsyncio, "sleep") => AsyncioSleep,
        (ModAsyncio, "create_task" | "ensure_future") => AsyncioCreateTask,
        (ModAsyncio, "Queue") => AsyncioQueue,
        (ModAsyncio, "wait_for") => AsyncioWaitFor,
        (ModSys, "exc_info") => SysExcInfo,
        (ModFunctools, "partial") => FunctoolsPartial,
        (ModFunctools, "wraps") => FunctoolsWraps,
        (ModFunctools, "lru_cache") => FunctoolsLruCache,
        (ModFunctools, "cache") => FunctoolsCache,
        (ModFunctional, "kl_div") => FKlDiv,
        (ModFunctional, "softplus") => FSoftplus,
        (ModTorch, "norm") => NormFn,
        (ModTorch, "linalg") => return Some(module(ModLinalg)),
        (ModLinalg, "vector_norm") => LinalgVectorNorm,
        (ModTorch, "addcmul") => AddcmulFn,
        (ModFunctional | ModTorch, "group_norm") => FGroupNorm,
        (ModFunctional, "elu") => FElu,
        (ModFunctional, "hardtanh") => FHardtanh,
        (ModFunctional, "relu6") => FRelu6,
        (ModFunctional, "mish") => FMish,
        (ModFunctional, "hardswish") => FHardswish,
        (ModTorch, "isnan") => IsnanFn,
        (ModTorch, "isinf") => IsinfFn,
        (ModTorch, "isfinite") => IsfiniteFn,
        (ModTorch, "argmax") => ArgmaxFn,
        (ModTorch, "argmin") => ArgminFn,
        (ModNn, "utils") => return Some(module(ModNnUtils)),
        (ModNnUtils, "clip_grad_norm_") => ClipGradNorm,
        (ModNnUtils, "clip_grad_value_") => ClipGradValue,
        (ModSys, "getrefcount") => SysGetrefcount,
        (ModTorch, "max") => MaxFn,
        (ModTorch, "min") => MinFn,
        (ModTorch, "maximum") => MaximumFn,
        (ModTorch, "minimum") => MinimumFn,
        (ModTorch, "sort") => SortFn,
        (ModTorch, "topk") => TopkFn,
        (ModFunctional, "softmin") => FSoftmin,
        (ModNnUtils, "parameters_to_vector") => ParametersToVector,
        (ModNnUtils, "vector_to_parameters") => VectorToParameters,
        (ModGc, "get_objects") => GcGetObjects,
        (ModGc, "get_referrers") => GcGetReferrers,
        (ModGc, "get_referents") => GcGetReferents,
        (ModGc, "is_tracked") => GcIsTracked,
        (ModTorch, "eq") => EqFn,
        (ModTorch, "ne") => NeFn,
        (ModTorch, "lt") => LtFn,
        (ModTorch, "le") => LeFn,
        (ModTorch, "gt") => GtFn,
        (ModTorch, "ge") => GeFn,
        (ModTorch, "any") => AnyFn,
        (ModTorch, "all") => AllFn,
        (ModTorch, "logical_not") => LogicalNotFn,
        (ModTorch, "logical_and") => LogicalAndFn,
        (ModTorch, "logical_or") => LogicalOrFn,
        (ModTorch, "isclose") => IscloseFn,
        (ModTorch, "allclose") => AllcloseFn,
        (ModTorch, "equal") => EqualFn,
        (ModTorch, "remainder") => RemainderFn,
        (ModTorch, "floor_divide") => FloorDivideFn,
        (ModTorch, "addcdiv") => AddcdivFn,
        (ModTorch, "is_tensor") => IsTensorFn,
        (ModTorch, "is_floating_point") => IsFloatingPointFn,
        (ModTorch, "is_grad_enabled") => IsGradEnabled,
        (ModTorch | ModAutograd, "set_grad_enabled") => SetGradEnabled,
        (ModTorch, "is_inference_mode_enabled") => IsInferenceModeEnabled,
        (ModUtils, "data") => return Some(module(ModData)),
        (ModData, "random_split") => RandomSplit,
        (ModTorch, "logsumexp") => LogsumexpFn,
        (ModTorch, "where") => WhereFn,
        _ => return None,
    };
    Some(native(n))
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
