//! `torch.autograd.Function` subclasses (`Fn.apply`, `ctx.save_for_backward`,
//! `ctx.saved_tensors`) and the entry points of the backward pass.

use super::autograd::{
    self, BackwardOptions, GradBuffer as Buffer, Slots, Target, drop_buffer, set_history_at, tensor,
};
use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, GradFlow, GradNode, InputEdge, Saved};

impl Interpreter<'_> {
    /// `Fn.apply(*args)` for a subclass of `torch.autograd.Function`: a ctx object per
    /// call (a GC object the collector sees, with the attributes `forward` sets), forward
    /// run with grad mode off, and a `PyNode` that owns the ctx as the outputs' `grad_fn`.
    /// Tensors passed to `ctx.save_for_backward` move from `ctx.to_save` into the node.
    pub(super) fn custom_function_apply(&mut self, class: ObjId, args: Vec<Value>) -> R<Value> {
        let ctx = self.new_torch_instance(TorchClass::FunctionCtx, vec![])?;
        // The ctx knows its Function class (`_forward_cls`).
        self.heap.incref(Value::Obj(class));
        let fc = self.sym("_forward_cls");
        self.set_attr(Value::Obj(ctx), fc, Value::Obj(class))?;
        let forward = self.sym("forward");
        let Some(f) = self.class_lookup(class, forward) else {
            self.heap.decref_all(args);
            self.heap.decref_id(ctx);
            return self.error("NotImplementedError: Function has no forward");
        };
        let needs_graph =
            self.grad_enabled && args.iter().any(|&v| autograd::requires_grad(self, v));
        let inputs = args.clone();
        for &a in &inputs {
            self.heap.incref(a);
        }
        self.heap.incref(f);
        self.heap.incref(Value::Obj(ctx));
        let mut all = vec![Value::Obj(ctx)];
        all.extend(args);
        let was = std::mem::replace(&mut self.grad_enabled, false);
        let result = self.call(f, all, Vec::new());
        self.grad_enabled = was;
        self.heap.decref(f);
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.heap.decref_all(inputs);
                self.heap.decref_id(ctx);
                return Err(e);
            }
        };
        let ts = self.sym("to_save");
        let to_save = self.take_instance_attr(ctx, ts);
        let dirty = match self.mark_dirty_outputs(ctx, result, &inputs, needs_graph) {
            Ok(d) => d,
            Err(e) => {
                self.heap.decref(result);
                to_save.into_iter().for_each(|v| self.heap.decref(v));
                self.heap.decref_all(inputs);
                self.heap.decref_id(ctx);
                return Err(e);
            }
        };
        let result = if needs_graph {
            self.alias_returned_inputs(result, &inputs, &dirty)?
        } else {
            result
        };
        if needs_graph {
            let mut node = GradNode::new("PyNode", GradFlow::Python);
            for &v in &inputs {
                node.arg_is_tensor.push(self.tensor_data(v).is_some());
                if let Some(t) = self.tensor_data(v) {
                    let edge = if t.requires_grad {
                        match t.grad_fn {
                            Some(n) => {
                                self.heap.incref(Value::Obj(n));
                                Some(n)
                            }
                            None => v.obj().map(|leaf| self.grad_accumulator(leaf)),
                        }
                    } else {
                        None
                    };
                    node.inputs.push(InputEdge {
                        node: edge,
                        input_nr: if t.grad_fn.is_some() { t.output_nr } else { 0 },
                        shape: t.shape,
                        dtype: t.dtype,
                        device: t.device,
                    });
                }
            }
            let returned: Vec<Value> = match result {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Tuple(items) => items.clone(),
                    _ => vec![result],
                },
                other => vec![other],
            };
            let outputs: Vec<ObjId> = returned.iter().filter_map(|v| v.obj()).collect();
            node.output_meta = returned
                .iter()
                .map(|&v| {
                    self.tensor_data(v)
                        .map(|t| (t.shape.to_vec(), t.dtype, t.device))
                })
                .collect();
            if let Some(Value::Obj(tuple)) = to_save {
                for v in self.iterable_items(Value::Obj(tuple))? {
                    let Some(t) = self.tensor_data(v) else {
                        continue;
                    };
                    node.saved_versions
                        .push((node.saved.len(), self.storages.version(t.storage)));
                    // An output is saved without its Python object (PyTorch keeps it as an
                    // output `SavedVariable`, whose grad_fn is not owned): saving it does
                    // not make the node own its own output.
                    match v {
                        Value::Obj(o) if outputs.contains(&o) => {
                            self.storages.add_ref(t.storage);
                            node.saved.push(Saved::Data(t.storage));
                        }
                        Value::Obj(o) => {
                            self.heap.incref(v);
                            node.saved.push(Saved::Tensor(o));
                        }
                        _ => {}
                    }
                }
            }
            node.ctx = Some(ctx);
            self.pack_saved(&mut node, outputs.first().copied());
            let node = self.heap.insert(ObjKind::GradNode(Box::new(node)));
            self.ctx_nodes.insert(ctx, node);
            // Each tensor output is the node's output of its position in what `forward`
            // returned, except those `ctx.mark_non_differentiable` named (no history).
            let nd = self.sym("non_differentiable");
            let non_diff = match self.take_instance_attr(ctx, nd) {
                Some(v) => {
                    let items = self.iterable_items(v);
                    self.heap.decref(v);
                    items?
                }
                None => Vec::new(),
            };
            let mut first = true;
            for (i, v) in returned.into_iter().enumerate() {
                let Value::Obj(o) = v else { continue };
                if !matches!(self.heap.kind(o), ObjKind::Tensor(_)) || non_diff.contains(&v) {
                    continue;
                }
                if !first {
                    self.heap.incref(Value::Obj(node));
                }
                first = false;
                autograd::set_history_at(self, o, node, i as u32);
            }
            if first {
                self.heap.decref_id(node);
            }
        } else {
            self.heap.decref_id(ctx);
        }
        if let Some(v) = to_save {
            self.heap.decref(v);
        }
        self.heap.decref_all(inputs);
        Ok(result)
    }

    /// `_wrap_outputs`: an input returned unchanged (and not marked dirty) becomes a new
    /// tensor object, a view of the input, so that the Function's node is the view's
    /// `grad_fn` and the input keeps its own history (a leaf stays a leaf).
    pub(super) fn alias_returned_inputs(
        &mut self,
        result: Value,
        inputs: &[Value],
        dirty: &[Value],
    ) -> R<Value> {
        let is_input = |v: Value| v.obj().is_some() && inputs.contains(&v) && !dirty.contains(&v);
        match result {
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Tuple(_)) => {
                let items = match self.heap.kind(id) {
                    ObjKind::Tuple(items) => items.clone(),
                    _ => Vec::new(),
                };
                for (i, item) in items.into_iter().enumerate() {
                    if is_input(item) && self.is_tensor(item) {
                        let alias = self.alias_of(item)?;
                        if let ObjKind::Tuple(items) = self.heap.kind_mut(id) {
                            items[i] = alias;
                        }
                        self.heap.decref(item);
                    }
                }
                Ok(result)
            }
            v if is_input(v) && self.is_tensor(v) => {
                let alias = self.alias_of(v)?;
                self.heap.decref(v);
                Ok(alias)
            }
            v => Ok(v),
        }
    }

    /// A new tensor object viewing all of `v` (`view_as(self)`).
    pub(super) fn alias_of(&mut self, v: Value) -> R<Value> {
        let Some(t) = self.tensor_data(v) else {
            return Ok(v);
        };
        let base = t.base.or(v.obj());
        self.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, base)))
    }

    /// `ctx.saved_tensors`: the tensors its node saved, in order; a saved output comes
    /// back as a new tensor object on the same bytes.
    pub(super) fn saved_tensors(&mut self, ctx: ObjId) -> R<Value> {
        let mut items = Vec::new();
        for n in self.nodes_owning(ctx) {
            let ObjKind::GradNode(node) = self.heap.kind(n) else {
                continue;
            };
            if node.released && node.had_saved {
                self.heap.decref_all(items);
                return self.error("RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.");
            }
            for s in node.saved.clone() {
                match s {
                    Saved::Tensor(t) => {
                        self.heap.incref(Value::Obj(t));
                        items.push(Value::Obj(t));
                    }
                    Saved::Data(st) => {
                        let storage = self.storages.get(st);
                        let shape = storage.shape.to_vec();
                        let dtype = storage.dtype;
                        let device = if storage.addr.is_some() {
                            DeviceKind::Cuda
                        } else {
                            DeviceKind::Cpu
                        };
                        items.push(self.new_tensor(shape, dtype, device, Some((st, None)))?);
                    }
                    Saved::Packed { data, unpack, .. } => match self.unpack_one(data, unpack) {
                        Ok(t) => items.push(t),
                        Err(e) => {
                            self.heap.decref_all(items);
                            return Err(e);
                        }
                    },
                }
            }
        }
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
    }

    /// The method of a ctx's Function class (`backward`), new reference.
    pub(super) fn custom_function_method(&mut self, ctx: ObjId, name: &str) -> R<Value> {
        let fc = self.sym("_forward_cls");
        let class = self.get_attr(Value::Obj(ctx), fc)?;
        let s = self.sym(name);
        let r = self.get_attr(class, s);
        self.heap.decref(class);
        r
    }

    /// Run by `Variable._execution_engine.run_backward`, `torch.autograd.backward`,
    /// `torch.autograd.grad` and `tensor.backward`. `retain_graph` defaults to
    /// `create_graph`, as in PyTorch.
    pub(super) fn autograd_backward(
        &mut self,
        tensors: Value,
        grads: Value,
        retain: Option<bool>,
        create_graph: bool,
        accumulate: bool,
        inputs: Value,
    ) -> R<Vec<Value>> {
        let as_list = |it: &Self, v: Value| -> R<Vec<Value>> {
            match v {
                Value::None => Ok(Vec::new()),
                Value::Obj(id) if matches!(it.heap.kind(id), ObjKind::Tensor(_)) => Ok(vec![v]),
                _ => it.iterable_items(v),
            }
        };
        let roots: Vec<ObjId> = as_list(self, tensors)?
            .into_iter()
            .filter_map(|v| v.obj())
            .collect();
        let grads = as_list(self, grads)?;
        let inputs: Vec<ObjId> = as_list(self, inputs)?
            .into_iter()
            .filter_map(|v| v.obj())
            .collect();
        autograd::run_backward(
            self,
            &roots,
            &grads,
            &BackwardOptions {
                retain_graph: retain.unwrap_or(create_graph),
                create_graph,
                accumulate,
                inputs,
            },
        )
    }
}

/// A custom Function's backward (`PyNode::apply`): one gradient per output of the node,
/// each wrapped in a tensor object; an output no gradient reached gets zeros of its
/// shape, allocated now (`None` after `ctx.set_materialize_grads(False)`, or for a
/// non-tensor output). The Python `backward(ctx, *grads)` runs, and what it returns
/// flows to the inputs.
pub(super) fn python_backward(
    it: &mut Interpreter<'_>,
    node: &GradNode,
    mut slots: Slots,
    options: &BackwardOptions,
) -> R<Vec<(Target, Buffer)>> {
    let Some(ctx) = node.ctx else {
        for b in slots.into_iter().flatten() {
            drop_buffer(it, b);
        }
        return Ok(Vec::new());
    };
    let n = node.output_meta.len().max(1);
    slots.resize(n.max(slots.len()), None);
    let mg = it.sym("materialize_grads");
    let materialize = match it.take_instance_attr(ctx, mg) {
        Some(v) => {
            let keep = it.truth(v);
            it.heap.decref(v);
            let keep = keep?;
            // Put it back: a second backward (retain_graph) sees the same setting.
            it.set_attr(Value::Obj(ctx), mg, Value::Bool(keep))?;
            keep
        }
        None => true,
    };
    let mut args = vec![Value::Obj(ctx)];
    let mut failed = None;
    for (k, slot) in slots.into_iter().enumerate() {
        let buffer = match (slot, node.output_meta.get(k)) {
            (Some(b), _) if failed.is_none() && k < n => b,
            (Some(b), _) => {
                drop_buffer(it, b);
                continue;
            }
            (None, Some(Some((shape, dtype, device)))) if materialize && failed.is_none() => {
                match it.new_storage(shape, *dtype, *device, Category::Temporary) {
                    Ok(storage) => Buffer {
                        storage,
                        shape: shape.clone(),
                        dtype: *dtype,
                        device: *device,
                        node: None,
                        output_nr: 0,
                    },
                    Err(e) => {
                        failed = Some(e);
                        continue;
                    }
                }
            }
            _ => {
                if k < n {
                    args.push(Value::None);
                }
                continue;
            }
        };
        match it.new_tensor_as(
            buffer.shape.clone(),
            buffer.dtype,
            buffer.device,
            Some((buffer.storage, None)),
            Category::Temporary,
        ) {
            Ok(grad) => {
                it.heap.dropped_storage_refs.push(buffer.storage);
                if let (Some(n), Value::Obj(g)) = (buffer.node, grad) {
                    set_history_at(it, g, n, buffer.output_nr);
                }
                args.push(grad);
            }
            Err(e) => {
                drop_buffer(it, buffer);
                failed = Some(e);
            }
        }
    }
    if let Some(e) = failed {
        it.heap.decref_all(args.split_off(1));
        return Err(e);
    }
    let backward = match it.custom_function_method(ctx, "backward") {
        Ok(b) => b,
        Err(e) => {
            it.heap.decref_all(args.split_off(1));
            return Err(e);
        }
    };
    it.heap.incref(Value::Obj(ctx));
    let result = it.call(backward, args, Vec::new());
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
    // What is returned for a non-tensor argument has no edge; `None` for a tensor argument
    // leaves its edge without a gradient.
    let mut edges = node.inputs.iter();
    for (pos, item) in items.into_iter().enumerate() {
        if !node.arg_is_tensor.get(pos).copied().unwrap_or(true) {
            continue;
        }
        let Some(e) = edges.next() else { break };
        let Some(t) = tensor(it, item).cloned() else {
            continue;
        };
        if let Some(next) = e.node {
            it.storages.add_ref(t.storage);
            let graph = t.grad_fn.filter(|_| options.create_graph);
            if let Some(g) = graph {
                it.heap.incref(Value::Obj(g));
            }
            out.push((
                (next, e.input_nr),
                Buffer {
                    storage: t.storage,
                    shape: e.shape.clone(),
                    dtype: t.dtype,
                    device: t.device,
                    node: graph,
                    output_nr: t.output_nr,
                },
            ));
        }
    }
    it.heap.decref(result);
    Ok(out)
}
