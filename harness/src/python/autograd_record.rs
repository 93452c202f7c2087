//! Recording autograd graphs as ops run: a node per op from its operands, with the edges
//! to their histories and what the op's row of `torch::OP_RULES` saves (the engine that runs
//! them is `autograd.rs`).

use super::interp::Interpreter;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{GradFlow, GradNode, InputEdge, Save, Saved, StorageId};

pub(super) fn tensor<'i>(
    it: &'i Interpreter<'_>,
    v: Value,
) -> Option<&'i crate::torch::TensorData> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tensor(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

pub(super) fn requires_grad(it: &Interpreter<'_>, v: Value) -> bool {
    tensor(it, v).is_some_and(|t| t.requires_grad)
}

/// The edge through which a gradient reaches `v`: its `grad_fn`, or the leaf's
/// `AccumulateGrad` (shared while alive, a new reference), or `None`.
pub(super) fn edge_to(it: &mut Interpreter<'_>, v: Value) -> Option<InputEdge> {
    let t = tensor(it, v)?.clone();
    let node = if !t.requires_grad {
        None
    } else if let Some(n) = t.grad_fn {
        it.heap.incref(Value::Obj(n));
        Some(n)
    } else {
        let Value::Obj(leaf) = v else { return None };
        Some(it.grad_accumulator(leaf))
    };
    let input_nr = if t.grad_fn.is_some() { t.output_nr } else { 0 };
    Some(InputEdge {
        node,
        input_nr,
        shape: t.shape,
        dtype: t.dtype,
        device: t.device,
    })
}

/// Attaches a graph node to the freshly created `output` of an op over `inputs` when grad
/// mode is on and an input requires grad. `output` is a new tensor owned by the caller.
pub(super) fn record(
    it: &mut Interpreter<'_>,
    output: Value,
    name: &'static str,
    flow: GradFlow,
    inputs: &[Value],
    saves: &[Save],
) {
    if !it.grad_enabled || !inputs.iter().any(|&v| requires_grad(it, v)) {
        return;
    }
    let Value::Obj(out) = output else { return };
    let node = build_node(it, name, flow, inputs, saves, Some(out));
    set_history(it, out, node);
}

/// The autograd table's row of `op` (`torch::OP_RULES`): every op the model records has
/// one, so a missing row is a bug of the model, caught by its tests.
pub(super) fn row(op: &str) -> &'static crate::torch::OpRule {
    crate::torch::op_rule(op).unwrap_or_else(|| panic!("{op} is not a row of the autograd table"))
}

/// [`record`] with what the row of `op` says.
pub(super) fn record_op(it: &mut Interpreter<'_>, output: Value, op: &str, inputs: &[Value]) {
    let r = row(op);
    record(it, output, r.node, r.flow, inputs, r.saves);
}

/// A new graph node (one reference) with an edge per tensor of `inputs` and what `saves`
/// asks for, `Save::Output` being `output`'s data. Each saved tensor's version is noted so
/// that backward can refuse one overwritten in place since.
pub(super) fn build_node(
    it: &mut Interpreter<'_>,
    name: &'static str,
    flow: GradFlow,
    inputs: &[Value],
    saves: &[Save],
    output: Option<ObjId>,
) -> ObjId {
    let outputs = Outputs {
        first: output,
        rest: &[],
    };
    build_node_with_results(it, name, flow, (inputs, inputs.len()), saves, outputs)
}

/// The results of an op as a node saves them: the first (a tensor object) and the storages
/// of results 1, 2, ... (statistics, a mask, indices: no Python object).
#[derive(Clone, Copy)]
pub(super) struct Outputs<'a> {
    pub first: Option<ObjId>,
    pub rest: &'a [StorageId],
}

/// [`build_node`] for a multi-output op whose first `differentiable` operands get edges
/// (the others are only read, like batch norm's running statistics): `Save::Result(k)`
/// saves `outputs.rest[k - 1]` as data (a new storage reference; the caller keeps its
/// own). A result the op did not produce (batch norm's empty eval statistics) is absent.
pub(super) fn build_node_with_results(
    it: &mut Interpreter<'_>,
    name: &'static str,
    flow: GradFlow,
    (inputs, differentiable): (&[Value], usize),
    saves: &[Save],
    outputs: Outputs<'_>,
) -> ObjId {
    let (output, results) = (outputs.first, outputs.rest);
    let mut node = GradNode::new(name, flow);
    for &v in inputs.iter().take(differentiable) {
        if let Some(e) = edge_to(it, v) {
            node.inputs.push(e);
        }
    }
    let needs_grad =
        |it: &Interpreter<'_>, c: usize| inputs.get(c).is_some_and(|&v| requires_grad(it, v));
    for s in saves {
        let index = match *s {
            Save::Input(i) => Some(i),
            Save::InputIf(i, c) if needs_grad(it, c) => Some(i),
            Save::InputIfAny(i, cs) if cs.iter().any(|&c| needs_grad(it, c)) => Some(i),
            Save::InputIf(..) | Save::InputIfAny(..) => continue,
            Save::Output | Save::Result(0) => None,
            Save::Result(k) => {
                let Some(&st) = results.get(k - 1) else {
                    continue;
                };
                node.saved_versions
                    .push((node.saved.len(), it.storages.version(st)));
                it.storages.add_ref(st);
                node.saved.push(Saved::Data(st));
                continue;
            }
        };
        let saved_tensor = match index {
            Some(i) => inputs.get(i).copied(),
            None => output.map(Value::Obj),
        };
        let Some(t) = saved_tensor.and_then(|v| tensor(it, v).map(|t| t.storage)) else {
            continue;
        };
        let version = it.storages.version(t);
        node.saved_versions.push((node.saved.len(), version));
        match (index, saved_tensor) {
            (Some(_), Some(Value::Obj(id))) => {
                it.heap.incref(Value::Obj(id));
                node.saved.push(Saved::Tensor(id));
            }
            _ => {
                it.storages.add_ref(t);
                node.saved.push(Saved::Data(t));
            }
        }
    }
    it.pack_saved(&mut node, output);
    it.heap.insert(ObjKind::GradNode(Box::new(node)))
}

/// Makes `node` the `grad_fn` of tensor `out` (taking over the node reference).
pub(super) fn set_history(it: &mut Interpreter<'_>, out: ObjId, node: ObjId) {
    set_history_at(it, out, node, 0);
}

/// Makes `out` output `output_nr` of `node` (taking over the node reference).
pub(super) fn set_history_at(it: &mut Interpreter<'_>, out: ObjId, node: ObjId, output_nr: u32) {
    let old = match it.heap.kind_mut(out) {
        ObjKind::Tensor(t) => {
            t.requires_grad = true;
            t.output_nr = output_nr;
            t.grad_fn.replace(node)
        }
        _ => Some(node),
    };
    if let Some(old) = old {
        it.heap.decref_id(old);
    }
}

/// Inserts a graph node built by an op (it owns `inputs`' node references and `saved`'s
/// references); returns one reference to it.
pub(super) fn new_node(
    it: &mut Interpreter<'_>,
    name: &'static str,
    flow: GradFlow,
    inputs: Vec<InputEdge>,
    saved: Vec<Saved>,
) -> ObjId {
    let mut node = GradNode::new(name, flow);
    node.inputs = inputs;
    node.saved = saved;
    it.pack_saved(&mut node, None);
    it.heap.insert(ObjKind::GradNode(Box::new(node)))
}
