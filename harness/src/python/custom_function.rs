//! `torch.autograd.Function` subclasses (`Fn.apply`, `ctx.save_for_backward`,
//! `ctx.saved_tensors`) and the entry points of the backward pass.

use super::autograd::{
    self, BackwardOptions, GradBuffer as Buffer, Target, drop_buffer, set_history_at, tensor,
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
        let result = if needs_graph {
            self.alias_returned_inputs(result, &inputs)?
        } else {
            result
        };
        if needs_graph {
            let mut node = GradNode::new("PyNode", GradFlow::Python);
            for &v in &inputs {
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
            let outputs: Vec<ObjId> = match result {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Tuple(items) => items.iter().filter_map(|v| v.obj()).collect(),
                    _ => vec![id],
                },
                _ => Vec::new(),
            };
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
            let mut first = true;
            for o in outputs {
                if !matches!(self.heap.kind(o), ObjKind::Tensor(_)) {
                    continue;
                }
                if !first {
                    self.heap.incref(Value::Obj(node));
                }
                first = false;
                autograd::set_history(self, o, node);
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
    pub(super) fn alias_returned_inputs(&mut self, result: Value, inputs: &[Value]) -> R<Value> {
        let is_input = |v: Value| v.obj().is_some() && inputs.contains(&v);
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

/// A custom Function's backward: the gradient is wrapped in a tensor object, the Python
/// `backward(ctx, *grads)` runs, and what it returns flows to the inputs.
pub(super) fn python_backward(
    it: &mut Interpreter<'_>,
    node: &GradNode,
    incoming: Buffer,
    options: &BackwardOptions,
) -> R<Vec<(Target, Buffer)>> {
    let Some(ctx) = node.ctx else {
        drop_buffer(it, incoming);
        return Ok(Vec::new());
    };
    let grad = it.new_tensor_as(
        incoming.shape.clone(),
        incoming.dtype,
        incoming.device,
        Some((incoming.storage, None)),
        Category::Temporary,
    )?;
    it.heap.dropped_storage_refs.push(incoming.storage);
    if let (Some(n), Value::Obj(g)) = (incoming.node, grad) {
        set_history_at(it, g, n, incoming.output_nr);
    }
    let backward = it.custom_function_method(ctx, "backward")?;
    it.heap.incref(Value::Obj(ctx));
    let result = it.call(backward, vec![Value::Obj(ctx), grad], Vec::new());
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
    // Gradients returned for non-tensor arguments (`None`) have no edge.
    let mut edges = node.inputs.iter();
    for item in items {
        let Some(t) = tensor(it, item).cloned() else {
            continue;
        };
        let Some(e) = edges.next() else { break };
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
