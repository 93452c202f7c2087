//! `torch.nn.functional` calls (and `torch.utils.checkpoint.checkpoint_sequential`).

use super::*;

/// Calls a `torch.nn.functional` native.
pub(super) fn call_functional(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    use Native::*;
    let p = &a.pos;
    match n {
        FLinear => match p.as_slice() {
            [x, w] => it.linear(*x, *w, a.kw(it, "bias").unwrap_or(Value::None)),
            [x, w, b] => it.linear(*x, *w, *b),
            _ => it.error("TypeError: linear(input, weight, bias=None)"),
        },
        FMseLoss => match p.as_slice() {
            [x, y] => {
                let m = it
                    .module_attr(module(ModNn), "MSELoss")
                    .unwrap_or(Value::None);
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
            let arg =
                |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
            let ints =
                |it: &Interpreter<'_>, i: usize, name: &str, default: i64| match arg(it, i, name) {
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
            let arg =
                |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
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
            let x = a
                .kw(it, "input")
                .or(p.first().copied())
                .unwrap_or(Value::None);
            match a.kw(it, "output_size").or(p.get(1).copied()) {
                Some(size) => it.adaptive_avg_pool2d(x, size),
                None => it.error("TypeError: adaptive_avg_pool2d(input, output_size)"),
            }
        }
        FlattenFn => {
            // torch.flatten(input, start_dim=0, end_dim=-1): the method's view.
            let x = a
                .kw(it, "input")
                .or(p.first().copied())
                .unwrap_or(Value::None);
            let start = a
                .kw(it, "start_dim")
                .or(p.get(1).copied())
                .unwrap_or(Value::Int(0));
            let end = a
                .kw(it, "end_dim")
                .or(p.get(2).copied())
                .unwrap_or(Value::Int(-1));
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
                return it
                    .unsupported("the deprecated size_average=/reduce= arguments; use reduction=");
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
                    &[
                        x,
                        y,
                        arg(it, 2, "weight"),
                        a.kw(it, "pos_weight").unwrap_or(Value::None),
                    ],
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
                _ => it.error(format!(
                    "TypeError: {op}(): argument 'input' must be Tensor"
                )),
            }
        }
        ReluInPlace => match p.as_slice() {
            [x] => it.activation_in_place(*x, "relu_"),
            _ => it.error("TypeError: relu_(input) takes one tensor"),
        },
        FScaledDotProductAttention => {
            let arg =
                |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
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
            let arg =
                |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
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
        _ => it.error("TypeError: unknown builtin"),
    }
}
