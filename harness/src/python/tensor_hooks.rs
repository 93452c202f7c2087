//! Tensor backward hooks: `t.register_hook(fn)`, their handles, and running them on the
//! gradient during backward.
//!
//! Who holds a hook (PyTorch's `Tensor.register_hook` in `torch/_tensor.py` and
//! `THPVariable_set_backwards_hooks` in `torch/csrc/autograd/python_variable.cpp`): the
//! first hook creates the tensor's `_backward_hooks` dict; the setter stores it on the
//! Python object and installs a C++ tensor pre-hook that owns a second reference; for a
//! non-leaf, `grad_fn._register_hook_dict(t)` gives the node a third (C++) reference. Only
//! the Python attribute is visible to the collector, so the dict and everything its hooks
//! close over stay alive while the tensor (or, for a non-leaf, its `grad_fn`) does, even
//! when a hook closes over the tensor itself. `handle.remove()` deletes the hook from the
//! dict, which drops what it closed over.
//!
//! When they run: a leaf's hooks run on the gradient reaching its `AccumulateGrad` (or
//! captured by `autograd.grad`), before it is accumulated; a non-leaf's run on its
//! `grad_fn`'s incoming gradient before the node executes. Each hook gets the gradient as a
//! new tensor object on the engine's buffer; one it keeps (appended to a list) keeps that
//! buffer alive, so `AccumulateGrad` can no longer steal it and copies it instead, as in
//! PyTorch. A tensor it returns replaces the gradient.

use super::autograd::GradBuffer;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::Category;

impl Interpreter<'_> {
    /// `t.register_hook(hook)`: returns a `RemovableHandle`.
    pub(super) fn register_tensor_hook(&mut self, tensor: ObjId, args: &[Value]) -> R<Value> {
        let [hook] = args else {
            return self.error(format!(
                "TypeError: register_hook() takes 1 positional argument but {} were given",
                args.len()
            ));
        };
        let (requires_grad, existing, grad_fn) = match self.heap.kind(tensor) {
            ObjKind::Tensor(t) => (
                t.requires_grad,
                t.backward_hooks,
                t.grad_fn.map(|g| (g, t.output_nr)),
            ),
            _ => return self.error("internal: register_hook on a non-tensor"),
        };
        if !requires_grad {
            return self.error(
                "RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
            );
        }
        let dict = match existing {
            Some(d) => d,
            None => {
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                // The Python attribute (this reference) and the C++ pre-hook's.
                self.heap.incref(Value::Obj(d));
                if let ObjKind::Tensor(t) = self.heap.kind_mut(tensor) {
                    t.backward_hooks = Some(d);
                    t.cpp_hook_dict = Some(d);
                }
                if let Some((node, output_nr)) = grad_fn {
                    self.heap.incref(Value::Obj(d));
                    if let ObjKind::GradNode(n) = self.heap.kind_mut(node) {
                        n.hook_dicts.push((d, output_nr));
                    }
                }
                d
            }
        };
        self.torch_classes.next_hook_id += 1;
        let id = Value::Int(self.torch_classes.next_hook_id);
        self.heap.incref(*hook);
        self.dict_set(dict, id, *hook);
        // `RemovableHandle(self._backward_hooks)`: a weak reference to the dict.
        self.new_removable_handle(dict, id)
    }

    /// Runs the hooks of `dict` in registration order on `grad`, each seeing the previous
    /// one's result; returns the gradient that flows on. `create_graph` keeps a returned
    /// tensor's `grad_fn` on the gradient.
    pub(super) fn run_tensor_hooks(
        &mut self,
        dict: ObjId,
        mut grad: GradBuffer,
        create_graph: bool,
    ) -> R<GradBuffer> {
        let hooks: Vec<Value> = match self.heap.kind(dict) {
            ObjKind::Dict(items) => items.iter().map(|(_, v)| *v).collect(),
            _ => Vec::new(),
        };
        for &h in &hooks {
            self.heap.incref(h);
        }
        for (n, &hook) in hooks.iter().enumerate() {
            let result = self
                .grad_as_tensor(&grad)
                .and_then(|g| self.call(hook, vec![g], Vec::new()));
            let result = match result {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref_all(hooks[n..].to_vec());
                    grad.release(self);
                    return Err(e);
                }
            };
            self.heap.decref(hook);
            if result == Value::None {
                continue;
            }
            let replacement = match result {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Tensor(t) => Some(t.clone()),
                    _ => None,
                },
                _ => None,
            };
            let Some(t) = replacement else {
                let type_name = self.type_name_of(result);
                self.heap.decref(result);
                self.heap.decref_all(hooks[n + 1..].to_vec());
                grad.release(self);
                return self.error(format!(
                    "TypeError: expected Variable, but hook returned '{type_name}'"
                ));
            };
            self.storages.add_ref(t.storage);
            let node = t.grad_fn.filter(|_| create_graph);
            if let Some(g) = node {
                self.heap.incref(Value::Obj(g));
            }
            let old = std::mem::replace(
                &mut grad,
                GradBuffer {
                    storage: t.storage,
                    shape: t.shape,
                    dtype: t.dtype,
                    device: t.device,
                    node,
                    output_nr: t.output_nr,
                },
            );
            old.release(self);
            self.heap.decref(result);
        }
        // A hook's tensor object that nobody kept gives its storage reference back now, so
        // that `AccumulateGrad` sees whether the gradient is still shared.
        self.release_dropped_storages(None);
        Ok(grad)
    }

    /// The gradient as a new tensor object on the same bytes (with its graph, if any).
    pub(super) fn grad_as_tensor(&mut self, grad: &GradBuffer) -> R<Value> {
        let g = self.new_tensor_as(
            grad.shape.clone(),
            grad.dtype,
            grad.device,
            Some((grad.storage, None)),
            Category::Gradient,
        )?;
        if let (Some(n), Value::Obj(gid)) = (grad.node, g) {
            self.heap.incref(Value::Obj(n));
            super::autograd::set_history_at(self, gid, n, grad.output_nr);
        }
        Ok(g)
    }
}

impl Interpreter<'_> {
    /// `t.register_post_accumulate_grad_hook(hook)` on a leaf: the hook joins the
    /// tensor's `_post_accumulate_grad_hooks` dict, held by the tensor object (visible to
    /// the collector) and by the C++ hook (invisible), as `_backward_hooks` is.
    pub(super) fn register_post_accumulate_grad_hook(
        &mut self,
        tensor: ObjId,
        args: &[Value],
    ) -> R<Value> {
        let [hook] = args else {
            return self.error("TypeError: register_post_accumulate_grad_hook() takes 1 argument");
        };
        let (requires_grad, is_leaf, existing) = match self.heap.kind(tensor) {
            ObjKind::Tensor(t) => (t.requires_grad, t.is_leaf(), t.post_acc_hooks),
            _ => return self.error("internal: hook on a non-tensor"),
        };
        if !requires_grad {
            return self.error(
                "RuntimeError: cannot register a hook on a tensor that doesn't require gradient",
            );
        }
        if !is_leaf {
            return self.error(
                "RuntimeError: post accumulate grad hooks cannot be registered on non-leaf tensors",
            );
        }
        let dict = match existing {
            Some(d) => d,
            None => {
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                self.heap.incref(Value::Obj(d));
                if let ObjKind::Tensor(t) = self.heap.kind_mut(tensor) {
                    t.post_acc_hooks = Some(d);
                    t.cpp_post_acc_hooks = Some(d);
                }
                d
            }
        };
        self.torch_classes.next_hook_id += 1;
        let id = Value::Int(self.torch_classes.next_hook_id);
        self.heap.incref(*hook);
        self.dict_set(dict, id, *hook);
        self.new_removable_handle(dict, id)
    }

    /// Runs `hook(leaf)` for each post-accumulate-grad hook, in registration order; each
    /// must return `None`.
    pub(super) fn run_post_accumulate_grad_hooks(&mut self, dict: ObjId, leaf: ObjId) -> R<()> {
        let hooks: Vec<Value> = match self.heap.kind(dict) {
            ObjKind::Dict(items) => items.iter().map(|(_, v)| *v).collect(),
            _ => Vec::new(),
        };
        for &h in &hooks {
            self.heap.incref(h);
        }
        for (n, &hook) in hooks.iter().enumerate() {
            self.heap.incref(Value::Obj(leaf));
            let result = self.call(hook, vec![Value::Obj(leaf)], Vec::new());
            self.heap.decref(hook);
            let result = match result {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref_all(hooks[n + 1..].to_vec());
                    return Err(e);
                }
            };
            if result != Value::None {
                self.heap.decref(result);
                self.heap.decref_all(hooks[n + 1..].to_vec());
                return self
                    .error("RuntimeError: Tensor post accumulate grad hooks should return None.");
            }
        }
        self.release_dropped_storages(None);
        Ok(())
    }
}
