//! Tensor comparisons and boolean masks: `==`, `!=`, `<`, `<=`, `>`, `>=` with a tensor on
//! either side, their methods and `torch.*` functions (`eq`, `ne`, `lt`, `le`, `gt`, `ge`),
//! `~`, `&`, `|`, `^` on bool and integer tensors, `any`/`all`, `logical_not/and/or`,
//! `torch.isclose`/`allclose`/`equal`.
//!
//! | call                              | result (PyTorch)                                          | autograd |
//! |-----------------------------------|-----------------------------------------------------------|----------|
//! | `a == b`, `a < 0`, `t.eq(b)` ...  | bool (1 byte an element), the operands' broadcast shape, on their device | none: `eq`/`lt`/... have no `derivatives.yaml` entry and a bool output is not differentiable |
//! | `~m`, `m & n`, `m \| n`, `m ^ n`  | `bitwise_not`/`__and__`/`__or__`/`__xor__`: the promoted integral or bool dtype; floating operands are ATen's "not implemented for 'Float'" | none (`DONT_REQUIRE_DERIVATIVE` in `gen_variable_type.py`) |
//! | `logical_not/and/or`              | bool                                                      | none (same list) |
//! | `t.any()`, `t.all(dim)`           | bool (uint8 for a uint8 input), 0-dim or reduced          | none |
//! | `torch.isclose(a, b)`             | bool; its temporaries as `TensorCompare.cpp` computes it  | none |
//! | `torch.allclose(a, b)`            | `isclose(...).all().item()`: a Python bool                | none |
//! | `torch.equal(a, b)`               | a Python bool; on CUDA `eq(a, b).all().item()` (`cuda/Equal.cpp`): two temporaries | none |
//!
//! A Python number operand is wrapped into a CPU scalar tensor (no device bytes). A CUDA
//! result goes through the caching allocator like every other tensor.
//!
//! Approximation: the model holds no tensor values, so `torch.equal`/`allclose` answer
//! `True` whenever the shapes allow equality (a workload branching on them takes the
//! "equal" branch), and `t.any()`/`t.all()` are tensors whose truth the model refuses.

use super::interp::{Interpreter, R};
use super::natives::{Args, Native, float_of, int_arg, norm_dim};
use crate::heap::{ObjId, Value};
use crate::torch::{Category, DeviceKind, Dtype, TensorData, broadcast};
use ruff_python_ast::{CmpOp, Operator};

/// Tensor methods of this file.
pub(super) fn is_method(method: &str) -> bool {
    matches!(
        method,
        "eq" | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "any"
            | "all"
            | "logical_not"
            | "logical_and"
            | "logical_or"
            | "bitwise_not"
            | "isclose"
            | "allclose"
            | "equal"
    )
}

/// `a <op> b` where one side is a tensor (borrowed operands).
pub(super) fn compare(it: &mut Interpreter<'_>, op: CmpOp, l: Value, r: Value) -> R<Value> {
    let name = match op {
        CmpOp::Eq => "eq",
        CmpOp::NotEq => "ne",
        CmpOp::Lt => "lt",
        CmpOp::LtE => "le",
        CmpOp::Gt => "gt",
        _ => "ge",
    };
    let operand_ok = |it: &Interpreter<'_>, v: Value| it.is_tensor(v) || float_of(v).is_some();
    if !operand_ok(it, l) || !operand_ok(it, r) {
        // `Tensor.__eq__` turns the `TypeError` of `torch.eq` into `NotImplemented`: `==`
        // falls back to identity, an ordering raises Python's `TypeError`.
        return match op {
            CmpOp::Eq => Ok(Value::Bool(false)),
            CmpOp::NotEq => Ok(Value::Bool(true)),
            _ => {
                let symbol = match op {
                    CmpOp::Lt => "<",
                    CmpOp::LtE => "<=",
                    CmpOp::Gt => ">",
                    _ => ">=",
                };
                it.error(format!(
                    "TypeError: '{symbol}' not supported between instances of '{}' and '{}'",
                    it.type_name_of(l),
                    it.type_name_of(r)
                ))
            }
        };
    }
    elementwise_bool(it, name, l, r)
}

/// A comparison's result: bool of the broadcast shape, on the operands' device, no history.
fn elementwise_bool(it: &mut Interpreter<'_>, name: &str, l: Value, r: Value) -> R<Value> {
    let (shape, device, _) = operands(it, name, l, r)?;
    it.new_tensor_as(shape, Dtype::Bool, device, None, Category::Temporary)
}

/// The broadcast shape, device and promoted dtype of a binary op's operands (a Python
/// number is a wrapped CPU scalar: it never decides the device).
fn operands(
    it: &Interpreter<'_>,
    name: &str,
    l: Value,
    r: Value,
) -> R<(Vec<i64>, DeviceKind, Dtype)> {
    let (lt, rt) = (it.tensor_data(l), it.tensor_data(r));
    for (t, v) in [(&lt, l), (&rt, r)] {
        if t.is_none() && float_of(v).is_none() {
            return it.error(format!(
                "TypeError: {name}(): argument 'other' must be Tensor or Number, not {}",
                it.type_name_of(v)
            ));
        }
    }
    let shape_of = |t: &Option<TensorData>| t.as_ref().map(|t| t.shape.clone()).unwrap_or_default();
    let shape = match broadcast(&shape_of(&lt), &shape_of(&rt)) {
        Ok(s) => s,
        Err(e) => return it.error(format!("RuntimeError: {e}")),
    };
    let device = crate::python::natives::binary_device(it, &lt, &rt)?;
    let wrapped = |t: &TensorData, v: Value| match v {
        // A wrapped number only raises the category: bool < integral < floating.
        Value::Float(_) if !t.dtype.is_floating() => Dtype::Float32,
        Value::Int(_) if t.dtype == Dtype::Bool => Dtype::Int64,
        _ => t.dtype,
    };
    let dtype = match (&lt, &rt) {
        (Some(a), Some(b)) => Dtype::promote(a.dtype, b.dtype),
        (Some(a), None) => wrapped(a, r),
        (None, Some(b)) => wrapped(b, l),
        (None, None) => unreachable!("one operand is a tensor"),
    };
    Ok((shape, device, dtype))
}

/// ATen's name of a dtype in its messages ("not implemented for 'Float'").
pub(super) fn aten_name(d: Dtype) -> &'static str {
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

fn kernel_suffix(device: DeviceKind) -> &'static str {
    match device {
        DeviceKind::Cuda => "cuda",
        _ => "cpu",
    }
}

/// `a & b`, `a | b`, `a ^ b` with a tensor operand (`in_place` for `&=` and friends):
/// integral and bool dtypes only, no history.
pub(super) fn bitwise(
    it: &mut Interpreter<'_>,
    op: Operator,
    l: Value,
    r: Value,
    in_place: bool,
) -> R<Value> {
    let name = match op {
        Operator::BitAnd => "bitwise_and",
        Operator::BitOr => "bitwise_or",
        _ => "bitwise_xor",
    };
    if matches!((l, r), (Value::Float(_), _) | (_, Value::Float(_))) {
        return it.error(format!(
            "TypeError: unsupported operand type(s) for {}: 'Tensor' and 'float'",
            match op {
                Operator::BitAnd => "&",
                Operator::BitOr => "|",
                _ => "^",
            }
        ));
    }
    let (shape, device, dtype) = operands(it, name, l, r)?;
    if dtype.is_floating() {
        return it.error(format!(
            "RuntimeError: \"{name}_{}\" not implemented for '{}'",
            kernel_suffix(device),
            aten_name(dtype)
        ));
    }
    if in_place && let Value::Obj(target) = l {
        let Some(t) = it.tensor_data(l) else {
            return it.error("TypeError: unsupported operand types for an in-place bitwise op");
        };
        if t.shape != shape {
            return it.error(format!(
                "RuntimeError: output with shape {:?} doesn't match the broadcast shape {:?}",
                t.shape, shape
            ));
        }
        // Written in place: no new storage (and bool/integral tensors have no history).
        it.heap.incref(Value::Obj(target));
        return Ok(Value::Obj(target));
    }
    it.new_tensor_as(shape, dtype, device, None, Category::Temporary)
}

/// `~t`: `bitwise_not` (logical not for bool), same shape and dtype.
pub(super) fn invert(it: &mut Interpreter<'_>, id: ObjId) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor operand")
    };
    if t.dtype.is_floating() {
        return it.error(format!(
            "RuntimeError: \"bitwise_not_{}\" not implemented for '{}'",
            kernel_suffix(t.device),
            aten_name(t.dtype)
        ));
    }
    it.new_tensor_as(t.shape, t.dtype, t.device, None, Category::Temporary)
}

/// `t.eq(other)` and the other methods of this file.
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let this = Value::Obj(id);
    let at = |i: usize| a.pos.get(i).copied();
    let other = |it: &Interpreter<'_>| a.kw(it, "other").or(at(0));
    match method {
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" => {
            let Some(o) = other(it) else {
                return it.error(format!(
                    "TypeError: {method}() missing 1 required positional arguments: \"other\""
                ));
            };
            elementwise_bool(it, method, this, o)
        }
        "logical_and" | "logical_or" => {
            let Some(o) = other(it).filter(|&v| it.is_tensor(v)) else {
                return it.error(format!(
                    "TypeError: {method}(): argument 'other' must be Tensor"
                ));
            };
            elementwise_bool(it, method, this, o)
        }
        "logical_not" => {
            let Some(t) = it.tensor_data(this) else {
                unreachable!("a tensor receiver")
            };
            it.new_tensor_as(t.shape, Dtype::Bool, t.device, None, Category::Temporary)
        }
        "bitwise_not" => invert(it, id),
        "any" | "all" => any_all(
            it,
            id,
            a.kw(it, "dim").or(at(0)),
            a.kw(it, "keepdim").or(at(1)),
        ),
        "isclose" | "allclose" => {
            let Some(o) = other(it) else {
                return it.error(format!(
                    "TypeError: {method}() missing required argument 'other'"
                ));
            };
            close(it, method, this, o, a)
        }
        _ => {
            let Some(o) = other(it) else {
                return it.error("TypeError: equal() missing required argument 'other'");
            };
            equal(it, this, o)
        }
    }
}

/// `torch.eq(input, other)` and the other `torch.*` functions of this file.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let name = function_name(n);
    let input = a.kw(it, "input").or(a.pos.first().copied());
    let Some(Value::Obj(id)) = input.filter(|&v| it.is_tensor(v)) else {
        return it.error(format!(
            "TypeError: {name}(): argument 'input' must be Tensor, not {}",
            it.type_name_of(input.unwrap_or(Value::None))
        ));
    };
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
    method(it, id, name, &rest)
}

/// The method a `torch.*` function of this file runs.
fn function_name(n: Native) -> &'static str {
    match n {
        Native::EqFn => "eq",
        Native::NeFn => "ne",
        Native::LtFn => "lt",
        Native::LeFn => "le",
        Native::GtFn => "gt",
        Native::GeFn => "ge",
        Native::AnyFn => "any",
        Native::AllFn => "all",
        Native::LogicalNotFn => "logical_not",
        Native::LogicalAndFn => "logical_and",
        Native::LogicalOrFn => "logical_or",
        Native::IscloseFn => "isclose",
        Native::AllcloseFn => "allclose",
        _ => "equal",
    }
}

/// `any`/`all`: a bool (uint8 for a uint8 input) of the reduced shape.
fn any_all(
    it: &mut Interpreter<'_>,
    id: ObjId,
    dim: Option<Value>,
    keepdim: Option<Value>,
) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor receiver")
    };
    let keepdim = match keepdim {
        Some(v) => it.truth(v)?,
        None => false,
    };
    let shape = match dim {
        None | Some(Value::None) => vec![],
        Some(d) => {
            let d = norm_dim(it, int_arg(it, d, "dim")?, t.shape.len())?;
            let mut s = t.shape.clone();
            if d < s.len() {
                if keepdim {
                    s[d] = 1;
                } else {
                    s.remove(d);
                }
            }
            s
        }
    };
    let dtype = if t.dtype == Dtype::UInt8 {
        Dtype::UInt8
    } else {
        Dtype::Bool
    };
    it.new_tensor_as(shape, dtype, t.device, None, Category::Temporary)
}

/// A temporary tensor freed before the op returns (peak and reserved memory only).
fn scratch(it: &mut Interpreter<'_>, shape: &[i64], dtype: Dtype, device: DeviceKind) -> R<Value> {
    it.new_tensor_as(shape.to_vec(), dtype, device, None, Category::Temporary)
}

/// `isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False)` as `TensorCompare.cpp`
/// computes it: `close = self == other`, then (non-zero tolerances) `allowed_error =
/// atol + (rtol * cast_other).abs()`, `actual_error = (self - cast_other).abs()` and
/// `close |= isfinite(actual_error) & (actual_error <= allowed_error)`; each temporary
/// freed when its last use ends. `allclose` is `isclose(...).all().item()`.
fn close(it: &mut Interpreter<'_>, op: &str, l: Value, r: Value, a: &Args) -> R<Value> {
    let Some(lt) = it.tensor_data(l) else {
        unreachable!("a tensor receiver")
    };
    let Some(rt) = it.tensor_data(r) else {
        return it.error(format!(
            "TypeError: {op}(): argument 'other' must be Tensor, not {}",
            it.type_name_of(r)
        ));
    };
    if lt.dtype != rt.dtype {
        // `isclose`'s check: `TORCH_CHECK(self.scalar_type() == other.scalar_type(), ...)`.
        return it.error(format!(
            "RuntimeError: {} did not match {}",
            aten_name(lt.dtype),
            aten_name(rt.dtype)
        ));
    }
    let tolerance = |it: &Interpreter<'_>, name: &str, default: f64| -> R<f64> {
        match a.kw(it, name) {
            None => Ok(default),
            Some(v) => match float_of(v) {
                Some(f) => Ok(f),
                None => it.error(format!(
                    "TypeError: {op}(): argument '{name}' must be float"
                )),
            },
        }
    };
    let rtol = tolerance(it, "rtol", 1e-5)?;
    let atol = tolerance(it, "atol", 1e-8)?;
    let (shape, device, _) = operands(it, op, l, r)?;
    let result = it.new_tensor_as(
        shape.clone(),
        Dtype::Bool,
        device,
        None,
        Category::Temporary,
    )?;
    if rtol != 0.0 || atol != 0.0 {
        let float = if lt.dtype.is_floating() {
            lt.dtype
        } else {
            Dtype::Float32
        };
        let mut steps = || -> R<()> {
            let cast_other = if lt.dtype.is_floating() {
                None
            } else {
                Some(scratch(it, &rt.shape, float, device)?)
            };
            let scaled = scratch(it, &rt.shape, float, device)?;
            let magnitude = scratch(it, &rt.shape, float, device)?;
            it.heap.decref(scaled);
            let allowed = scratch(it, &rt.shape, float, device)?;
            it.heap.decref(magnitude);
            let difference = scratch(it, &shape, float, device)?;
            let actual = scratch(it, &shape, float, device)?;
            it.heap.decref(difference);
            if let Some(c) = cast_other {
                it.heap.decref(c);
            }
            let finite = scratch(it, &shape, Dtype::Bool, device)?;
            let within = scratch(it, &shape, Dtype::Bool, device)?;
            it.heap.decref(within);
            it.heap.decref(finite);
            it.heap.decref(actual);
            it.heap.decref(allowed);
            Ok(())
        };
        if let Err(e) = steps() {
            it.heap.decref(result);
            return Err(e);
        }
    }
    if op == "isclose" {
        return Ok(result);
    }
    // `.all()` (a 0-dim bool) and `.item()`.
    let all = scratch(it, &[], Dtype::Bool, device);
    it.heap.decref(result);
    it.heap.decref(all?);
    Ok(Value::Bool(true))
}

/// `torch.equal(a, b)`: `False` for different sizes; otherwise (CUDA) `eq(a, b).all()`
/// read back, both temporaries freed at once.
fn equal(it: &mut Interpreter<'_>, l: Value, r: Value) -> R<Value> {
    let (Some(lt), Some(rt)) = (it.tensor_data(l), it.tensor_data(r)) else {
        return it.error(format!(
            "TypeError: equal(): argument 'other' must be Tensor, not {}",
            it.type_name_of(r)
        ));
    };
    if lt.device != rt.device {
        return it.error(format!(
            "RuntimeError: Cannot compare two tensors on different devices. Got: {} and {}",
            lt.device.name(),
            rt.device.name()
        ));
    }
    if lt.shape != rt.shape {
        return Ok(Value::Bool(false));
    }
    if lt.numel() == 0 || lt.storage == rt.storage || lt.device != DeviceKind::Cuda {
        return Ok(Value::Bool(true));
    }
    let eq = scratch(it, &lt.shape, Dtype::Bool, lt.device)?;
    let all = scratch(it, &[], Dtype::Bool, lt.device);
    it.heap.decref(eq);
    it.heap.decref(all?);
    Ok(Value::Bool(true))
}
