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

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{GradFlow, GradNode};

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
