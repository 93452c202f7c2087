//! Recording autograd graphs as ops run, and running backward, for memory.
//!
//! The node kinds and the table of what each op saves are in [`crate::torch::GradNode`]'s
//! module. Here: building nodes from an op's operands, the engine that walks a graph in
//! dependency order allocating and freeing gradient buffers as PyTorch's engine does, and
//! custom `autograd.Function`s whose `ctx` is a Python object the collector sees.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype, GradFlow, GradNode, InputEdge, Saved, StorageId};
use rustc_hash::FxHashMap;

/// What an op saves: one of its operands or its output, optionally only when another
/// operand requires grad (the generated code's `should_compute_output`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Save {
    Input(usize),
    InputIf(usize, usize),
    Output,
}

fn tensor<'i>(it: &'i Interpreter<'_>, v: Value) -> Option<&'i crate::torch::TensorData> {
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

/// The edge through which a gradient reaches `v`: its `grad_fn`, or a new
/// `AccumulateGrad` holding the leaf (a new reference), or `None`.
fn edge_to(it: &mut Interpreter<'_>, v: Value) -> Option<InputEdge> {
    let t = tensor(it, v)?.clone();
    let node = if !t.requires_grad {
        None
    } else if let Some(n) = t.grad_fn {
        it.heap.incref(Value::Obj(n));
        Some(n)
    } else {
        let Value::Obj(leaf) = v else { return None };
        it.heap.incref(v);
        let mut acc = GradNode::new("AccumulateGrad", GradFlow::Accumulate);
        acc.leaf = Some(leaf);
        Some(it.heap.insert(ObjKind::GradNode(Box::new(acc))))
    };
    Some(InputEdge {
        node,
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
    let mut node = GradNode::new(name, flow);
    for &v in inputs {
        if let Some(e) = edge_to(it, v) {
            node.inputs.push(e);
        }
    }
    for s in saves {
        let (index, condition) = match *s {
            Save::Input(i) => (Some(i), None),
            Save::InputIf(i, c) => (Some(i), Some(c)),
            Save::Output => (None, None),
        };
        if let Some(c) = condition
            && !inputs.get(c).is_some_and(|&v| requires_grad(it, v))
        {
            continue;
        }
        match index {
            Some(i) => {
                if let Some(&Value::Obj(t)) = inputs.get(i)
                    && tensor(it, Value::Obj(t)).is_some()
                {
                    it.heap.incref(Value::Obj(t));
                    node.saved.push(Saved::Tensor(t));
                }
            }
            None => {
                if let Some(t) = tensor(it, output) {
                    let st = t.storage;
                    it.storages.add_ref(st);
                    node.saved.push(Saved::Data(st));
                }
            }
        }
    }
    let node = it.heap.insert(ObjKind::GradNode(Box::new(node)));
    set_history(it, out, node);
}

/// Makes `node` the `grad_fn` of tensor `out` (taking over the node reference).
pub(super) fn set_history(it: &mut Interpreter<'_>, out: ObjId, node: ObjId) {
    let old = match it.heap.kind_mut(out) {
        ObjKind::Tensor(t) => {
            t.requires_grad = true;
            t.grad_fn.replace(node)
        }
        _ => Some(node),
    };
    if let Some(old) = old {
        it.heap.decref_id(old);
    }
}

/// A gradient flowing through the engine: a storage reference with its metadata.
#[derive(Debug, Clone)]
struct Buffer {
    storage: StorageId,
    shape: Vec<i64>,
    dtype: Dtype,
    device: DeviceKind,
}

/// How a backward call treats leaves.
pub(super) struct BackwardOptions {
    pub retain_graph: bool,
    /// `True` for `backward()`; `False` for `autograd.grad`, which returns the gradients
    /// of `inputs` instead.
    pub accumulate: bool,
    pub inputs: Vec<ObjId>,
}

/// Runs backward from `roots` with optional explicit gradients (tensor objects, borrowed).
/// Returns the captured gradients of `options.inputs` (new references) for
/// `autograd.grad`.
pub(super) fn run_backward(
    it: &mut Interpreter<'_>,
    roots: &[ObjId],
    grads: &[Value],
    options: &BackwardOptions,
) -> R<Vec<Value>> {
    let mut buffers: FxHashMap<ObjId, Buffer> = FxHashMap::default();
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
                Buffer {
                    storage: g.storage,
                    shape: g.shape,
                    dtype: g.dtype,
                    device: g.device,
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
                }
            }
        };
        match t.grad_fn {
            Some(node) => {
                add_to_buffer(it, &mut buffers, node, buffer);
                root_nodes.push(node);
            }
            None => deliver_to_leaf(it, root, buffer, options, &mut captured)?,
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
                add_to_buffer(it, &mut buffers, next, buffer);
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
    for (_, b) in buffers.drain() {
        it.heap.dropped_storage_refs.push(b.storage);
    }
    result?;
    let mut out = Vec::new();
    for input in &options.inputs {
        match captured.remove(input) {
            Some(b) => {
                let v = it.new_tensor_as(
                    b.shape,
                    b.dtype,
                    b.device,
                    Some((b.storage, None)),
                    Category::Gradient,
                )?;
                it.heap.dropped_storage_refs.push(b.storage);
                out.push(v);
            }
            None => out.push(Value::None),
        }
    }
    for (_, b) in captured.drain() {
        it.heap.dropped_storage_refs.push(b.storage);
    }
    Ok(out)
}

/// The engine's `InputBuffer::add`: a second gradient for the same node is summed into
/// the first in place and its own buffer freed.
fn add_to_buffer(
    it: &mut Interpreter<'_>,
    buffers: &mut FxHashMap<ObjId, Buffer>,
    node: ObjId,
    buffer: Buffer,
) {
    match buffers.entry(node) {
        std::collections::hash_map::Entry::Occupied(_) => {
            it.heap.dropped_storage_refs.push(buffer.storage)
        }
        std::collections::hash_map::Entry::Vacant(slot) => {
            slot.insert(buffer);
        }
    }
}

/// Runs one node; returns the gradients for its next nodes.
fn execute(
    it: &mut Interpreter<'_>,
    n: ObjId,
    incoming: Option<Buffer>,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<Vec<(ObjId, Buffer)>> {
    let ObjKind::GradNode(node) = it.heap.kind(n) else {
        return Ok(Vec::new());
    };
    let node = (**node).clone();
    let Some(incoming) = incoming else {
        return Ok(Vec::new());
    };
    let saves_nothing = matches!(
        node.flow,
        GradFlow::Accumulate | GradFlow::PassThrough | GradFlow::Split
    );
    if node.released && !saves_nothing {
        it.heap.dropped_storage_refs.push(incoming.storage);
        return it.error(format!(
            "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph ({}) are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time.",
            node.name
        ));
    }
    let mut out = Vec::new();
    match node.flow {
        GradFlow::Accumulate => {
            if let Some(leaf) = node.leaf {
                deliver_to_leaf(it, leaf, incoming, options, captured)?;
            }
        }
        GradFlow::PassThrough => {
            let mut shared = false;
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                if crate::torch::numel(&e.shape) == crate::torch::numel(&incoming.shape)
                    && e.dtype == incoming.dtype
                {
                    it.storages.add_ref(incoming.storage);
                    shared = true;
                    out.push((next, reshaped(&incoming, e)));
                } else {
                    let storage =
                        it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary)?;
                    out.push((next, buffer_for(storage, e)));
                }
            }
            let _ = shared;
            it.heap.dropped_storage_refs.push(incoming.storage);
        }
        GradFlow::Split => {
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                it.storages.add_ref(incoming.storage);
                out.push((next, reshaped(&incoming, e)));
            }
            it.heap.dropped_storage_refs.push(incoming.storage);
        }
        GradFlow::Compute => {
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                let storage = it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary)?;
                out.push((next, buffer_for(storage, e)));
            }
            it.heap.dropped_storage_refs.push(incoming.storage);
        }
        GradFlow::Python => {
            out = python_backward(it, &node, incoming)?;
        }
    }
    if !options.retain_graph && node.flow != GradFlow::Accumulate {
        let saved = match it.heap.kind_mut(n) {
            ObjKind::GradNode(node) => node.take_saved(),
            _ => Vec::new(),
        };
        release_saved(it, saved);
    }
    Ok(out)
}

pub(super) fn release_saved(it: &mut Interpreter<'_>, saved: Vec<Saved>) {
    for s in saved {
        match s {
            Saved::Tensor(t) => it.heap.decref_id(t),
            Saved::Data(st) => it.heap.dropped_storage_refs.push(st),
        }
    }
}

fn buffer_for(storage: StorageId, e: &InputEdge) -> Buffer {
    Buffer {
        storage,
        shape: e.shape.clone(),
        dtype: e.dtype,
        device: e.device,
    }
}

fn reshaped(b: &Buffer, e: &InputEdge) -> Buffer {
    Buffer {
        storage: b.storage,
        shape: e.shape.clone(),
        dtype: b.dtype,
        device: b.device,
    }
}

/// `AccumulateGrad`: the first gradient becomes `.grad` (stolen when nothing else holds
/// it, else copied); later ones are added in place, so `.grad` is allocated once.
fn deliver_to_leaf(
    it: &mut Interpreter<'_>,
    leaf: ObjId,
    buffer: Buffer,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<()> {
    if !options.accumulate {
        if options.inputs.contains(&leaf) && !captured.contains_key(&leaf) {
            captured.insert(leaf, buffer);
        } else {
            it.heap.dropped_storage_refs.push(buffer.storage);
        }
        return Ok(());
    }
    let Some(t) = tensor(it, Value::Obj(leaf)).cloned() else {
        it.heap.dropped_storage_refs.push(buffer.storage);
        return Ok(());
    };
    if t.grad.is_some() {
        it.heap.dropped_storage_refs.push(buffer.storage);
        return Ok(());
    }
    let stealable = it.storages.get(buffer.storage).refs == 1;
    let storage = if stealable {
        buffer.storage
    } else {
        it.heap.dropped_storage_refs.push(buffer.storage);
        it.new_storage(&t.shape, t.dtype, t.device, Category::Gradient)?
    };
    let relabel = it.storages.get(storage);
    if relabel.category != Category::Gradient
        && let Some(addr) = relabel.addr
    {
        // The timeline's alloc event said what the buffer was when allocated.
        it.recorder.relabel_allocation(addr, Category::Gradient);
    }
    it.storages.set_category(storage, Category::Gradient);
    let g = it.new_tensor_as(
        t.shape,
        t.dtype,
        t.device,
        Some((storage, None)),
        Category::Gradient,
    )?;
    // `new_tensor_as` took its own storage reference; the buffer's is handed over.
    it.heap.dropped_storage_refs.push(storage);
    let old = match it.heap.kind_mut(leaf) {
        ObjKind::Tensor(t) => t.grad.replace(g.obj().unwrap_or(leaf)),
        _ => None,
    };
    if let Some(old) = old {
        it.heap.decref_id(old);
    }
    Ok(())
}

/// A custom Function's backward: the gradient is wrapped in a tensor object, the Python
/// `backward(ctx, *grads)` runs, and what it returns flows to the inputs.
fn python_backward(
    it: &mut Interpreter<'_>,
    node: &GradNode,
    incoming: Buffer,
) -> R<Vec<(ObjId, Buffer)>> {
    let Some(ctx) = node.ctx else {
        return Ok(Vec::new());
    };
    let grad = it.new_tensor_as(
        incoming.shape.clone(),
        incoming.dtype,
        incoming.device,
        Some((incoming.storage, None)),
        Category::Temporary,
    )?;
    it.heap.dropped_storage_refs.push(incoming.storage);
    let backward = it.custom_function_method(ctx, "backward")?;
    it.heap.incref(Value::Obj(ctx));
    let result = it.call(backward, vec![Value::Obj(ctx), grad], Vec::new());
    it.heap.decref(backward);
    let result = result?;
    let items: Vec<Value> = match result {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tuple(items) => items.clone(),
            _ => vec![result],
        },
        other => vec![other],
    };
    let mut out = Vec::new();
    // Gradients returned for non-tensor arguments (`None`) have no edge.
    let mut edges = node.inputs.iter();
    for item in items {
        let Some(t) = tensor(it, item).cloned() else {
            continue;
        };
        let Some(e) = edges.next() else { break };
        if let Some(next) = e.node {
            it.storages.add_ref(t.storage);
            out.push((
                next,
                Buffer {
                    storage: t.storage,
                    shape: e.shape.clone(),
                    dtype: t.dtype,
                    device: t.device,
                },
            ));
        }
    }
    it.heap.decref(result);
    Ok(out)
}

/// A tensor that lives only inside an op's C++ code and never gets a Python object (the
/// gates of a recurrent cell, the log-softmax inside `cross_entropy`). It owns one
/// storage reference and one reference to its `grad_fn`, if any.
#[derive(Debug, Clone)]
pub(super) struct Internal {
    pub storage: StorageId,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
    pub node: Option<ObjId>,
}

impl Internal {
    /// A new storage of `shape`.
    pub(super) fn new(
        it: &mut Interpreter<'_>,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
        category: Category,
    ) -> R<Internal> {
        let storage = it.new_storage(&shape, dtype, device, category)?;
        Ok(Internal {
            storage,
            shape,
            dtype,
            device,
            node: None,
        })
    }

    /// The C++ side of a Python tensor: its storage and the edge a gradient takes to it.
    pub(super) fn of(it: &mut Interpreter<'_>, v: Value) -> Option<Internal> {
        let t = tensor(it, v)?.clone();
        let node = edge_to(it, v).and_then(|e| e.node);
        it.storages.add_ref(t.storage);
        Some(Internal {
            storage: t.storage,
            shape: t.shape,
            dtype: t.dtype,
            device: t.device,
            node,
        })
    }

    pub(super) fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// An edge to this tensor's `grad_fn` (a new node reference).
    pub(super) fn edge(&self, it: &mut Interpreter<'_>) -> InputEdge {
        if let Some(n) = self.node {
            it.heap.incref(Value::Obj(n));
        }
        InputEdge {
            node: self.node,
            shape: self.shape.clone(),
            dtype: self.dtype,
            device: self.device,
        }
    }

    /// Its data as a saved tensor (one more storage reference).
    pub(super) fn saved(&self, it: &mut Interpreter<'_>) -> Saved {
        it.storages.add_ref(self.storage);
        Saved::Data(self.storage)
    }

    /// Drops its references.
    pub(super) fn release(self, it: &mut Interpreter<'_>) {
        it.heap.dropped_storage_refs.push(self.storage);
        if let Some(n) = self.node {
            it.heap.decref_id(n);
        }
    }

    /// Gives it a Python object (`shape` may differ for a view of the same bytes), sets
    /// its `grad_fn`, and drops the internal references.
    pub(super) fn expose(self, it: &mut Interpreter<'_>, shape: Vec<i64>) -> R<Value> {
        let v = it.new_tensor_as(
            shape,
            self.dtype,
            self.device,
            Some((self.storage, None)),
            Category::Activation,
        )?;
        if let (Some(n), Value::Obj(out)) = (self.node, v) {
            it.heap.incref(Value::Obj(n));
            set_history(it, out, n);
        }
        self.release(it);
        Ok(v)
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
    it.heap.insert(ObjKind::GradNode(Box::new(node)))
}
