//! `torch.logsumexp` / `Tensor.logsumexp` and `torch.where` / `Tensor.where`.
//!
//! | call                            | what runs (PyTorch)                                   | node, saves |
//! |---------------------------------|-------------------------------------------------------|-------------|
//! | `torch.logsumexp(x, dim, keepdim=False)` | `logsumexp` (`ReduceOps.cpp`): `maxes = amax(x, dim, keepdim=True)`, infinite maxes zeroed (an `abs` and a bool `==` of the reduced shape), `sum(exp(x - maxes))` into the result (a temporary of the input's size), then `log_` and `add_` in place | `LogsumexpBackward0`: `self` and the result |
//! | `torch.where(cond, x, y)`       | `where.self` (a number operand is a wrapped 0-dim CPU scalar): one result of the three shapes broadcast, in the operands' promoted dtype | `WhereBackward0`: the condition |
//! | `torch.where(cond)`             | `nonzero(cond).unbind(1)`: one int64 `[n, cond.dim()]` tensor and a tuple of its column views | none |
//!
//! Values are not modelled: `nonzero` counts every element as true (the upper bound of its
//! result), as a mask index does.

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::natives::{self, Args, Native, op_output};
use crate::heap::{ObjId, Value};
use crate::torch::{Dtype, TensorData, broadcast};

/// The `torch.*` entry points of this file.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    match n {
        Native::LogsumexpFn => {
            let x = arg(it, 0, "input").unwrap_or(Value::None);
            logsumexp(it, x, arg(it, 1, "dim"), arg(it, 2, "keepdim"))
        }
        Native::WhereFn => {
            let cond = arg(it, 0, "condition").unwrap_or(Value::None);
            match (arg(it, 1, "input"), arg(it, 2, "other")) {
                (None, None) => nonzero_columns(it, cond),
                (Some(x), Some(y)) => where_select(it, cond, x, y),
                _ => {
                    it.error("TypeError: where() expects (condition) or (condition, input, other)")
                }
            }
        }
        _ => it.error("TypeError: unknown function"),
    }
}

/// `Tensor.logsumexp(dim, keepdim=False)`.
pub(super) fn logsumexp_method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    logsumexp(it, Value::Obj(id), arg(it, 0, "dim"), arg(it, 1, "keepdim"))
}

/// `Tensor.where(condition, other)`: `torch.where(condition, self, other)`.
pub(super) fn where_method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    let (Some(cond), Some(other)) = (arg(it, 0, "condition"), arg(it, 1, "other")) else {
        return it.error("TypeError: where() missing required arguments: 'condition' and 'other'");
    };
    where_select(it, cond, Value::Obj(id), other)
}

fn logsumexp(
    it: &mut Interpreter<'_>,
    x: Value,
    dim: Option<Value>,
    keepdim: Option<Value>,
) -> R<Value> {
    let Some(dim) = dim else {
        return it.error("TypeError: logsumexp() missing 1 required positional argument: 'dim'");
    };
    if it.tensor_data(x).is_none() {
        return it.error(format!(
            "TypeError: logsumexp(): argument 'input' must be Tensor, not {}",
            it.type_name_of(x)
        ));
    }
    let keepdim = match keepdim {
        Some(v) => it.truth(v)?,
        None => false,
    };
    let cast = it.autocast_inputs(&[x], CastPolicy::Float32)?;
    let r = logsumexp_as_given(it, cast[0], dim, keepdim);
    it.heap.decref_all(cast);
    r
}

fn logsumexp_as_given(it: &mut Interpreter<'_>, x: Value, dim: Value, keepdim: bool) -> R<Value> {
    let t = it.tensor_data(x).expect("checked by the caller");
    let reduced = reduced_dims(it, dim, t.shape.len())?;
    let kept: Vec<i64> = shape_after(&t.shape, &reduced, true);
    let out_shape: Vec<i64> = shape_after(&t.shape, &reduced, keepdim);
    // Integer inputs are computed in the default float type.
    let dtype = if t.dtype.is_floating() {
        t.dtype
    } else {
        Dtype::Float32
    };
    // `maxes = at::amax(self, dims, true)`, then `masked_fill_(maxes.abs() == INFINITY, 0)`.
    let maxes = it.new_tensor(kept.clone(), t.dtype, t.device, None)?;
    let abs = it.new_tensor(kept.clone(), t.dtype, t.device, None)?;
    let infinite = it.new_tensor(kept, Dtype::Bool, t.device, None)?;
    it.heap.decref(abs);
    it.heap.decref(infinite);
    // `at::sum_out(result, at::exp(self - maxes), dims, keepdim)`: the difference is a
    // temporary of the input's size, exponentiated in place.
    let diff = it.new_tensor(t.shape.clone(), dtype, t.device, None);
    let diff = match diff {
        Ok(d) => d,
        Err(e) => {
            it.heap.decref(maxes);
            return Err(e);
        }
    };
    let out = op_output(it, out_shape, dtype, t.device, &[x]);
    it.heap.decref(diff);
    it.heap.decref(maxes);
    let out = out?;
    autograd::record_op(it, out, "logsumexp", &[x]);
    Ok(out)
}

/// The reduced dimensions of `dim` (an int or a sequence of ints).
fn reduced_dims(it: &Interpreter<'_>, dim: Value, ndim: usize) -> R<Vec<usize>> {
    let items = match dim {
        Value::Int(_) => vec![dim],
        other => natives::sequence_items(it, other)?,
    };
    let n = ndim.max(1) as i64;
    let mut out = Vec::with_capacity(items.len());
    for v in items {
        let Value::Int(d) = v else {
            return it.error("TypeError: logsumexp(): argument 'dim' must be tuple of ints");
        };
        let i = if d < 0 { d + n } else { d };
        if i < 0 || i >= n {
            return it.error(format!(
                "IndexError: Dimension out of range (expected to be in range of [{}, {}], but got {d})",
                -n,
                n - 1
            ));
        }
        out.push(i as usize);
    }
    Ok(out)
}

/// The shape of a reduction over the `reduced` dimensions (kept as 1 with `keepdim`).
pub(super) fn shape_after(shape: &[i64], reduced: &[usize], keepdim: bool) -> Vec<i64> {
    shape
        .iter()
        .enumerate()
        .filter_map(|(i, &s)| match (reduced.contains(&i), keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `torch.where(condition, input, other)`; either operand may be a number.
fn where_select(it: &mut Interpreter<'_>, cond: Value, x: Value, y: Value) -> R<Value> {
    let Some(c) = it.tensor_data(cond) else {
        return it.error(format!(
            "TypeError: where(): argument 'condition' must be Tensor, not {}",
            it.type_name_of(cond)
        ));
    };
    if c.dtype != Dtype::Bool {
        return it.error(format!(
            "RuntimeError: where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            super::comparisons::aten_name(c.dtype)
        ));
    }
    let operand = |it: &Interpreter<'_>, v: Value| -> R<Option<TensorData>> {
        match it.tensor_data(v) {
            Some(t) => Ok(Some(t)),
            None if natives::float_of(v).is_some() => Ok(None),
            None => it.error(format!(
                "TypeError: where(): argument 'input' must be Tensor, not {}",
                it.type_name_of(v)
            )),
        }
    };
    let (tx, ty) = (operand(it, x)?, operand(it, y)?);
    let mut shape = c.shape.clone();
    for t in [&tx, &ty].into_iter().flatten() {
        shape = match broadcast(&shape, &t.shape) {
            Ok(s) => s,
            Err(message) => return it.error(format!("RuntimeError: {message}")),
        };
    }
    // A number takes the tensor operand's dtype (a wrapped scalar does not promote within
    // its category); two numbers give the default float type.
    let dtype = match (&tx, &ty) {
        (Some(a), Some(b)) => Dtype::promote(a.dtype, b.dtype),
        (Some(t), None) | (None, Some(t)) => t.dtype,
        (None, None) => Dtype::Float32,
    };
    let device = tx.as_ref().or(ty.as_ref()).map_or(c.device, |t| t.device);
    let operands: Vec<Value> = [x, y].into_iter().filter(|&v| it.is_tensor(v)).collect();
    let out = op_output(it, shape, dtype, device, &operands)?;
    // The node's inputs are (condition, self, other); a number operand has no edge.
    let inputs: Vec<Value> = [cond, x, y]
        .into_iter()
        .filter(|&v| it.is_tensor(v))
        .collect();
    autograd::record_op(it, out, "where", &inputs);
    Ok(out)
}

/// `torch.where(condition)`: `nonzero(condition).unbind(1)`, a tuple of int64 column views
/// of one `[n, dim]` tensor (every element counted as true).
fn nonzero_columns(it: &mut Interpreter<'_>, cond: Value) -> R<Value> {
    let Some(c) = it.tensor_data(cond) else {
        return it.error(format!(
            "TypeError: where(): argument 'condition' must be Tensor, not {}",
            it.type_name_of(cond)
        ));
    };
    let ndim = c.shape.len().max(1) as i64;
    let n: i64 = c.shape.iter().product();
    let all = it.new_tensor(vec![n, ndim], Dtype::Int64, c.device, None)?;
    let Value::Obj(all_id) = all else {
        return it.error("internal: nonzero made no tensor");
    };
    let mut columns = Vec::with_capacity(ndim as usize);
    for k in 0..ndim {
        match natives::tensor_column(it, all_id, k) {
            Ok(v) => columns.push(v),
            Err(e) => {
                it.heap.decref_all(columns);
                it.heap.decref(all);
                return Err(e);
            }
        }
    }
    it.heap.decref(all);
    Ok(natives::new_tuple(it, columns))
}
