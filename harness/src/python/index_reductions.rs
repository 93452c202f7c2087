//! Reductions that answer with positions or flags rather than differentiable values:
//! `argmax`/`argmin` (with or without `dim`), `max`/`min` along a dimension, and the
//! elementwise tests `isnan`/`isinf`/`isfinite`.
//!
//! | call                                   | result (PyTorch)                                   | node, saves |
//! |----------------------------------------|----------------------------------------------------|-------------|
//! | `argmax`/`argmin(dim=None)`            | one int64 element (0-dim)                          | none: an index has no gradient |
//! | `argmax`/`argmin(dim, keepdim)`        | int64, the input's shape without (or with 1 at) `dim` | none |
//! | `max`/`min(dim, keepdim)`              | `(values, indices)`: the input's dtype and int64, both of the reduced shape | `MaxBackward0`/`MinBackward0`: `indices` (and the input's sizes, metadata) |
//! | `isnan`/`isinf`/`isfinite`             | bool of the input's shape                          | none |
//!
//! `max`/`min(dim)` return a plain tuple: PyTorch's `torch.return_types.max` is a tuple
//! subclass whose `.values`/`.indices` fields the model does not have (unpack it instead).

use super::autograd::{self, Save};
use super::interp::{Interpreter, R};
use super::natives::{Args, Native, int_arg, new_tuple, norm_dim};
use crate::heap::{ObjId, Value};
use crate::torch::{Category, Dtype};

/// Tensor methods of this file.
pub(super) fn is_method(method: &str) -> bool {
    matches!(
        method,
        "argmax" | "argmin" | "max" | "min" | "isnan" | "isinf" | "isfinite"
    )
}

/// `t.argmax(...)` and the other methods of this file.
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let dim = a.kw(it, "dim").or(a.pos.first().copied());
    let keepdim = a.kw(it, "keepdim").or(a.pos.get(1).copied());
    run(it, id, method, dim, keepdim)
}

/// `torch.argmax(input, dim, keepdim)` and the other functions of this file.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let name = match n {
        Native::ArgmaxFn => "argmax",
        Native::ArgminFn => "argmin",
        Native::IsnanFn => "isnan",
        Native::IsinfFn => "isinf",
        _ => "isfinite",
    };
    let input = a.kw(it, "input").or(a.pos.first().copied());
    let Some(Value::Obj(id)) = input.filter(|&v| it.is_tensor(v)) else {
        return it.error(format!(
            "TypeError: {name}(): argument 'input' must be Tensor"
        ));
    };
    let dim = a.kw(it, "dim").or(a.pos.get(1).copied());
    let keepdim = a.kw(it, "keepdim").or(a.pos.get(2).copied());
    run(it, id, name, dim, keepdim)
}

fn run(
    it: &mut Interpreter<'_>,
    id: ObjId,
    op: &str,
    dim: Option<Value>,
    keepdim: Option<Value>,
) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor receiver")
    };
    let (shape, dtype, device) = (t.shape.clone(), t.dtype, t.device);
    if matches!(op, "isnan" | "isinf" | "isfinite") {
        return it.new_tensor_as(shape, Dtype::Bool, device, None, Category::Temporary);
    }
    let keepdim = match keepdim {
        Some(v) => it.truth(v)?,
        None => false,
    };
    let reduced = match dim {
        None | Some(Value::None) => None,
        Some(d) => {
            let d = norm_dim(it, int_arg(it, d, "dim")?, shape.len())?;
            let mut s = shape.clone();
            if d < s.len() {
                if keepdim {
                    s[d] = 1;
                } else {
                    s.remove(d);
                }
            }
            Some(s)
        }
    };
    match (op, reduced) {
        ("argmax" | "argmin", reduced) => {
            // No dimension: the index into the flattened input, a 0-dim tensor (or all ones
            // under `keepdim`).
            let out_shape = reduced.unwrap_or_else(|| {
                if keepdim {
                    vec![1; shape.len()]
                } else {
                    vec![]
                }
            });
            it.new_tensor_as(out_shape, Dtype::Int64, device, None, Category::Temporary)
        }
        (_, Some(out_shape)) => {
            let recorded = it.grad_enabled && autograd::requires_grad(it, Value::Obj(id));
            let category = if recorded {
                Category::Activation
            } else {
                Category::Temporary
            };
            let values = it.new_tensor_as(out_shape.clone(), dtype, device, None, category)?;
            let indices = it.new_tensor_as(out_shape, Dtype::Int64, device, None, category)?;
            if recorded && let (Value::Obj(v), Value::Obj(i)) = (values, indices) {
                let name = if op == "max" {
                    "MaxBackward0"
                } else {
                    "MinBackward0"
                };
                // The node keeps `indices` (to scatter the gradient back), not the values.
                let node = autograd::build_node(
                    it,
                    name,
                    crate::torch::GradFlow::Compute,
                    &[Value::Obj(id)],
                    &[Save::Output],
                    Some(i),
                );
                autograd::set_history(it, v, node);
            }
            Ok(new_tuple(it, vec![values, indices]))
        }
        // `t.max()` with no dimension: the whole-tensor reduction, a 0-dim tensor.
        (_, None) => {
            let recorded = it.grad_enabled && autograd::requires_grad(it, Value::Obj(id));
            let category = if recorded {
                Category::Activation
            } else {
                Category::Temporary
            };
            let out = it.new_tensor_as(vec![], dtype, device, None, category)?;
            let name = if op == "max" {
                "MaxBackward1"
            } else {
                "MinBackward1"
            };
            // `max()`/`min()` save the input and the result (to find the ties).
            autograd::record(
                it,
                out,
                name,
                crate::torch::GradFlow::Compute,
                &[Value::Obj(id)],
                &[Save::Input(0), Save::Output],
            );
            Ok(out)
        }
    }
}
