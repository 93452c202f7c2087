//! What a node saved, at backward: the version check of each saved tensor, the recorded
//! formula of a node differentiated with `create_graph`, and releasing the saved tensors.

use super::autograd::{GradBuffer as Buffer, edge_to, row, tensor};
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{GradFlow, GradNode, InputEdge, Saved};

/// The first saved tensor whose version counter moved since it was saved: PyTorch's
/// "modified by an inplace operation" error.
pub(super) fn check_versions(it: &Interpreter<'_>, node: &GradNode) -> R<()> {
    for &(i, version) in &node.saved_versions {
        let Some(saved) = node.saved.get(i) else {
            continue;
        };
        // SavedVariable::unpack names the saved tensor's sizes and its grad_fn as it reads
        // now (with its output number); a saved output (no grad_fn of its own) the node
        // that saved it; a leaf nothing.
        let (storage, sizes, output_of) = match *saved {
            Saved::Tensor(t) => match tensor(it, Value::Obj(t)) {
                Some(td) => (td.storage, Some(td.shape.clone()), saved_grad_fn(it, td)),
                None => continue,
            },
            Saved::Data(st) => (st, None, Some((node.name, 0))),
            // PyTorch cannot see versions through the hooks and checks none.
            Saved::Packed { .. } => continue,
        };
        let now = it.storages.version(storage);
        if now != version {
            let s = it.storages.get(storage);
            let described = format!(
                "[{} {:?}]",
                super::tensor_type::legacy_type_name(s.dtype, s.addr.is_some()),
                sizes.as_deref().unwrap_or(&s.shape)
            );
            let which = output_of
                .map(|(n, nr)| format!(", which is output {nr} of {n},"))
                .unwrap_or_default();
            return it.error(format!(
                "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: {described}{which} is at version {now}; expected version {version} instead. Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True)."
            ));
        }
    }
    Ok(())
}

/// The grad_fn a saved tensor reports once its storage moved: a differentiable view
/// regenerates its grad_fn when its version changed (`VariableHooks::grad_fn`), as
/// `AsStridedBackward0` for strided tensors; others keep theirs.
fn saved_grad_fn(
    it: &Interpreter<'_>,
    td: &crate::torch::TensorData,
) -> Option<(&'static str, u32)> {
    let name = node_name(it, td.grad_fn?)?;
    if td.base.is_some() {
        return Some((row("as_strided").node, 0));
    }
    Some((name, td.output_nr))
}

fn node_name(it: &Interpreter<'_>, n: ObjId) -> Option<&'static str> {
    match it.heap.kind(n) {
        ObjKind::GradNode(g) => Some(g.name),
        _ => None,
    }
}

/// With `create_graph`, the gradients a node computes are themselves recorded: a node
/// (PyTorch's `*Backward*` of the backward formula; the model names it after the node it
/// differentiates) whose edges are the incoming gradient's graph and the saved inputs'
/// histories, and which holds what the formula reads: the node's saved tensors.
///
/// A saved output comes back from `SavedVariable::unpack(saved_for)` with the node that
/// saved it as its `grad_fn`, so the recorded formula has an edge to node `n` itself (kept
/// alive by it): `x.grad` of `y = x.tanh()` reaches `x`'s `AccumulateGrad` and so `x`, the
/// C++ cycle behind pytorch/pytorch#7343 that no collection frees. Approximation: one edge
/// for all of a node's saved data (outputs and the model's saved intermediates, whose
/// histories lead back through the same inputs), shaped as the incoming gradient.
pub(super) fn double_backward_node(
    it: &mut Interpreter<'_>,
    n: ObjId,
    node: &GradNode,
    incoming: &Buffer,
) -> ObjId {
    let mut g = GradNode::new(node.name, GradFlow::Compute);
    if let Some(n) = incoming.node {
        it.heap.incref(Value::Obj(n));
    }
    g.inputs.push(InputEdge {
        node: incoming.node,
        input_nr: incoming.output_nr,
        shape: incoming.shape.clone(),
        dtype: incoming.dtype,
        device: incoming.device,
    });
    for s in &node.saved {
        match *s {
            Saved::Tensor(t) => {
                if let Some(e) = edge_to(it, Value::Obj(t)) {
                    g.inputs.push(e);
                }
                it.heap.incref(Value::Obj(t));
            }
            Saved::Data(st) => it.storages.add_ref(st),
            Saved::Packed { data, pack, unpack } => {
                for v in [data, pack, unpack] {
                    it.heap.incref(v);
                }
            }
        }
        g.saved.push(*s);
    }
    if node.saved.iter().any(|s| matches!(s, Saved::Data(_))) {
        it.heap.incref(Value::Obj(n));
        g.inputs.push(InputEdge {
            node: Some(n),
            input_nr: incoming.output_nr,
            shape: incoming.shape.clone(),
            dtype: incoming.dtype,
            device: incoming.device,
        });
    }
    it.heap.insert(ObjKind::GradNode(Box::new(g)))
}

pub(super) fn release_saved(it: &mut Interpreter<'_>, saved: Vec<Saved>) {
    for s in saved {
        match s {
            Saved::Tensor(t) => it.heap.decref_id(t),
            Saved::Data(st) => it.heap.dropped_storage_refs.push(st),
            Saved::Packed { data, pack, unpack } => it.heap.decref_all([data, pack, unpack]),
        }
    }
}
