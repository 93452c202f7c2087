//! Recording autograd graphs as ops run, and running backward, for memory.
//!
//! The node kinds and the table of what each op saves are in [`crate::torch::GradNode`]'s
//! module. Here: building nodes from an op's operands and the engine that walks a graph in
//! dependency order allocating and freeing gradient buffers as PyTorch's engine does. A
//! leaf's `AccumulateGrad` is in `grad_accumulator.rs`, a custom Function's backward in
//! `custom_function.rs`, tensors internal to an op in `autograd_internal.rs`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype, GradFlow, GradNode, InputEdge, Saved, StorageId};
use rustc_hash::FxHashMap;

pub(super) use super::autograd_internal::Internal;
pub(super) use crate::torch::Save;

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

/// A gradient flowing through the engine: a storage reference with its metadata and, with
/// `create_graph=True`, the `grad_fn` of the gradient itself (one node reference).
#[derive(Debug, Clone)]
pub(super) struct GradBuffer {
    pub storage: StorageId,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
    pub node: Option<ObjId>,
    /// Which output of `node` the gradient is (its `output_nr`): a gradient that is one
    /// output of a multi-output node (a module's backward-hook node) keeps its slot when
    /// its graph is back-propagated.
    pub output_nr: u32,
}

type Buffer = GradBuffer;

impl GradBuffer {
    /// Drops its storage and node references.
    pub(super) fn release(self, it: &mut Interpreter<'_>) {
        drop_buffer(it, self);
    }
}

/// Drops a buffer's storage and node references.
pub(super) fn drop_buffer(it: &mut Interpreter<'_>, b: Buffer) {
    it.heap.dropped_storage_refs.push(b.storage);
    if let Some(n) = b.node {
        it.heap.decref_id(n);
    }
}

/// How a backward call treats leaves.
pub(super) struct BackwardOptions {
    pub retain_graph: bool,
    /// The gradients get graphs of their own: the engine runs in grad mode and each node's
    /// backward records what it computes (PyTorch's double backward).
    pub create_graph: bool,
    /// `True` for `backward()`; `False` for `autograd.grad`, which returns the gradients
    /// of `inputs` instead.
    pub accumulate: bool,
    /// With `accumulate`, only these leaves get `.grad` (`inputs=`); empty means all.
    pub inputs: Vec<ObjId>,
}

/// PyTorch's warning for `backward(create_graph=True)`, printed once per process.
const CREATE_GRAPH_WARNING: &str = "UserWarning: Using backward() with create_graph=True will create a reference cycle between the parameter and its gradient which can cause a memory leak. We recommend using autograd.grad when creating the graph to avoid this. If you have to use this function, make sure to reset the .grad fields of your parameters to None after use to break the cycle and avoid the leak.";

/// Runs backward from `roots` with optional explicit gradients (tensor objects, borrowed).
/// Returns the captured gradients of `options.inputs` (new references) for
/// `autograd.grad`.
pub(super) fn run_backward(
    it: &mut Interpreter<'_>,
    roots: &[ObjId],
    grads: &[Value],
    options: &BackwardOptions,
) -> R<Vec<Value>> {
    if options.create_graph && options.accumulate && !it.torch_classes.create_graph_warned {
        it.torch_classes.create_graph_warned = true;
        it.recorder.approximation(format!(
            "PyTorch warns (once per process): {CREATE_GRAPH_WARNING}"
        ));
    }
    let was = std::mem::replace(&mut it.grad_enabled, options.create_graph);
    let result = run_graph(it, roots, grads, options);
    it.grad_enabled = was;
    result
}

fn run_graph(
    it: &mut Interpreter<'_>,
    roots: &[ObjId],
    grads: &[Value],
    options: &BackwardOptions,
) -> R<Vec<Value>> {
    let mut buffers: FxHashMap<ObjId, Slots> = FxHashMap::default();
    let mut root_nodes = Vec::new();
    let mut captured: FxHashMap<ObjId, Buffer> = FxHashMap::default();
    for (i, &root) in roots.iter().enumerate() {
        let Some(t) = tensor(it, Value::Obj(root)).cloned() else {
            return it.error("TypeError: backward expects tensors");
        };
        if !t.requires_grad {
            return it.error(format!(
                "RuntimeError: element {i} of tensors does not require grad and does not have a grad_fn"
            ));
        }
        let buffer = match grads.get(i).copied().and_then(|g| tensor(it, g).cloned()) {
            Some(g) => {
                it.storages.add_ref(g.storage);
                let node = g.grad_fn.filter(|_| options.create_graph);
                if let Some(n) = node {
                    it.heap.incref(Value::Obj(n));
                }
                Buffer {
                    storage: g.storage,
                    shape: g.shape,
                    dtype: g.dtype,
                    device: g.device,
                    node,
                    output_nr: g.output_nr,
                }
            }
            None => {
                if t.numel() != 1 {
                    return it.error(
                        "RuntimeError: grad can be implicitly created only for scalar outputs",
                    );
                }
                let storage = it.new_storage(&t.shape, t.dtype, t.device, Category::Temporary)?;
                Buffer {
                    storage,
                    shape: t.shape.clone(),
                    dtype: t.dtype,
                    device: t.device,
                    node: None,
                    output_nr: 0,
                }
            }
        };
        match t.grad_fn {
            Some(node) => {
                add_to_buffer(it, &mut buffers, (node, t.output_nr), buffer, options);
                root_nodes.push(node);
            }
            None => {
                super::grad_accumulator::deliver_to_leaf(it, root, buffer, options, &mut captured)?
            }
        }
    }
    // Dependencies: how many edges of the reachable graph point at each node.
    let mut dependencies: FxHashMap<ObjId, u32> = FxHashMap::default();
    let mut seen: FxHashMap<ObjId, ()> = FxHashMap::default();
    let mut stack = root_nodes.clone();
    while let Some(n) = stack.pop() {
        if seen.insert(n, ()).is_some() {
            continue;
        }
        if let ObjKind::GradNode(node) = it.heap.kind(n) {
            for e in &node.inputs {
                if let Some(next) = e.node {
                    *dependencies.entry(next).or_default() += 1;
                    stack.push(next);
                }
            }
        }
    }
    let mut ready: Vec<ObjId> = Vec::new();
    for &n in &root_nodes {
        if dependencies.get(&n).copied().unwrap_or(0) == 0 && !ready.contains(&n) {
            ready.push(n);
        }
    }
    // Keep every node of this pass alive while it runs (the engine's graph task does).
    for &n in seen.keys() {
        it.heap.incref(Value::Obj(n));
    }
    let result: R<()> = (|| {
        while let Some(n) = ready.pop() {
            let incoming = buffers.remove(&n);
            let next_edges = execute(it, n, incoming, options, &mut captured)?;
            for (next, buffer) in next_edges {
                add_to_buffer(it, &mut buffers, next, buffer, options);
            }
            // Every edge counts as delivered, with a gradient or without one (PyTorch's
            // undefined gradient), so the nodes after it still run.
            let next_nodes: Vec<ObjId> = match it.heap.kind(n) {
                ObjKind::GradNode(node) => node.inputs.iter().filter_map(|e| e.node).collect(),
                _ => Vec::new(),
            };
            for next in next_nodes {
                let d = dependencies.entry(next).or_default();
                *d = d.saturating_sub(1);
                if *d == 0 {
                    ready.push(next);
                }
            }
        }
        Ok(())
    })();
    let mut nodes: Vec<ObjId> = seen.into_keys().collect();
    nodes.sort();
    for n in nodes {
        it.heap.decref_id(n);
    }
    let mut left: Vec<(ObjId, Slots)> = buffers.drain().collect();
    left.sort_by_key(|(n, _)| *n);
    for b in left.into_iter().flat_map(|(_, slots)| slots).flatten() {
        drop_buffer(it, b);
    }
    if let Err(e) = result {
        for (_, b) in captured.drain() {
            drop_buffer(it, b);
        }
        return Err(e);
    }
    let mut out = Vec::new();
    if options.accumulate {
        for (_, b) in captured.drain() {
            drop_buffer(it, b);
        }
        return Ok(out);
    }
    for input in &options.inputs {
        match captured.remove(input) {
            Some(b) => {
                let v = it.new_tensor_as(
                    b.shape.clone(),
                    b.dtype,
                    b.device,
                    Some((b.storage, None)),
                    Category::Gradient,
                )?;
                it.heap.dropped_storage_refs.push(b.storage);
                if let (Some(n), Value::Obj(g)) = (b.node, v) {
                    set_history_at(it, g, n, b.output_nr);
                }
                out.push(v);
            }
            None => out.push(Value::None),
        }
    }
    let mut left: Vec<(ObjId, Buffer)> = captured.drain().collect();
    left.sort_by_key(|(n, _)| *n);
    for (_, b) in left {
        drop_buffer(it, b);
    }
    Ok(out)
}

/// A new node (one reference) over the given gradient nodes (their references handed over).
pub(super) fn sum_node(
    it: &mut Interpreter<'_>,
    a: &Buffer,
    nodes: [(Option<ObjId>, u32); 2],
) -> ObjId {
    let mut node = GradNode::new(row("add").node, GradFlow::PassThrough);
    for (n, input_nr) in nodes {
        node.inputs.push(InputEdge {
            node: n,
            input_nr,
            shape: a.shape.clone(),
            dtype: a.dtype,
            device: a.device,
        });
    }
    it.heap.insert(ObjKind::GradNode(Box::new(node)))
}

/// A node's pending gradients, one per output slot (PyTorch's `InputBuffer`); a node with
/// one output has one slot.
type Slots = Vec<Option<Buffer>>;

/// Where a gradient goes: a node and the output slot it fills (an edge's `input_nr`).
pub(super) type Target = (ObjId, u32);

/// The engine's `InputBuffer::add`: a second gradient for the same slot of a node is summed
/// into the first in place and its own buffer freed. With `create_graph` the sum is recorded.
fn add_to_buffer(
    it: &mut Interpreter<'_>,
    buffers: &mut FxHashMap<ObjId, Slots>,
    (node, input_nr): Target,
    buffer: Buffer,
    options: &BackwardOptions,
) {
    // Only a module's `BackwardHookFunctionBackward` has several outputs in the model; any
    // other node's slot is 0 (whatever output number a copied tensor carried).
    let several_outputs =
        matches!(it.heap.kind(node), ObjKind::GradNode(g) if g.module_hook.is_some());
    let k = if several_outputs {
        input_nr as usize
    } else {
        0
    };
    let slots = buffers.entry(node).or_default();
    if slots.len() <= k {
        slots.resize(k + 1, None);
    }
    match &mut slots[k] {
        Some(first) => {
            if options.create_graph && (first.node.is_some() || buffer.node.is_some()) {
                let taken = first.node.take();
                let sum = sum_node(
                    it,
                    first,
                    [(taken, first.output_nr), (buffer.node, buffer.output_nr)],
                );
                first.node = Some(sum);
                first.output_nr = 0;
                it.heap.dropped_storage_refs.push(buffer.storage);
            } else {
                drop_buffer(it, buffer);
            }
        }
        empty => *empty = Some(buffer),
    }
}

/// The first saved tensor whose version counter moved since it was saved: PyTorch's
/// "modified by an inplace operation" error.
fn check_versions(it: &Interpreter<'_>, node: &GradNode) -> R<()> {
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

/// Runs one node; returns the gradients for its next nodes.
fn execute(
    it: &mut Interpreter<'_>,
    n: ObjId,
    incoming: Option<Slots>,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<Vec<(Target, Buffer)>> {
    let ObjKind::GradNode(node) = it.heap.kind(n) else {
        return Ok(Vec::new());
    };
    let node = (**node).clone();
    let Some(mut slots) = incoming else {
        return Ok(Vec::new());
    };
    // Tensor pre-hooks of the tensors this node produced (`register_hook` on a non-leaf),
    // each on the slot of its own output.
    for &(dict, output_nr) in &node.hook_dicts {
        if let Some(slot) = slots.get_mut(output_nr as usize)
            && let Some(b) = slot.take()
        {
            *slot = Some(it.run_tensor_hooks(dict, b, options.create_graph)?);
        }
    }
    // A module's `BackwardHookFunctionBackward`: identity per slot, with the module's
    // full backward (pre-)hooks around it.
    if node.module_hook.is_some() {
        return it.run_module_hook_node(&node, slots, options.create_graph);
    }
    // Every other node of the model has one output.
    let mut slots = slots.into_iter();
    let first = slots.next().flatten();
    for b in slots.flatten() {
        drop_buffer(it, b);
    }
    let Some(incoming) = first else {
        return Ok(Vec::new());
    };
    if node.name == "NotImplemented" {
        // The only op the model gives this node is `floor_divide` (python/ops_more.rs).
        drop_buffer(it, incoming);
        return it.error("RuntimeError: derivative for floor_divide is not implemented");
    }
    // A node that saved tensors cannot run after they were released; one that saved only
    // sizes can (a custom Function's check is `ctx.saved_tensors`).
    if node.released && node.had_saved && node.flow != GradFlow::Python {
        drop_buffer(it, incoming);
        return it.error(format!(
            "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph ({}) are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time.",
            node.name
        ));
    }
    if let Err(e) = check_versions(it, &node) {
        drop_buffer(it, incoming);
        return Err(e);
    }
    let mut out = Vec::new();
    match node.flow {
        GradFlow::Accumulate => {
            if let Some(leaf) = node.leaf {
                super::grad_accumulator::deliver_to_leaf(it, leaf, incoming, options, captured)?;
            } else {
                drop_buffer(it, incoming);
            }
        }
        GradFlow::PassThrough | GradFlow::Split => {
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                let shares = node.flow == GradFlow::Split
                    || (crate::torch::numel(&e.shape) == crate::torch::numel(&incoming.shape)
                        && e.dtype == incoming.dtype);
                let mut b = if shares {
                    it.storages.add_ref(incoming.storage);
                    reshaped(&incoming, e)
                } else {
                    let storage =
                        it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary)?;
                    buffer_for(storage, e)
                };
                if let Some(g) = incoming.node {
                    it.heap.incref(Value::Obj(g));
                    b.node = Some(g);
                    b.output_nr = incoming.output_nr;
                }
                out.push(((next, e.input_nr), b));
            }
            drop_buffer(it, incoming);
        }
        GradFlow::Compute => {
            // Tensors saved through `saved_tensors_hooks` come back from `unpack` for the
            // node's run and die after it.
            let unpacked = match it.unpack_saved(&node) {
                Ok(u) => u,
                Err(e) => {
                    drop_buffer(it, incoming);
                    return Err(e);
                }
            };
            // `CopySlices` calls its `fn` on a contiguous clone of the gradient's slice and
            // copies `fn`'s gradient for the view back into that slice: two view-sized
            // temporaries while its outputs are allocated.
            let slice_temporaries = match copy_slices_view(it, &node) {
                Ok(t) => t,
                Err(e) => {
                    drop_buffer(it, incoming);
                    return Err(e);
                }
            };
            let graph = if options.create_graph {
                Some(double_backward_node(it, n, &node, &incoming))
            } else {
                None
            };
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                let storage = it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary)?;
                let mut b = buffer_for(storage, e);
                if let Some(g) = graph {
                    it.heap.incref(Value::Obj(g));
                    b.node = Some(g);
                }
                out.push(((next, e.input_nr), b));
            }
            if let Some(g) = graph {
                it.heap.decref_id(g);
            }
            for st in slice_temporaries {
                it.heap.dropped_storage_refs.push(st);
            }
            it.heap.decref_all(unpacked);
            drop_buffer(it, incoming);
        }
        GradFlow::Python => {
            out = super::custom_function::python_backward(it, &node, incoming, options)?;
        }
        GradFlow::Recompute => {
            let grad = it.new_tensor_as(
                incoming.shape.clone(),
                incoming.dtype,
                incoming.device,
                Some((incoming.storage, None)),
                Category::Temporary,
            )?;
            it.heap.dropped_storage_refs.push(incoming.storage);
            let grads = it.checkpoint_recompute(&node, grad)?;
            for (e, g) in node.inputs.iter().zip(grads) {
                match (e.node, g) {
                    (Some(next), Some(storage)) => out.push((
                        (next, e.input_nr),
                        Buffer {
                            storage,
                            shape: e.shape.clone(),
                            dtype: e.dtype,
                            device: e.device,
                            node: None,
                            output_nr: 0,
                        },
                    )),
                    (None, Some(storage)) => it.heap.dropped_storage_refs.push(storage),
                    _ => {}
                }
            }
        }
    }
    let retain = options.retain_graph || options.create_graph;
    if !retain && node.flow != GradFlow::Accumulate {
        let (saved, wrapped) = match it.heap.kind_mut(n) {
            ObjKind::GradNode(node) => (node.take_saved(), node.wrapped.take()),
            _ => (Vec::new(), None),
        };
        release_saved(it, saved);
        // `CopySlices::release_variables` drops `fn`, and with it what `fn` saved.
        if let Some(w) = wrapped {
            it.heap.decref_id(w);
        }
    }
    Ok(out)
}

/// For a `CopySlices` node, checks what its `fn` saved (the version check of `fn`'s own
/// unpacking) and allocates the clone of the gradient's slice it is called on and `fn`'s
/// gradient for the view; nothing for other nodes.
fn copy_slices_view(it: &mut Interpreter<'_>, node: &GradNode) -> R<Vec<StorageId>> {
    let Some(w) = node.wrapped else {
        return Ok(Vec::new());
    };
    let ObjKind::GradNode(f) = it.heap.kind(w) else {
        return Ok(Vec::new());
    };
    let f = (**f).clone();
    check_versions(it, &f)?;
    let Some(view) = f.inputs.first() else {
        return Ok(Vec::new());
    };
    let mut temporaries = Vec::new();
    for _ in 0..2 {
        match it.new_storage(&view.shape, view.dtype, view.device, Category::Temporary) {
            Ok(st) => temporaries.push(st),
            Err(e) => {
                it.heap.dropped_storage_refs.extend(temporaries);
                return Err(e);
            }
        }
    }
    Ok(temporaries)
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
fn double_backward_node(
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

fn buffer_for(storage: StorageId, e: &InputEdge) -> Buffer {
    Buffer {
        storage,
        shape: e.shape.clone(),
        dtype: e.dtype,
        device: e.device,
        node: None,
        output_nr: 0,
    }
}

fn reshaped(b: &Buffer, e: &InputEdge) -> Buffer {
    Buffer {
        storage: b.storage,
        shape: e.shape.clone(),
        dtype: b.dtype,
        device: b.device,
        node: None,
        output_nr: 0,
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
