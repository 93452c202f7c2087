//! The `nn.Module` API beyond forward: forward hooks and their removable handles,
//! buffers, parameters by name, child modules, `train`/`eval` and `state_dict`.
//!
//! What matters for memory is who holds what. A module keeps its hooks in dicts that are
//! its own attributes (`_forward_hooks`, `_forward_pre_hooks`), so a hook that closes over
//! the module (or over a list of captured activations) forms a reference cycle the
//! collector sees, as in PyTorch. `state_dict()` returns new tensor objects (`detach()`ed)
//! on the parameters' storages: no device memory, but objects that keep the storages alive.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// Where a module keeps each kind of hook.
const FORWARD_HOOKS: &str = "_forward_hooks";
const FORWARD_PRE_HOOKS: &str = "_forward_pre_hooks";
/// Names of registered buffers and whether each is persistent (in `state_dict`).
const BUFFERS: &str = "_buffers";

impl Interpreter<'_> {
    /// A module method of this API; `None` when `name` is not one.
    pub(super) fn module_api_method(
        &mut self,
        module: ObjId,
        name: &str,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Option<Value>> {
        let kw = |it: &Self, n: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == n)
                .map(|(_, v)| *v)
        };
        let result = match name {
            "register_forward_hook" | "register_forward_pre_hook" => {
                let Some(&hook) = args.first() else {
                    return self.error(format!("TypeError: {name}() missing hook"));
                };
                let dict_name = if name == "register_forward_hook" {
                    FORWARD_HOOKS
                } else {
                    FORWARD_PRE_HOOKS
                };
                let prepend = match kw(self, "prepend") {
                    Some(v) => self.truth(v)?,
                    None => false,
                };
                self.register_module_hook(module, dict_name, hook, prepend)?
            }
            "register_buffer" => {
                let (Some(&Value::Str(n)), Some(&tensor)) = (args.first(), args.get(1)) else {
                    return self.error("TypeError: register_buffer(name, tensor, persistent=True)");
                };
                let persistent = match kw(self, "persistent").or(args.get(2).copied()) {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                let buffers = self.module_dict(module, BUFFERS)?;
                self.dict_set(buffers, Value::Str(n), Value::Bool(persistent));
                self.heap.incref(tensor);
                self.set_attr(Value::Obj(module), n, tensor)?;
                Value::None
            }
            "register_parameter" => {
                let (Some(&Value::Str(n)), Some(&param)) = (args.first(), args.get(1)) else {
                    return self.error("TypeError: register_parameter(name, param)");
                };
                self.heap.incref(param);
                self.set_attr(Value::Obj(module), n, param)?;
                Value::None
            }
            "named_parameters" | "buffers" | "named_buffers" | "children" | "named_children"
            | "modules" | "named_modules" | "state_dict" => {
                let mut items = Vec::new();
                self.walk_module(module, "", name, &mut items)?;
                if name == "state_dict" {
                    let d = self.alloc(ObjKind::Dict(Vec::new()));
                    for (k, v) in items {
                        self.dict_set(d, k, v);
                    }
                    Value::Obj(d)
                } else {
                    let named = name.starts_with("named_");
                    let mut out = Vec::with_capacity(items.len());
                    for (k, v) in items {
                        if named {
                            out.push(Value::Obj(self.alloc(ObjKind::Tuple(vec![k, v]))));
                        } else {
                            self.heap.decref(k);
                            out.push(v);
                        }
                    }
                    Value::Obj(self.alloc(ObjKind::List(out)))
                }
            }
            "load_state_dict" => {
                super::keywords::check(
                    self,
                    "Module.load_state_dict",
                    Some(&["state_dict", "strict", "assign"]),
                    kwargs,
                )?;
                if let Some(v) = kw(self, "assign").or(args.get(2).copied())
                    && self.truth(v)?
                {
                    return self.unsupported(
                        "`load_state_dict(..., assign=True)` (the module would hold the dict's tensors); the default copy is modelled",
                    );
                }
                let Some(&source) = args.first().or(kw(self, "state_dict").as_ref()) else {
                    return self.error(
                        "TypeError: load_state_dict() missing 1 required positional argument: 'state_dict'",
                    );
                };
                let strict = match kw(self, "strict").or(args.get(1).copied()) {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                self.load_state_dict(module, source, strict)?
            }
            "train" | "eval" => {
                let mode = if name == "eval" {
                    false
                } else {
                    match kw(self, "mode").or(args.first().copied()) {
                        Some(v) => self.truth(v)?,
                        None => true,
                    }
                };
                let mut modules = Vec::new();
                self.walk_module(module, "", "modules", &mut modules)?;
                let training = self.names.intern("training");
                for (k, m) in modules {
                    self.heap.decref(k);
                    self.set_attr(m, training, Value::Bool(mode))?;
                    self.heap.decref(m);
                }
                self.heap.incref(Value::Obj(module));
                Value::Obj(module)
            }
            _ => return self.module_backward_hook_method(module, name, args, kwargs),
        };
        Ok(Some(result))
    }

    /// Adds `hook` to the module's dict `dict_name` (at the front with `prepend`, as
    /// `OrderedDict.move_to_end(last=False)` does) and returns its `RemovableHandle`.
    pub(super) fn register_module_hook(
        &mut self,
        module: ObjId,
        dict_name: &str,
        hook: Value,
        prepend: bool,
    ) -> R<Value> {
        let dict = self.module_dict(module, dict_name)?;
        self.torch_classes.next_hook_id += 1;
        let id = Value::Int(self.torch_classes.next_hook_id);
        self.heap.incref(hook);
        self.dict_set(dict, id, hook);
        if prepend && let ObjKind::Dict(items) = self.heap.kind_mut(dict) {
            items.rotate_right(1);
        }
        self.new_removable_handle(dict, id)
    }

    /// `RemovableHandle(hooks_dict)`: `hooks_dict_ref` is a `weakref.ref` to the dict
    /// (the registry's plain reference, shared as CPython shares it), so a handle kept
    /// after its module or tensor died keeps neither the dict nor its hooks alive.
    pub(super) fn new_removable_handle(&mut self, dict: ObjId, id: Value) -> R<Value> {
        let weak = match self.heap.basic_weak_ref(dict) {
            Some(existing) => {
                self.heap.incref(Value::Obj(existing));
                existing
            }
            None => {
                let r = self.alloc(ObjKind::Wrapper(WrapperKind::WeakRef, vec![Value::None]));
                self.heap.register_weak(r, dict);
                r
            }
        };
        let handle = self.new_torch_instance(
            TorchClass::RemovableHandle,
            vec![("hooks_dict_ref", Value::Obj(weak)), ("id", id)],
        )?;
        Ok(Value::Obj(handle))
    }

    /// `handle.remove()`: the hook leaves its dict, if the dict still lives (a no-op
    /// otherwise, as `hooks_dict_ref()` is then `None`).
    pub(super) fn remove_hook(&mut self, handle: ObjId) -> R<Value> {
        let d = self.names.intern("hooks_dict_ref");
        let i = self.names.intern("id");
        let weak = self.get_attr(Value::Obj(handle), d)?;
        let id = self.get_attr(Value::Obj(handle), i)?;
        let dict = match weak {
            Value::Obj(w) => self.heap.weak_target(w),
            _ => None,
        };
        if let Some(dict_id) = dict {
            let removed = match self.heap.kind_mut(dict_id) {
                ObjKind::Dict(items) => items
                    .iter()
                    .position(|(k, _)| *k == id)
                    .map(|p| items.remove(p)),
                _ => None,
            };
            if let Some((k, v)) = removed {
                self.heap.decref(k);
                self.heap.decref(v);
            }
        }
        self.heap.decref(weak);
        Ok(Value::None)
    }

    /// The module's dict attribute `name`, created empty on first use (borrowed).
    fn module_dict(&mut self, module: ObjId, name: &str) -> R<ObjId> {
        let sym = self.names.intern(name);
        if let Some((_, Value::Obj(d))) = self
            .attr_values(module)
            .into_iter()
            .find(|(k, _)| *k == sym)
        {
            return Ok(d);
        }
        let d = self.alloc(ObjKind::Dict(Vec::new()));
        self.set_attr(Value::Obj(module), sym, Value::Obj(d))?;
        Ok(d)
    }

    /// The module has full backward (pre-)hooks.
    fn has_backward_hooks(&mut self, module: ObjId) -> bool {
        use super::module_backward_hooks::{BACKWARD_HOOKS, BACKWARD_PRE_HOOKS};
        [BACKWARD_HOOKS, BACKWARD_PRE_HOOKS]
            .into_iter()
            .any(|name| {
                self.hook_dict(module, name).is_some_and(
                    |d| matches!(self.heap.kind(d), ObjKind::Dict(items) if !items.is_empty()),
                )
            })
    }

    /// The module's own dict attribute `name` (borrowed), found without copying the
    /// module's attributes: every module call asks for four of them.
    fn hook_dict(&mut self, module: ObjId, name: &'static str) -> Option<ObjId> {
        let sym = self.names.intern_static(name);
        match self.instance_attr(module, sym) {
            Some(Value::Obj(d)) => Some(d),
            _ => None,
        }
    }

    /// The hooks registered in `module`'s dict `name`, in order (new references).
    pub(super) fn hooks(&mut self, module: ObjId, name: &'static str) -> Vec<Value> {
        let Some(d) = self.hook_dict(module, name) else {
            return Vec::new();
        };
        let hooks: Vec<Value> = match self.heap.kind(d) {
            ObjKind::Dict(items) => items.iter().map(|(_, v)| *v).collect(),
            _ => Vec::new(),
        };
        for &h in &hooks {
            self.heap.incref(h);
        }
        hooks
    }

    /// `Module.__call__`: forward pre-hooks (which may replace the inputs), forward, then
    /// forward hooks (which may replace the output), in registration order.
    pub(super) fn call_module_with_hooks(
        &mut self,
        module: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
        forward: impl FnOnce(&mut Self, Vec<Value>, Vec<(Sym, Value)>) -> R<Value>,
    ) -> R<Value> {
        let pre = self.hooks(module, FORWARD_PRE_HOOKS);
        let post = self.hooks(module, FORWARD_HOOKS);
        if pre.is_empty() && post.is_empty() && !self.has_backward_hooks(module) {
            return forward(self, args, kwargs);
        }
        let mut args = args;
        for (n, hook) in pre.iter().enumerate() {
            let input = self.alloc(ObjKind::Tuple(args.clone()));
            for &a in &args {
                self.heap.incref(a);
            }
            self.heap.incref(Value::Obj(module));
            let r = self.call(
                *hook,
                vec![Value::Obj(module), Value::Obj(input)],
                Vec::new(),
            );
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    self.heap.decref_all(args);
                    self.heap.decref_all(pre[n..].to_vec());
                    self.heap.decref_all(post);
                    return Err(e);
                }
            };
            if r != Value::None {
                let replaced = match r {
                    Value::Obj(id) => match self.heap.kind(id) {
                        ObjKind::Tuple(items) => Some(items.clone()),
                        _ => None,
                    },
                    _ => None,
                };
                let new_args = match replaced {
                    Some(items) => {
                        for &v in &items {
                            self.heap.incref(v);
                        }
                        self.heap.decref(r);
                        items
                    }
                    None => vec![r],
                };
                self.heap.decref_all(std::mem::replace(&mut args, new_args));
            }
        }
        self.heap.decref_all(pre);
        let bw_hook = match self.setup_module_input_hook(module, &mut args) {
            Ok(h) => h,
            Err(e) => {
                self.heap.decref_all(args);
                self.heap.decref_all(post);
                return Err(e);
            }
        };
        let input = self.alloc(ObjKind::Tuple(args.clone()));
        for &a in &args {
            self.heap.incref(a);
        }
        let mut output = match forward(self, args, kwargs) {
            Ok(o) => o,
            Err(e) => {
                self.heap.decref_id(input);
                self.heap.decref_all(post);
                if let Some(bw) = bw_hook {
                    self.heap.decref_id(bw);
                }
                return Err(e);
            }
        };
        for hook in &post {
            self.heap.incref(Value::Obj(module));
            self.heap.incref(Value::Obj(input));
            self.heap.incref(output);
            let r = self.call(
                *hook,
                vec![Value::Obj(module), Value::Obj(input), output],
                Vec::new(),
            );
            match r {
                Ok(Value::None) => {}
                Ok(r) => self.heap.decref(std::mem::replace(&mut output, r)),
                Err(e) => {
                    self.heap.decref(output);
                    self.heap.decref_id(input);
                    self.heap.decref_all(post.clone());
                    if let Some(bw) = bw_hook {
                        self.heap.decref_id(bw);
                    }
                    return Err(e);
                }
            }
        }
        self.heap.decref_all(post);
        self.heap.decref_id(input);
        match bw_hook {
            Some(bw) => self.setup_module_output_hook(bw, output),
            None => Ok(output),
        }
    }

    /// Depth-first over a module tree, as the `named_*` methods walk it: `what` picks
    /// parameters, buffers, children, modules, the `state_dict` entries or the tensors
    /// `load_state_dict` copies into (`state_targets`, the objects themselves). Pushes
    /// (name, value) pairs, both owned.
    pub(super) fn walk_module(
        &mut self,
        module: ObjId,
        prefix: &str,
        what: &str,
        out: &mut Vec<(Value, Value)>,
    ) -> R<()> {
        let key = |it: &mut Self, name: &str| Value::Str(it.names.intern(name));
        if matches!(what, "modules" | "named_modules") {
            let k = key(self, prefix);
            self.heap.incref(Value::Obj(module));
            out.push((k, Value::Obj(module)));
        }
        let buffers: Vec<(Value, Value)> = {
            let sym = self.names.intern(BUFFERS);
            match self
                .attr_values(module)
                .into_iter()
                .find(|(k, _)| *k == sym)
            {
                Some((_, Value::Obj(d))) => match self.heap.kind(d) {
                    ObjKind::Dict(items) => items.clone(),
                    _ => Vec::new(),
                },
                _ => Vec::new(),
            }
        };
        for (sym, v) in self.attr_values(module) {
            let attr = self.names.name(sym).to_string();
            if attr.starts_with('_') {
                continue;
            }
            let full = if prefix.is_empty() {
                attr.clone()
            } else {
                format!("{prefix}.{attr}")
            };
            let Value::Obj(o) = v else { continue };
            let buffer = buffers
                .iter()
                .find(|(k, _)| *k == Value::Str(sym))
                .map(|(_, p)| *p);
            match self.heap.kind(o) {
                ObjKind::Tensor(t) => {
                    let is_param = t.is_param;
                    let wanted = match what {
                        "named_parameters" => is_param,
                        "buffers" | "named_buffers" => buffer.is_some(),
                        "state_dict" | "state_targets" => {
                            is_param || buffer == Some(Value::Bool(true))
                        }
                        _ => false,
                    };
                    if !wanted {
                        continue;
                    }
                    let value = if what == "state_dict" {
                        // `param.detach()`: a new tensor object on the same storage.
                        let t = t.clone();
                        self.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None)))?
                    } else {
                        self.heap.incref(v);
                        v
                    };
                    let k = key(self, &full);
                    out.push((k, value));
                }
                ObjKind::Instance { class, .. }
                    if self.torch_class(*class).is_some_and(TorchClass::is_module) =>
                {
                    if matches!(what, "children" | "named_children") {
                        let k = key(self, &attr);
                        self.heap.incref(v);
                        out.push((k, v));
                    } else {
                        self.walk_module(o, &full, what, out)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }
}
