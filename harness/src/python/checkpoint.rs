//! `torch.utils.checkpoint.checkpoint(function, *args, use_reentrant=...)`: activation
//! checkpointing, where what is saved versus recomputed is the point.
//!
//! Forward runs `function` with grad mode off, so the activations it creates are freed as
//! soon as it returns; only the tensor inputs are kept (saved for backward) besides the
//! output. The output's node, `CheckpointFunctionBackward`, keeps the function and the
//! non-tensor arguments. Its backward detaches the saved inputs, runs `function` again with
//! grad mode on (the activations are allocated again, now with their graph), back-propagates
//! the incoming gradient through that graph (the parameters' `.grad` accumulate there) and
//! hands the inputs' gradients on. So between forward and backward only the inputs and the
//! output are held, and the activations of one checkpointed segment exist only during its
//! own recomputation: the peak difference checkpointing is used for.
//!
//! With the reentrant variant (the default here, as in PyTorch before 2.4's warning) an
//! output gets no graph when no tensor input requires grad, and the parameters used inside
//! then get no gradient, as in PyTorch. `use_reentrant=False` is modelled with the same
//! recomputation (approximation: PyTorch records the ordinary graph and drops the saved
//! activations through saved-tensor hooks; the bytes held are the same, the node objects are
//! not).

use super::autograd;
use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use crate::torch::{GradFlow, GradNode, Saved, StorageId};

/// Marks where a tensor argument goes in the node's `(function, *args)` (the tensors
/// themselves are the node's saved tensors).
const TENSOR_SLOT: Value = Value::Native(super::natives::Native::Checkpoint.id());

impl Interpreter<'_> {
    /// `checkpoint(function, *args)`: `args` includes the function first.
    pub(super) fn checkpoint_apply(&mut self, args: Vec<Value>, use_reentrant: bool) -> R<Value> {
        let Some((&function, inputs)) = args.split_first() else {
            return self.error(
                "TypeError: checkpoint() missing 1 required positional argument: 'function'",
            );
        };
        let inputs = inputs.to_vec();
        let any_input_requires_grad = inputs.iter().any(|&v| autograd::requires_grad(self, v));
        let record = self.grad_enabled && (any_input_requires_grad || !use_reentrant);
        for &v in &inputs {
            self.heap.incref(v);
        }
        self.heap.incref(function);
        let was = std::mem::replace(&mut self.grad_enabled, false);
        let result = self.call(function, inputs.clone(), Vec::new());
        self.grad_enabled = was;
        self.heap.decref(function);
        let output = result?;
        if !record {
            return Ok(output);
        }
        let Some(out) = output.obj().filter(|&o| self.is_tensor(Value::Obj(o))) else {
            self.heap.decref(output);
            return self.unsupported(
                "checkpoint() of a function that returns several tensors (a single tensor output is modelled)",
            );
        };
        // The node: edges to the inputs, the tensor inputs saved, and `(function, *args)`
        // with the tensor positions marked.
        let mut node = GradNode::new("CheckpointFunctionBackward", GradFlow::Recompute);
        let mut template = vec![function];
        self.heap.incref(function);
        for &v in &inputs {
            if let Some(t) = self.tensor_data(v) {
                if let Some(edge) = autograd::edge_to(self, v) {
                    node.inputs.push(edge);
                }
                self.heap.incref(v);
                node.saved_versions
                    .push((node.saved.len(), self.storages.version(t.storage)));
                node.saved.push(Saved::Tensor(v.obj().expect("a tensor")));
                template.push(TENSOR_SLOT);
            } else {
                self.heap.incref(v);
                template.push(v);
            }
        }
        node.ctx = Some(self.alloc(ObjKind::Tuple(template)));
        let node = self.heap.insert(ObjKind::GradNode(Box::new(node)));
        autograd::set_history(self, out, node);
        Ok(output)
    }

    /// The backward of a checkpointed segment: one gradient storage (a new reference) per
    /// edge of `node`, `None` where the input needs none.
    pub(super) fn checkpoint_recompute(
        &mut self,
        node: &GradNode,
        grad: Value,
    ) -> R<Vec<Option<StorageId>>> {
        let template: Vec<Value> = match node.ctx.map(|c| self.heap.kind(c)) {
            Some(ObjKind::Tuple(items)) => items.clone(),
            _ => {
                self.heap.decref(grad);
                return Ok(Vec::new());
            }
        };
        if node.released {
            self.heap.decref(grad);
            return self.error(
                "RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.",
            );
        }
        let (function, template) = template.split_first().expect("the function");
        // Detached inputs that require grad as the originals did.
        let mut saved = node.saved.iter();
        let mut detached = Vec::new();
        let mut args = Vec::with_capacity(template.len());
        for &slot in template {
            if slot != TENSOR_SLOT {
                self.heap.incref(slot);
                args.push(slot);
                continue;
            }
            let Some(&Saved::Tensor(original)) = saved.next() else {
                self.heap.incref(slot);
                args.push(slot);
                continue;
            };
            let Some(t) = self.tensor_data(Value::Obj(original)) else {
                continue;
            };
            let copy = self.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None)))?;
            if let Value::Obj(c) = copy
                && let ObjKind::Tensor(ct) = self.heap.kind_mut(c)
            {
                ct.requires_grad = t.requires_grad;
            }
            self.heap.incref(copy);
            detached.push(copy);
            args.push(copy);
        }
        self.heap.incref(*function);
        let was = std::mem::replace(&mut self.grad_enabled, true);
        let outputs = self.call(*function, args, Vec::new());
        self.grad_enabled = was;
        self.heap.decref(*function);
        let outputs = match outputs {
            Ok(o) => o,
            Err(e) => {
                self.heap.decref(grad);
                self.heap.decref_all(detached);
                return Err(e);
            }
        };
        let ran = self.autograd_backward(outputs, grad, None, false, true, Value::None);
        self.heap.decref(outputs);
        self.heap.decref(grad);
        let ran = ran.map(|results| self.heap.decref_all(results));
        let mut grads = Vec::with_capacity(detached.len());
        for &d in &detached {
            let g = self
                .tensor_data(d)
                .and_then(|t| t.grad)
                .and_then(|g| self.tensor_data(Value::Obj(g)))
                .map(|gt| {
                    self.storages.add_ref(gt.storage);
                    gt.storage
                });
            grads.push(g);
        }
        self.heap.decref_all(detached);
        ran?;
        Ok(grads)
    }

    /// `checkpoint_sequential(functions, segments, input, use_reentrant=...)`: the modules
    /// split into `segments` runs of `len // segments`; every run but the last is
    /// checkpointed (only its input and output are held until backward), the last runs
    /// normally. Approximation: PyTorch's segment function is a closure over the module
    /// list; here it is an `nn.Sequential` of the segment's modules (the same references
    /// held, a different object kind).
    pub(super) fn checkpoint_sequential(
        &mut self,
        functions: Value,
        segments: i64,
        input: Value,
        use_reentrant: bool,
    ) -> R<Value> {
        let modules: Vec<Value> = match (self.container_kind(functions), functions) {
            (Some(_), Value::Obj(id)) => self
                .container_children(id)
                .into_iter()
                .map(|(_, m)| m)
                .collect(),
            _ => self.iterable_items(functions)?,
        };
        if segments < 1 {
            return self.error("ValueError: checkpoint_sequential needs at least one segment");
        }
        let size = modules.len() / segments as usize;
        if size == 0 {
            // PyTorch's `range(0, 0, segment_size)` with a zero step.
            return self.error("ValueError: range() arg 3 must not be zero");
        }
        self.heap.incref(input);
        let mut x = input;
        let mut next = 0;
        for start in (0..size * (segments as usize - 1)).step_by(size) {
            let segment = match self.new_module_list(
                super::torchlib::TorchClass::Sequential,
                &modules[start..start + size],
            ) {
                Ok(s) => s,
                Err(e) => {
                    self.heap.decref(x);
                    return Err(e);
                }
            };
            let r = self.checkpoint_apply(vec![Value::Obj(segment), x], use_reentrant);
            self.heap.decref_id(segment);
            self.heap.decref(x);
            x = r?;
            next = start + size;
        }
        for &m in &modules[next..] {
            self.heap.incref(m);
            let r = self.call(m, vec![x], Vec::new());
            self.heap.decref(m);
            x = r?;
        }
        Ok(x)
    }
}
