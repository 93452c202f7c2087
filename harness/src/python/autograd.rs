//! Recording autograd graphs as ops run, and running backward, for memory.
//!
//! The node kinds and the table of what each op saves are in [`crate::torch::GradNode`]'s
//! module. Here: the engine that walks a graph in dependency order allocating and freeing
//! gradient buffers as PyTorch's engine does; building nodes from an op's operands is in
//! `autograd_record.rs`, checking and releasing what nodes saved in `autograd_saved.rs`. A
//! leaf's `AccumulateGrad` is in `grad_accumulator.rs`, a custom Function's backward in
//! `custom_function.rs`, tensors internal to an op in `autograd_internal.rs`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype, GradFlow, GradNode, InputEdge, StorageId};
use rustc_hash::FxHashMap;

pub(super) use super::autograd_internal::Internal;
pub(super) use super::autograd_record::*;
pub(super) use super::autograd_saved::release_saved;
use super::autograd_saved::{check_versions, double_backward_node};
pub(super) use crate::torch::Save;

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
pub(super) type Slots = Vec<Option<Buffer>>;

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
    // Only a module's `BackwardHookFunctionBackward` and a custom Function returning several
    // values have several outputs in the model; any other node's slot is 0 (whatever output number a copied tensor carried).
    let several_outputs = matches!(it.heap.kind(node),
        ObjKind::GradNode(g) if g.module_hook.is_some() || g.output_meta.len() > 1);
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
    // The node's own hooks (`grad_fn.register_prehook`/`register_hook`, node_hooks.rs).
    if let Some(d) = node.pre_hook_dict {
        slots = it.run_node_pre_hooks(d, slots, options.create_graph)?;
    }
    let Some(post) = node.post_hook_dict else {
        return run_node(it, n, &node, slots, options, captured);
    };
    // With a post-hook the engine keeps the incoming gradients until the hooks ran.
    let refs: Vec<Option<&Buffer>> = slots.iter().map(Option::as_ref).collect();
    let grad_outputs = it.node_grads_tuple(&refs)?;
    match run_node(it, n, &node, slots, options, captured) {
        Ok(out) => it.run_node_post_hooks(post, &node, out, grad_outputs, options.create_graph),
        Err(e) => {
            it.heap.decref(grad_outputs);
            Err(e)
        }
    }
}

/// Runs one node on its incoming gradients (after its pre-hooks).
fn run_node(
    it: &mut Interpreter<'_>,
    n: ObjId,
    node: &GradNode,
    slots: Slots,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<Vec<(Target, Buffer)>> {
    // A module's `BackwardHookFunctionBackward`: identity per slot, with the module's
    // full backward (pre-)hooks around it.
    if node.module_hook.is_some() {
        return it.run_module_hook_node(node, slots, options.create_graph);
    }
    // A custom Function's `backward` gets one gradient per output.
    if node.flow == GradFlow::Python {
        if let Err(e) = check_versions(it, node) {
            for b in slots.into_iter().flatten() {
                drop_buffer(it, b);
            }
            return Err(e);
        }
        return super::custom_function::python_backward(it, node, slots, options);
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
    if let Err(e) = check_versions(it, node) {
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
                    match it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary) {
                        Ok(storage) => buffer_for(storage, e),
                        Err(err) => {
                            drop_buffer(it, incoming);
                            return Err(release_partial(it, out, err));
                        }
                    }
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
            let unpacked = match it.unpack_saved(node) {
                Ok(u) => u,
                Err(e) => {
                    drop_buffer(it, incoming);
                    return Err(e);
                }
            };
            // `CopySlices` calls its `fn` on a contiguous clone of the gradient's slice and
            // copies `fn`'s gradient for the view back into that slice: two view-sized
            // temporaries while its outputs are allocated.
            let slice_temporaries = match copy_slices_view(it, node) {
                Ok(t) => t,
                Err(e) => {
                    drop_buffer(it, incoming);
                    return Err(e);
                }
            };
            let graph = if options.create_graph {
                Some(double_backward_node(it, n, node, &incoming))
            } else {
                None
            };
            // An allocation that fails (out of memory) ends the node: what it holds is
            // released as the engine's stack unwinds, as in PyTorch.
            let mut failed = None;
            for e in &node.inputs {
                let Some(next) = e.node else { continue };
                let storage = match it.new_storage(&e.shape, e.dtype, e.device, Category::Temporary)
                {
                    Ok(storage) => storage,
                    Err(err) => {
                        failed = Some(err);
                        break;
                    }
                };
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
            if let Some(err) = failed {
                return Err(release_partial(it, out, err));
            }
        }
        GradFlow::Python => drop_buffer(it, incoming),
        GradFlow::Recompute => {
            let grad = match it.new_tensor_as(
                incoming.shape.clone(),
                incoming.dtype,
                incoming.device,
                Some((incoming.storage, None)),
                Category::Temporary,
            ) {
                Ok(grad) => grad,
                Err(err) => {
                    drop_buffer(it, incoming);
                    return Err(err);
                }
            };
            it.heap.dropped_storage_refs.push(incoming.storage);
            let grads = it.checkpoint_recompute(node, grad)?;
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

/// A node that failed part-way: the gradients it had already made for its next nodes are
/// freed with it (PyTorch's engine destroys them when the error unwinds its stack).
fn release_partial(
    it: &mut Interpreter<'_>,
    made: Vec<(Target, Buffer)>,
    err: Box<super::interp::Exc>,
) -> Box<super::interp::Exc> {
    for (_, b) in made {
        drop_buffer(it, b);
    }
    err
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
