//! `torch.*` functions and factories, p2p work handles, and the argument helpers they share.

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
            it.error(format!("TypeError: torch.{name}() got an unexpected argument"))
        }
        // `InferenceMode(enabled=false)` sets grad mode to `!enabled` (c10/core/
        // InferenceMode.h): `inference_mode(False)` turns autograd on, even inside
        // `no_grad()` or `inference_mode()`, as `enable_grad()` does.
        InferenceMode if matches!(p.as_slice(), [Value::Bool(false)]) => {
            Ok(Value::Native(EnableGrad.id()))
        }
        NoGrad | EnableGrad | InferenceMode => Ok(Value::Native(n.id())),
        Autocast | CudaAmpAutocast => {
            let keywords = ["device_type", "dtype", "enabled", "cache_enabled"].map(|k| a.kw(it, k));
            it.new_autocast(p, keywords, n == CudaAmpAutocast)
        }
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
        FLayerNorm => {
            // layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05)
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied()).unwrap_or(Value::None)
            };
            let (x, shape) = (arg(it, 0, "input"), arg(it, 1, "normalized_shape"));
            let dims = match shape {
                Value::Int(d) => vec![d],
                Value::None => return it.error("TypeError: layer_norm(input, normalized_shape)"),
                v => shape_args(it, &[v])?,
            };
            let (w, b) = (arg(it, 2, "weight"), arg(it, 3, "bias"));
            it.layer_norm(x, &dims, w, b)
        }
        FBatchNorm => {
            // batch_norm(input, running_mean, running_var, weight=None, bias=None,
            // training=False, momentum=0.1, eps=1e-05)
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied()).unwrap_or(Value::None)
            };
            let training = match a.kw(it, "training").or(p.get(5).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let (mean, var) = (arg(it, 1, "running_mean"), arg(it, 2, "running_var"));
            if !training && (mean == Value::None || var == Value::None) {
                return it.error(
                    "RuntimeError: running_mean and running_var must be defined in evaluation mode",
                );
            }
            let x = arg(it, 0, "input");
            let (w, b) = (arg(it, 3, "weight"), arg(it, 4, "bias"));
            it.batch_norm(x, mean, var, w, b, training)
        }
        FConv1d | FConv2d => {
            // conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1)
            let n = if n == FConv1d { 1 } else { 2 };
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied())
            };
            let ints = |it: &Interpreter<'_>, i: usize, name: &str, default: i64| match arg(
                it, i, name,
            ) {
                Some(v) => it.spatial_ints(v, n, name),
                None => Ok(vec![default; n]),
            };
            let stride = ints(it, 3, "stride", 1)?;
            let dilation = ints(it, 5, "dilation", 1)?;
            let padding = match arg(it, 4, "padding") {
                Some(Value::Str(s)) if it.names.name(s) == "same" => Vec::new(),
                Some(Value::Str(_)) => vec![0; n],
                _ => ints(it, 4, "padding", 0)?,
            };
            let groups = match arg(it, 6, "groups") {
                Some(Value::Int(g)) if g > 0 => g,
                None => 1,
                Some(_) => return it.error("ValueError: groups must be a positive integer"),
            };
            let x = arg(it, 0, "input").unwrap_or(Value::None);
            let w = arg(it, 1, "weight").unwrap_or(Value::None);
            let b = arg(it, 2, "bias").unwrap_or(Value::None);
            let window = crate::python::convolution::Window {
                kernel: Vec::new(),
                stride,
                padding,
                dilation,
            };
            it.convolution(x, w, b, n, window, groups)
        }
        FMaxPool2d => {
            // max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1,
            // ceil_mode=False, return_indices=False)
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied())
            };
            let Some(k) = arg(it, 1, "kernel_size") else {
                return it.error("TypeError: max_pool2d(input, kernel_size)");
            };
            let kernel = it.spatial_ints(k, 2, "kernel_size")?;
            let stride = match arg(it, 2, "stride") {
                None | Some(Value::None) => kernel.clone(),
                Some(v) => it.spatial_ints(v, 2, "stride")?,
            };
            let padding = match arg(it, 3, "padding") {
                Some(v) => it.spatial_ints(v, 2, "padding")?,
                None => vec![0, 0],
            };
            let dilation = match arg(it, 4, "dilation") {
                Some(v) => it.spatial_ints(v, 2, "dilation")?,
                None => vec![1, 1],
            };
            let ceil = match arg(it, 5, "ceil_mode") {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let indices = match arg(it, 6, "return_indices") {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let window = crate::python::convolution::Window {
                kernel,
                stride,
                padding,
                dilation,
            };
            let x = arg(it, 0, "input").unwrap_or(Value::None);
            it.max_pool2d(x, window, ceil, indices)
        }
        FAdaptiveAvgPool2d => {
            let x = a.kw(it, "input").or(p.first().copied()).unwrap_or(Value::None);
            match a.kw(it, "output_size").or(p.get(1).copied()) {
                Some(size) => it.adaptive_avg_pool2d(x, size),
                None => it.error("TypeError: adaptive_avg_pool2d(input, output_size)"),
            }
        }
        FlattenFn => {
            // torch.flatten(input, start_dim=0, end_dim=-1): the method's view.
            let x = a.kw(it, "input").or(p.first().copied()).unwrap_or(Value::None);
            let start = a.kw(it, "start_dim").or(p.get(1).copied()).unwrap_or(Value::Int(0));
            let end = a.kw(it, "end_dim").or(p.get(2).copied()).unwrap_or(Value::Int(-1));
            if !it.is_tensor(x) {
                return it.error("TypeError: flatten(): argument 'input' must be Tensor");
            }
            let name = it.names.intern("flatten");
            call_method(it, x, name, vec![start, end], Vec::new())
        }
        FNllLoss | FL1Loss | FSmoothL1Loss | FBce | FBceWithLogits => {
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied()).unwrap_or(Value::None)
            };
            let (x, y) = (arg(it, 0, "input"), arg(it, 1, "target"));
            // `size_average`/`reduce` are deprecated spellings of `reduction`.
            if a.kw(it, "size_average").is_some() || a.kw(it, "reduce").is_some() {
                return it.unsupported(
                    "the deprecated size_average=/reduce= arguments; use reduction=",
                );
            }
            let reduction = it.reduction_of(a.kw(it, "reduction").unwrap_or(Value::None))?;
            match n {
                FNllLoss => it.nll_loss(x, y, arg(it, 2, "weight"), reduction),
                FL1Loss => it.l1_loss(x, y, reduction),
                FSmoothL1Loss => it.fused_loss("smooth_l1_loss", &[x, y], reduction),
                FBce => it.fused_loss(
                    "binary_cross_entropy",
                    &[x, y, arg(it, 2, "weight")],
                    reduction,
                ),
                _ => it.fused_loss(
                    "binary_cross_entropy_with_logits",
                    &[x, y, arg(it, 2, "weight"), a.kw(it, "pos_weight").unwrap_or(Value::None)],
                    reduction,
                ),
            }
        }
        FLeakyRelu | FSilu | FRelu => {
            let op = match n {
                FLeakyRelu => "leaky_relu",
                FSilu => "silu",
                _ => "relu",
            };
            let inplace_at = if n == FLeakyRelu { 2 } else { 1 };
            let inplace = match a.kw(it, "inplace").or(p.get(inplace_at).copied()) {
                Some(v) => it.truth(v)?,
                None => false,
            };
            let input = a.kw(it, "input").or(p.first().copied());
            if inplace {
                let method = format!("{op}_");
                return it.activation_in_place(input.unwrap_or(Value::None), &method);
            }
            match input {
                Some(Value::Obj(t)) if it.is_tensor(Value::Obj(t)) => tensor_unary(it, t, op),
                _ => it.error(format!("TypeError: {op}(): argument 'input' must be Tensor")),
            }
        }
        ReluInPlace => match p.as_slice() {
            [x] => it.activation_in_place(*x, "relu_"),
            _ => it.error("TypeError: relu_(input) takes one tensor"),
        },
        FScaledDotProductAttention => {
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied())
            };
            let dropout_p = match arg(it, 4, "dropout_p") {
                None => 0.0,
                Some(v) => match float_of(v) {
                    Some(f) => f,
                    None => return it.error("TypeError: dropout_p must be a number"),
                },
            };
            let is_causal = match arg(it, 5, "is_causal") {
                None => false,
                Some(v) => it.truth(v)?,
            };
            // `scale` changes values only.
            let args = crate::python::attention::SdpaArgs {
                query: arg(it, 0, "query").unwrap_or(Value::None),
                key: arg(it, 1, "key").unwrap_or(Value::None),
                value: arg(it, 2, "value").unwrap_or(Value::None),
                attn_mask: arg(it, 3, "attn_mask").unwrap_or(Value::None),
                dropout_p,
                is_causal,
            };
            it.scaled_dot_product_attention(&args)
        }
        CheckpointSequential => {
            let arg = |it: &Interpreter<'_>, i: usize, name: &str| {
                a.kw(it, name).or(p.get(i).copied())
            };
            let (Some(functions), Some(Value::Int(segments)), Some(input)) = (
                arg(it, 0, "functions"),
                arg(it, 1, "segments"),
                arg(it, 2, "input"),
            ) else {
                return it.error(
                    "TypeError: checkpoint_sequential(functions, segments, input, use_reentrant=None)",
                );
            };
            let use_reentrant = match a.kw(it, "use_reentrant") {
                None | Some(Value::None) => true,
                Some(v) => it.truth(v)?,
            };
            it.checkpoint_sequential(functions, segments, input, use_reentrant)
        }
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
        Dropout => {
            // F.dropout(input, p=0.5, training=True, inplace=False); torch.dropout(input, p,
            // train).
            let input = a.kw(it, "input").or(p.first().copied()).unwrap_or(Value::None);
            let prob = match a.kw(it, "p").or(p.get(1).copied()) {
                Some(v) => match float_of(v) {
                    Some(f) => f,
                    None => return it.error("TypeError: dropout(): p must be a number"),
                },
                None => 0.5,
            };
            let training = match a.kw(it, "training").or(a.kw(it, "train")).or(p.get(2).copied()) {
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
                _ => it.error(format!("TypeError: {op}(): argument 'input' must be Tensor")),
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
        MemoryAllocated => crate::python::cuda_memory::memory_stat(it, "allocated_bytes.all.current"),
        MemoryReserved => crate::python::cuda_memory::memory_stat(it, "reserved_bytes.all.current"),
        MaxMemoryAllocated => crate::python::cuda_memory::memory_stat(it, "allocated_bytes.all.peak"),
        MaxMemoryReserved => crate::python::cuda_memory::memory_stat(it, "reserved_bytes.all.peak"),
        MemoryStats => crate::python::cuda_memory::memory_stats(it),
        TorchTensor | LegacyFloatTensor | LegacyHalfTensor | LegacyDoubleTensor | LegacyLongTensor
        | LegacyCudaFloatTensor | LegacyCudaHalfTensor | LegacyCudaLongTensor => {
            // `torch.FloatTensor(2, 3)` allocates that shape; `torch.FloatTensor([[1, 2]])`
            // copies the data's shape.
            // `torch.Tensor(...)` makes the default type, a CPU float32 tensor.
            let (dtype, device) = crate::python::type_checks::legacy_tensor_type(n)
                .unwrap_or((Dtype::Float32, DeviceKind::Cpu));
            let device = device_kw(it, a)?.unwrap_or(device);
            let shape = match p.as_slice() {
                [Value::Obj(o)] if matches!(it.heap.kind(*o), ObjKind::List(_) | ObjKind::Tuple(_)) => {
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
        IsGradEnabled | SetGradEnabled | IsInferenceModeEnabled | GradModeOffWasOn
        | GradModeOffWasOff | GradModeOnWasOn | GradModeOnWasOff => it.grad_mode_call(n, a),
        MaxFn | MinFn | MaximumFn | MinimumFn | SortFn | TopkFn => {
            crate::python::index_reductions::call(it, n, a)
        }
        RandomSplit => crate::python::data_loader::call(it, n, p, &a.kw),
        LogsumexpFn | WhereFn => crate::python::select_ops::call(it, n, a),
        // Builtins are dispatched in `builtin_calls.rs` before reaching here.
        _ => it.error("TypeError: unknown builtin"),
    }
}

/// A `Work` handle of a p2p op (pybind11, not a GC object) holding `tensors` until `wait()`.
pub(super) fn new_work(it: &mut Interpreter<'_>, tensors: Vec<Value>) -> Value {
    Value::Obj(it.heap.insert_uncounted(ObjKind::CppHandle {
        type_name: "Work",
        held: tensors,
    }))
}

/// `tensor.attr = value` (borrowed value): `.data`, `.grad`, `.requires_grad`.
pub(in crate::python) fn set_tensor_attr(
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
pub(in crate::python) fn sequence_items(it: &Interpreter<'_>, v: Value) -> R<Vec<Value>> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items)
            | ObjKind::Tuple(items)
            | ObjKind::Deque { items, .. }
            | ObjKind::StructSeq { items, .. }
            | ObjKind::NamedTuple { items, .. } => Ok(items.clone()),
            ObjKind::Dict(items) => Ok(items.iter().map(|(k, _)| *k).collect()),
            ObjKind::Set { table, .. } => Ok(table.items().collect()),
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

pub(in crate::python) fn length(it: &Interpreter<'_>, v: Value) -> R<i64> {
    Ok(match v {
        Value::Str(s) => it.names.name(s).chars().count() as i64,
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items)
            | ObjKind::Tuple(items)
            | ObjKind::Deque { items, .. }
            | ObjKind::StructSeq { items, .. }
            | ObjKind::NamedTuple { items, .. } => items.len() as i64,
            ObjKind::Dict(items) => items.len() as i64,
            ObjKind::Set { table, .. } => table.len() as i64,
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

pub(super) fn tensor_of<'i>(it: &'i Interpreter<'_>, v: Value) -> Option<&'i torch::TensorData> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tensor(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Sizes given as `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(t.shape)`.
pub(super) fn shape_args(it: &Interpreter<'_>, p: &[Value]) -> R<Vec<i64>> {
    // Negative sizes are refused with PyTorch's message when the storage is sized.
    match p {
        [single @ Value::Obj(_)] => sequence_items(it, *single)?
            .into_iter()
            .map(|d| int_arg(it, d, "size"))
            .collect(),
        // Read in place: `zeros(16)` copies no argument list.
        many => many.iter().map(|&d| int_arg(it, d, "size")).collect(),
    }
}

/// Most dimensions `torch.tensor` accepts from nested data (torch's `MAX_DIMS`); deeper
/// (or self-referential) data raises its `ValueError` before any deep walk.
pub(super) const TENSOR_DATA_MAX_DIMS: usize = 128;

pub(super) fn nested_shape(it: &Interpreter<'_>, v: Value, depth: usize) -> R<(Vec<i64>, bool)> {
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

pub(super) fn dtype_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<Dtype>> {
    match a.kw(it, "dtype") {
        None | Some(Value::None) => Ok(None),
        Some(Value::Dtype(d)) => Ok(Some(d)),
        Some(_) => it.error("TypeError: dtype must be a torch dtype"),
    }
}

pub(super) fn device_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<DeviceKind>> {
    match a.kw(it, "device") {
        None | Some(Value::None) => Ok(None),
        Some(v) => device_of(it, v).map(Some),
    }
}

pub(super) fn device_of(it: &Interpreter<'_>, v: Value) -> R<DeviceKind> {
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
