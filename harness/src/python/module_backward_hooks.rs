//! Full backward hooks on modules: `register_full_backward_hook` and
//! `register_full_backward_pre_hook`, and what `Module.__call__` builds for them.
//!
//! PyTorch (`Module._call_impl`, `torch/utils/hooks.py`'s `BackwardHook`): when the module
//! has such hooks, each call makes a `BackwardHook` object holding the module, the lists of
//! hooks and, during backward, `grad_outputs`. The inputs (when one requires grad and grad
//! mode is on) and then the outputs go through `BackwardHookFunction.apply`, a custom
//! Function that returns its arguments: each becomes a new tensor object, a view of the
//! original whose `grad_fn` is a `BackwardHookFunctionBackward` node. Closures over the
//! `BackwardHook` are registered on those nodes (C++ references the collector cannot see),
//! so a graph that is alive keeps the `BackwardHook`, its module and its hooks alive.
//!
//! During backward the output node's pre-hook wraps the incoming gradient as
//! `grad_output` (stored on the `BackwardHook` until the input node runs), runs the
//! pre-hooks (which may replace it), and, when no input required grad, calls the full
//! hooks right away with a `grad_input` of `None`s. The input node's post-hook calls the
//! full hooks with `grad_input` and `grad_output` (each may return replacements) and then
//! drops `grad_output`. A hook that keeps either tuple keeps those gradient buffers.
//!
//! Each node has one output per wrapped tensor: the engine keeps one gradient slot per
//! output (edges carry their `input_nr`), so the hooks see one gradient per tensor
//! argument, `None` where it does not require grad or where no gradient reached it.

use super::autograd::{self, GradBuffer, Target};
use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, GradFlow, GradNode, ModuleHookSide};

/// The module attributes holding the hooks (PyTorch's names).
pub(super) const BACKWARD_HOOKS: &str = "_backward_hooks";
pub(super) const BACKWARD_PRE_HOOKS: &str = "_backward_pre_hooks";

/// PyTorch's class name of the node `BackwardHookFunction.apply` records.
const NODE_NAME: &str = "BackwardHookFunctionBackward";

impl Interpreter<'_> {
    /// The hook registration methods of this module kind: `None` when `name` is not one.
    pub(super) fn module_backward_hook_method(
        &mut self,
        module: ObjId,
        name: &str,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Option<Value>> {
        let dict_name = match name {
            "register_full_backward_hook" => BACKWARD_HOOKS,
            "register_full_backward_pre_hook" => BACKWARD_PRE_HOOKS,
            "register_backward_hook" => {
                return self.unsupported(
                    "`Module.register_backward_hook` (the deprecated non-full hook, which sees only the last node's gradients); use `register_full_backward_hook`, which is modelled",
                );
            }
            _ => return Ok(None),
        };
        super::keywords::check(self, name, Some(&["hook", "prepend"]), kwargs)?;
        let hook = match (args.first(), self.hook_kwarg(kwargs, "hook")) {
            (Some(&h), _) | (None, Some(h)) => h,
            (None, None) => {
                return self.error(format!(
                    "TypeError: {name}() missing 1 required positional argument: 'hook'"
                ));
            }
        };
        let prepend = match self.hook_kwarg(kwargs, "prepend").or(args.get(1).copied()) {
            Some(v) => self.truth(v)?,
            None => false,
        };
        self.register_module_hook(module, dict_name, hook, prepend)
            .map(Some)
    }

    fn hook_kwarg(&self, kwargs: &[(Sym, Value)], name: &str) -> Option<Value> {
        kwargs
            .iter()
            .find(|(k, _)| self.names.name(*k) == name)
            .map(|(_, v)| *v)
    }

    /// Calls `hook(args...)` where `args` are borrowed (each gets its own reference).
    fn call_borrowed(&mut self, hook: Value, args: &[Value]) -> R<Value> {
        for &a in args {
            self.heap.incref(a);
        }
        self.call(hook, args.to_vec(), Vec::new())
    }

    /// `setup_input_hook`: with backward hooks registered, makes the call's `BackwardHook`
    /// (returned, one reference) and wraps the tensor inputs when one requires grad.
    pub(super) fn setup_module_input_hook(
        &mut self,
        module: ObjId,
        args: &mut [Value],
    ) -> R<Option<ObjId>> {
        let user_hooks = self.hooks(module, BACKWARD_HOOKS);
        let user_pre_hooks = self.hooks(module, BACKWARD_PRE_HOOKS);
        if user_hooks.is_empty() && user_pre_hooks.is_empty() {
            return Ok(None);
        }
        let hooks_list = Value::Obj(self.alloc(ObjKind::List(user_hooks)));
        let pre_list = Value::Obj(self.alloc(ObjKind::List(user_pre_hooks)));
        self.heap.incref(Value::Obj(module));
        let bw = self.new_torch_instance(
            TorchClass::BackwardHook,
            vec![
                ("user_hooks", hooks_list),
                ("user_pre_hooks", pre_list),
                ("module", Value::Obj(module)),
                ("grad_outputs", Value::None),
                ("n_outputs", Value::Int(-1)),
                ("output_tensors_index", Value::None),
                ("n_inputs", Value::Int(-1)),
                ("input_tensors_index", Value::None),
            ],
        )?;
        let index = self.apply_backward_hook_function(bw, args, ModuleHookSide::Inputs)?;
        self.set_hook_attr(bw, "n_inputs", Value::Int(args.len() as i64))?;
        self.set_hook_attr(bw, "input_tensors_index", index)?;
        Ok(Some(bw))
    }

    /// `setup_output_hook`: wraps the tensor outputs (a tensor or a tuple's tensors);
    /// returns the new output. Consumes the `BackwardHook` reference.
    pub(super) fn setup_module_output_hook(&mut self, bw: ObjId, output: Value) -> R<Value> {
        let hook_seq_items = match output {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) => Some(items.clone()),
                _ => None,
            },
            _ => None,
        };
        if hook_seq_items.is_none() && !self.is_tensor(output) {
            let type_name = self.type_name_of(output);
            self.recorder.approximation(format!(
                "PyTorch warns: UserWarning: For backward hooks to be called, module output should be a Tensor or a tuple of Tensors but received {type_name}"
            ));
        }
        let mut items = hook_seq_items.clone().unwrap_or_else(|| vec![output]);
        // `items` owns one reference to each entry; wrapping replaces them by aliases.
        for &v in &items {
            self.heap.incref(v);
        }
        let result = self.apply_backward_hook_function(bw, &mut items, ModuleHookSide::Outputs);
        let result = result.and_then(|index| {
            self.set_hook_attr(bw, "n_outputs", Value::Int(items.len() as i64))?;
            self.set_hook_attr(bw, "output_tensors_index", index)
        });
        self.heap.decref_id(bw);
        if let Err(e) = result {
            self.heap.decref_all(items);
            self.heap.decref(output);
            return Err(e);
        }
        match hook_seq_items {
            Some(old) if old != items => {
                // A new tuple of the aliases (the references of `items` handed over).
                let wrapped = Value::Obj(self.alloc(ObjKind::Tuple(items)));
                self.heap.decref(output);
                Ok(wrapped)
            }
            Some(_) => {
                self.heap.decref_all(items);
                Ok(output)
            }
            None => {
                self.heap.decref(output);
                Ok(items[0])
            }
        }
    }

    fn set_hook_attr(&mut self, bw: ObjId, name: &str, v: Value) -> R<()> {
        let s = self.sym(name);
        self.set_attr(Value::Obj(bw), s, v)
    }

    fn hook_attr(&mut self, bw: ObjId, name: &str) -> R<Value> {
        let s = self.sym(name);
        self.get_attr(Value::Obj(bw), s)
    }

    /// `_apply_on_tensors` with `BackwardHookFunction.apply`: when a tensor in `items`
    /// requires grad (and grad mode is on), every tensor in it is replaced (its reference
    /// dropped) by a view of itself; those that require grad become outputs of one shared
    /// `BackwardHookFunctionBackward` node (the others are marked non-differentiable).
    /// Returns the tensors' positions (a list), or `None` when nothing was wrapped.
    fn apply_backward_hook_function(
        &mut self,
        bw: ObjId,
        items: &mut [Value],
        side: ModuleHookSide,
    ) -> R<Value> {
        let positions: Vec<usize> = (0..items.len())
            .filter(|&i| self.is_tensor(items[i]))
            .collect();
        let needing = positions
            .iter()
            .filter(|&&i| autograd::requires_grad(self, items[i]))
            .count();
        if needing == 0 || !self.grad_enabled {
            return Ok(Value::None);
        }
        let mut node = GradNode::new(NODE_NAME, GradFlow::PassThrough);
        for &i in &positions {
            if let Some(edge) = autograd::edge_to(self, items[i]) {
                node.inputs.push(edge);
            }
        }
        self.heap.incref(Value::Obj(bw));
        node.module_hook = Some((bw, side));
        let node = self.heap.insert(ObjKind::GradNode(Box::new(node)));
        // Output `k` of the node is the alias of the `k`-th tensor.
        for (k, &i) in positions.iter().enumerate() {
            let differentiable = autograd::requires_grad(self, items[i]);
            let alias = self.alias_of(items[i])?;
            self.heap.decref(std::mem::replace(&mut items[i], alias));
            if differentiable && let Value::Obj(a) = alias {
                self.heap.incref(Value::Obj(node));
                autograd::set_history_at(self, a, node, k as u32);
            }
        }
        self.heap.decref_id(node);
        let index: Vec<Value> = positions.iter().map(|&i| Value::Int(i as i64)).collect();
        Ok(Value::Obj(self.alloc(ObjKind::List(index))))
    }

    /// `index` (a list of positions) as numbers.
    fn hook_positions(&mut self, index: Value) -> R<Vec<usize>> {
        let items = match index {
            Value::None => Vec::new(),
            v => self.iterable_items(v)?,
        };
        Ok(items
            .into_iter()
            .filter_map(|v| match v {
                Value::Int(i) => usize::try_from(i).ok(),
                _ => None,
            })
            .collect())
    }

    /// `_pack_with_none`: a tuple of `n` entries, `values[k]` at `positions[k]`, `None`
    /// elsewhere (references of `values` handed over).
    fn pack_with_none(&mut self, positions: &[usize], values: Vec<Value>, n: i64) -> Value {
        let mut items = vec![Value::None; n.max(0) as usize];
        for (&p, v) in positions.iter().zip(values) {
            if let Some(slot) = items.get_mut(p) {
                *slot = v;
            } else {
                self.heap.decref(v);
            }
        }
        Value::Obj(self.alloc(ObjKind::Tuple(items)))
    }

    /// Runs a `BackwardHookFunctionBackward` node: `slots` holds the gradient of each of
    /// its outputs (one per wrapped tensor, in order). The node is an identity; its hooks
    /// see and may replace the gradients. Returns what flows on, per edge.
    pub(super) fn run_module_hook_node(
        &mut self,
        node: &GradNode,
        mut slots: Vec<Option<GradBuffer>>,
        create_graph: bool,
    ) -> R<Vec<(Target, GradBuffer)>> {
        // Each gradient has its output's shape (an op reading a view of the output, such as
        // a flattened projection input, delivers it in the view's shape).
        let grads: Vec<Option<GradBuffer>> = node
            .inputs
            .iter()
            .enumerate()
            .map(|(k, e)| {
                let mut b = slots.get_mut(k).and_then(Option::take)?;
                if crate::torch::numel(&b.shape) == crate::torch::numel(&e.shape) {
                    b.shape.clone_from(&e.shape);
                }
                Some(b)
            })
            .collect();
        for b in slots.into_iter().flatten() {
            b.release(self);
        }
        let Some((bw, side)) = node.module_hook else {
            return Ok(Vec::new());
        };
        // Buffers summed into these slots were freed at once by PyTorch's `InputBuffer::add`;
        // the hooks must not see them.
        self.release_dropped_storages(None);
        match side {
            ModuleHookSide::Outputs => {
                self.run_module_output_pre_hook(bw, node, grads, create_graph)
            }
            ModuleHookSide::Inputs => {
                // The input node's post-hook sees what `apply` returned: the identity of
                // its inputs after `PyNode::apply` materialized the missing ones.
                let grads = self.materialize_missing_grads(node, grads)?;
                self.run_module_input_post_hook(bw, node, grads, create_graph)
            }
        }
    }

    /// `PyNode::apply` (`torch/csrc/autograd/python_function.cpp`): a Python Function that
    /// did not call `ctx.set_materialize_grads(False)` (`BackwardHookFunction` does not)
    /// gets zeros of the output's shape for a differentiable output whose gradient did not
    /// arrive, so a module input (or output) the loss did not reach receives a gradient of
    /// zeros, allocated during backward, and its history is back-propagated. Outputs marked
    /// non-differentiable (inputs that did not require grad: no edge) stay `None`.
    fn materialize_missing_grads(
        &mut self,
        node: &GradNode,
        mut grads: Vec<Option<GradBuffer>>,
    ) -> R<Vec<Option<GradBuffer>>> {
        for (k, e) in node.inputs.iter().enumerate() {
            if e.node.is_none() || grads.get(k).is_some_and(Option::is_some) {
                continue;
            }
            let storage = match self.new_storage(&e.shape, e.dtype, e.device, Category::Temporary) {
                Ok(s) => s,
                Err(err) => {
                    for b in grads.into_iter().flatten() {
                        b.release(self);
                    }
                    return Err(err);
                }
            };
            if grads.len() <= k {
                grads.resize_with(k + 1, || None);
            }
            grads[k] = Some(GradBuffer {
                storage,
                shape: e.shape.clone(),
                dtype: e.dtype,
                device: e.device,
                node: None,
                output_nr: 0,
            });
        }
        Ok(grads)
    }

    /// Each gradient as a tensor object (`None` where none arrived); the buffers' own
    /// references are dropped.
    fn grads_as_values(&mut self, grads: Vec<Option<GradBuffer>>) -> R<Vec<Value>> {
        let mut values = Vec::with_capacity(grads.len());
        let mut failed = None;
        for g in grads {
            match g {
                Some(b) => {
                    let t = self.grad_as_tensor(&b);
                    b.release(self);
                    match t {
                        Ok(t) => values.push(t),
                        Err(e) => {
                            failed.get_or_insert(e);
                            values.push(Value::None);
                        }
                    }
                }
                None => values.push(Value::None),
            }
        }
        match failed {
            Some(e) => {
                self.heap.decref_all(values);
                Err(e)
            }
            None => Ok(values),
        }
    }

    /// The output node's pre-hook: records `grad_output`, runs the pre-hooks and, when
    /// no input required grad, the full hooks. Returns the gradients that flow on.
    fn run_module_output_pre_hook(
        &mut self,
        bw: ObjId,
        node: &GradNode,
        grads: Vec<Option<GradBuffer>>,
        create_graph: bool,
    ) -> R<Vec<(Target, GradBuffer)>> {
        let values = self.grads_as_values(grads)?;
        let index = self.hook_attr(bw, "output_tensors_index")?;
        let positions = self.hook_positions(index)?;
        self.heap.decref(index);
        let n_outputs = self.hook_int_attr(bw, "n_outputs")?;
        let packed = self.pack_with_none(&positions, values, n_outputs);
        self.set_hook_attr(bw, "grad_outputs", packed)?;
        let module = self.hook_attr(bw, "module")?;
        let result = self.output_pre_hook_body(bw, module, &positions);
        self.heap.decref(module);
        let local = result?;
        // What the pre-hooks returned are the node's inputs; `apply` materializes the
        // missing ones (see `materialize_missing_grads`) and passes them on.
        let grads: Vec<Option<GradBuffer>> = (0..node.inputs.len())
            .map(|k| {
                let v = self.hook_seq_item(local, k);
                let t = self.tensor_data(v)?;
                self.storages.add_ref(t.storage);
                let graph = t.grad_fn.filter(|_| create_graph);
                if let Some(g) = graph {
                    self.heap.incref(Value::Obj(g));
                }
                Some(GradBuffer {
                    storage: t.storage,
                    shape: node.inputs[k].shape.clone(),
                    dtype: t.dtype,
                    device: t.device,
                    node: graph,
                    output_nr: t.output_nr,
                })
            })
            .collect();
        self.heap.decref(local);
        let grads = self.materialize_missing_grads(node, grads)?;
        let mut out = Vec::new();
        for (e, g) in node.inputs.iter().zip(grads) {
            match (e.node, g) {
                (Some(next), Some(b)) => out.push(((next, e.input_nr), b)),
                (None, Some(b)) => b.release(self),
                _ => {}
            }
        }
        self.release_dropped_storages(None);
        Ok(out)
    }

    fn output_pre_hook_body(&mut self, bw: ObjId, module: Value, positions: &[usize]) -> R<Value> {
        let pre = self.hook_list(bw, "user_pre_hooks")?;
        for hook in pre {
            let grad_outputs = self.hook_attr(bw, "grad_outputs")?;
            let expected = self.hook_seq_len(grad_outputs);
            let r = self.call_borrowed(hook, &[module, grad_outputs]);
            self.heap.decref(grad_outputs);
            let r = r?;
            if r == Value::None {
                continue;
            }
            let actual = self.hook_seq_len(r);
            if actual != expected {
                self.heap.decref(r);
                return self.error(format!(
                    "RuntimeError: Backward pre hook returned an invalid number of grad_output, got {actual}, but expected {expected}"
                ));
            }
            self.set_hook_attr(bw, "grad_outputs", r)?;
        }
        let local = self.hook_attr(bw, "grad_outputs")?;
        let input_index = self.hook_attr(bw, "input_tensors_index")?;
        self.heap.decref(input_index);
        if input_index == Value::None {
            let n_inputs = self.hook_int_attr(bw, "n_inputs")?;
            let grad_inputs = self.pack_with_none(&[], Vec::new(), n_inputs);
            let r = self.run_full_hooks(bw, module, grad_inputs, true);
            self.heap.decref(grad_inputs);
            if let Err(e) = r {
                self.heap.decref(local);
                return Err(e);
            }
            self.set_hook_attr(bw, "grad_outputs", Value::None)?;
        }
        // `tuple(local_grad_outputs[i] for i in self.output_tensors_index)`
        let picked: Vec<Value> = positions
            .iter()
            .map(|&p| self.hook_seq_item(local, p))
            .collect();
        for &v in &picked {
            self.heap.incref(v);
        }
        self.heap.decref(local);
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(picked))))
    }

    /// Calls each full hook `hook(module, grad_input, grad_output)`. With `no_input`, each
    /// must return `None` (or all `None`s); otherwise a returned tuple replaces
    /// `grad_input`. Returns the final `grad_input` (a new reference).
    fn run_full_hooks(
        &mut self,
        bw: ObjId,
        module: Value,
        grad_inputs: Value,
        no_input: bool,
    ) -> R<Value> {
        let list = self.hook_list(bw, "user_hooks")?;
        let mut res = grad_inputs;
        self.heap.incref(res);
        for hook in list {
            let grad_outputs = self.hook_attr(bw, "grad_outputs")?;
            let r = self.call_borrowed(hook, &[module, res, grad_outputs]);
            self.heap.decref(grad_outputs);
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref(res);
                    return Err(e);
                }
            };
            if r == Value::None {
                continue;
            }
            if no_input {
                let all_none = self
                    .hook_seq_items(r)
                    .is_some_and(|items| items.iter().all(|v| *v == Value::None));
                self.heap.decref(r);
                if !all_none {
                    self.heap.decref(res);
                    return self.error("RuntimeError: Backward hook for Modules where no input requires gradient should always return None or None for all gradients.");
                }
                continue;
            }
            let (actual, expected) = (self.hook_seq_len(r), self.hook_seq_len(res));
            if actual != expected {
                self.heap.decref(r);
                self.heap.decref(res);
                return self.error(format!(
                    "RuntimeError: Backward hook returned an invalid number of grad_input, got {actual}, but expected {expected}"
                ));
            }
            self.heap.decref(std::mem::replace(&mut res, r));
        }
        Ok(res)
    }

    /// The input node's post-hook: the full hooks see `grad_input` (the node's results,
    /// its incoming gradients unchanged) and the stored `grad_output`, which is then
    /// dropped. Returns the gradients that flow on, replaced by what the hooks returned.
    fn run_module_input_post_hook(
        &mut self,
        bw: ObjId,
        node: &GradNode,
        grads: Vec<Option<GradBuffer>>,
        create_graph: bool,
    ) -> R<Vec<(Target, GradBuffer)>> {
        let grad_outputs = self.hook_attr(bw, "grad_outputs")?;
        self.heap.decref(grad_outputs);
        if grad_outputs == Value::None {
            // No output gradient was computed: the gradients flow on untouched.
            let mut flows = Vec::new();
            for (e, g) in node.inputs.iter().zip(grads) {
                match (e.node, g) {
                    (Some(next), Some(b)) => flows.push(((next, e.input_nr), b)),
                    (None, Some(b)) => b.release(self),
                    _ => {}
                }
            }
            return Ok(flows);
        }
        let values = self.grads_as_values(grads)?;
        let index = self.hook_attr(bw, "input_tensors_index")?;
        let positions = self.hook_positions(index)?;
        self.heap.decref(index);
        let n_inputs = self.hook_int_attr(bw, "n_inputs")?;
        let packed = self.pack_with_none(&positions, values, n_inputs);
        let module = self.hook_attr(bw, "module")?;
        let res = self.run_full_hooks(bw, module, packed, false);
        self.heap.decref(module);
        self.heap.decref(packed);
        let res = res?;
        self.set_hook_attr(bw, "grad_outputs", Value::None)?;
        // `_unpack_none`: the entries at the tensors' positions, in order.
        let flows = self.flows_from(res, node, Some(&positions), create_graph);
        self.heap.decref(res);
        self.release_dropped_storages(None);
        Ok(flows)
    }

    /// The gradients flowing on along the node's edges: entry `k` of `grads` (a tuple; at
    /// `positions[k]` when given) for edge `k`, where the edge needs one and it is a tensor.
    fn flows_from(
        &mut self,
        grads: Value,
        node: &GradNode,
        positions: Option<&[usize]>,
        create_graph: bool,
    ) -> Vec<(Target, GradBuffer)> {
        let mut flows = Vec::new();
        for (k, edge) in node.inputs.iter().enumerate() {
            let Some(next) = edge.node else { continue };
            let at = positions.map_or(Some(k), |p| p.get(k).copied());
            let Some(v) = at.map(|p| self.hook_seq_item(grads, p)) else {
                continue;
            };
            let Some(t) = self.tensor_data(v) else {
                continue;
            };
            self.storages.add_ref(t.storage);
            let graph = t.grad_fn.filter(|_| create_graph);
            if let Some(g) = graph {
                self.heap.incref(Value::Obj(g));
            }
            flows.push((
                (next, edge.input_nr),
                GradBuffer {
                    storage: t.storage,
                    shape: edge.shape.clone(),
                    dtype: t.dtype,
                    device: t.device,
                    node: graph,
                    output_nr: t.output_nr,
                },
            ));
        }
        flows
    }

    /// The hooks of the list attribute `name`, kept alive by the `BackwardHook` (borrowed;
    /// a hook that empties the list mid-way is not modelled).
    fn hook_list(&mut self, bw: ObjId, name: &str) -> R<Vec<Value>> {
        let list = self.hook_attr(bw, name)?;
        let items = self.hook_seq_items(list).unwrap_or_default();
        self.heap.decref(list);
        Ok(items)
    }

    fn hook_int_attr(&mut self, bw: ObjId, name: &str) -> R<i64> {
        match self.hook_attr(bw, name)? {
            Value::Int(i) => Ok(i),
            v => {
                self.heap.decref(v);
                Ok(0)
            }
        }
    }

    fn hook_seq_items(&self, v: Value) -> Option<Vec<Value>> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => Some(items.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// `len(v)` for a tuple or list; 1 for anything else (PyTorch would fail on it).
    fn hook_seq_len(&self, v: Value) -> usize {
        self.hook_seq_items(v).map_or(1, |items| items.len())
    }

    /// `v[p]` of a tuple or list (borrowed), `None` when out of range.
    fn hook_seq_item(&self, v: Value, p: usize) -> Value {
        self.hook_seq_items(v)
            .and_then(|items| items.get(p).copied())
            .unwrap_or(Value::None)
    }
}
