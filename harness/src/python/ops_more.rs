//! More `torch` functions that leak reports use: `F.kl_div` (see `kl_div.rs`),
//! `F.softplus`, `torch.norm` / `Tensor.norm` / `torch.linalg.vector_norm`, and
//! `torch.addcmul` / `Tensor.addcmul(_)`, `torch.addcdiv` / `Tensor.addcdiv(_)`, and
//! `torch.remainder` / `torch.floor_divide` (the `%` and `//` operators).
//!
//! | function                       | what runs (PyTorch)                                   | node, saves |
//! |--------------------------------|-------------------------------------------------------|-------------|
//! | `F.softplus`                   | `softplus` (autocast's float32 list)                  | `SoftplusBackward0`: `self` |
//! | `torch.norm`, `Tensor.norm`    | `torch/functional.py`'s `norm` calls `linalg.vector_norm` for `p='fro'` and numeric `p` | `LinalgVectorNormBackward0`: `self` and the result |
//! | `torch.linalg.vector_norm`     | `linalg_vector_norm` (autocast's `fp32_set_opt_dtype`) | as above |
//! | `torch.addcmul`                | `addcmul` (autocast's promote list)                   | `AddcmulBackward0`: `tensor2` if `tensor1` requires grad, `tensor1` if `tensor2` does |
//!
//! | `torch.addcdiv`                | `addcdiv` (autocast's promote list); integer `tensor1` and `tensor2` are PyTorch's error | `AddcdivBackward0`: `tensor1` if `tensor2` requires grad, `tensor2` if either does |
//! | `a % b` (tensors), `torch.remainder` | `remainder.Tensor`                              | `RemainderBackward1`: `self` and `other` if `other` requires grad |
//! | `t % 2`                        | `remainder.Scalar` (`remainder` takes no number as a tensor) | `RemainderBackward0`: nothing |
//! | `a // b`, `torch.floor_divide` | `floor_divide` (a number is wrapped into a tensor)    | `NotImplemented`: no formula in `derivatives.yaml`; backward through it raises |
//!
//! The deprecated positional order `addcmul(input, value, tensor1, tensor2)` (and the same
//! for `addcdiv` and the methods' `(value, tensor1, tensor2)`) still runs in PyTorch with a
//! deprecation warning; the model runs it and records the warning. `value` only scales.
//!
//! `p='nuc'` (a matrix norm) is not modelled.

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::natives::{Args, Native, op_output, sequence_items, tensor_unary};
use crate::heap::{ObjId, Value};
use crate::torch::{Dtype, broadcast};
use ruff_python_ast::Operator;

/// `torch.*`/`F.*` entry points of this file.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    match n {
        Native::FKlDiv => {
            let (x, y) = (
                arg(it, 0, "input").unwrap_or(Value::None),
                arg(it, 1, "target").unwrap_or(Value::None),
            );
            if a.kw(it, "size_average").is_some() || a.kw(it, "reduce").is_some() {
                return it
                    .unsupported("the deprecated size_average=/reduce= arguments; use reduction=");
            }
            let reduction = it.kl_reduction_of(a.kw(it, "reduction").unwrap_or(Value::None))?;
            let log_target = match a.kw(it, "log_target") {
                Some(v) => it.truth(v)?,
                None => false,
            };
            it.kl_div(x, y, reduction, log_target)
        }
        Native::FSoftplus => match arg(it, 0, "input") {
            Some(Value::Obj(id)) if it.is_tensor(Value::Obj(id)) => {
                tensor_unary(it, id, "softplus")
            }
            other => it.error(format!(
                "TypeError: softplus(): argument 'input' must be Tensor, not {}",
                it.type_name_of(other.unwrap_or(Value::None))
            )),
        },
        Native::NormFn => {
            let x = arg(it, 0, "input").unwrap_or(Value::None);
            let p = arg(it, 1, "p");
            norm_of(
                it,
                x,
                p,
                arg(it, 2, "dim"),
                arg(it, 3, "keepdim"),
                a.kw(it, "dtype"),
            )
        }
        Native::FGroupNorm => {
            let x = arg(it, 0, "input").unwrap_or(Value::None);
            let Some(Value::Int(groups)) = arg(it, 1, "num_groups") else {
                return it.error("TypeError: group_norm(): argument 'num_groups' must be int");
            };
            let weight = arg(it, 2, "weight").unwrap_or(Value::None);
            let bias = arg(it, 3, "bias").unwrap_or(Value::None);
            it.group_norm(x, groups, weight, bias)
        }
        Native::LinalgVectorNorm => {
            let x = arg(it, 0, "x").or(a.kw(it, "input")).unwrap_or(Value::None);
            vector_norm(
                it,
                x,
                arg(it, 2, "dim"),
                arg(it, 3, "keepdim"),
                a.kw(it, "dtype"),
            )
        }
        Native::RemainderFn | Native::FloorDivideFn => {
            let op = if n == Native::RemainderFn {
                Operator::Mod
            } else {
                Operator::FloorDiv
            };
            let (x, y) = (arg(it, 0, "input"), arg(it, 1, "other"));
            let (Some(x), Some(y)) = (x, y) else {
                return it.error(format!(
                    "TypeError: {}() missing required arguments 'input', 'other'",
                    if op == Operator::Mod {
                        "remainder"
                    } else {
                        "floor_divide"
                    }
                ));
            };
            if !it.is_tensor(x) && !it.is_tensor(y) {
                return it.error("TypeError: expected a tensor operand");
            }
            super::natives::tensor_binary(it, op, x, y, false)
        }
        _ => {
            let op = if n == Native::AddcdivFn {
                "addcdiv"
            } else {
                "addcmul"
            };
            let (input, rest) = match a.pos.split_first() {
                Some((&input, rest)) => (input, rest),
                None => (a.kw(it, "input").unwrap_or(Value::None), &[][..]),
            };
            let [t1, t2] = factors(it, op, rest, a, "input, ")?;
            pointwise(it, op, [input, t1, t2])
        }
    }
}

/// `tensor1` and `tensor2` of `addcmul`/`addcdiv` after `self`: `(tensor1, tensor2)` or
/// the deprecated `(value, tensor1, tensor2)`, which PyTorch still accepts with a warning.
fn factors(
    it: &mut Interpreter<'_>,
    op: &str,
    pos: &[Value],
    a: &Args,
    input: &str,
) -> R<[Value; 2]> {
    match pos {
        [value, t1, t2] if super::natives::float_of(*value).is_some() => {
            it.recorder.approximation(format!(
                "PyTorch warns: UserWarning: This overload of {op} is deprecated:\n\t{op}({input}Number value, Tensor tensor1, Tensor tensor2)\nConsider using one of the following signatures instead:\n\t{op}({input}Tensor tensor1, Tensor tensor2, *, Number value)"
            ));
            Ok([*t1, *t2])
        }
        [t1, t2] => Ok([*t1, *t2]),
        [t1] => match a.kw(it, "tensor2") {
            Some(t2) => Ok([*t1, t2]),
            None => it.error(format!(
                "TypeError: {op}() missing required argument 'tensor2'"
            )),
        },
        [] => match (a.kw(it, "tensor1"), a.kw(it, "tensor2")) {
            (Some(t1), Some(t2)) => Ok([t1, t2]),
            _ => it.error(format!(
                "TypeError: {op}() missing required arguments 'tensor1', 'tensor2'"
            )),
        },
        _ => it.error(format!(
            "TypeError: {op}() received an invalid combination of arguments"
        )),
    }
}

/// `Tensor.remainder(other)`, `Tensor.floor_divide(other)`, `Tensor.addcdiv(tensor1,
/// tensor2, *, value=1)`.
pub(super) fn binary_method(
    it: &mut Interpreter<'_>,
    id: ObjId,
    method: &str,
    a: &Args,
) -> R<Value> {
    if method == "addcdiv" {
        let [t1, t2] = factors(it, method, &a.pos, a, "")?;
        return pointwise(it, "addcdiv", [Value::Obj(id), t1, t2]);
    }
    let Some(other) = a.kw(it, "other").or(a.pos.first().copied()) else {
        return it.error(format!(
            "TypeError: {method}() missing required argument 'other'"
        ));
    };
    let op = if method == "remainder" {
        Operator::Mod
    } else {
        Operator::FloorDiv
    };
    super::natives::tensor_binary(it, op, Value::Obj(id), other, false)
}

/// `Tensor.norm(p='fro', dim=None, keepdim=False, dtype=None)`: `torch.norm(self, ...)`.
pub(super) fn norm_method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(a.pos.get(i).copied());
    norm_of(
        it,
        Value::Obj(id),
        arg(it, 0, "p"),
        arg(it, 1, "dim"),
        arg(it, 2, "keepdim"),
        a.kw(it, "dtype"),
    )
}

/// `Tensor.addcmul(tensor1, tensor2, *, value=1)`.
pub(super) fn addcmul_method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let [t1, t2] = factors(it, "addcmul", &a.pos, a, "")?;
    pointwise(it, "addcmul", [Value::Obj(id), t1, t2])
}

/// `torch.norm`: `'fro'` and numeric orders are `linalg.vector_norm` over `dim`.
fn norm_of(
    it: &mut Interpreter<'_>,
    x: Value,
    p: Option<Value>,
    dim: Option<Value>,
    keepdim: Option<Value>,
    dtype: Option<Value>,
) -> R<Value> {
    if let Some(Value::Str(s)) = p {
        match it.names.name(s) {
            "fro" => {}
            "nuc" => {
                return it
                    .unsupported("torch.norm(p='nuc') (a matrix norm); use p='fro' or a number");
            }
            other => {
                return it.error(format!("RuntimeError: norm(): invalid norm type '{other}'"));
            }
        }
    } else if let Some(v) = p
        && v != Value::None
        && super::natives::float_of(v).is_none()
    {
        return it.error("TypeError: norm(): argument 'p' must be a number or a string");
    }
    vector_norm(it, x, dim, keepdim, dtype)
}

/// `linalg_vector_norm(x, ord, dim, keepdim, dtype)`: a reduction whose node keeps its
/// input and its result.
fn vector_norm(
    it: &mut Interpreter<'_>,
    x: Value,
    dim: Option<Value>,
    keepdim: Option<Value>,
    dtype: Option<Value>,
) -> R<Value> {
    let Some(t) = it.tensor_data(x) else {
        return it.error(format!(
            "TypeError: linalg_vector_norm(): argument 'x' must be Tensor, not {}",
            it.type_name_of(x)
        ));
    };
    if !t.dtype.is_floating() {
        return it.error(format!(
            "RuntimeError: linalg.vector_norm: Expected a floating point or complex tensor as input. Got {}",
            aten_name(t.dtype)
        ));
    }
    let keepdim = match keepdim {
        Some(v) => it.truth(v)?,
        None => false,
    };
    let ndim = t.shape.len();
    let reduced: Vec<usize> = match dim {
        None | Some(Value::None) => (0..ndim).collect(),
        Some(Value::Int(d)) => vec![dim_index(it, d, ndim)?],
        Some(v) => {
            let mut out = Vec::new();
            for item in sequence_items(it, v)? {
                let Value::Int(d) = item else {
                    return it.error("TypeError: dim must be an int or a tuple of ints");
                };
                out.push(dim_index(it, d, ndim)?);
            }
            out
        }
    };
    let shape = super::select_ops::shape_after(&t.shape, &reduced, keepdim);
    let out_dtype = match dtype {
        Some(Value::Dtype(d)) => d,
        Some(Value::None) | None => it.autocast_float32_output(x).unwrap_or(t.dtype),
        Some(_) => return it.error("TypeError: dtype must be a torch.dtype"),
    };
    let out = op_output(it, shape, out_dtype, t.device, &[x])?;
    let rule = crate::torch::op_rule("linalg_vector_norm").expect("a row of the autograd table");
    autograd::record(it, out, rule.node, rule.flow, &[x], rule.saves);
    Ok(out)
}

/// `addcmul`/`addcdiv(self, tensor1, tensor2)`: on autocast's promote list; a new tensor
/// of the three operands' broadcast shape and promoted dtype.
fn pointwise(it: &mut Interpreter<'_>, op: &'static str, operands: [Value; 3]) -> R<Value> {
    let cast = it.autocast_inputs(&operands, CastPolicy::Promote)?;
    let r = pointwise_as_given(it, op, &cast);
    it.heap.decref_all(cast);
    r
}

fn pointwise_as_given(it: &mut Interpreter<'_>, op: &'static str, operands: &[Value]) -> R<Value> {
    let mut tensors = Vec::new();
    for &v in operands {
        let Some(t) = it.tensor_data(v) else {
            return it.error(format!(
                "TypeError: {op}(): arguments must be tensors, not {}",
                it.type_name_of(v)
            ));
        };
        tensors.push(t);
    }
    if op == "addcdiv" && !tensors[1].dtype.is_floating() && !tensors[2].dtype.is_floating() {
        // `addcdiv_meta` (PointwiseOps.cpp) refuses integer division.
        return it.error(ADDCDIV_INTEGER_MESSAGE);
    }
    let mut shape = tensors[0].shape.clone();
    let mut dtype = tensors[0].dtype;
    for t in &tensors[1..] {
        shape = match broadcast(&shape, &t.shape) {
            Ok(s) => s,
            Err(message) => return it.error(format!("RuntimeError: {message}")),
        };
        dtype = Dtype::promote(dtype, t.dtype);
    }
    let out = op_output(it, shape, dtype, tensors[0].device, operands)?;
    autograd::record_op(it, out, op, operands);
    Ok(out)
}

/// PyTorch's error for `addcdiv` of two integer tensors.
const ADDCDIV_INTEGER_MESSAGE: &str = "RuntimeError: Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.";

fn dim_index(it: &Interpreter<'_>, d: i64, ndim: usize) -> R<usize> {
    let n = ndim.max(1) as i64;
    let i = if d < 0 { d + n } else { d };
    if i < 0 || i >= n {
        return it.error(format!(
            "IndexError: Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n,
            n - 1
        ));
    }
    Ok(i as usize)
}

/// ATen's scalar-type name, as its messages print it.
fn aten_name(d: Dtype) -> &'static str {
    match d {
        Dtype::Float32 => "Float",
        Dtype::Float16 => "Half",
        Dtype::BFloat16 => "BFloat16",
        Dtype::Float64 => "Double",
        Dtype::Int64 => "Long",
        Dtype::Int32 => "Int",
        Dtype::Int16 => "Short",
        Dtype::Int8 => "Char",
        Dtype::UInt8 => "Byte",
        Dtype::Bool => "Bool",
    }
}

impl Interpreter<'_> {
    /// `nn.KLDivLoss(size_average=None, reduce=None, reduction='mean', log_target=False)`
    /// and `nn.Softplus(beta=1.0, threshold=20.0)`: plain attributes the forward reads back.
    pub(super) fn construct_more_module(
        &mut self,
        kind: super::torchlib::TorchClass,
        args: &[Value],
        kwargs: &[(crate::heap::Sym, Value)],
    ) -> R<ObjId> {
        use super::torchlib::{TorchClass, constructor_arg};
        let get = |it: &Interpreter<'_>, i, name| constructor_arg(it, args, kwargs, i, name);
        if kind == TorchClass::Softplus {
            let beta = get(self, 0, "beta").unwrap_or(Value::Float(1.0));
            let threshold = get(self, 1, "threshold").unwrap_or(Value::Float(20.0));
            return self.new_torch_instance(kind, vec![("beta", beta), ("threshold", threshold)]);
        }
        if get(self, 0, "size_average").is_some() || get(self, 1, "reduce").is_some() {
            return self
                .unsupported("the deprecated size_average=/reduce= arguments; use reduction=");
        }
        let reduction = match get(self, 2, "reduction") {
            Some(v) => v,
            None => Value::Str(self.names.intern("mean")),
        };
        self.kl_reduction_of(reduction)?;
        let log_target = match get(self, 3, "log_target") {
            Some(v) => Value::Bool(self.truth(v)?),
            None => Value::Bool(false),
        };
        self.heap.incref(reduction);
        self.new_torch_instance(
            kind,
            vec![("reduction", reduction), ("log_target", log_target)],
        )
    }

    /// The forwards of `nn.KLDivLoss` (`F.kl_div` with the module's settings) and
    /// `nn.Softplus`.
    pub(super) fn more_module_forward(
        &mut self,
        module: ObjId,
        kind: super::torchlib::TorchClass,
        args: &[Value],
    ) -> R<Value> {
        if kind == super::torchlib::TorchClass::Softplus {
            return match args {
                [Value::Obj(x)] if self.is_tensor(Value::Obj(*x)) => {
                    tensor_unary(self, *x, "softplus")
                }
                _ => self.error("TypeError: Softplus expects one tensor"),
            };
        }
        let [x, y] = args else {
            return self.error("TypeError: KLDivLoss expects input and target");
        };
        let reduction = self.sym("reduction");
        let reduction = self.get_attr(Value::Obj(module), reduction)?;
        let parsed = self.kl_reduction_of(reduction);
        self.heap.decref(reduction);
        let log_target = self.module_flag(module, "log_target")?;
        self.kl_div(*x, *y, parsed?, log_target)
    }
}
