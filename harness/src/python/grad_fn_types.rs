//! `type(t.grad_fn)`: the class of a graph node's Python object.
//!
//! PyTorch gives every node kind its own Python type (`MulBackward0`, made once by
//! `functions/init.cpp`'s `addClass`), so `type(a.grad_fn) is type(b.grad_fn)` holds for two nodes of one
//! kind and `type(t.grad_fn).__name__` is the node's name. The model makes one class object
//! per name the first time it is asked for and keeps it for the run (uncounted: torch's
//! types exist before the workload, as its other classes do). Approximation: the class
//! has no attributes of its own and calling it is not PyTorch's "cannot create instances"
//! error.

use super::interp::{Interpreter, R};
use crate::heap::{Class, ObjId, ObjKind, Value};

impl Interpreter<'_> {
    /// `type(grad_fn)` (new reference).
    pub(super) fn grad_fn_type(&mut self, grad_fn: ObjId) -> R<Value> {
        let name = match self.heap.kind(grad_fn) {
            ObjKind::GradFn { node } => match self.heap.kind(*node) {
                ObjKind::GradNode(n) => n.name.to_string(),
                _ => "Node".to_string(),
            },
            _ => return self.error("TypeError: not a graph node"),
        };
        let known = self
            .torch_classes
            .node_types
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, c)| c);
        let class = match known {
            Some(c) => c,
            None => {
                let name_sym = self.names.intern(&name);
                let c = self.heap.insert_uncounted(ObjKind::Class(Class {
                    name: name_sym,
                    base: None,
                    attrs: Vec::new(),
                }));
                self.torch_classes.node_types.push((name, c));
                c
            }
        };
        self.heap.incref(Value::Obj(class));
        Ok(Value::Obj(class))
    }
}
