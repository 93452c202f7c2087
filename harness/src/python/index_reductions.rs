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
//! | `max`/`min(other)`, `maximum`/`minimum` | elementwise, the broadcast shape and promoted dtype | `MaximumBackward0`/`MinimumBackward0` (`max.other` is ATen's alias of `maximum`): `self`, `other` |
//! | `sort(dim, descending)`                | `(values, indices)` of the input's shape           | `SortBackward0` (`SortBackward1` for `sort.stable`, i.e. with `stable=`): `indices` |
//! | `topk(k, dim, largest, sorted)`        | `(values, indices)` with `k` at `dim`              | `TopkBackward0`: `indices` |
//!
//! The pairs are PyTorch's `torch.return_types.*` named tuples (`return_types.rs`), with
//! `.values`/`.indices`. Reducing an empty dimension is PyTorch's `IndexError`
//! (`zero_numel_check_dims`); `max()` of an empty tensor its `RuntimeError`.

use super::autograd::{self, Save};
use super::interp::{Interpreter, R};
use super::natives::{Args, Native, int_arg, norm_dim};
use super::return_types;
use crate::heap::{ObjId, Value};
use crate::torch::{Category, Dtype};

/// Tensor methods of this file.
pub(super) fn is_method(method: &str) -> bool {
    matches!(
        method,
        "argmax"
            | "argmin"
            | "max"
            | "min"
            | "isnan"
            | "isinf"
            | "isfinite"
            | "maximum"
            | "minimum"
            | "sort"
            | "topk"
    )
}

/// `t.argmax(...)` and the other methods of this file.
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let at = |i: usize| a.pos.get(i).copied();
    match method {
        "sort" => {
            return sort(
                it,
                id,
                a.kw(it, "dim").or(at(0)),
                a.kw(it, "descending").or(at(1)),
                a.kw(it, "stable"),
            );
        }
        "topk" => {
            let k = a.kw(it, "k").or(at(0));
            return topk(it, id, k, a.kw(it, "dim").or(at(1)));
        }
        "maximum" | "minimum" => {
            let other = a.kw(it, "other").or(at(0));
            return elementwise(it, Value::Obj(id), other, method);
        }
        "max" | "min" => {
            let other = a.kw(it, "other").or(at(0).filter(|&v| it.is_tensor(v)));
            if other.is_some() {
                return elementwise(it, Value::Obj(id), other, method);
            }
        }
        _ => {}
    }
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
        Native::MaxFn => "max",
        Native::MinFn => "min",
        Native::MaximumFn => "maximum",
        Native::MinimumFn => "minimum",
        Native::SortFn => "sort",
        Native::TopkFn => "topk",
        _ => "isfinite",
    };
    let input = a.kw(it, "input").or(a.pos.first().copied());
    let Some(Value::Obj(id)) = input.filter(|&v| it.is_tensor(v)) else {
        return it.error(format!(
            "TypeError: {name}(): argument 'input' must be Tensor"
        ));
    };
    if matches!(
        name,
        "max" | "min" | "maximum" | "minimum" | "sort" | "topk"
    ) {
        // The method's arguments are the function's after `input`.
        let rest = Args {
            pos: a.pos.iter().skip(1).copied().collect(),
            kw: a
                .kw
                .iter()
                .filter(|(k, _)| it.names.name(*k) != "input")
                .copied()
                .collect(),
        };
        return method(it, id, name, &rest);
    }
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
            if matches!(op, "max" | "min") && shape.get(d) == Some(&0) {
                return it.error(format!(
                    "IndexError: {op}(): Expected reduction dim {d} to have non-zero size."
                ));
            }
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
                    super::autograd::row("max_dim").node
                } else {
                    super::autograd::row("min_dim").node
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
            let ty = if op == "max" {
                &return_types::MAX
            } else {
                &return_types::MIN
            };
            Ok(return_types::new(it, ty, vec![values, indices]))
        }
        // `t.max()` with no dimension: the whole-tensor reduction, a 0-dim tensor.
        (_, None) => {
            if shape.contains(&0) {
                return it.error(format!(
                    "RuntimeError: {op}(): Expected reduction dim to be specified for input.numel() == 0. \
                     Specify the reduction dim with the 'dim' argument."
                ));
            }
            let recorded = it.grad_enabled && autograd::requires_grad(it, Value::Obj(id));
            let category = if recorded {
                Category::Activation
            } else {
                Category::Temporary
            };
            let out = it.new_tensor_as(vec![], dtype, device, None, category)?;
            let name = if op == "max" {
                super::autograd::row("max").node
            } else {
                super::autograd::row("min").node
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

/// Values and int64 indices of `shape`, the values recorded with a node `name` that saves
/// the indices (`value_selecting_reduction_backward` reads them and the input's sizes), in
/// a `torch.return_types` named tuple of type `ty`.
fn values_and_indices(
    it: &mut Interpreter<'_>,
    id: ObjId,
    shape: Vec<i64>,
    name: &'static str,
    ty: &'static crate::heap::StructSeqType,
) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor receiver")
    };
    let (dtype, device) = (t.dtype, t.device);
    let recorded = it.grad_enabled && autograd::requires_grad(it, Value::Obj(id));
    let category = if recorded {
        Category::Activation
    } else {
        Category::Temporary
    };
    let values = it.new_tensor_as(shape.clone(), dtype, device, None, category)?;
    let indices = it.new_tensor_as(shape, Dtype::Int64, device, None, category)?;
    if recorded && let (Value::Obj(v), Value::Obj(i)) = (values, indices) {
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
    Ok(return_types::new(it, ty, vec![values, indices]))
}

/// `sort(dim=-1, descending=False)`; `stable=` selects ATen's `sort.stable` overload, whose
/// node is `SortBackward1`.
fn sort(
    it: &mut Interpreter<'_>,
    id: ObjId,
    dim: Option<Value>,
    descending: Option<Value>,
    stable: Option<Value>,
) -> R<Value> {
    let shape = it
        .tensor_data(Value::Obj(id))
        .map(|t| t.shape)
        .unwrap_or_default();
    let d = match dim {
        None | Some(Value::None) => -1,
        Some(d) => int_arg(it, d, "dim")?,
    };
    norm_dim(it, d, shape.len())?;
    if let Some(v) = descending {
        it.truth(v)?;
    }
    let name = if stable.is_some() {
        super::autograd::row("sort_stable").node
    } else {
        super::autograd::row("sort").node
    };
    values_and_indices(it, id, shape, name, &return_types::SORT)
}

/// `topk(k, dim=-1, largest=True, sorted=True)`: `k` values and their indices along `dim`.
fn topk(it: &mut Interpreter<'_>, id: ObjId, k: Option<Value>, dim: Option<Value>) -> R<Value> {
    let shape = it
        .tensor_data(Value::Obj(id))
        .map(|t| t.shape)
        .unwrap_or_default();
    let Some(k) = k else {
        return it.error("TypeError: topk() missing required argument 'k' (pos 1)");
    };
    let k = int_arg(it, k, "k")?;
    let d = match dim {
        None | Some(Value::None) => -1,
        Some(d) => int_arg(it, d, "dim")?,
    };
    let d = norm_dim(it, d, shape.len())?;
    // ATen's meta check: a 0-dim tensor has one element to pick.
    let size = shape.get(d).copied().unwrap_or(1);
    if k < 0 || k > size {
        return it.error("RuntimeError: selected index k out of range");
    }
    let mut out = shape;
    if let Some(s) = out.get_mut(d) {
        *s = k;
    }
    values_and_indices(
        it,
        id,
        out,
        super::autograd::row("topk").node,
        &return_types::TOPK,
    )
}

/// `torch.maximum(a, b)` / `torch.max(a, b)` (ATen's `max.other` calls `maximum`) and the
/// `min` pair: elementwise over the broadcast shape; the node saves both operands.
fn elementwise(it: &mut Interpreter<'_>, a: Value, b: Option<Value>, op: &str) -> R<Value> {
    let name = if matches!(op, "max" | "maximum") {
        "maximum"
    } else {
        "minimum"
    };
    let Some(b) = b.filter(|&v| it.is_tensor(v)) else {
        return it.error(format!(
            "TypeError: {name}(): argument 'other' must be Tensor, not {}",
            b.map_or("NoneType".to_string(), |v| it.type_name_of(v).to_string())
        ));
    };
    let (Some(ta), Some(tb)) = (it.tensor_data(a), it.tensor_data(b)) else {
        unreachable!("two tensors")
    };
    let shape = match crate::torch::broadcast(&ta.shape, &tb.shape) {
        Ok(s) => s,
        Err(e) => return it.error(format!("RuntimeError: {e}")),
    };
    if ta.device != tb.device && !ta.shape.is_empty() && !tb.shape.is_empty() {
        return it.error(format!(
            "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
            ta.device.name(),
            tb.device.name()
        ));
    }
    let device = if ta.shape.is_empty() {
        tb.device
    } else {
        ta.device
    };
    let recorded =
        it.grad_enabled && (autograd::requires_grad(it, a) || autograd::requires_grad(it, b));
    let category = if recorded {
        Category::Activation
    } else {
        Category::Temporary
    };
    let dtype = Dtype::promote(ta.dtype, tb.dtype);
    let out = it.new_tensor_as(shape, dtype, device, None, category)?;
    let node = if name == "maximum" {
        super::autograd::row("maximum").node
    } else {
        super::autograd::row("minimum").node
    };
    autograd::record(
        it,
        out,
        node,
        crate::torch::GradFlow::Compute,
        &[a, b],
        &[Save::Input(0), Save::Input(1)],
    );
    Ok(out)
}
