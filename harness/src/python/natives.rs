//! Builtins and the modelled modules: Python builtins, `gc`, `asyncio`, `torch`,
//! `torch.cuda`, and the methods of lists, dicts and tensors.
//!
//! Natives receive owned arguments and drop them when they return; whatever they store
//! (a list item, a dict value) takes its own reference.

use super::autograd::{self, Save};
use super::int_ops;
use super::interp::{Interpreter, R};
use crate::heap::{NativeId, ObjId, ObjKind, Sym, Value};
use crate::torch::{self, Category, DeviceKind, Dtype, GradFlow};
use ruff_python_ast::{Expr, Operator};

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
        (ModTorch, "randint") => Randint,
        (ModFunctional, "relu") => Relu,
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
        (ModTorch, "Tensor" | "FloatTensor") => LegacyFloatTensor,
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
        (ModSys, "exc_info") => SysExcInfo,
        (ModFunctools, "partial") => FunctoolsPartial,
        (ModFunctools, "wraps") => FunctoolsWraps,
        _ => return None,
    };
    Some(native(n))
}

/// A code object's constant tuple: exists without a GC allocation at run time.
pub(super) fn constant_tuple(it: &mut Interpreter<'_>, items: Vec<Value>) -> Value {
    Value::Obj(it.heap.insert_uncounted(ObjKind::Tuple(items)))
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
        Some(n) => super::builtin_calls::call_native(it, n, &args),
        None => it.error("TypeError: unknown builtin"),
    };
    args.drop_all(it);
    result
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

/// Calls a tensor or `torch.*` native (the builtins are in `builtin_calls.rs`).
pub(super) fn call_torch_native(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    use Native::*;
    let p = &a.pos;
    match n {
        NoGrad | EnableGrad | InferenceMode => Ok(Value::Native(n.id())),
        AutogradBackward | RunBackward => {
            // backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
            // grad_variables=None, inputs=None); the engine's run_backward(tensors,
            // grad_tensors, keep_graph, create_graph, inputs, allow_unreachable,
            // accumulate_grad).
            let tensors = a.kw(it, "tensors").or(p.first().copied()).unwrap_or(Value::None);
            let grads = a
                .kw(it, "grad_tensors")
                .or(p.get(1).copied())
                .unwrap_or(Value::None);
            let retain = match a
                .kw(it, "retain_graph")
                .or(a.kw(it, "keep_graph"))
                .or(p.get(2).copied())
            {
                None | Some(Value::None) => None,
                Some(v) => Some(it.truth(v)?),
            };
            let create_graph = match a.kw(it, "create_graph").or(p.get(3).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let inputs = a.kw(it, "inputs").unwrap_or(Value::None);
            let accumulate = match a.kw(it, "accumulate_grad") {
                Some(v) => it.truth(v)?,
                None => true,
            };
            let _ = it.autograd_backward(tensors, grads, retain, create_graph, accumulate, inputs)?;
            Ok(Value::None)
        }
        AutogradGrad => {
            // grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
            // only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False)
            let outputs = a.kw(it, "outputs").or(p.first().copied()).unwrap_or(Value::None);
            let inputs = a.kw(it, "inputs").or(p.get(1).copied()).unwrap_or(Value::None);
            let grads = a
                .kw(it, "grad_outputs")
                .or(p.get(2).copied())
                .unwrap_or(Value::None);
            let retain = match a.kw(it, "retain_graph").or(p.get(3).copied()) {
                None | Some(Value::None) => None,
                Some(v) => Some(it.truth(v)?),
            };
            let create_graph = match a.kw(it, "create_graph").or(p.get(4).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let got = it.autograd_backward(outputs, grads, retain, create_graph, false, inputs)?;
            Ok(new_tuple(it, got))
        }
        FLinear => match p.as_slice() {
            [x, w] => it.linear(*x, *w, a.kw(it, "bias").unwrap_or(Value::None)),
            [x, w, b] => it.linear(*x, *w, *b),
            _ => it.error("TypeError: linear(input, weight, bias=None)"),
        },
        FMseLoss => match p.as_slice() {
            [x, y] => {
                let m = it.module_attr(module(ModNn), "MSELoss").unwrap_or(Value::None);
                let loss = it.call(m, vec![], vec![])?;
                it.heap.incref(*x);
                it.heap.incref(*y);
                let r = it.call(loss, vec![*x, *y], vec![]);
                it.heap.decref(loss);
                r
            }
            _ => it.error("TypeError: mse_loss(input, target)"),
        },
        FCrossEntropy => match p.as_slice() {
            [x, y] => {
                let reduction = a.kw(it, "reduction").unwrap_or(Value::None);
                let reduction = it.reduction_of(reduction)?;
                let weight = a.kw(it, "weight").unwrap_or(Value::None);
                if let Some(v) = a.kw(it, "label_smoothing")
                    && float_of(v).is_some_and(|f| f != 0.0)
                {
                    return it.unsupported("cross_entropy with label_smoothing");
                }
                it.cross_entropy(*x, *y, weight, reduction)
            }
            _ => it.error("TypeError: cross_entropy(input, target)"),
        },
        FEmbedding => match p.as_slice() {
            [indices, weight, ..] => it.embedding(*indices, *weight),
            _ => it.error("TypeError: embedding(input, weight)"),
        },
        Randint => {
            // randint(high, size) or randint(low, high, size)
            let size = match p.as_slice() {
                [_, size] | [_, _, size] => *size,
                _ => match a.kw(it, "size") {
                    Some(v) => v,
                    None => return it.error("TypeError: randint(low=0, high, size)"),
                },
            };
            let shape = shape_args(it, &[size])?;
            let dtype = dtype_kw(it, a)?.unwrap_or(Dtype::Int64);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(shape, dtype, device, None)
        }
        DistInit => {
            let rank = match a.kw(it, "rank") {
                Some(v) => int_arg(it, v, "rank")?,
                None => 0,
            };
            let world = match a.kw(it, "world_size") {
                Some(v) => int_arg(it, v, "world_size")?,
                None => 1,
            };
            if rank < 0 || rank >= world {
                return it.error("ValueError: rank must be in [0, world_size)");
            }
            it.process_group = Some((rank, world));
            Ok(Value::None)
        }
        DistGetRank | DistGetWorldSize => match it.process_group {
            Some((rank, world)) => Ok(Value::Int(if n == DistGetRank { rank } else { world })),
            None => it.error(
                "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
            ),
        },
        DistIsend | DistIrecv => match p.first() {
            Some(&t) if it.is_tensor(t) => {
                it.heap.incref(t);
                Ok(new_work(it, vec![t]))
            }
            _ => it.error("TypeError: isend/irecv expect a tensor"),
        },
        DistSend | DistRecv | DistBarrier => {
            if it.process_group.is_none() {
                return it.error("ValueError: Default process group has not been initialized");
            }
            Ok(Value::None)
        }
        DistBatchIsendIrecv => {
            let Some(&ops) = p.first() else {
                return it.error("TypeError: batch_isend_irecv(p2p_op_list)");
            };
            let ops = sequence_items(it, ops)?;
            let tensor_sym = it.names.intern("tensor");
            let mut tensors = Vec::new();
            for op in ops {
                let t = it.get_attr(op, tensor_sym)?;
                tensors.push(t);
            }
            // One work per op, each holding its tensor until `wait()`.
            let mut works = Vec::new();
            for t in tensors {
                works.push(new_work(it, vec![t]));
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(works))))
        }
        CurrentDevice => Ok(Value::Int(0)),
        SetDevice | RecordMemoryHistory | DumpSnapshot => Ok(Value::None),
        Zeros | Ones | Empty | Rand | Randn => {
            let shape = shape_args(it, p)?;
            let floating_default = Dtype::Float32;
            let dtype = dtype_kw(it, a)?.unwrap_or(floating_default);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            let t = it.new_tensor(shape, dtype, device, None)?;
            if let Some(v) = a.kw(it, "requires_grad")
                && it.truth(v)?
                && let Value::Obj(id) = t
                && let ObjKind::Tensor(td) = it.heap.kind_mut(id)
            {
                td.requires_grad = true;
            }
            Ok(t)
        }
        Full => {
            let Some(&size) = p.first() else {
                return it.error("TypeError: full() missing size");
            };
            let shape = shape_args(it, &[size])?;
            let fill_is_int = matches!(p.get(1), Some(Value::Int(_)));
            let default = if fill_is_int {
                Dtype::Int64
            } else {
                Dtype::Float32
            };
            let dtype = dtype_kw(it, a)?.unwrap_or(default);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(shape, dtype, device, None)
        }
        Arange => {
            let ints: Vec<i64> = p
                .iter()
                .map(|&v| int_arg(it, v, "arange() argument"))
                .collect::<R<_>>()?;
            let (start, stop, step) = match ints.as_slice() {
                [stop] => (0, *stop, 1),
                [start, stop] => (*start, *stop, 1),
                [start, stop, step] if *step != 0 => (*start, *stop, *step),
                _ => return it.error("TypeError: arange expects 1 to 3 integer arguments"),
            };
            let len = ((stop - start + step - step.signum()) / step).max(0);
            let dtype = dtype_kw(it, a)?.unwrap_or(Dtype::Int64);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(vec![len], dtype, device, None)
        }
        TensorCtor => {
            let Some(&data) = p.first() else {
                return it.error("TypeError: tensor() missing data");
            };
            let (shape, all_int) = nested_shape(it, data, 0)?;
            let dtype = dtype_kw(it, a)?.unwrap_or(if all_int {
                Dtype::Int64
            } else {
                Dtype::Float32
            });
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(shape, dtype, device, None)
        }
        ZerosLike | OnesLike | EmptyLike | RandLike | RandnLike | FullLike => {
            let Some(t) = p.first().and_then(|v| tensor_of(it, *v)) else {
                return it.error("TypeError: expected a tensor as the first argument");
            };
            let t = t.clone();
            let dtype = dtype_kw(it, a)?.unwrap_or(t.dtype);
            let device = device_kw(it, a)?.unwrap_or(t.device);
            let out = it.new_tensor(t.shape, dtype, device, None)?;
            if let Some(v) = a.kw(it, "requires_grad")
                && it.truth(v)?
                && let Value::Obj(id) = out
                && let ObjKind::Tensor(td) = it.heap.kind_mut(id)
            {
                td.requires_grad = true;
            }
            Ok(out)
        }
        Matmul | Mm | Bmm => match p.as_slice() {
            [l, r] => tensor_binary(it, Operator::MatMult, *l, *r, false),
            _ => it.error("TypeError: matmul expects two tensors"),
        },
        Add | Sub | Mul | Div => {
            let op = match n {
                Add => Operator::Add,
                Sub => Operator::Sub,
                Mul => Operator::Mult,
                _ => Operator::Div,
            };
            match p.as_slice() {
                [l, r] => tensor_binary(it, op, *l, *r, false),
                _ => it.error("TypeError: expects two arguments"),
            }
        }
        Relu | Sigmoid | Tanh | Exp => match p.as_slice() {
            [Value::Obj(t)] if it.is_tensor(Value::Obj(*t)) => {
                let op = match n {
                    Relu => "relu",
                    Sigmoid => "sigmoid",
                    Tanh => "tanh",
                    _ => "exp",
                };
                tensor_unary(it, *t, op)
            }
            _ => it.error("TypeError: expects a tensor"),
        },
        SumFn | MeanFn => match p.first() {
            Some(&Value::Obj(t)) if it.is_tensor(Value::Obj(t)) => {
                let op = if matches!(n, SumFn) { "sum" } else { "mean" };
                reduce(it, t, op, a.kw(it, "dim").or(p.get(1).copied()))
            }
            _ => it.error("TypeError: expects a tensor"),
        },
        Cat | Stack => {
            let Some(&list) = p.first() else {
                return it.error("TypeError: expects a sequence of tensors");
            };
            let items = sequence_items(it, list)?;
            let dim = match a.kw(it, "dim").or(p.get(1).copied()) {
                Some(v) => int_arg(it, v, "dim")?,
                None => 0,
            };
            concat(it, &items, dim, n == Stack)
        }
        DeviceCtor => match p.first() {
            Some(&v) => Ok(Value::Device(device_of(it, v)?)),
            None => it.error("TypeError: device() missing argument"),
        },
        // Each goes through `memory_stats()` and leaves its garbage, as in PyTorch.
        MemoryAllocated => super::cuda_memory::memory_stat(it, "allocated_bytes.all.current"),
        MemoryReserved => super::cuda_memory::memory_stat(it, "reserved_bytes.all.current"),
        MaxMemoryAllocated => super::cuda_memory::memory_stat(it, "allocated_bytes.all.peak"),
        MaxMemoryReserved => super::cuda_memory::memory_stat(it, "reserved_bytes.all.peak"),
        MemoryStats => super::cuda_memory::memory_stats(it),
        LegacyFloatTensor | LegacyHalfTensor | LegacyDoubleTensor | LegacyLongTensor
        | LegacyCudaFloatTensor | LegacyCudaHalfTensor | LegacyCudaLongTensor => {
            // `torch.FloatTensor(2, 3)` allocates that shape; `torch.FloatTensor([[1, 2]])`
            // copies the data's shape.
            let (dtype, device) = match n {
                LegacyHalfTensor => (Dtype::Float16, DeviceKind::Cpu),
                LegacyDoubleTensor => (Dtype::Float64, DeviceKind::Cpu),
                LegacyLongTensor => (Dtype::Int64, DeviceKind::Cpu),
                LegacyCudaFloatTensor => (Dtype::Float32, DeviceKind::Cuda),
                LegacyCudaHalfTensor => (Dtype::Float16, DeviceKind::Cuda),
                LegacyCudaLongTensor => (Dtype::Int64, DeviceKind::Cuda),
                _ => (Dtype::Float32, DeviceKind::Cpu),
            };
            let device = device_kw(it, a)?.unwrap_or(device);
            let shape = match p.as_slice() {
                [Value::Obj(o)] if matches!(it.heap.kind(*o), ObjKind::List(_) | ObjKind::Tuple(_)) => {
                    nested_shape(it, p[0], 0)?.0
                }
                _ => shape_args(it, p)?,
            };
            it.new_tensor(shape, dtype, device, None)
        }
        Linspace => {
            let steps = match a.kw(it, "steps").or(p.get(2).copied()) {
                Some(v) => int_arg(it, v, "steps")?,
                None => return it.error("TypeError: linspace(start, end, steps)"),
            };
            let dtype = dtype_kw(it, a)?.unwrap_or(Dtype::Float32);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(vec![steps], dtype, device, None)
        }
        Eye => {
            let rows = match p.first() {
                Some(&v) => int_arg(it, v, "n")?,
                None => return it.error("TypeError: eye(n, m=None)"),
            };
            let cols = match a.kw(it, "m").or(p.get(1).copied()) {
                Some(Value::None) | None => rows,
                Some(v) => int_arg(it, v, "m")?,
            };
            let dtype = dtype_kw(it, a)?.unwrap_or(Dtype::Float32);
            let device = device_kw(it, a)?.unwrap_or(DeviceKind::Cpu);
            it.new_tensor(vec![rows, cols], dtype, device, None)
        }
        SetAllocatorSettings => match p.as_slice() {
            [Value::Str(s)] => {
                let text = it.names.name(*s).to_string();
                it.set_allocator_settings(&text)?;
                Ok(Value::None)
            }
            _ => it.error("TypeError: _set_allocator_settings(env: str)"),
        },
        NnParameter => {
            // `nn.Parameter(data, requires_grad=True)`: a new tensor object on data's storage.
            let data = a.kw(it, "data").or(p.first().copied());
            let Some(t) = data.and_then(|v| tensor_of(it, v)).cloned() else {
                return it.error("TypeError: Parameter(data, requires_grad=True) needs a tensor");
            };
            let requires_grad = match a.kw(it, "requires_grad").or(p.get(1).copied()) {
                Some(v) => it.truth(v)?,
                None => true,
            };
            let out = it.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None)))?;
            if let Value::Obj(id) = out
                && let ObjKind::Tensor(td) = it.heap.kind_mut(id)
            {
                td.is_param = true;
                td.requires_grad = requires_grad;
            }
            Ok(out)
        }
        MemorySummary => {
            // The table's text is not modelled; the statistics it reads are.
            let stats = super::cuda_memory::memory_stats(it)?;
            it.heap.decref(stats);
            Ok(Value::Str(it.names.intern("|  PyTorch CUDA memory summary (values not modelled)  |")))
        }
        ResetPeakMemoryStats => {
            it.allocator.reset_peak_stats();
            Ok(Value::None)
        }
        EmptyCache => {
            it.empty_cache();
            Ok(Value::None)
        }
        Synchronize => Ok(Value::None),
        IsAvailable => Ok(Value::Bool(true)),
        DeviceCount => Ok(Value::Int(1)),
        MemGetInfo => {
            use crate::allocator::DeviceMemory;
            let free = it.allocator.device().free_bytes() as i64;
            let total = it.allocator.device().capacity() as i64;
            Ok(new_tuple(it, vec![Value::Int(free), Value::Int(total)]))
        }
        // Builtins are dispatched in `builtin_calls.rs` before reaching here.
        _ => it.error("TypeError: unknown builtin"),
    }
}

/// A `Work` handle of a p2p op (pybind11, not a GC object) holding `tensors` until `wait()`.
fn new_work(it: &mut Interpreter<'_>, tensors: Vec<Value>) -> Value {
    Value::Obj(it.heap.insert_uncounted(ObjKind::CppHandle {
        type_name: "Work",
        held: tensors,
    }))
}

/// `tensor.attr = value` (borrowed value): `.data`, `.grad`, `.requires_grad`.
pub(super) fn set_tensor_attr(
    it: &mut Interpreter<'_>,
    id: ObjId,
    name: Sym,
    value: Value,
) -> R<()> {
    match it.names.name(name) {
        "data" => {
            let Some(src) = tensor_of(it, value).cloned() else {
                return it.error("TypeError: data must be a tensor");
            };
            it.storages.add_ref(src.storage);
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => {
                    let old = t.storage;
                    t.storage = src.storage;
                    t.shape = src.shape;
                    t.dtype = src.dtype;
                    t.device = src.device;
                    Some(old)
                }
                _ => None,
            };
            if let Some(old) = old {
                it.heap.dropped_storage_refs.push(old);
            }
            Ok(())
        }
        "grad" => {
            let new = match value {
                Value::None => None,
                Value::Obj(g) if it.is_tensor(value) => {
                    it.heap.incref(value);
                    Some(g)
                }
                _ => return it.error("TypeError: assigned grad must be a tensor or None"),
            };
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => std::mem::replace(&mut t.grad, new),
                _ => None,
            };
            if let Some(o) = old {
                it.heap.decref_id(o);
            }
            Ok(())
        }
        "requires_grad" => {
            let flag = it.truth(value)?;
            match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) if t.grad_fn.is_none() => {
                    t.requires_grad = flag;
                    Ok(())
                }
                _ => it.error(
                    "RuntimeError: you can only change requires_grad flags of leaf variables.",
                ),
            }
        }
        other => it.unsupported(format!("setting attribute '{other}' on a tensor")),
    }
}

/// Items of a list, tuple or `Size` (borrowed).
pub(super) fn sequence_items(it: &Interpreter<'_>, v: Value) -> R<Vec<Value>> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items) | ObjKind::Tuple(items) => Ok(items.clone()),
            ObjKind::Dict(items) => Ok(items.iter().map(|(k, _)| *k).collect()),
            ObjKind::Size(dims) => Ok(dims.iter().map(|&d| Value::Int(d)).collect()),
            &ObjKind::Range { start, stop, step } => {
                let len = int_ops::range_len(start, stop, step);
                it.budget_items(len)?;
                Ok((0..len)
                    .map_while(|i| int_ops::range_item(start, stop, step, i))
                    .map(Value::Int)
                    .collect())
            }
            other => {
                let t = other.type_name();
                it.unsupported(format!("iterating a '{t}' here"))
            }
        },
        _ => it.error("TypeError: object is not iterable"),
    }
}

pub(super) fn length(it: &Interpreter<'_>, v: Value) -> R<i64> {
    Ok(match v {
        Value::Str(s) => it.names.name(s).chars().count() as i64,
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items) | ObjKind::Tuple(items) => items.len() as i64,
            ObjKind::Dict(items) => items.len() as i64,
            ObjKind::Size(dims) => dims.len() as i64,
            ObjKind::Tensor(t) => match t.shape.first() {
                Some(&d) => d,
                None => return it.error("TypeError: len() of a 0-d tensor"),
            },
            &ObjKind::Range { start, stop, step } => {
                match i64::try_from(int_ops::range_len(start, stop, step)) {
                    Ok(n) => n,
                    Err(_) => {
                        return it
                            .error("OverflowError: Python int too large to convert to C ssize_t");
                    }
                }
            }
            other => {
                let t = other.type_name();
                return it.error(format!("TypeError: object of type '{t}' has no len()"));
            }
        },
        _ => return it.error("TypeError: object has no len()"),
    })
}

fn tensor_of<'i>(it: &'i Interpreter<'_>, v: Value) -> Option<&'i torch::TensorData> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tensor(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Sizes given as `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(t.shape)`.
fn shape_args(it: &Interpreter<'_>, p: &[Value]) -> R<Vec<i64>> {
    let dims: Vec<Value> = match p {
        [single @ Value::Obj(_)] => sequence_items(it, *single)?,
        many => many.to_vec(),
    };
    let mut shape = Vec::with_capacity(dims.len());
    for d in dims {
        // Negative sizes are refused with PyTorch's message when the storage is sized.
        shape.push(int_arg(it, d, "size")?);
    }
    Ok(shape)
}

/// Most dimensions `torch.tensor` accepts from nested data (torch's `MAX_DIMS`); deeper
/// (or self-referential) data raises its `ValueError` before any deep walk.
const TENSOR_DATA_MAX_DIMS: usize = 128;

fn nested_shape(it: &Interpreter<'_>, v: Value, depth: usize) -> R<(Vec<i64>, bool)> {
    if depth > TENSOR_DATA_MAX_DIMS {
        return it.error("ValueError: too many dimensions 'list'");
    }
    match v {
        Value::Int(_) | Value::Bool(_) => Ok((vec![], true)),
        Value::Float(_) => Ok((vec![], false)),
        Value::Obj(_) => {
            let items = sequence_items(it, v)?;
            let mut inner: Option<Vec<i64>> = None;
            let mut all_int = true;
            for item in &items {
                let (s, i) = nested_shape(it, *item, depth + 1)?;
                all_int &= i;
                match &inner {
                    Some(prev) if *prev != s => {
                        return it.error("ValueError: expected a rectangular nested sequence");
                    }
                    _ => inner = Some(s),
                }
            }
            let mut shape = vec![items.len() as i64];
            shape.extend(inner.unwrap_or_default());
            Ok((shape, all_int))
        }
        _ => it.unsupported("torch.tensor() of this data"),
    }
}

fn dtype_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<Dtype>> {
    match a.kw(it, "dtype") {
        None | Some(Value::None) => Ok(None),
        Some(Value::Dtype(d)) => Ok(Some(d)),
        Some(_) => it.error("TypeError: dtype must be a torch dtype"),
    }
}

fn device_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<DeviceKind>> {
    match a.kw(it, "device") {
        None | Some(Value::None) => Ok(None),
        Some(v) => device_of(it, v).map(Some),
    }
}

fn device_of(it: &Interpreter<'_>, v: Value) -> R<DeviceKind> {
    match v {
        Value::Device(d) => Ok(d),
        Value::Int(0) => Ok(DeviceKind::Cuda),
        Value::Str(s) => match DeviceKind::parse(it.names.name(s)) {
            Some(d) => Ok(d),
            None => it.unsupported(format!(
                "device '{}' (the model has one GPU, 'cuda' or 'cuda:0', and the CPU)",
                it.names.name(s)
            )),
        },
        _ => it.error("TypeError: expected a device"),
    }
}

// ----- attributes and methods of non-heap values ------------------------------------------------

pub(super) fn value_attr(it: &mut Interpreter<'_>, v: Value, name: Sym) -> R<Value> {
    let attr_rc = it.names.name_rc(name);
    let attr: &str = &attr_rc;
    match (v, attr) {
        (Value::Device(d), "type") => {
            let t = if d == DeviceKind::Cuda { "cuda" } else { "cpu" };
            Ok(Value::Str(it.names.intern(t)))
        }
        (Value::Dtype(d), "itemsize") => Ok(Value::Int(d.element_size() as i64)),
        (Value::Dtype(d), "is_floating_point") => Ok(Value::Bool(d.is_floating())),
        _ => it.unsupported(format!("attribute '{attr}' of {}", it.display(v))),
    }
}

pub(super) fn tensor_attr(it: &mut Interpreter<'_>, id: ObjId, name: Sym) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!("checked by caller")
    };
    let t = t.clone();
    match it.names.name(name) {
        "shape" => Ok(Value::Obj(it.alloc(ObjKind::Size(t.shape)))),
        "dtype" => Ok(Value::Dtype(t.dtype)),
        "device" => Ok(Value::Device(t.device)),
        "ndim" => Ok(Value::Int(t.shape.len() as i64)),
        "is_cuda" => Ok(Value::Bool(t.device == DeviceKind::Cuda)),
        "requires_grad" => Ok(Value::Bool(t.requires_grad)),
        "is_leaf" => Ok(Value::Bool(t.is_leaf())),
        "grad" => match t.grad {
            Some(g) => {
                it.heap.incref(Value::Obj(g));
                Ok(Value::Obj(g))
            }
            None => Ok(Value::None),
        },
        "grad_fn" => it.grad_fn_object(t.grad_fn),
        "_base" => match t.base {
            Some(b) => {
                it.heap.incref(Value::Obj(b));
                Ok(Value::Obj(b))
            }
            None => Ok(Value::None),
        },
        "data" => it.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None))),
        "T" => {
            let mut shape = t.shape.clone();
            shape.reverse();
            let v = view(it, id, shape)?;
            non_contiguous(it, v)
        }
        other => it.unsupported(format!("tensor attribute '{other}'")),
    }
}

/// Marks a new view as not row-major (transposes, permutes, expands).
fn non_contiguous(it: &mut Interpreter<'_>, v: Value) -> R<Value> {
    if let Value::Obj(id) = v
        && let ObjKind::Tensor(t) = it.heap.kind_mut(id)
    {
        t.contiguous = false;
    }
    Ok(v)
}

/// A view of tensor `id` with `shape`: same storage, `_base` set to the root base.
fn view(it: &mut Interpreter<'_>, id: ObjId, shape: Vec<i64>) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!("checked by caller")
    };
    let (storage, dtype, device) = (t.storage, t.dtype, t.device);
    let base = t.base.unwrap_or(id);
    let out = it.new_tensor(shape, dtype, device, Some((storage, Some(base))))?;
    autograd::record(
        it,
        out,
        "ViewBackward0",
        GradFlow::PassThrough,
        &[Value::Obj(id)],
        &[],
    );
    Ok(out)
}

fn dims_from(it: &Interpreter<'_>, p: &[Value]) -> R<Vec<i64>> {
    let dims: Vec<Value> = match p {
        [single @ Value::Obj(_)] => sequence_items(it, *single)?,
        many => many.to_vec(),
    };
    dims.into_iter()
        .map(|d| int_arg(it, d, "dimension"))
        .collect()
}

fn norm_dim(it: &Interpreter<'_>, d: i64, ndim: usize) -> R<usize> {
    let n = ndim as i64;
    let d = if d < 0 { d + n } else { d };
    if d < 0 || d >= n.max(1) {
        return it.error(format!(
            "IndexError: Dimension out of range (got {d} for {ndim} dimensions)"
        ));
    }
    Ok(d as usize)
}

pub(super) fn call_method(
    it: &mut Interpreter<'_>,
    recv: Value,
    name: Sym,
    pos: Vec<Value>,
    kw: Vec<(Sym, Value)>,
) -> R<Value> {
    let args = Args { pos, kw };
    let method_rc = it.names.name_rc(name);
    let method: &str = &method_rc;
    let result = match recv {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tensor(_) => super::keywords::check(
                it,
                &format!("Tensor.{method}"),
                super::keywords::for_tensor_method(method),
                &args.kw,
            )
            .and_then(|()| tensor_method(it, id, method, &args)),
            ObjKind::List(_) => super::builtin_calls::list_method(it, id, method, &args),
            ObjKind::Dict(_) => super::builtin_calls::dict_method(it, id, method, &args),
            ObjKind::Generator(_) => it.generator_method(id, method, &args.pos),
            ObjKind::CppHandle { .. } if method == "wait" || method == "is_completed" => {
                if method == "wait" {
                    // The work completed: it drops its tensors.
                    let held = match it.heap.kind_mut(id) {
                        ObjKind::CppHandle { held, .. } => std::mem::take(held),
                        _ => Vec::new(),
                    };
                    it.heap.decref_all(held);
                }
                Ok(Value::Bool(true))
            }
            other => {
                let t = other.type_name();
                it.unsupported(format!("method '{method}' of '{t}'"))
            }
        },
        Value::Str(s) => match it.str_method(s, method, &args.pos, &args.kw) {
            Some(r) => r,
            None => it.unsupported(format!("method '{method}' of str")),
        },
        Value::Dtype(_) | Value::Device(_) | Value::Int(_) | Value::Float(_) => {
            it.unsupported(format!("method '{method}' of {}", it.display(recv)))
        }
        _ => it.error(format!("AttributeError: object has no method '{method}'")),
    };
    args.drop_all(it);
    result
}

fn tensor_method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!()
    };
    let t = t.clone();
    let p = &a.pos;
    let same = |it: &mut Interpreter<'_>| {
        it.heap.incref(Value::Obj(id));
        Ok(Value::Obj(id))
    };
    match method {
        "view" | "reshape" => {
            if let [Value::Dtype(_)] = p.as_slice() {
                return it.unsupported("view(dtype)");
            }
            let target = dims_from(it, p)?;
            match torch::reshape_shape(&t.shape, &target) {
                Ok(shape) if t.contiguous || shape == t.shape => view(it, id, shape),
                Ok(_) if method == "view" => it.error(
                    "RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans across two contiguous subspaces). Use .reshape(...) instead.",
                ),
                Ok(shape) => {
                    // `reshape` of a non-contiguous tensor copies it first.
                    let copy = op_output(it, shape, t.dtype, t.device, &[Value::Obj(id)])?;
                    autograd::record(
                        it,
                        copy,
                        "CloneBackward0",
                        GradFlow::PassThrough,
                        &[Value::Obj(id)],
                        &[],
                    );
                    Ok(copy)
                }
                Err(e) => it.error(format!("RuntimeError: {e}")),
            }
        }
        "flatten" => {
            let start = match p.first() {
                Some(&v) => norm_dim(it, int_arg(it, v, "start_dim")?, t.shape.len())?,
                None => 0,
            };
            let end = match p.get(1) {
                Some(&v) => norm_dim(it, int_arg(it, v, "end_dim")?, t.shape.len())?,
                None => t.shape.len().saturating_sub(1),
            };
            if t.shape.is_empty() {
                return view(it, id, vec![1]);
            }
            let mut shape = t.shape[..start].to_vec();
            shape.push(t.shape[start..=end].iter().product());
            shape.extend_from_slice(&t.shape[end + 1..]);
            view(it, id, shape)
        }
        "t" | "transpose" => {
            let (d0, d1) = if method == "t" {
                if t.shape.len() > 2 {
                    return it.error("RuntimeError: t() expects a tensor with <= 2 dimensions");
                }
                (0, t.shape.len().saturating_sub(1))
            } else {
                let [a0, a1] = p.as_slice() else {
                    return it.error("TypeError: transpose expects two dimensions");
                };
                (
                    norm_dim(it, int_arg(it, *a0, "dim0")?, t.shape.len())?,
                    norm_dim(it, int_arg(it, *a1, "dim1")?, t.shape.len())?,
                )
            };
            let mut shape = t.shape.clone();
            if !shape.is_empty() {
                shape.swap(d0, d1);
            }
            let v = view(it, id, shape)?;
            non_contiguous(it, v)
        }
        "permute" => {
            let dims = dims_from(it, p)?;
            if dims.len() != t.shape.len() {
                return it.error("RuntimeError: permute: number of dims don't match");
            }
            let mut shape = Vec::with_capacity(dims.len());
            for d in dims {
                shape.push(t.shape[norm_dim(it, d, t.shape.len())?]);
            }
            let v = view(it, id, shape)?;
            non_contiguous(it, v)
        }
        "unsqueeze" => {
            let [d] = p.as_slice() else {
                return it.error("TypeError: unsqueeze expects a dimension");
            };
            let d = int_arg(it, *d, "dim")?;
            let n = t.shape.len() as i64 + 1;
            let d = if d < 0 { d + n } else { d };
            if d < 0 || d >= n {
                return it.error("IndexError: Dimension out of range");
            }
            let mut shape = t.shape.clone();
            shape.insert(d as usize, 1);
            view(it, id, shape)
        }
        "squeeze" => {
            let shape: Vec<i64> = match p.first() {
                Some(&d) => {
                    let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
                    let mut s = t.shape.clone();
                    if s.get(d) == Some(&1) {
                        s.remove(d);
                    }
                    s
                }
                None => t.shape.iter().copied().filter(|&d| d != 1).collect(),
            };
            view(it, id, shape)
        }
        "expand" => {
            let target = dims_from(it, p)?;
            let shape = match torch::broadcast(
                &t.shape,
                &target
                    .iter()
                    .map(|&d| if d == -1 { 1 } else { d })
                    .collect::<Vec<_>>(),
            ) {
                Ok(s) => s,
                Err(e) => return it.error(format!("RuntimeError: {e}")),
            };
            let v = view(it, id, shape)?;
            non_contiguous(it, v)
        }
        "detach" => it.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None))),
        "detach_" => {
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => {
                    t.requires_grad = false;
                    t.grad_fn.take()
                }
                _ => None,
            };
            if let Some(n) = old {
                it.heap.decref_id(n);
            }
            same(it)
        }
        "requires_grad_" => {
            let flag = match p.first().or(a.kw(it, "requires_grad").as_ref()) {
                Some(&v) => it.truth(v)?,
                None => true,
            };
            if !t.is_leaf() && !flag {
                return it.error(
                    "RuntimeError: you can only change requires_grad flags of leaf variables.",
                );
            }
            if let ObjKind::Tensor(t) = it.heap.kind_mut(id) {
                t.requires_grad = flag || t.grad_fn.is_some();
            }
            same(it)
        }
        "backward" => {
            // backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)
            let gradient = a.kw(it, "gradient").or(p.first().copied());
            let retain = match a.kw(it, "retain_graph").or(p.get(1).copied()) {
                None | Some(Value::None) => None,
                Some(v) => Some(it.truth(v)?),
            };
            let create_graph = match a.kw(it, "create_graph").or(p.get(2).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let inputs = a
                .kw(it, "inputs")
                .or(p.get(3).copied())
                .unwrap_or(Value::None);
            let gradient = gradient.unwrap_or(Value::None);
            it.autograd_backward(Value::Obj(id), gradient, retain, create_graph, true, inputs)?;
            Ok(Value::None)
        }
        "item" => {
            if t.numel() != 1 {
                return it.error("RuntimeError: a Tensor with more than one element cannot be converted to Scalar");
            }
            Ok(Value::Float(0.0))
        }
        "contiguous" if t.contiguous => same(it),
        "contiguous" => {
            // A copy in row-major order (`clone(memory_format=contiguous_format)`).
            let out = op_output(it, t.shape, t.dtype, t.device, &[Value::Obj(id)])?;
            autograd::record(
                it,
                out,
                "CloneBackward0",
                GradFlow::PassThrough,
                &[Value::Obj(id)],
                &[],
            );
            Ok(out)
        }
        "clone" => {
            let out = op_output(it, t.shape, t.dtype, t.device, &[Value::Obj(id)])?;
            autograd::record(
                it,
                out,
                "CloneBackward0",
                GradFlow::PassThrough,
                &[Value::Obj(id)],
                &[],
            );
            Ok(out)
        }
        "cuda" | "cpu" | "to" | "half" | "float" | "double" | "bfloat16" | "long" | "int"
        | "bool" => {
            let (mut device, mut dtype) = (t.device, t.dtype);
            match method {
                "cuda" => device = DeviceKind::Cuda,
                "cpu" => device = DeviceKind::Cpu,
                "half" => dtype = Dtype::Float16,
                "float" => dtype = Dtype::Float32,
                "double" => dtype = Dtype::Float64,
                "bfloat16" => dtype = Dtype::BFloat16,
                "long" => dtype = Dtype::Int64,
                "int" => dtype = Dtype::Int32,
                "bool" => dtype = Dtype::Bool,
                _ => {
                    for &v in p
                        .iter()
                        .chain(a.kw(it, "device").iter())
                        .chain(a.kw(it, "dtype").iter())
                    {
                        match v {
                            Value::Dtype(d) => dtype = d,
                            Value::Obj(o) => match tensor_of(it, Value::Obj(o)) {
                                Some(other) => {
                                    dtype = other.dtype;
                                    device = other.device;
                                }
                                None => return it.error(
                                    "TypeError: to() received an invalid combination of arguments",
                                ),
                            },
                            other => device = device_of(it, other)?,
                        }
                    }
                }
            }
            if device == t.device && dtype == t.dtype {
                same(it)
            } else {
                let category = it.storages.get(t.storage).category;
                let out = it.new_tensor_as(t.shape, dtype, device, None, category)?;
                autograd::record(
                    it,
                    out,
                    "ToCopyBackward0",
                    GradFlow::Compute,
                    &[Value::Obj(id)],
                    &[],
                );
                Ok(out)
            }
        }
        "size" => match p.first() {
            Some(&d) => {
                let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
                Ok(Value::Int(t.shape[d]))
            }
            None => Ok(Value::Obj(it.alloc(ObjKind::Size(t.shape)))),
        },
        "numel" | "nelement" => Ok(Value::Int(t.numel() as i64)),
        "dim" => Ok(Value::Int(t.shape.len() as i64)),
        "element_size" => Ok(Value::Int(t.dtype.element_size() as i64)),
        m if super::tensor_pieces::is_piece_method(m) => {
            super::tensor_pieces::call(it, id, m, p, a.kw(it, "dim"))
        }
        "add" | "sub" | "mul" | "div" | "pow" | "matmul" | "mm" | "bmm" => {
            let op = match method {
                "add" => Operator::Add,
                "sub" => Operator::Sub,
                "mul" => Operator::Mult,
                "div" => Operator::Div,
                "pow" => Operator::Pow,
                _ => Operator::MatMult,
            };
            let [other] = p.as_slice() else {
                return it.error(format!("TypeError: {method}() expects one argument"));
            };
            tensor_binary(it, op, Value::Obj(id), *other, false)
        }
        m if super::inplace::is_in_place_method(m) => super::inplace::apply(it, id, m, p),
        "relu" | "sigmoid" | "tanh" | "exp" | "log" | "abs" | "neg" | "sqrt" | "clamp"
        | "softmax" | "log_softmax" | "gelu" => tensor_unary(it, id, method),
        "sum" | "mean" => reduce(it, id, method, a.kw(it, "dim").or(p.first().copied())),
        _ => it.unsupported(format!(
            "tensor method '{method}'{}",
            super::alternatives::for_tensor_method(method)
        )),
    }
}

fn reduce(it: &mut Interpreter<'_>, id: ObjId, op: &str, dim: Option<Value>) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!()
    };
    let t = t.clone();
    let shape = match dim {
        None | Some(Value::None) => vec![],
        Some(d) => {
            let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
            let mut s = t.shape.clone();
            if !s.is_empty() {
                s.remove(d);
            }
            s
        }
    };
    let with_dim = !matches!(dim, None | Some(Value::None));
    let out = op_output(it, shape, t.dtype, t.device, &[Value::Obj(id)])?;
    // `sum()`/`mean()` and their `dim=` overloads are distinct nodes (`*Backward0/1`).
    let key = match (op, with_dim) {
        ("mean", false) => "mean",
        ("mean", true) => "mean_dim",
        (_, false) => "sum",
        (_, true) => "sum_dim",
    };
    let node = torch::op_rule(key).map_or("SumBackward0", |r| r.node);
    autograd::record(it, out, node, GradFlow::Compute, &[Value::Obj(id)], &[]);
    Ok(out)
}

fn concat(it: &mut Interpreter<'_>, items: &[Value], dim: i64, stack: bool) -> R<Value> {
    let tensors: Vec<torch::TensorData> = items
        .iter()
        .filter_map(|v| tensor_of(it, *v).cloned())
        .collect();
    if tensors.len() != items.len() || tensors.is_empty() {
        return it.error("TypeError: expected a non-empty sequence of tensors");
    }
    let first = &tensors[0];
    let mut shape = first.shape.clone();
    if stack {
        let n = shape.len() as i64 + 1;
        let d = if dim < 0 { dim + n } else { dim };
        if d < 0 || d >= n {
            return it.error("IndexError: Dimension out of range");
        }
        shape.insert(d as usize, tensors.len() as i64);
    } else {
        let d = norm_dim(it, dim, shape.len())?;
        shape[d] = tensors
            .iter()
            .map(|t| t.shape.get(d).copied().unwrap_or(0))
            .sum();
    }
    let (dtype, device) = (first.dtype, first.device);
    let out = op_output(it, shape, dtype, device, items)?;
    // `CatBackward0`/`StackBackward0` save the inputs' sizes only; backward hands each
    // input a slice of the incoming gradient.
    let name = if stack {
        "StackBackward0"
    } else {
        "CatBackward0"
    };
    autograd::record(it, out, name, GradFlow::Split, items, &[]);
    Ok(out)
}

/// An elementwise unary op: a new tensor of the same shape.
pub(super) fn tensor_unary(it: &mut Interpreter<'_>, id: ObjId, op: &str) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        unreachable!()
    };
    let t = t.clone();
    let out = op_output(it, t.shape, t.dtype, t.device, &[Value::Obj(id)])?;
    // The autograd table's row; an op without one records a node that saves nothing.
    let (name, saves): (&'static str, &[Save]) = match torch::op_rule(op) {
        Some(r) => (r.node, r.saves),
        None => ("NegBackward0", &[]),
    };
    autograd::record(it, out, name, GradFlow::Compute, &[Value::Obj(id)], saves);
    Ok(out)
}

/// A new tensor for an op's result: an activation when autograd will record the op.
pub(super) fn op_output(
    it: &mut Interpreter<'_>,
    shape: Vec<i64>,
    dtype: Dtype,
    device: DeviceKind,
    inputs: &[Value],
) -> R<Value> {
    let recorded = it.grad_enabled && inputs.iter().any(|&v| autograd::requires_grad(it, v));
    let category = if recorded {
        Category::Activation
    } else {
        Category::Temporary
    };
    it.new_tensor_as(shape, dtype, device, None, category)
}

/// Binary op with at least one tensor operand (borrowed operands).
pub(super) fn tensor_binary(
    it: &mut Interpreter<'_>,
    op: Operator,
    l: Value,
    r: Value,
    in_place: bool,
) -> R<Value> {
    let lt = tensor_of(it, l).cloned();
    let rt = tensor_of(it, r).cloned();
    let scalar_dtype = |v: Value| match v {
        Value::Float(_) => Some(Dtype::Float32),
        Value::Int(_) | Value::Bool(_) => None,
        _ => None,
    };
    if (lt.is_none() && float_of(l).is_none()) || (rt.is_none() && float_of(r).is_none()) {
        return it.error("TypeError: unsupported operand types for a tensor operation");
    }
    let shape_of =
        |t: &Option<torch::TensorData>| t.as_ref().map(|t| t.shape.clone()).unwrap_or_default();
    let (ls, rs) = (shape_of(&lt), shape_of(&rt));
    let shape = if op == Operator::MatMult {
        torch::matmul_shape(&ls, &rs)
    } else {
        torch::broadcast(&ls, &rs)
    };
    let shape = match shape {
        Ok(s) => s,
        Err(e) => return it.error(format!("RuntimeError: {e}")),
    };
    let device = match (&lt, &rt) {
        (Some(a), Some(b))
            if a.device != b.device && !a.shape.is_empty() && !b.shape.is_empty() =>
        {
            return it.error(format!(
                "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                a.device.name(),
                b.device.name()
            ));
        }
        (Some(a), Some(b)) => {
            if a.shape.is_empty() {
                b.device
            } else {
                a.device
            }
        }
        (Some(a), None) => a.device,
        (None, Some(b)) => b.device,
        (None, None) => unreachable!("one operand is a tensor"),
    };
    let dtype = match (&lt, &rt) {
        (Some(a), Some(b)) => Dtype::promote(a.dtype, b.dtype),
        (Some(a), None) => scalar_dtype(r)
            .filter(|_| !a.dtype.is_floating())
            .unwrap_or(a.dtype),
        (None, Some(b)) => scalar_dtype(l)
            .filter(|_| !b.dtype.is_floating())
            .unwrap_or(b.dtype),
        (None, None) => unreachable!(),
    };
    let dtype = if op == Operator::Div && !dtype.is_floating() {
        Dtype::Float32
    } else {
        dtype
    };
    if in_place && let (Some(target), Value::Obj(id)) = (&lt, l) {
        if shape != target.shape {
            return it.error(format!(
                "RuntimeError: output with shape {:?} doesn't match the broadcast shape {:?}",
                target.shape, shape
            ));
        }
        if let Some(method) = super::inplace::method_of(op) {
            return super::inplace::apply(it, id, method, &[r]);
        }
        it.heap.incref(Value::Obj(id));
        return Ok(Value::Obj(id));
    }
    let out = op_output(it, shape, dtype, device, &[l, r])?;
    let both = lt.is_some() && rt.is_some();
    let key = match op {
        Operator::Add => "add",
        Operator::Sub => "sub",
        Operator::Mult if both => "mul",
        Operator::Mult => "mul_scalar",
        Operator::Div if both => "div",
        Operator::Div => "div_scalar",
        Operator::Pow => "pow",
        Operator::MatMult => "matmul",
        _ => "",
    };
    let (name, flow, saves): (&'static str, GradFlow, &[Save]) = match torch::op_rule(key) {
        // Broadcasting reduces the gradient to each operand's shape: a new buffer.
        Some(r) if r.flow == GradFlow::PassThrough && !(both && ls == rs) => {
            (r.node, GradFlow::Compute, r.saves)
        }
        Some(r) => (r.node, r.flow, r.saves),
        None => (
            "BinaryBackward",
            GradFlow::Compute,
            &[Save::Input(0), Save::Input(1)],
        ),
    };
    autograd::record(it, out, name, flow, &[l, r], saves);
    Ok(out)
}

/// A new list or tuple holding (new references to) borrowed `items`.
pub(super) fn new_sequence(it: &mut Interpreter<'_>, is_list: bool, items: Vec<Value>) -> Value {
    for &v in &items {
        it.heap.incref(v);
    }
    Value::Obj(it.alloc(if is_list {
        ObjKind::List(items)
    } else {
        ObjKind::Tuple(items)
    }))
}

// ----- subscripts -------------------------------------------------------------------------------

/// One item of a tensor index.
enum IndexItem {
    Int(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    NewAxis,
    Ellipsis,
    /// Advanced indexing by an index tensor of this shape.
    Tensor(Vec<i64>),
}

fn eval_opt_int<'a>(it: &mut Interpreter<'a>, e: &'a Option<Box<Expr>>) -> R<Option<i64>> {
    match e {
        None => Ok(None),
        Some(e) => {
            let v = it.eval(e)?;
            match v {
                Value::None => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                other => {
                    it.heap.decref(other);
                    it.error("TypeError: slice indices must be integers or None")
                }
            }
        }
    }
}

fn index_items<'a>(it: &mut Interpreter<'a>, index: &'a Expr) -> R<Vec<IndexItem>> {
    let parts: Vec<&'a Expr> = match index {
        Expr::Tuple(t) => t.elts.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(match part {
            Expr::Slice(s) => IndexItem::Slice(
                eval_opt_int(it, &s.lower)?,
                eval_opt_int(it, &s.upper)?,
                eval_opt_int(it, &s.step)?,
            ),
            Expr::EllipsisLiteral(_) => IndexItem::Ellipsis,
            Expr::NoneLiteral(_) => IndexItem::NewAxis,
            other => {
                let v = it.eval(other)?;
                let item = match v {
                    Value::Int(i) => IndexItem::Int(i),
                    Value::Bool(b) => IndexItem::Int(b as i64),
                    Value::Obj(_) => match tensor_of(it, v) {
                        Some(t) => IndexItem::Tensor(t.shape.clone()),
                        None => match sequence_items(it, v) {
                            Ok(items) => IndexItem::Tensor(vec![items.len() as i64]),
                            Err(e) => {
                                it.heap.decref(v);
                                return Err(e);
                            }
                        },
                    },
                    _ => return it.unsupported("this index"),
                };
                it.heap.decref(v);
                item
            }
        });
    }
    Ok(out)
}

/// Python's `slice.indices(len)` and the resulting length.
fn slice_len(
    len: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Option<(i64, i64, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let (lo, hi) = if step > 0 { (0, len) } else { (-1, len - 1) };
    let fix = |v: Option<i64>, default: i64| match v {
        None => default,
        Some(v) if v < 0 => clamp(v + len, lo, hi),
        Some(v) => clamp(v, lo, hi),
    };
    let start = fix(start, if step > 0 { 0 } else { len - 1 });
    let stop = fix(stop, if step > 0 { len } else { -1 });
    let count = if step > 0 {
        if stop > start {
            (stop - start + step - 1) / step
        } else {
            0
        }
    } else if start > stop {
        (start - stop - step - 1) / -step
    } else {
        0
    };
    Some((start, step, count))
}

/// `obj[index]`: tensor views or copies, sequence items and slices, dict lookups.
pub(super) fn subscript<'a>(it: &mut Interpreter<'a>, obj: Value, index: &'a Expr) -> R<Value> {
    if it.user_special(obj, "__getitem__").is_some() {
        let key = it.eval(index)?;
        return it
            .call_special(obj, "__getitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"));
    }
    let Value::Obj(id) = obj else {
        return it.error("TypeError: object is not subscriptable");
    };
    if let ObjKind::Tensor(t) = it.heap.kind(id) {
        let t = t.clone();
        let items = index_items(it, index)?;
        return tensor_index(it, id, &t, &items);
    }
    if let Expr::Slice(s) = index {
        let (lower, upper, step) = (
            eval_opt_int(it, &s.lower)?,
            eval_opt_int(it, &s.upper)?,
            eval_opt_int(it, &s.step)?,
        );
        let (items, is_list) = match it.heap.kind(id) {
            ObjKind::List(items) => (items.clone(), true),
            ObjKind::Tuple(items) => (items.clone(), false),
            _ => return it.unsupported("slicing this object"),
        };
        let Some((start, step, count)) = slice_len(items.len() as i64, lower, upper, step) else {
            return it.error("ValueError: slice step cannot be zero");
        };
        let picked: Vec<Value> = (0..count)
            .map(|k| items[(start + k * step) as usize])
            .collect();
        for &v in &picked {
            it.heap.incref(v);
        }
        return Ok(Value::Obj(it.alloc(if is_list {
            ObjKind::List(picked)
        } else {
            ObjKind::Tuple(picked)
        })));
    }
    let key = it.eval(index)?;
    let result = item(it, id, key);
    it.heap.decref(key);
    result
}

fn item(it: &mut Interpreter<'_>, id: ObjId, key: Value) -> R<Value> {
    match it.heap.kind(id) {
        ObjKind::List(items) | ObjKind::Tuple(items) => {
            let Value::Int(i) = key else {
                return it.error("TypeError: indices must be integers");
            };
            let n = items.len() as i64;
            let at = if i < 0 { i + n } else { i };
            match items.get(at as usize).copied().filter(|_| at >= 0) {
                Some(v) => {
                    it.heap.incref(v);
                    Ok(v)
                }
                None => it.error("IndexError: index out of range"),
            }
        }
        ObjKind::Size(dims) => {
            let Value::Int(i) = key else {
                return it.error("TypeError: indices must be integers");
            };
            let n = dims.len() as i64;
            let at = if i < 0 { i + n } else { i };
            match dims.get(at as usize).copied().filter(|_| at >= 0) {
                Some(d) => Ok(Value::Int(d)),
                None => it.error("IndexError: index out of range"),
            }
        }
        ObjKind::Dict(items) => match items.iter().find(|(k, _)| *k == key).map(|(_, v)| *v) {
            Some(v) => {
                it.heap.incref(v);
                Ok(v)
            }
            None => it.error(format!("KeyError: {}", it.display(key))),
        },
        other => {
            let t = other.type_name();
            it.error(format!("TypeError: '{t}' object is not subscriptable"))
        }
    }
}

/// Basic indexing gives a view; any index tensor makes a copy (advanced indexing).
fn tensor_index(
    it: &mut Interpreter<'_>,
    id: ObjId,
    t: &torch::TensorData,
    items: &[IndexItem],
) -> R<Value> {
    let consumed = items
        .iter()
        .filter(|i| !matches!(i, IndexItem::NewAxis | IndexItem::Ellipsis))
        .count();
    if consumed > t.shape.len() {
        return it.error(format!(
            "IndexError: too many indices for tensor of dimension {}",
            t.shape.len()
        ));
    }
    let mut shape = Vec::new();
    let mut dim = 0usize;
    let mut advanced: Option<Vec<i64>> = None;
    for item in items {
        match item {
            IndexItem::Int(i) => {
                let size = t.shape[dim];
                if *i >= size || *i < -size {
                    return it.error(format!("IndexError: index {i} is out of bounds for dimension {dim} with size {size}"));
                }
                dim += 1;
            }
            IndexItem::Slice(a, b, s) => {
                let Some((_, _, count)) = slice_len(t.shape[dim], *a, *b, *s) else {
                    return it.error("ValueError: slice step cannot be zero");
                };
                if s.is_some_and(|s| s < 0) {
                    return it.error("ValueError: step must be greater than zero");
                }
                shape.push(count);
                dim += 1;
            }
            IndexItem::NewAxis => shape.push(1),
            IndexItem::Ellipsis => {
                let rest = consumed.saturating_sub(dim);
                let skip = t.shape.len() - dim - rest;
                shape.extend_from_slice(&t.shape[dim..dim + skip]);
                dim += skip;
            }
            IndexItem::Tensor(s) => {
                if advanced.is_none() {
                    advanced = Some(s.clone());
                    shape.extend_from_slice(s);
                }
                dim += 1;
            }
        }
    }
    shape.extend_from_slice(&t.shape[dim..]);
    if advanced.is_some() {
        return it.new_tensor(shape, t.dtype, t.device, None);
    }
    view(it, id, shape)
}

/// `obj[index] = value`, taking over `value`.
pub(super) fn store_subscript<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    index: &'a Expr,
    value: Value,
) -> R<()> {
    if it.user_special(obj, "__setitem__").is_some() {
        let key = match it.eval(index) {
            Ok(k) => k,
            Err(e) => {
                it.heap.decref(value);
                return Err(e);
            }
        };
        let r = it
            .call_special(obj, "__setitem__", vec![key, value])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        it.heap.decref(value);
        return it.error("TypeError: object does not support item assignment");
    };
    if it.is_tensor(obj) {
        // Writing into a tensor copies values into existing memory: no allocation, but
        // autograd history (`CopySlices`) and the version counter.
        let r = index_items(it, index).and_then(|_| super::inplace::copy_into_index(it, id, value));
        it.heap.decref(value);
        return r;
    }
    let key = it.eval(index)?;
    match it.heap.kind(id) {
        ObjKind::Dict(_) => {
            if !matches!(
                key,
                Value::Int(_) | Value::Str(_) | Value::Bool(_) | Value::None
            ) {
                it.heap.decref(key);
                it.heap.decref(value);
                return it.unsupported("dict keys other than ints and strings");
            }
            it.dict_set(id, key, value);
            Ok(())
        }
        ObjKind::List(items) => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                it.heap.decref(value);
                return it.error("TypeError: list indices must be integers");
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                it.heap.decref(value);
                return it.error("IndexError: list assignment index out of range");
            }
            let ObjKind::List(items) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::replace(&mut items[at as usize], value);
            it.heap.decref(old);
            Ok(())
        }
        other => {
            let t = other.type_name();
            it.heap.decref(key);
            it.heap.decref(value);
            it.error(format!(
                "TypeError: '{t}' object does not support item assignment"
            ))
        }
    }
}

/// `del obj[index]`.
pub(super) fn del_subscript<'a>(it: &mut Interpreter<'a>, obj: Value, index: &'a Expr) -> R<()> {
    if it.user_special(obj, "__delitem__").is_some() {
        let key = it.eval(index)?;
        let r = it
            .call_special(obj, "__delitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        return it.error("TypeError: object does not support item deletion");
    };
    let key = it.eval(index)?;
    let removed = match it.heap.kind_mut(id) {
        ObjKind::Dict(items) => match items.iter().position(|(k, _)| *k == key) {
            Some(i) => {
                let (k, v) = items.remove(i);
                vec![k, v]
            }
            None => return it.error("KeyError"),
        },
        ObjKind::List(items) => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                return it.error("TypeError: list indices must be integers");
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                return it.error("IndexError: list assignment index out of range");
            }
            vec![items.remove(at as usize)]
        }
        _ => return it.unsupported("deleting items of this object"),
    };
    it.heap.decref(key);
    it.heap.decref_all(removed);
    Ok(())
}
