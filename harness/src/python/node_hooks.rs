//! Hooks on a graph node: `grad_fn.register_prehook(fn)` and `grad_fn.register_hook(fn)`,
//! their handles, and running them in backward.
//!
//! Who holds them (`registerFunctionHook`/`registerFunctionPreHook` in
//! `torch/csrc/autograd/python_cpp_function.cpp`, `Function._register_hook` in
//! `torch/autograd/function.py`): the first hook of each kind makes a dict and gives the
//! node a `PyFunctionPostHook`/`PyFunctionPreHook` owning it; later hooks join that dict.
//! The handle is a `RemovableHandle` with a weak reference to the dict. Only the node
//! (C++) holds the dict, so the collector never sees it: a hook closing over a tensor
//! keeps that tensor alive as long as the node lives, and a hook closing over the tensor
//! whose `grad_fn` the node is makes a cycle through C++ that nothing frees until the hook
//! is removed (the classic leak).
//!
//! When they run (`call_function` in `torch/csrc/autograd/engine.cpp`): after the tensor
//! pre-hooks, each pre-hook gets the node's incoming gradients as a tuple (`None` where
//! none arrived) and may return a replacement tuple; with a post-hook the engine keeps the
//! incoming gradients alive while the node runs (it calls the node on a copy of the list),
//! then each post-hook gets `(grad_inputs, grad_outputs)` (what the node computed, one
//! entry per edge, and what it received) and may return replacement `grad_inputs`.

use super::autograd::{GradBuffer, Slots, Target};
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::GradNode;

/// Which of a node's hook lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum NodeHookKind {
    Pre,
    Post,
}

impl Interpreter<'_> {
    /// `grad_fn.register_prehook(hook)` / `grad_fn.register_hook(hook)`: returns a
    /// `RemovableHandle`.
    pub(in crate::python) fn register_node_hook(
        &mut self,
        node: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        let kind = if method == "register_prehook" {
            NodeHookKind::Pre
        } else {
            NodeHookKind::Post
        };
        let [hook] = args else {
            return self.error(format!(
                "TypeError: {method}() takes exactly one argument ({} given)",
                args.len()
            ));
        };
        let existing = match self.heap.kind(node) {
            ObjKind::GradNode(n) => match kind {
                NodeHookKind::Pre => n.pre_hook_dict,
                NodeHookKind::Post => n.post_hook_dict,
            },
            _ => return self.error("internal: a node hook on a non-node"),
        };
        let dict = match existing {
            Some(d) => d,
            None => {
                // The node's `PyFunction(Pre|Post)Hook` owns this one reference.
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                if let ObjKind::GradNode(n) = self.heap.kind_mut(node) {
                    match kind {
                        NodeHookKind::Pre => n.pre_hook_dict = Some(d),
                        NodeHookKind::Post => n.post_hook_dict = Some(d),
                    }
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

    /// The hooks of a node's dict, in registration order, each with a reference of its own.
    fn node_hooks(&mut self, dict: ObjId) -> Vec<Value> {
        let hooks: Vec<Value> = match self.heap.kind(dict) {
            ObjKind::Dict(items) => items.iter().map(|(_, v)| *v).collect(),
            _ => Vec::new(),
        };
        for &h in &hooks {
            self.heap.incref(h);
        }
        hooks
    }

    /// Gradients as a tuple of tensor objects on the same bytes (`None` where absent);
    /// the buffers themselves are kept.
    pub(super) fn node_grads_tuple(&mut self, grads: &[Option<&GradBuffer>]) -> R<Value> {
        let mut values = Vec::with_capacity(grads.len());
        for g in grads {
            match g {
                Some(b) => match self.grad_as_tensor(b) {
                    Ok(t) => values.push(t),
                    Err(e) => {
                        self.heap.decref_all(values);
                        return Err(e);
                    }
                },
                None => values.push(Value::None),
            }
        }
        Ok(super::natives::new_tuple(self, values))
    }

    /// Calls each hook with `args` (borrowed) and `current` (owned) as its last argument
    /// (or first, for post-hooks, `(grad_inputs, grad_outputs)`); a non-`None` result of
    /// the right length replaces `current`. Returns the final `current` (owned).
    fn call_node_hooks(
        &mut self,
        dict: ObjId,
        mut current: Value,
        grad_outputs: Option<Value>,
    ) -> R<Value> {
        let hooks = self.node_hooks(dict);
        for (k, &hook) in hooks.iter().enumerate() {
            self.heap.incref(current);
            let mut call_args = vec![current];
            if let Some(go) = grad_outputs {
                self.heap.incref(go);
                call_args.push(go);
            }
            let r = self.call(hook, call_args, Vec::new());
            self.heap.decref(hook);
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref_all(hooks[k + 1..].to_vec());
                    self.heap.decref(current);
                    return Err(e);
                }
            };
            if r == Value::None {
                continue;
            }
            let (got, expected) = (self.seq_len_of(r), self.seq_len_of(current));
            if got != Some(expected.unwrap_or(0)) {
                let got = got.map_or_else(|| self.type_name_of(r).to_string(), |n| n.to_string());
                let name = self.hook_name(hook);
                self.heap.decref(r);
                self.heap.decref_all(hooks[k + 1..].to_vec());
                self.heap.decref(current);
                return self.error(format!(
                    "RuntimeError: hook '{name}' has returned an incorrect number of values (got {got}, but expected {})",
                    expected.unwrap_or(0)
                ));
            }
            self.heap.decref(std::mem::replace(&mut current, r));
        }
        Ok(current)
    }

    /// A hook's `__name__` (`'<lambda>'` for a lambda), for PyTorch's error text.
    fn hook_name(&mut self, hook: Value) -> String {
        let attr = self.names.intern("__name__");
        match self.get_attr(hook, attr) {
            Ok(Value::Str(s)) => self.names.name(s).to_string(),
            Ok(v) => {
                self.heap.decref(v);
                "hook".to_string()
            }
            Err(_) => "hook".to_string(),
        }
    }

    /// `len(v)` of a tuple or list.
    fn seq_len_of(&self, v: Value) -> Option<usize> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => Some(items.len()),
                _ => None,
            },
            _ => None,
        }
    }

    /// Item `k` of a tuple or list (borrowed).
    fn seq_item_of(&self, v: Value, k: usize) -> Value {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => {
                    items.get(k).copied().unwrap_or(Value::None)
                }
                _ => Value::None,
            },
            _ => Value::None,
        }
    }

    /// A tensor value as a gradient buffer (one new storage reference), with its graph
    /// when `create_graph`; `None` for anything else.
    fn buffer_of(&mut self, v: Value, create_graph: bool) -> Option<GradBuffer> {
        let t = match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => t.clone(),
                _ => return None,
            },
            _ => return None,
        };
        self.storages.add_ref(t.storage);
        let node = t.grad_fn.filter(|_| create_graph);
        if let Some(g) = node {
            self.heap.incref(Value::Obj(g));
        }
        Some(GradBuffer {
            storage: t.storage,
            shape: t.shape,
            dtype: t.dtype,
            device: t.device,
            node,
            output_nr: t.output_nr,
        })
    }

    /// Runs the node's pre-hooks on its incoming gradients; returns what flows on.
    pub(super) fn run_node_pre_hooks(
        &mut self,
        dict: ObjId,
        slots: Slots,
        create_graph: bool,
    ) -> R<Slots> {
        let tuple = {
            let refs: Vec<Option<&GradBuffer>> = slots.iter().map(Option::as_ref).collect();
            self.node_grads_tuple(&refs)
        };
        let n = slots.len();
        for b in slots.into_iter().flatten() {
            b.release(self);
        }
        let result = self.call_node_hooks(dict, tuple?, None)?;
        let slots = (0..n)
            .map(|k| {
                let v = self.seq_item_of(result, k);
                self.buffer_of(v, create_graph)
            })
            .collect();
        self.heap.decref(result);
        self.release_dropped_storages(None);
        Ok(slots)
    }

    /// Runs the node's post-hooks on what it computed (`out`, in edge order) and what it
    /// received (`grad_outputs`, a tuple, owned); returns what flows on.
    pub(super) fn run_node_post_hooks(
        &mut self,
        dict: ObjId,
        node: &GradNode,
        out: Vec<(Target, GradBuffer)>,
        grad_outputs: Value,
        create_graph: bool,
    ) -> R<Vec<(Target, GradBuffer)>> {
        // One entry per edge: the flow computed for it, matched in order.
        let mut per_edge: Vec<Option<(Target, GradBuffer)>> = Vec::new();
        let mut rest = out.into_iter().peekable();
        for e in &node.inputs {
            let hit = match (e.node, rest.peek()) {
                (Some(next), Some((target, _))) => *target == (next, e.input_nr),
                _ => false,
            };
            per_edge.push(if hit { rest.next() } else { None });
        }
        let unmatched: Vec<(Target, GradBuffer)> = rest.collect();
        let tuple = {
            let refs: Vec<Option<&GradBuffer>> = per_edge
                .iter()
                .map(|f| f.as_ref().map(|(_, b)| b))
                .collect();
            self.node_grads_tuple(&refs)
        };
        let tuple = match tuple {
            Ok(t) => t,
            Err(e) => {
                self.heap.decref(grad_outputs);
                return Err(e);
            }
        };
        let result = self.call_node_hooks(dict, tuple, Some(grad_outputs));
        self.heap.decref(grad_outputs);
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                for (_, b) in per_edge.into_iter().flatten().chain(unmatched) {
                    b.release(self);
                }
                return Err(e);
            }
        };
        let mut flows = Vec::new();
        for (k, (e, f)) in node.inputs.iter().zip(per_edge).enumerate() {
            if let Some((_, b)) = f {
                b.release(self);
            }
            let Some(next) = e.node else { continue };
            let v = self.seq_item_of(result, k);
            if let Some(mut b) = self.buffer_of(v, create_graph) {
                // A gradient delivered in a view's shape flows on in the edge's.
                if crate::torch::numel(&b.shape) == crate::torch::numel(&e.shape) {
                    b.shape.clone_from(&e.shape);
                }
                flows.push(((next, e.input_nr), b));
            }
        }
        flows.extend(unmatched);
        self.heap.decref(result);
        self.release_dropped_storages(None);
        Ok(flows)
    }
}
