//! The pointwise math, shape-preserving and interleaving ops real reports use beyond the core
//! set, as rows of the autograd table (`torch::OP_RULES`) read from PyTorch's
//! `tools/autograd/derivatives.yaml`: each is `torch.NAME(...)` and `Tensor.NAME(...)`.
//!
//! | op                                   | result                         | node: saves |
//! |--------------------------------------|--------------------------------|-------------|
//! | `log10`, `log2`, `log1p`             | same shape (integers: float32) | `Log10Backward0`, `Log2Backward0`, `Log1PBackward0`: `self` |
//! | `expm1`, `exp2`, `rsqrt`, `reciprocal` | same shape (integers: float32) | `*Backward0`: the result |
//! | `sign`, `floor`, `ceil`, `round`, `trunc` | same shape and dtype      | `*Backward0` (`round(decimals=)`: `RoundBackward1`): nothing (`zeros_like(grad)`) |
//! | `clamp_min(min)`, `clamp_max(max)` (number bound) | same shape        | `ClampMinBackward0`/`ClampMaxBackward0`: `self` |
//! | `flip`, `roll`, `tril`, `triu`       | a copy of the same shape       | `*Backward0`: nothing |
//! | `cumprod(dim)`                       | same shape (integers: int64)   | `CumprodBackward0`: `self` and the result |
//! | `cumsum(dim)`                        | same shape (integers: int64)   | `CumsumBackward0`: nothing (`cumsum_backward` reads `self`'s dtype only) |
//! | `hypot(a, b)`                        | broadcast shape                | `HypotBackward0`: each operand when it requires grad, the result |
//! | `atan2(a, b)`, `logaddexp(a, b)`     | broadcast shape                | `Atan2Backward0`, `LogaddexpBackward0`: both operands |
//! | `lerp(a, b, w)` (number `w`)         | broadcast shape                | `LerpBackward0`: nothing |
//! | `lerp(a, b, w)` (tensor `w`)         | broadcast shape                | `LerpBackward1`: `w` if `a` or `b` requires grad; `a`, `b` if `w` does |
//! | `outer(a, b)`                        | `[n, m]`                       | composite: `a.reshape(n, 1) * b`, so `MulBackward0` (saving the view of `a` and `b`) over a `ViewBackward0` |
//! | `repeat_interleave(x, r, dim)`       | `x` repeated along `dim` (flattened without `dim`) | composite (`Repeat.cpp`): `IndexSelectBackward0` saving the int64 index |
//!
//! `repeat_interleave` runs as `aten/src/ATen/native/Repeat.cpp` does: an int `r` becomes
//! a one-element int64 tensor on the input's device, expanded (a view) to the dim's size;
//! `repeat_interleave_common` (`Repeat.h`) makes it contiguous (`n` int64s), takes its
//! `cumsum` (`n` int64s) and fills the index (`sum(r)` int64s), freeing the first two; then
//! `index_select(dim, index)` makes the result. Its backward (`index_select_backward`) is
//! `zeros(self.sizes()).index_add_(dim, index, grad)`: one gradient of the input's size.
//! A tensor `r` of length `n` is already contiguous (no copy); a one-element one is expanded
//! and copied like an int. Values are not modelled, so a tensor `r` needs `output_size=`
//! (the total is its sum, a value); without it the model refuses.

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::natives::{Args, Native, float_of, norm_dim, op_output, sequence_items};
use crate::heap::Value;
use crate::torch::{Category, Dtype, broadcast};

/// Unary ops whose integer inputs compute in the default float type.
const FLOAT_UNARY: &[&str] = &[
    "log10",
    "log2",
    "log1p",
    "expm1",
    "exp2",
    "rsqrt",
    "reciprocal",
];

/// Unary ops that keep their input's dtype and take no argument.
const SAME_UNARY: &[&str] = &["sign", "floor", "ceil", "trunc"];

/// Tensor methods of this file.
pub(super) fn is_method(method: &str) -> bool {
    FLOAT_UNARY.contains(&method)
        || SAME_UNARY.contains(&method)
        || matches!(
            method,
            "round"
                | "clamp_min"
                | "clamp_max"
                | "flip"
                | "roll"
                | "tril"
                | "triu"
                | "cumprod"
                | "cumsum"
                | "hypot"
                | "atan2"
                | "logaddexp"
                | "lerp"
                | "outer"
                | "repeat_interleave"
        )
}

/// The op name of a `torch.*` native of this file.
fn op_of(n: Native) -> &'static str {
    use Native::*;
    match n {
        Log10Fn => "log10",
        Log2Fn => "log2",
        Log1pFn => "log1p",
        Expm1Fn => "expm1",
        Exp2Fn => "exp2",
        RsqrtFn => "rsqrt",
        ReciprocalFn => "reciprocal",
        SignFn => "sign",
        FloorFn => "floor",
        CeilFn => "ceil",
        RoundFn => "round",
        TruncFn => "trunc",
        ClampMinFn => "clamp_min",
        ClampMaxFn => "clamp_max",
        FlipFn => "flip",
        RollFn => "roll",
        TrilFn => "tril",
        TriuFn => "triu",
        CumprodFn => "cumprod",
        HypotFn => "hypot",
        Atan2Fn => "atan2",
        LogaddexpFn => "logaddexp",
        LerpFn => "lerp",
        OuterFn => "outer",
        CumsumFn => "cumsum",
        _ => "repeat_interleave",
    }
}

/// `torch.NAME(input, ...)`: the method on `input` with the rest of the arguments.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let op = op_of(n);
    let (input, rest) = match a.kw(it, "input") {
        Some(v) => (v, &a.pos[..]),
        None => match a.pos.split_first() {
            Some((v, rest)) => (*v, rest),
            None => {
                return it.error(format!(
                    "TypeError: {op}() missing 1 required positional argument: 'input'"
                ));
            }
        },
    };
    if !it.is_tensor(input) {
        return it.error(format!(
            "TypeError: {op}(): argument 'input' (position 1) must be Tensor, not {}",
            it.type_name_of(input)
        ));
    }
    run(it, input, op, rest, a)
}

/// `Tensor.NAME(...)`.
pub(super) fn method(
    it: &mut Interpreter<'_>,
    id: crate::heap::ObjId,
    m: &str,
    a: &Args,
) -> R<Value> {
    let op = FLOAT_UNARY
        .iter()
        .chain(SAME_UNARY)
        .chain(&[
            "round",
            "clamp_min",
            "clamp_max",
            "flip",
            "roll",
            "tril",
            "triu",
            "cumprod",
            "hypot",
            "atan2",
            "logaddexp",
            "lerp",
            "outer",
            "repeat_interleave",
            "cumsum",
        ])
        .find(|o| **o == m)
        .copied()
        .unwrap_or("repeat_interleave");
    run(it, Value::Obj(id), op, &a.pos, a)
}

/// Runs `op` on the tensor `x`; `p` are the positional arguments after it.
fn run(it: &mut Interpreter<'_>, x: Value, op: &'static str, p: &[Value], a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
    match op {
        _ if FLOAT_UNARY.contains(&op) || SAME_UNARY.contains(&op) => unary(it, x, op, None),
        "round" => match arg(it, 0, "decimals") {
            Some(Value::Int(0)) | None => unary(it, x, "round", None),
            Some(Value::Int(_)) => unary(it, x, "round_decimals", None),
            Some(v) => it.error(format!(
                "TypeError: round(): argument 'decimals' must be int, not {}",
                it.type_name_of(v)
            )),
        },
        "clamp_min" | "clamp_max" => {
            let bound = if op == "clamp_min" { "min" } else { "max" };
            match arg(it, 0, bound) {
                Some(v) if float_of(v).is_some() => unary(it, x, op, None),
                Some(v) if it.is_tensor(v) => it.unsupported(format!(
                    "{op} with a tensor bound ({op}.Tensor); pass a number"
                )),
                _ => it.error(format!(
                    "TypeError: {op}() missing 1 required positional argument: '{bound}'"
                )),
            }
        }
        "flip" | "roll" | "tril" | "triu" => {
            let ndim = it.tensor_data(x).map_or(0, |t| t.shape.len());
            match op {
                "flip" => {
                    let Some(dims) = arg(it, 0, "dims") else {
                        return it.error(
                            "TypeError: flip() missing 1 required positional argument: 'dims'",
                        );
                    };
                    dims_of(it, dims, ndim)?;
                }
                "roll" => {
                    if arg(it, 0, "shifts").is_none() {
                        return it.error(
                            "TypeError: roll() missing 1 required positional argument: 'shifts'",
                        );
                    }
                    if let Some(d) = arg(it, 1, "dims") {
                        dims_of(it, d, ndim)?;
                    }
                }
                _ if ndim < 2 => {
                    return it.error(format!(
                        "RuntimeError: {op}: input tensor must have at least 2 dimensions"
                    ));
                }
                _ => {}
            }
            unary(it, x, op, None)
        }
        "cumprod" | "cumsum" => {
            let ndim = it.tensor_data(x).map_or(0, |t| t.shape.len());
            let Some(Value::Int(d)) = arg(it, 0, "dim") else {
                return it.error(format!(
                    "TypeError: {op}() missing 1 required positional argument: 'dim'"
                ));
            };
            norm_dim(it, d, ndim)?;
            let dtype = match a.kw(it, "dtype") {
                Some(Value::Dtype(d)) => Some(d),
                _ => None,
            };
            unary(it, x, op, dtype)
        }
        "hypot" | "atan2" | "logaddexp" | "outer" => {
            let name = if op == "outer" { "vec2" } else { "other" };
            let Some(other) = arg(it, 0, name) else {
                return it.error(format!(
                    "TypeError: {op}() missing 1 required positional argument: '{name}'"
                ));
            };
            if !it.is_tensor(other) {
                return it.error(format!(
                    "TypeError: {op}(): argument '{name}' (position 2) must be Tensor, not {}",
                    it.type_name_of(other)
                ));
            }
            if op == "outer" {
                return outer(it, x, other);
            }
            binary(it, op, &[x, other])
        }
        "lerp" => {
            let (Some(end), Some(weight)) = (arg(it, 0, "end"), arg(it, 1, "weight")) else {
                return it
                    .error("TypeError: lerp() missing required arguments: 'end' and 'weight'");
            };
            if !it.is_tensor(end) {
                return it.error(format!(
                    "TypeError: lerp(): argument 'end' (position 2) must be Tensor, not {}",
                    it.type_name_of(end)
                ));
            }
            if it.is_tensor(weight) {
                binary(it, "lerp_tensor", &[x, end, weight])
            } else if float_of(weight).is_some() {
                binary(it, "lerp", &[x, end])
            } else {
                it.error(format!(
                    "TypeError: lerp(): argument 'weight' must be Number or Tensor, not {}",
                    it.type_name_of(weight)
                ))
            }
        }
        _ => {
            let Some(repeats) = arg(it, 0, "repeats") else {
                return it.error(
                    "TypeError: repeat_interleave() missing 1 required positional argument: 'repeats'",
                );
            };
            let total = match a.kw(it, "output_size") {
                Some(Value::Int(n)) => Some(n),
                _ => None,
            };
            repeat_interleave(it, x, repeats, arg(it, 1, "dim"), total)
        }
    }
}

/// The dims of `flip`/`roll` (an int or a sequence), checked against `ndim`.
fn dims_of(it: &Interpreter<'_>, v: Value, ndim: usize) -> R<Vec<usize>> {
    let items = match v {
        Value::Int(_) => vec![v],
        other => sequence_items(it, other)?,
    };
    let mut out = Vec::with_capacity(items.len());
    for d in items {
        let Value::Int(d) = d else {
            return it.error("TypeError: dims must be a tuple of ints");
        };
        out.push(norm_dim(it, d, ndim)?);
    }
    Ok(out)
}

/// A unary op: a new tensor of the input's shape, its row of the autograd table recorded.
/// Autocast's float32 list casts a lower-precision input first (`autocast_mode.cpp`).
/// `x.reciprocal()`: `Tensor.__rdiv__` (`number / tensor`) is this followed by `* number`.
pub(in crate::python) fn reciprocal(it: &mut Interpreter<'_>, x: Value) -> R<Value> {
    unary(it, x, "reciprocal", None)
}

fn unary(it: &mut Interpreter<'_>, x: Value, op: &'static str, dtype: Option<Dtype>) -> R<Value> {
    let (cast, dtype) = match super::amp::policy_of(op) {
        Some(p @ CastPolicy::Float32) => (Some(it.autocast_inputs(&[x], p)?), dtype),
        // `fp32_set_opt_dtype` (cumprod): the result in float32, the input as given.
        Some(CastPolicy::Float32Output) => (None, dtype.or(it.autocast_float32_output(x))),
        _ => (None, dtype),
    };
    let input = cast.as_ref().map_or(x, |c| c[0]);
    let r = unary_as_given(it, input, op, dtype);
    if let Some(c) = cast {
        it.heap.decref_all(c);
    }
    r
}

fn unary_as_given(
    it: &mut Interpreter<'_>,
    x: Value,
    op: &'static str,
    dtype: Option<Dtype>,
) -> R<Value> {
    let t = it.tensor_data(x).expect("checked by the caller");
    let dtype = dtype.unwrap_or(match op {
        _ if FLOAT_UNARY.contains(&op) && !t.dtype.is_floating() => Dtype::Float32,
        // cumprod and cumsum accumulate integers (bool included) in int64.
        "cumprod" | "cumsum" if !t.dtype.is_floating() => Dtype::Int64,
        _ => t.dtype,
    });
    let out = op_output(it, t.shape, dtype, t.device, &[x])?;
    autograd::record_op(it, out, op, &[x]);
    Ok(out)
}

/// A broadcasting op of two or three tensors (`lerp`'s weight third); autocast's promote
/// list casts `atan2`'s operands to the widest floating type among them.
fn binary(it: &mut Interpreter<'_>, op: &'static str, operands: &[Value]) -> R<Value> {
    let cast = match super::amp::policy_of(op) {
        Some(p @ CastPolicy::Promote) => Some(it.autocast_inputs(operands, p)?),
        _ => None,
    };
    let inputs: Vec<Value> = cast.clone().unwrap_or_else(|| operands.to_vec());
    let r = binary_as_given(it, op, &inputs);
    if let Some(c) = cast {
        it.heap.decref_all(c);
    }
    r
}

fn binary_as_given(it: &mut Interpreter<'_>, op: &'static str, inputs: &[Value]) -> R<Value> {
    let mut shape: Vec<i64> = Vec::new();
    let mut dtype: Option<Dtype> = None;
    let mut device: Option<crate::torch::DeviceKind> = None;
    for &v in inputs {
        let t = it.tensor_data(v).expect("checked by the caller");
        shape = match broadcast(&shape, &t.shape) {
            Ok(s) => s,
            Err(e) => return it.error(format!("RuntimeError: {e}")),
        };
        dtype = Some(dtype.map_or(t.dtype, |d| Dtype::promote(d, t.dtype)));
        match device {
            Some(d) if d != t.device && !t.shape.is_empty() => {
                return it.error(format!(
                    "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                    d.name(),
                    t.device.name()
                ));
            }
            Some(_) => {}
            None => device = Some(t.device),
        }
    }
    let dtype = match dtype {
        Some(d) if !d.is_floating() => Dtype::Float32,
        Some(d) => d,
        None => Dtype::Float32,
    };
    let device = device.expect("at least one tensor");
    let out = op_output(it, shape, dtype, device, inputs)?;
    autograd::record_op(it, out, op, inputs);
    Ok(out)
}

/// `torch.outer(a, b)`: `a.reshape(n, 1) * b` (`LinearAlgebra.cpp`), both 1-D.
fn outer(it: &mut Interpreter<'_>, a: Value, b: Value) -> R<Value> {
    let (ta, tb) = (
        it.tensor_data(a).expect("a tensor"),
        it.tensor_data(b).expect("a tensor"),
    );
    if ta.shape.len() != 1 || tb.shape.len() != 1 {
        return it.error(format!(
            "RuntimeError: outer: Expected 1-D argument self, but got {}-D",
            if ta.shape.len() != 1 {
                ta.shape.len()
            } else {
                tb.shape.len()
            }
        ));
    }
    let Value::Obj(aid) = a else {
        unreachable!("a tensor is an object")
    };
    let column = super::natives::view(it, aid, vec![ta.shape[0], 1])?;
    let r = super::natives::tensor_binary(it, ruff_python_ast::Operator::Mult, column, b, false);
    it.heap.decref(column);
    r
}

/// `torch.repeat_interleave(x, repeats, dim=None)`, as `Repeat.cpp` runs it (module docs).
fn repeat_interleave(
    it: &mut Interpreter<'_>,
    x: Value,
    repeats: Value,
    dim: Option<Value>,
    output_size: Option<i64>,
) -> R<Value> {
    let t = it.tensor_data(x).expect("checked by the caller");
    // Without `dim` the input is flattened first (a view when contiguous).
    let (input, d) = match dim {
        None | Some(Value::None) => {
            let Value::Obj(id) = x else {
                unreachable!("a tensor is an object")
            };
            let numel: i64 = t.shape.iter().product();
            (super::natives::view(it, id, vec![numel])?, 0)
        }
        Some(Value::Int(d)) => {
            let d = norm_dim(it, d, t.shape.len())?;
            it.heap.incref(x);
            (x, d)
        }
        Some(v) => {
            return it.error(format!(
                "TypeError: repeat_interleave(): argument 'dim' must be int, not {}",
                it.type_name_of(v)
            ));
        }
    };
    let r = repeat_interleave_along(it, input, repeats, d, output_size);
    it.heap.decref(input);
    r
}

fn repeat_interleave_along(
    it: &mut Interpreter<'_>,
    input: Value,
    repeats: Value,
    d: usize,
    output_size: Option<i64>,
) -> R<Value> {
    let t = it.tensor_data(input).expect("a tensor");
    let n = t.shape.get(d).copied().unwrap_or(1);
    // The repeats as a tensor: an int becomes `at::empty(1, kLong).fill_(r)` on the device.
    // `expanded`: a single repeat count expanded to `n` (stride 0), which `contiguous()`
    // copies when `n > 1`; a length-`n` tensor is contiguous already.
    let (per_element, owned, expanded, device) = match repeats {
        Value::Int(r) if r < 0 => return it.error("RuntimeError: repeats can not be negative"),
        Value::Int(r) => {
            let one =
                it.new_tensor_as(vec![1], Dtype::Int64, t.device, None, Category::Temporary)?;
            (Some(r), Some(one), true, t.device)
        }
        v => match it.tensor_data(v) {
            Some(r) if !matches!(r.dtype, Dtype::Int64 | Dtype::Int32) => {
                return it.error("RuntimeError: repeats has to be Long or Int tensor");
            }
            Some(r) if r.shape.len() > 1 => {
                return it.error("RuntimeError: repeats must be 0-dim or 1-dim tensor");
            }
            Some(r) if r.shape.iter().product::<i64>() != 1 && r.shape[0] != n => {
                return it.error(format!(
                    "RuntimeError: repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({d}) = {n}",
                    r.shape[0]
                ));
            }
            Some(r) => (None, None, r.shape.iter().product::<i64>() == 1, r.device),
            None => {
                return it.error(format!(
                    "TypeError: repeat_interleave(): argument 'repeats' must be int or Tensor, not {}",
                    it.type_name_of(v)
                ));
            }
        },
    };
    let total = match (per_element, output_size) {
        (_, Some(total)) => total,
        (Some(r), None) => n * r,
        (None, None) => {
            if let Some(o) = owned {
                it.heap.decref(o);
            }
            return it.unsupported(
                "repeat_interleave with a tensor of repeats and no output_size= (the total is the repeats' sum, a value the model does not hold)",
            );
        }
    };
    let made = repeats_index(it, n, total, expanded, device);
    let index = match made {
        Ok(i) => i,
        Err(e) => {
            if let Some(o) = owned {
                it.heap.decref(o);
            }
            return Err(e);
        }
    };
    let mut shape = t.shape.clone();
    if let Some(s) = shape.get_mut(d) {
        *s = total;
    }
    let out = op_output(it, shape, t.dtype, t.device, &[input]);
    if let Ok(out) = out {
        autograd::record_op(it, out, "index_select", &[input, index]);
    }
    it.heap.decref(index);
    if let Some(o) = owned {
        it.heap.decref(o);
    }
    out
}

/// `repeat_interleave_common` (`Repeat.h`): `repeats.contiguous()` (a copy of expanded
/// repeats), their `cumsum(0)`, then the int64 index of `total` elements; the first two are
/// freed when it returns the index.
fn repeats_index(
    it: &mut Interpreter<'_>,
    n: i64,
    total: i64,
    expanded: bool,
    device: crate::torch::DeviceKind,
) -> R<Value> {
    let contiguous = if expanded && n > 1 {
        Some(it.new_tensor_as(vec![n], Dtype::Int64, device, None, Category::Temporary)?)
    } else {
        None
    };
    let index = match it.new_tensor_as(vec![n], Dtype::Int64, device, None, Category::Temporary) {
        Ok(cumsum) => {
            let index =
                it.new_tensor_as(vec![total], Dtype::Int64, device, None, Category::Temporary);
            it.heap.decref(cumsum);
            index
        }
        Err(e) => Err(e),
    };
    if let Some(c) = contiguous {
        it.heap.decref(c);
    }
    index
}
