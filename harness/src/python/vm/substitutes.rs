//! Values bound to expression nodes by [`super::compile::Instr::Bind`]: the operands and
//! suspension results an expression split at its suspension points left on the frame's
//! value stack. The evaluator takes a bound node's value instead of evaluating the node
//! again, so the rest of the expression runs from the values CPython's stack would hold.

use crate::heap::Value;
use crate::python::interp::Interpreter;
use ruff_python_ast::Expr;

/// One bound node: its address in the workload's AST, the frame depth that bound it (a
/// nested run of the same code, e.g. a recursive generator, binds its own), and the value
/// (a reference owned here until the evaluator takes it).
pub(in crate::python) struct Substitute {
    node: usize,
    depth: u32,
    value: Value,
}

impl<'a> Interpreter<'a> {
    /// Binds `values` (owned, in push order) to `nodes`.
    pub(super) fn bind_substitutes(&mut self, nodes: &[&'a Expr], values: Vec<Value>) {
        let depth = self.frames.len() as u32;
        for (node, value) in nodes.iter().zip(values) {
            self.vm_substitutes.push(Substitute {
                node: std::ptr::from_ref::<Expr>(node) as usize,
                depth,
                value,
            });
        }
    }

    /// The value bound to `e` in the current frame, taken (a new reference for the caller).
    pub(in crate::python) fn take_substitute(&mut self, e: &Expr) -> Option<Value> {
        let node = std::ptr::from_ref(e) as usize;
        let depth = self.frames.len() as u32;
        let at = self
            .vm_substitutes
            .iter()
            .rposition(|s| s.node == node && s.depth == depth)?;
        Some(self.vm_substitutes.remove(at).value)
    }

    /// Drops the bindings made above `base` that the evaluation did not take (it raised
    /// before reaching them).
    pub(super) fn clear_substitutes(&mut self, base: usize) {
        while self.vm_substitutes.len() > base {
            let s = self.vm_substitutes.pop().expect("checked");
            self.heap.decref(s.value);
        }
    }
}
