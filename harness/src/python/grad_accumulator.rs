//! A leaf's `AccumulateGrad` node, one per leaf while it lives, and what Python sees of
//! built-in nodes (`grad_fn.next_functions`, `AccumulateGrad.variable`).
//!
//! PyTorch (`torch/csrc/autograd/variable.cpp`, `grad_accumulator`): the leaf's autograd
//! metadata keeps a *weak* pointer to its `AccumulateGrad` (`grad_accumulator_`); each op
//! recording an edge to the leaf locks it, and makes a new node only when it expired.
//! The node holds the leaf variable strongly (`accumulate_grad.h`), so the leaf lives as
//! long as some graph reaches the node, and the node dies with the last graph. Two graphs
//! built while the first is alive therefore share one node, and one backward through both
//! sums the leaf's gradients in the node's input buffer before accumulating once.
//!
//! The weak pointer is a side table here (leaf slot to node slot), checked on each use:
//! the node must still be alive, an `AccumulateGrad`, and hold this leaf. A reused slot
//! fails that check, as an expired `weak_ptr` would.

use super::autograd::{
    BackwardOptions, GradBuffer as Buffer, drop_buffer, set_history, set_history_at, sum_node,
    tensor,
};
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, GradFlow, GradNode};
use rustc_hash::FxHashMap;

/// The leaves' weak references to their accumulators.
#[derive(Debug, Default)]
pub(super) struct GradAccumulators {
    by_leaf: rustc_hash::FxHashMap<ObjId, ObjId>,
    /// Size after the last sweep of expired entries: the table is swept when it doubles.
    swept_at: usize,
}

/// Whether `node` is alive and is the `AccumulateGrad` of `leaf`.
fn accumulates_into(it: &Interpreter<'_>, node: ObjId, leaf: ObjId) -> bool {
    it.heap.is_alive(node)
        && matches!(it.heap.kind(node), ObjKind::GradNode(g)
            if g.flow == GradFlow::Accumulate && g.leaf == Some(leaf))
}

impl Interpreter<'_> {
    /// `impl::grad_accumulator(leaf)`: the leaf's live `AccumulateGrad`, or a new one that
    /// holds the leaf (one reference to the node either way).
    pub(super) fn grad_accumulator(&mut self, leaf: ObjId) -> ObjId {
        if let Some(&n) = self.torch_classes.grad_accumulators.by_leaf.get(&leaf)
            && accumulates_into(self, n, leaf)
        {
            self.heap.incref(Value::Obj(n));
            return n;
        }
        self.heap.incref(Value::Obj(leaf));
        let mut acc = GradNode::new("AccumulateGrad", GradFlow::Accumulate);
        acc.leaf = Some(leaf);
        let n = self.heap.insert(ObjKind::GradNode(Box::new(acc)));
        let table = &mut self.torch_classes.grad_accumulators;
        table.by_leaf.insert(leaf, n);
        if table.by_leaf.len() > 2 * table.swept_at.max(32) {
            let mut entries = std::mem::take(&mut self.torch_classes.grad_accumulators.by_leaf);
            entries.retain(|&l, &mut n| accumulates_into(self, n, l));
            let table = &mut self.torch_classes.grad_accumulators;
            table.swept_at = entries.len();
            table.by_leaf = entries;
        }
        n
    }

    /// Attributes of a built-in node's Python object (`torch._C._functions.*`).
    pub(super) fn grad_fn_attr(&mut self, obj: ObjId, attr: &str) -> R<Value> {
        let ObjKind::GradFn { node } = *self.heap.kind(obj) else {
            return self.error("TypeError: not an autograd node");
        };
        let ObjKind::GradNode(g) = self.heap.kind(node) else {
            return self.error("TypeError: not an autograd node");
        };
        let name = g.name;
        match attr {
            // One `(node, input_nr)` pair per edge; `(None, 0)` for an input that needs no
            // gradient.
            "next_functions" => {
                let edges: Vec<(Option<ObjId>, u32)> =
                    g.inputs.iter().map(|e| (e.node, e.input_nr)).collect();
                let mut items = Vec::with_capacity(edges.len());
                for (n, nr) in edges {
                    let f = self.grad_fn_object(n)?;
                    let pair = self.alloc(ObjKind::Tuple(vec![f, Value::Int(i64::from(nr))]));
                    items.push(Value::Obj(pair));
                }
                Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
            }
            // `AccumulateGrad.variable`: the leaf it holds.
            "variable" if g.leaf.is_some() => {
                let leaf = Value::Obj(g.leaf.expect("checked"));
                self.heap.incref(leaf);
                Ok(leaf)
            }
            _ => self.error(format!(
                "AttributeError: '{name}' object has no attribute '{attr}'"
            )),
        }
    }
}

/// `AccumulateGrad`, then the leaf's post-accumulate-grad hooks (`hook(leaf)`, run once
/// `.grad` holds the new gradient; they may free it, as an optimizer step in backward does).
pub(super) fn deliver_to_leaf(
    it: &mut Interpreter<'_>,
    leaf: ObjId,
    buffer: Buffer,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<()> {
    accumulate_grad(it, leaf, buffer, options, captured)?;
    let wanted = options.inputs.is_empty() || options.inputs.contains(&leaf);
    let post = tensor(it, Value::Obj(leaf)).and_then(|t| t.cpp_post_acc_hooks);
    match post {
        Some(dict) if options.accumulate && wanted => it.run_post_accumulate_grad_hooks(dict, leaf),
        _ => Ok(()),
    }
}

/// `AccumulateGrad`: the first gradient becomes `.grad` (stolen when nothing else holds
/// it, else copied); later ones are added in place, so `.grad` is allocated once. With
/// `create_graph` the gradient keeps its graph, and a later one makes a new `.grad`
/// (`grad = grad + new`, recorded), as PyTorch does in grad mode.
fn accumulate_grad(
    it: &mut Interpreter<'_>,
    leaf: ObjId,
    buffer: Buffer,
    options: &BackwardOptions,
    captured: &mut FxHashMap<ObjId, Buffer>,
) -> R<()> {
    // The leaf's own hooks (`register_hook` on a leaf) see the gradient first.
    let hook_dict = tensor(it, Value::Obj(leaf)).and_then(|t| t.cpp_hook_dict);
    let buffer = match hook_dict {
        Some(dict) => it.run_tensor_hooks(dict, buffer, options.create_graph)?,
        None => buffer,
    };
    let wanted = options.inputs.is_empty() || options.inputs.contains(&leaf);
    if !options.accumulate {
        if options.inputs.contains(&leaf) && !captured.contains_key(&leaf) {
            captured.insert(leaf, buffer);
        } else {
            drop_buffer(it, buffer);
        }
        return Ok(());
    }
    let Some(t) = tensor(it, Value::Obj(leaf)).cloned() else {
        drop_buffer(it, buffer);
        return Ok(());
    };
    if !wanted {
        drop_buffer(it, buffer);
        return Ok(());
    }
    if let Some(old) = t.grad {
        if !options.create_graph {
            drop_buffer(it, buffer);
            return Ok(());
        }
        let old_grad = tensor(it, Value::Obj(old)).map(|g| (g.grad_fn, g.output_nr));
        let (old_node, old_nr) = old_grad.unwrap_or((None, 0));
        if let Some(n) = old_node {
            it.heap.incref(Value::Obj(n));
        }
        let sum = sum_node(
            it,
            &buffer,
            [(old_node, old_nr), (buffer.node, buffer.output_nr)],
        );
        it.heap.dropped_storage_refs.push(buffer.storage);
        let g = it.new_tensor_as(t.shape, t.dtype, t.device, None, Category::Gradient)?;
        if let Value::Obj(gid) = g {
            set_history(it, gid, sum);
        }
        replace_grad(it, leaf, g);
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
    if let (Some(n), Value::Obj(gid)) = (buffer.node, g) {
        set_history_at(it, gid, n, buffer.output_nr);
    }
    replace_grad(it, leaf, g);
    Ok(())
}

/// Sets `leaf.grad` to `g` (a reference handed over), dropping the old one.
fn replace_grad(it: &mut Interpreter<'_>, leaf: ObjId, g: Value) {
    let old = match it.heap.kind_mut(leaf) {
        ObjKind::Tensor(t) => std::mem::replace(&mut t.grad, g.obj()),
        _ => None,
    };
    if let Some(old) = old {
        it.heap.decref_id(old);
    }
}
