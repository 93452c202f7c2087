//! Tensor ops shared by methods and `torch.*` functions: reductions, concatenation, and the
//! elementwise unary and binary ops with their output records.

use super::*;

/// Tensor `id`'s record, borrowed (callers checked that `id` is a tensor).
pub(in crate::python) fn tensor_record<'i>(
    it: &'i Interpreter<'_>,
    id: ObjId,
) -> &'i torch::TensorData {
    match it.heap.kind(id) {
        ObjKind::Tensor(t) => t,
        _ => unreachable!("checked by caller"),
    }
}

pub(super) fn reduce(
    it: &mut Interpreter<'_>,
    id: ObjId,
    op: &str,
    dim: Option<Value>,
) -> R<Value> {
    let t = tensor_record(it, id).clone();
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
    // `sum` is on autocast's `fp32_set_opt_dtype` list (a float32 result, no cast copy);
    // the sum of a bool or integer tensor is int64 (`get_dtype_from_self`, promoting
    // integral types); `mean` infers no dtype for those.
    let dtype = match op {
        "sum" if !t.dtype.is_floating() => Dtype::Int64,
        "sum" => it
            .autocast_float32_output(Value::Obj(id))
            .unwrap_or(t.dtype),
        _ if !t.dtype.is_floating() => {
            return it.error(format!(
                "RuntimeError: mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: {}",
                crate::python::comparisons::aten_name(t.dtype)
            ));
        }
        _ => t.dtype,
    };
    let out = op_output(it, shape, dtype, t.device, &[Value::Obj(id)])?;
    // `sum()`/`mean()` and their `dim=` overloads are distinct nodes (`*Backward0/1`).
    let key = match (op, with_dim) {
        ("mean", false) => "mean",
        ("mean", true) => "mean_dim",
        (_, false) => "sum",
        (_, true) => "sum_dim",
    };
    let node = torch::op_rule(key).map_or(autograd::row("sum").node, |r| r.node);
    autograd::record(it, out, node, GradFlow::Compute, &[Value::Obj(id)], &[]);
    Ok(out)
}

/// `torch.cat`/`torch.stack`: on autocast's promote list (the inputs cast to the widest
/// floating type among them and the region's dtype).
pub(super) fn concat(it: &mut Interpreter<'_>, items: &[Value], dim: i64, stack: bool) -> R<Value> {
    let cast = it.autocast_inputs(items, crate::python::amp::CastPolicy::Promote)?;
    let r = concat_as_given(it, &cast, dim, stack);
    it.heap.decref_all(cast);
    r
}

fn concat_as_given(it: &mut Interpreter<'_>, items: &[Value], dim: i64, stack: bool) -> R<Value> {
    let tensors: Vec<torch::TensorData> = items
        .iter()
        .filter_map(|v| tensor_of(it, *v).cloned())
        .collect();
    if tensors.len() != items.len() || tensors.is_empty() {
        return it.error("TypeError: expected a non-empty sequence of tensors");
    }
    // ATen's `cat` skips 1-D empty inputs (the legacy `torch.Tensor()` accumulator) when
    // sizing the result, and refuses 0-dim inputs.
    let legacy_empty = |t: &torch::TensorData| !stack && t.shape == [0];
    if !stack && let Some(at) = tensors.iter().position(|t| t.shape.is_empty()) {
        return it.error(format!(
            "RuntimeError: zero-dimensional tensor (at position {at}) cannot be concatenated"
        ));
    }
    let first = tensors
        .iter()
        .find(|t| !legacy_empty(t))
        .unwrap_or(&tensors[0]);
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
            .filter(|t| !legacy_empty(t) || first.shape == [0])
            .map(|t| t.shape.get(d).copied().unwrap_or(0))
            .sum();
    }
    let (dtype, device) = (first.dtype, first.device);
    let out = op_output(it, shape, dtype, device, items)?;
    // `CatBackward0`/`StackBackward0` save the inputs' sizes only; backward hands each
    // input a slice of the incoming gradient.
    let name = if stack {
        autograd::row("stack").node
    } else {
        autograd::row("cat").node
    };
    autograd::record(it, out, name, GradFlow::Split, items, &[]);
    Ok(out)
}

/// An elementwise unary op: a new tensor of the same shape.
pub(in crate::python) fn tensor_unary(it: &mut Interpreter<'_>, id: ObjId, op: &str) -> R<Value> {
    use crate::python::amp::CastPolicy;
    match crate::python::amp::policy_of(op) {
        Some(policy @ CastPolicy::Float32) => {
            let cast = it.autocast_inputs(&[Value::Obj(id)], policy)?;
            let r = match cast[0] {
                Value::Obj(c) => tensor_unary_as_given(it, c, op, None),
                _ => Ok(Value::None),
            };
            it.heap.decref_all(cast);
            r
        }
        Some(CastPolicy::Float32Output) => {
            let dtype = it.autocast_float32_output(Value::Obj(id));
            tensor_unary_as_given(it, id, op, dtype)
        }
        _ => tensor_unary_as_given(it, id, op, None),
    }
}

/// A unary op on `id` as given, its result of `dtype` when set (autocast's
/// `fp32_set_opt_dtype` ops).
fn tensor_unary_as_given(
    it: &mut Interpreter<'_>,
    id: ObjId,
    op: &str,
    dtype: Option<Dtype>,
) -> R<Value> {
    let t = tensor_record(it, id).clone();
    let out = op_output(
        it,
        t.shape,
        dtype.unwrap_or(t.dtype),
        t.device,
        &[Value::Obj(id)],
    )?;
    // The autograd table's row; an op without one records a node that saves nothing.
    let (name, saves): (&'static str, &[Save]) = match torch::op_rule(op) {
        Some(r) => (r.node, r.saves),
        None => (autograd::row("neg").node, &[]),
    };
    autograd::record(it, out, name, GradFlow::Compute, &[Value::Obj(id)], saves);
    Ok(out)
}

/// A new tensor for an op's result: an activation when autograd will record the op.
pub(in crate::python) fn op_output(
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
pub(in crate::python) fn tensor_binary(
    it: &mut Interpreter<'_>,
    op: Operator,
    l: Value,
    r: Value,
    in_place: bool,
) -> R<Value> {
    // `number / tensor` is `Tensor.__rdiv__` (`torch/_tensor.py`): `self.reciprocal() * other`,
    // two ops, the first node keeping the reciprocal (its result) for backward.
    if op == Operator::Div && !in_place && !it.is_tensor(l) && it.is_tensor(r) {
        let reciprocal = crate::python::pointwise_math::reciprocal(it, r)?;
        let out = tensor_binary(it, Operator::Mult, reciprocal, l, false);
        it.heap.decref(reciprocal);
        return out;
    }
    // `matmul`/`mm`/`bmm` are on autocast's lower-precision list, `pow` on its float32 list.
    let policy = match op {
        Operator::MatMult => Some(crate::python::amp::CastPolicy::LowerPrecision),
        Operator::Pow => crate::python::amp::policy_of("pow"),
        _ => None,
    };
    if let Some(policy) = policy
        && !in_place
    {
        let cast = it.autocast_inputs(&[l, r], policy)?;
        let result = tensor_binary_as_given(it, op, cast[0], cast[1], in_place);
        it.heap.decref_all(cast);
        return result;
    }
    tensor_binary_as_given(it, op, l, r, in_place)
}

/// The device of a binary op's result: the operands' common device, where a 0-dim tensor
/// (like a Python number) never decides it; PyTorch's error when two devices meet.
pub(in crate::python) fn binary_device(
    it: &Interpreter<'_>,
    lt: &Option<torch::TensorData>,
    rt: &Option<torch::TensorData>,
) -> R<DeviceKind> {
    Ok(match (lt, rt) {
        (Some(a), Some(b))
            if a.device != b.device && !a.shape.is_empty() && !b.shape.is_empty() =>
        {
            return it.error(format!(
                "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                a.device.name(),
                b.device.name()
            ));
        }
        (Some(a), Some(b)) if a.shape.is_empty() => b.device,
        (Some(a), _) => a.device,
        (None, Some(b)) => b.device,
        (None, None) => unreachable!("one operand is a tensor"),
    })
}

fn tensor_binary_as_given(
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
    let device = binary_device(it, &lt, &rt)?;
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
        if let Some(method) = crate::python::inplace::method_of(op) {
            return crate::python::inplace::apply(it, id, method, &[r]);
        }
        it.heap.incref(Value::Obj(id));
        return Ok(Value::Obj(id));
    }
    let out = op_output(it, shape, dtype, device, &[l, r])?;
    let both = lt.is_some() && rt.is_some();
    if op == Operator::FloorDiv || (op == Operator::Mod && lt.is_none()) {
        if op == Operator::Mod && it.grad_enabled && autograd::requires_grad(it, r) {
            it.heap.decref(out);
            return it.unsupported(
                "`number % tensor` on a tensor that requires grad (`remainder.Scalar_Tensor`, \
                 whose backward PyTorch does not implement); nearest supported: `tensor % number`",
            );
        }
        // `floor_divide` has no `derivatives.yaml` formula: the generated code gives the
        // result a `NotImplemented` node, whose backward raises.
        autograd::record(it, out, "NotImplemented", GradFlow::Compute, &[l, r], &[]);
        return Ok(out);
    }
    let key = match op {
        Operator::Add => "add",
        Operator::Sub => "sub",
        Operator::Mult if both => "mul",
        Operator::Mult => "mul_scalar",
        Operator::Div if both => "div",
        Operator::Div => "div_scalar",
        Operator::Pow => "pow",
        Operator::MatMult => "matmul",
        // `remainder` is not among the ops that take a Python number as a tensor
        // (`should_allow_numbers_as_tensors`): `t % 2` is `remainder.Scalar`.
        Operator::Mod if both => "remainder",
        Operator::Mod => "remainder.Scalar",
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
pub(in crate::python) fn new_sequence(
    it: &mut Interpreter<'_>,
    is_list: bool,
    items: Vec<Value>,
) -> Value {
    for &v in &items {
        it.heap.incref(v);
    }
    Value::Obj(it.alloc(if is_list {
        ObjKind::List(items)
    } else {
        ObjKind::Tuple(items)
    }))
}
