//! `ctx.mark_dirty(*tensors)` in a custom `autograd.Function`: an in-place custom op.
//!
//! As `THPFunction_apply` processes the outputs (`_mark_dirty`, then `_wrap_outputs` in
//! `torch/csrc/autograd/custom_function.cpp`): each dirty tensor's version counter is
//! bumped (so a node that saved it before raises PyTorch's in-place error in backward),
//! it must be one of the returned outputs, and it is returned as itself (no alias view is
//! made for it), its history rebased onto the Function's node (its old `grad_fn` stays
//! reachable as the node's edge). A leaf that requires grad cannot be dirty.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};

impl Interpreter<'_> {
    /// Applies `ctx.dirty_tensors` after `forward` returned `result`; returns the dirty
    /// tensors (borrowed: they are inputs, held by the caller).
    pub(super) fn mark_dirty_outputs(
        &mut self,
        ctx: ObjId,
        result: Value,
        inputs: &[Value],
        needs_graph: bool,
    ) -> R<Vec<Value>> {
        let sym = self.sym("dirty_tensors");
        let Some(tuple) = self.take_instance_attr(ctx, sym) else {
            return Ok(Vec::new());
        };
        let items = self.iterable_items(tuple);
        self.heap.decref(tuple);
        let dirty = items?;
        let returned: Vec<Value> = match result {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) => items.clone(),
                _ => vec![result],
            },
            other => vec![other],
        };
        for (i, &d) in dirty.iter().enumerate() {
            let Some(t) = self.tensor_data(d) else {
                let type_name = self.type_name_of(d);
                return self.error(format!(
                    "TypeError: mark_dirty can only accept variables, but argument {i} is of type {type_name}"
                ));
            };
            self.storages.bump_version(t.storage);
            if !returned.contains(&d) {
                return self.error("RuntimeError: Some elements marked as dirty during the forward method were not returned as output. The inputs that are modified inplace must all be outputs of the Function.");
            }
            if !needs_graph || !inputs.contains(&d) {
                continue;
            }
            if t.is_leaf() && t.requires_grad {
                return self.error(
                    "RuntimeError: a leaf Variable that requires grad has been used in an in-place operation.",
                );
            }
            if t.base.is_some() {
                return self.unsupported(
                    "ctx.mark_dirty of a view (PyTorch rebases its base onto CopySlices)",
                );
            }
        }
        Ok(dirty)
    }
}
