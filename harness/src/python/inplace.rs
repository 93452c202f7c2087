//! In-place tensor operations and autograd: `+=`, `add_`, `mul_`, `copy_`, `zero_`,
//! `t[i] = v`, ... write into existing bytes, so they allocate nothing, but they follow
//! PyTorch's autograd rules, which decide what stays alive:
//!
//! - the storage's version counter is bumped, so a saved tensor that was overwritten is an
//!   error when backward unpacks it;
//! - a leaf that requires grad (or a view of one) cannot be written in grad mode;
//! - otherwise, when the target or an operand requires grad, the target's history is
//!   *rebased*: its new `grad_fn` is the in-place op's node, whose first edge is the
//!   target's previous `grad_fn`. So `total += loss` keeps every iteration's graph alive
//!   through `total`, exactly as `total = total + loss` does.
//! - writing through a view also rebases the view's base (`CopySlices`).

use super::autograd::{self, Save};
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, GradFlow, GradNode, InputEdge, Saved};
use ruff_python_ast::Operator;

/// What an in-place op's node is called and what it saves, by method name. `Save::Input(0)`
/// means the target's value *before* the write: PyTorch saves a clone of it
/// (`original_self`), which the model allocates.
fn node_for(method: &str, other_is_tensor: bool) -> Option<(&'static str, &'static [Save])> {
    let scalar_key;
    let key = match method {
        "mul_" | "div_" if !other_is_tensor => {
            scalar_key = format!("{}_scalar_", &method[..method.len() - 1]);
            scalar_key.as_str()
        }
        "clamp_min_" | "clamp_max_" => "clamp_",
        m => m,
    };
    crate::torch::op_rule(key)
        .filter(|r| r.op.ends_with('_'))
        .map(|r| (r.node, r.saves))
}

/// The in-place tensor methods the model knows.
pub(super) fn is_in_place_method(method: &str) -> bool {
    node_for(method, false).is_some()
}

/// The method behind an augmented assignment on a tensor (`+=` is `add_`).
pub(super) fn method_of(op: Operator) -> Option<&'static str> {
    Some(match op {
        Operator::Add => "add_",
        Operator::Sub => "sub_",
        Operator::Mult => "mul_",
        Operator::Div => "div_",
        Operator::Pow => "pow_",
        _ => return None,
    })
}

fn tensor(it: &Interpreter<'_>, v: Value) -> Option<crate::torch::TensorData> {
    it.tensor_data(v)
}

/// Writes into tensor `target` with `method` and operands `others` (borrowed); returns a new
/// reference to `target`, as the in-place methods do.
pub(super) fn apply(
    it: &mut Interpreter<'_>,
    target: ObjId,
    method: &str,
    others: &[Value],
) -> R<Value> {
    let Some(t) = tensor(it, Value::Obj(target)) else {
        return it.error("TypeError: an in-place operation needs a tensor");
    };
    let other_is_tensor = others.first().is_some_and(|&v| it.is_tensor(v));
    let Some((name, saves)) = node_for(method, other_is_tensor) else {
        return it.unsupported(format!("the in-place tensor method '{method}'"));
    };
    for &o in others {
        if let Some(ot) = tensor(it, o)
            && method != "copy_"
            && crate::torch::broadcast(&t.shape, &ot.shape).is_ok_and(|s| s != t.shape)
        {
            return it.error(format!(
                "RuntimeError: output with shape {:?} doesn't match the broadcast shape {:?}",
                t.shape,
                crate::torch::broadcast(&t.shape, &ot.shape).unwrap_or_default()
            ));
        }
    }
    let mut operands = vec![Value::Obj(target)];
    operands.extend_from_slice(others);
    let records = it.grad_enabled && operands.iter().any(|&v| autograd::requires_grad(it, v));
    if records {
        check_not_leaf(it, &t)?;
    }
    // `original_self`: a copy of the target's old value, when the op needs it.
    let needs_original = records
        && saves.iter().any(|s| match *s {
            Save::Input(0) => true,
            Save::InputIf(0, c) => operands
                .get(c)
                .is_some_and(|&v| autograd::requires_grad(it, v)),
            _ => false,
        });
    let original = if needs_original {
        Some(it.new_storage(&t.shape, t.dtype, t.device, Category::Activation)?)
    } else {
        None
    };
    it.storages.bump_version(t.storage);
    if !records {
        it.heap.incref(Value::Obj(target));
        return Ok(Value::Obj(target));
    }
    // The node's edges: the target's old history first, then the operands'.
    let other_saves: Vec<Save> = saves
        .iter()
        .copied()
        .filter(|s| !matches!(s, Save::Input(0) | Save::InputIf(0, _)))
        .collect();
    let node = autograd::build_node(
        it,
        name,
        GradFlow::Compute,
        &operands,
        &other_saves,
        Some(target),
    );
    if let Some(st) = original
        && let ObjKind::GradNode(n) = it.heap.kind_mut(node)
    {
        n.saved.push(Saved::Data(st));
    }
    rebase(it, target, &t, node);
    it.heap.incref(Value::Obj(target));
    Ok(Value::Obj(target))
}

/// `target[index] = value`: `target[index].copy_(value)`, a copy into a view of `target`.
/// The copy's node (`CopyBackwards`, keeping sizes and options only) is wrapped by the
/// `CopySlices` node the view's base (`target`, or its own base) is rebased onto.
pub(super) fn copy_into_index(it: &mut Interpreter<'_>, target: ObjId, value: Value) -> R<()> {
    let Some(t) = tensor(it, Value::Obj(target)) else {
        return Ok(());
    };
    let operands = [Value::Obj(target), value];
    let records = it.grad_enabled && operands.iter().any(|&v| autograd::requires_grad(it, v));
    if records {
        check_not_leaf(it, &t)?;
    }
    it.storages.bump_version(t.storage);
    if records {
        let row = autograd::row("copy_");
        // Edge 0 stands for the slice's history (a view node over `target`'s): never run.
        let copy = autograd::build_node(it, row.node, row.flow, &operands, row.saves, None);
        let base = t.base.unwrap_or(target);
        rebase_base(it, base, copy);
        if t.base.is_some() {
            regenerate_view_node(it, target, base);
        }
    }
    Ok(())
}

/// PyTorch's `check_inplace`: no in-place write to a leaf that requires grad, or to a view
/// of one, while grad mode is on.
pub(super) fn check_not_leaf(it: &Interpreter<'_>, t: &crate::torch::TensorData) -> R<()> {
    if t.requires_grad && t.is_leaf() && t.base.is_none() {
        return it.error(
            "RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.",
        );
    }
    if let Some(b) = t.base
        && let Some(bt) = tensor(it, Value::Obj(b))
        && bt.requires_grad
        && bt.is_leaf()
    {
        return it.error(
            "RuntimeError: a view of a leaf Variable that requires grad is being used in an in-place operation.",
        );
    }
    // A view made by a custom Function returning its input as-is (a module's full backward
    // hooks wrap its outputs that way): PyTorch's `handle_view_on_rebase` forbids it.
    if t.base.is_some()
        && let Some(node) = t.grad_fn
        && let ObjKind::GradNode(n) = it.heap.kind(node)
        && n.name == "BackwardHookFunctionBackward"
    {
        return it.error(format!(
            "RuntimeError: Output 0 of {} is a view and is being modified inplace. This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
            n.name
        ));
    }
    Ok(())
}

/// PyTorch's `rebase_history`: makes `node` (one reference, handed over) the history of
/// `target`. Written through a view, the view's base is rebased instead (`CopySlices`) and
/// the view's own `grad_fn` is regenerated over it.
pub(super) fn rebase(
    it: &mut Interpreter<'_>,
    target: ObjId,
    t: &crate::torch::TensorData,
    node: ObjId,
) {
    match t.base {
        Some(base) => {
            rebase_base(it, base, node);
            regenerate_view_node(it, target, base);
        }
        None => autograd::set_history(it, target, node),
    }
}

/// `CopySlices(base, view, fn)` (torch/csrc/autograd/functions/tensor.cpp): the node owns
/// `node` (handed over) and takes its edges as its own, except edge 0 (the view's old
/// history), which becomes the base's current gradient edge with its output number. So the
/// base's old history gets one gradient, the whole base's, of which backward has replaced
/// the slice by what `fn` computed.
fn rebase_base(it: &mut Interpreter<'_>, base: ObjId, node: ObjId) {
    let mut copy = GradNode::new("CopySlices", GradFlow::Compute);
    if let Some(e) = autograd::edge_to(it, Value::Obj(base)) {
        copy.inputs.push(e);
    }
    let rest: Vec<InputEdge> = match it.heap.kind(node) {
        ObjKind::GradNode(n) => n.inputs.iter().skip(1).cloned().collect(),
        _ => Vec::new(),
    };
    for e in rest {
        if let Some(n) = e.node {
            it.heap.incref(Value::Obj(n));
        }
        copy.inputs.push(e);
    }
    copy.wrapped = Some(node);
    // Without `fn` (released by a backward) it cannot run again, whatever `fn` saved.
    copy.had_saved = true;
    let copy = it.heap.insert(ObjKind::GradNode(Box::new(copy)));
    autograd::set_history(it, base, copy);
}

/// The view's `grad_fn` after its base was rebased: `VariableHooks::grad_fn` sees the
/// version moved and builds `AsStridedBackward0` over the base (strided tensors carry no
/// `view_fn` to replay), keeping the view's geometry only.
fn regenerate_view_node(it: &mut Interpreter<'_>, view: ObjId, base: ObjId) {
    let row = autograd::row("as_strided");
    let node = autograd::build_node(it, row.node, row.flow, &[Value::Obj(base)], row.saves, None);
    autograd::set_history(it, view, node);
}
