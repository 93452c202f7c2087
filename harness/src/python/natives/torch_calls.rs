//! `torch.*` functions, factories and grad-mode managers (the `torch.nn.functional` calls are in
//! `functional_calls.rs`, `torch.distributed` in `dist_calls.rs`, argument readers in `torch_args.rs`).

use super::*;

/// Calls a tensor or `torch.*` native (the builtins are in `builtin_calls.rs`).
pub(in crate::python) fn call_torch_native(
    it: &mut Interpreter<'_>,
    n: Native,
    a: &Args,
) -> R<Value> {
    use Native::*;
    let p = &a.pos;
    match n {
        // `@torch.no_grad()` and the bare `@torch.no_grad` (`torch.no_grad(f)` is
        // `torch.no_grad()(f)`): the function wrapped so that each call runs in the mode.
        NoGrad | EnableGrad | InferenceMode
            if let [f @ (Value::Obj(_) | Value::Native(_))] = p.as_slice() =>
        {
            it.grad_mode_decorate(n, *f)
        }
        NoGrad | EnableGrad | InferenceMode if p.iter().any(|v| !matches!(v, Value::Bool(_))) => {
            let name = crate::python::grad_mode_functions::manager_name(n);
            it.error(format!(
                "TypeError: torch.{name}() got an unexpected argument"
            ))
        }
        // `InferenceMode(enabled=false)` sets grad mode to `!enabled` (c10/core/
        // InferenceMode.h): `inference_mode(False)` turns autograd on, even inside
        // `no_grad()` or `inference_mode()`, as `enable_grad()` does.
        InferenceMode if matches!(p.as_slice(), [Value::Bool(false)]) => {
            Ok(Value::Native(EnableGrad.id()))
        }
        NoGrad | EnableGrad | InferenceMode => Ok(Value::Native(n.id())),
        Autocast | CudaAmpAutocast => {
            let keywords =
                ["device_type", "dtype", "enabled", "cache_enabled"].map(|k| a.kw(it, k));
            it.new_autocast(p, keywords, n == CudaAmpAutocast)
        }
        AutogradBackward | RunBackward => {
            // backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False,
            // grad_variables=None, inputs=None); the engine's run_backward(tensors,
            // grad_tensors, keep_graph, create_graph, inputs, allow_unreachable,
            // accumulate_grad).
            let tensors = a
                .kw(it, "tensors")
                .or(p.first().copied())
                .unwrap_or(Value::None);
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
            let _ =
                it.autograd_backward(tensors, grads, retain, create_graph, accumulate, inputs)?;
            Ok(Value::None)
        }
        AutogradGrad => {
            // grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
            // only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False)
            let outputs = a
                .kw(it, "outputs")
                .or(p.first().copied())
                .unwrap_or(Value::None);
            let inputs = a
                .kw(it, "inputs")
                .or(p.get(1).copied())
                .unwrap_or(Value::None);
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
        FLinear
        | FMseLoss
        | FCrossEntropy
        | FLayerNorm
        | FBatchNorm
        | FConv1d
        | FConv2d
        | FMaxPool2d
        | FAdaptiveAvgPool2d
        | FlattenFn
        | FNllLoss
        | FL1Loss
        | FSmoothL1Loss
        | FBce
        | FBceWithLogits
        | FLeakyRelu
        | FSilu
        | FRelu
        | ReluInPlace
        | FScaledDotProductAttention
        | CheckpointSequential
        | FEmbedding => super::functional_calls::call_functional(it, n, a),
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
        DistInit | DistGetRank | DistGetWorldSize | DistIsend | DistIrecv | DistSend | DistRecv
        | DistBarrier | DistBatchIsendIrecv => super::dist_calls::call_dist(it, n, a),
        DistIsInitialized | DistAllReduce => super::dist_calls::call_dist(it, n, a),
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
        Dropout => {
            // F.dropout(input, p=0.5, training=True, inplace=False); torch.dropout(input, p,
            // train).
            let input = a
                .kw(it, "input")
                .or(p.first().copied())
                .unwrap_or(Value::None);
            let prob = match a.kw(it, "p").or(p.get(1).copied()) {
                Some(v) => match float_of(v) {
                    Some(f) => f,
                    None => return it.error("TypeError: dropout(): p must be a number"),
                },
                None => 0.5,
            };
            let training = match a
                .kw(it, "training")
                .or(a.kw(it, "train"))
                .or(p.get(2).copied())
            {
                Some(v) => it.truth(v)?,
                None => true,
            };
            let inplace = match a.kw(it, "inplace").or(p.get(3).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            if inplace {
                return it.dropout_in_place(input, prob, training);
            }
            it.dropout(input, prob, training)
        }
        SoftmaxFn | LogSoftmaxFn | GeluFn | LogFn | AbsFn | SqrtFn | NegFn => {
            // The function forms of the tensor methods: same node, same saves.
            let op = match n {
                SoftmaxFn => "softmax",
                LogSoftmaxFn => "log_softmax",
                GeluFn => "gelu",
                LogFn => "log",
                AbsFn => "abs",
                SqrtFn => "sqrt",
                _ => "neg",
            };
            match a.kw(it, "input").or(p.first().copied()) {
                Some(Value::Obj(t)) if it.is_tensor(Value::Obj(t)) => tensor_unary(it, t, op),
                _ => it.error(format!(
                    "TypeError: {op}(): argument 'input' must be Tensor"
                )),
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
        MemoryAllocated => {
            crate::python::cuda_memory::memory_stat(it, "allocated_bytes.all.current")
        }
        MemoryReserved => crate::python::cuda_memory::memory_stat(it, "reserved_bytes.all.current"),
        MaxMemoryAllocated => {
            crate::python::cuda_memory::memory_stat(it, "allocated_bytes.all.peak")
        }
        MaxMemoryReserved => crate::python::cuda_memory::memory_stat(it, "reserved_bytes.all.peak"),
        MemoryStats => crate::python::cuda_memory::memory_stats(it),
        TorchTensor
        | LegacyFloatTensor
        | LegacyHalfTensor
        | LegacyDoubleTensor
        | LegacyLongTensor
        | LegacyCudaFloatTensor
        | LegacyCudaHalfTensor
        | LegacyCudaLongTensor => {
            // `torch.FloatTensor(2, 3)` allocates that shape; `torch.FloatTensor([[1, 2]])`
            // copies the data's shape.
            // `torch.Tensor(...)` makes the default type, a CPU float32 tensor.
            let (dtype, device) = crate::python::type_checks::legacy_tensor_type(n)
                .unwrap_or((Dtype::Float32, DeviceKind::Cpu));
            let device = device_kw(it, a)?.unwrap_or(device);
            let shape = match p.as_slice() {
                [Value::Obj(o)]
                    if matches!(it.heap.kind(*o), ObjKind::List(_) | ObjKind::Tuple(_)) =>
                {
                    nested_shape(it, p[0], 0)?.0
                }
                // `torch.Tensor()` with no size is a 1-D tensor of 0 elements.
                [] => vec![0],
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
            let stats = crate::python::cuda_memory::memory_stats(it)?;
            it.heap.decref(stats);
            Ok(Value::Str(it.names.intern(
                "|  PyTorch CUDA memory summary (values not modelled)  |",
            )))
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
        FElu | FHardtanh | FRelu6 | FMish | FHardswish => {
            crate::python::activations::call(it, n, a)
        }
        FKlDiv | FSoftplus | NormFn | LinalgVectorNorm | AddcmulFn | FGroupNorm => {
            crate::python::ops_more::call(it, n, a)
        }
        IsnanFn | IsinfFn | IsfiniteFn | ArgmaxFn | ArgminFn => {
            crate::python::index_reductions::call(it, n, a)
        }
        ClipGradNorm | ClipGradValue => it.clip_grad(n, a),
        FSoftmin => crate::python::activations::softmin(it, a),
        ParametersToVector => it.parameters_to_vector(a),
        VectorToParameters => it.vector_to_parameters(a),
        EqFn | NeFn | LtFn | LeFn | GtFn | GeFn | AnyFn | AllFn | LogicalNotFn | LogicalAndFn
        | LogicalOrFn | IscloseFn | AllcloseFn | EqualFn => {
            crate::python::comparisons::call(it, n, a)
        }
        RemainderFn | FloorDivideFn | AddcdivFn => crate::python::ops_more::call(it, n, a),
        IsTensorFn | IsFloatingPointFn => it.torch_predicate(n, a),
        IsGradEnabled
        | SetGradEnabled
        | IsInferenceModeEnabled
        | GradModeOffWasOn
        | GradModeOffWasOff
        | GradModeOnWasOn
        | GradModeOnWasOff => it.grad_mode_call(n, a),
        MaxFn | MinFn | MaximumFn | MinimumFn | SortFn | TopkFn => {
            crate::python::index_reductions::call(it, n, a)
        }
        RandomSplit => crate::python::data_loader::call(it, n, p, &a.kw),
        LogsumexpFn | WhereFn => crate::python::select_ops::call(it, n, a),
        SavedTensorsHooksFn | SaveOnCpuFn => crate::python::saved_tensors_hooks::call(it, n, a),
        AsTensorFn => crate::python::tensor_sharing::as_tensor(it, a),
        Log10Fn | Log2Fn | Log1pFn | Expm1Fn | Exp2Fn | RsqrtFn | ReciprocalFn | SignFn
        | FloorFn | CeilFn | RoundFn | TruncFn | ClampMinFn | ClampMaxFn | FlipFn | RollFn
        | TrilFn | TriuFn | CumprodFn | HypotFn | Atan2Fn | LogaddexpFn | LerpFn | OuterFn
        | RepeatInterleaveFn => crate::python::pointwise_math::call(it, n, a),
        CumsumFn => crate::python::pointwise_math::call(it, n, a),
        DiffFn => crate::python::differences::call(it, a),
        EinsumFn => crate::python::einsum::call(it, a),
        // Builtins are dispatched in `builtin_calls.rs` before reaching here.
        _ => it.error("TypeError: unknown builtin"),
    }
}
