//! Iterating a tensor (`for row in t`, `enumerate(t)`, `list(t)`, `zip(t, u)`): PyTorch's
//! `Tensor.__iter__` (`torch/_tensor.py`) is `iter(self.unbind(0))`, so the whole
//! tuple of row views is made when iteration starts, not one row per step.
//!
//! The rows are views of the tensor's storage (no bytes; each holds the root base), made by
//! one `UnbindBackward0` node when grad is recorded; row `i` is that node's output `i`. The
//! node keeps sizes only; its backward stacks the rows' gradients into one of the input's
//! shape. Rows of a row-major tensor are row-major. A 0-d tensor raises `TypeError:
//! iteration over a 0-d tensor`.

use super::autograd;
use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use crate::torch::GradFlow;

impl Interpreter<'_> {
    /// `iter(t)` of a tensor: the tuple of `t.unbind(0)` (owned); `None` for other values.
    pub(super) fn tensor_iter(&mut self, v: Value) -> Option<R<Value>> {
        let Value::Obj(id) = v else { return None };
        let ObjKind::Tensor(t) = self.heap.kind(id) else {
            return None;
        };
        if t.shape.is_empty() {
            return Some(self.error("TypeError: iteration over a 0-d tensor"));
        }
        let t = t.clone();
        let base = t.base.unwrap_or(id);
        let node = (self.grad_enabled && t.requires_grad).then(|| {
            autograd::build_node(
                self,
                autograd::row("unbind").node,
                GradFlow::Compute,
                &[v],
                &[],
                None,
            )
        });
        let shape = t.shape[1..].to_vec();
        let mut rows = Vec::with_capacity(t.shape[0].max(0) as usize);
        for i in 0..t.shape[0].max(0) {
            let row = match self.new_tensor(
                shape.clone(),
                t.dtype,
                t.device,
                Some((t.storage, Some(base))),
            ) {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref_all(rows);
                    if let Some(n) = node {
                        self.heap.decref_id(n);
                    }
                    return Some(Err(e));
                }
            };
            if let Value::Obj(r) = row {
                if let ObjKind::Tensor(rt) = self.heap.kind_mut(r) {
                    rt.contiguous = t.contiguous;
                }
                if let Some(n) = node {
                    self.heap.incref(Value::Obj(n));
                    autograd::set_history_at(self, r, n, i as u32);
                }
            }
            rows.push(row);
        }
        if let Some(n) = node {
            self.heap.decref_id(n);
        }
        Some(Ok(Value::Obj(self.alloc(ObjKind::Tuple(rows)))))
    }
}
