//! `optimizer.state_dict()` and `optimizer.load_state_dict(sd)` (PyTorch 2.x).
//!
//! `state_dict()` builds new containers but no tensors: `{'state': {index: per-param
//! dict}, 'param_groups': [group]}` whose per-parameter dicts are the optimizer's own
//! (the same dict objects, so their tensors are the live state that later steps update in
//! place). Keeping a `state_dict()` per epoch therefore pins no device bytes, only dicts;
//! `copy.deepcopy(opt.state_dict())` (see `deepcopy.rs`) copies every state tensor.
//!
//! `load_state_dict(sd)` shallow-copies `sd`, checks the group sizes, and builds a new
//! state: one new dict per parameter whose tensors pass through
//! `_process_value_according_to_param_policy`, i.e. `value.to(dtype=param.dtype,
//! device=param.device)` (`step` is left as it is unless the saved group is `capturable` or `fused`); the
//! optimizer takes the saved group's hyperparameters. `.to()` returns
//! the same tensor when nothing changes, so loading a dict of the same device shares its
//! tensors (the optimizer then holds the loaded tensors); loading a CPU copy into a CUDA
//! optimizer allocates new device state. The previous state is released (its tensors
//! freed when nothing else holds them).

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, Dtype};

impl Interpreter<'_> {
    /// `optimizer.state_dict()`.
    pub(super) fn optimizer_state_dict(&mut self, opt: ObjId) -> R<Value> {
        let params = self.optimizer_params(opt)?;
        let group = self.alloc(ObjKind::Dict(Vec::new()));
        for key in super::optim::FLAGS {
            let s = self.sym(key);
            if let Some(v) = self.lookup_attr_opt(opt, s)? {
                self.dict_set(group, Value::Str(s), v);
            }
        }
        let indices = (0..params.len() as i64).map(Value::Int).collect();
        let index_list = self.alloc(ObjKind::List(indices));
        let params_key = self.sym("params");
        self.dict_set(group, Value::Str(params_key), Value::Obj(index_list));
        let groups = self.alloc(ObjKind::List(vec![Value::Obj(group)]));

        let state = self.optimizer_state(opt)?;
        let entries = match self.heap.kind(state) {
            ObjKind::Dict(items) => items.clone(),
            _ => Vec::new(),
        };
        self.heap.decref_id(state);
        let packed = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, v) in entries {
            self.heap.incref(k);
            self.heap.incref(v);
            self.dict_set(packed, k, v);
        }
        let out = self.alloc(ObjKind::Dict(Vec::new()));
        let (s, g) = (self.sym("state"), self.sym("param_groups"));
        self.dict_set(out, Value::Str(s), Value::Obj(packed));
        self.dict_set(out, Value::Str(g), Value::Obj(groups));
        Ok(Value::Obj(out))
    }

    /// `optimizer.load_state_dict(state_dict)`.
    pub(super) fn optimizer_load_state_dict(&mut self, opt: ObjId, source: Value) -> R<Value> {
        let not_dict = "TypeError: optimizer.load_state_dict expects the dict of state_dict()";
        let Some(source) = source.obj() else {
            return self.error(not_dict);
        };
        let ObjKind::Dict(top) = self.heap.kind(source) else {
            return self.error(not_dict);
        };
        let top = top.clone();
        let get = |it: &Self, name: &str| {
            top.iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if it.names.name(*s) == name))
                .map(|(_, v)| *v)
        };
        let (Some(saved_state), Some(saved_groups)) =
            (get(self, "state"), get(self, "param_groups"))
        else {
            return self.error("KeyError: the state dict needs 'state' and 'param_groups'");
        };
        // `state_dict.copy()`, and `deepcopy(state_dict['param_groups'])`: transient.
        self.heap.incref(Value::Obj(source));
        let shallow = self.shallow_copy(Value::Obj(source))?;
        self.heap.decref(Value::Obj(source));
        let groups_copy = self.deepcopy(saved_groups)?;
        let params = self.optimizer_params(opt)?;
        let saved_lens = self.group_lengths(saved_groups)?;
        self.heap.decref(groups_copy);
        self.heap.decref(shallow);
        if saved_lens.len() != 1 {
            return self
                .error("ValueError: loaded state dict has a different number of parameter groups");
        }
        if saved_lens[0] != params.len() {
            return self.error(
                "ValueError: loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
            );
        }
        // `update_group`: the optimizer takes the saved group's hyperparameters; the
        // saved `capturable`/`fused` decide where `step` goes.
        let saved_group = self.iterable_items(saved_groups)?[0];
        let saved_flags: Vec<(Value, Value)> = match saved_group.obj().map(|d| self.heap.kind(d)) {
            Some(ObjKind::Dict(items)) => items.clone(),
            _ => Vec::new(),
        };
        let mut step_on_device = false;
        for (k, v) in saved_flags {
            let Value::Str(name) = k else { continue };
            let key = self.names.name(name).to_string();
            if !super::optim::FLAGS.contains(&key.as_str()) {
                continue;
            }
            if matches!(key.as_str(), "capturable" | "fused") {
                step_on_device |= self.truth(v)?;
            }
            self.heap.incref(v);
            self.set_attr(Value::Obj(opt), name, v)?;
        }
        let capturable = step_on_device;
        let entries = match saved_state.obj().map(|d| self.heap.kind(d)) {
            Some(ObjKind::Dict(items)) => items.clone(),
            _ => return self.error("TypeError: state_dict['state'] must be a dict"),
        };
        let new_state = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, v) in entries {
            let param = match k {
                Value::Int(i) if (0..params.len() as i64).contains(&i) => Some(params[i as usize]),
                _ => None,
            };
            let value = match param {
                Some(p) => self.cast_state_value(p, v, None, capturable)?,
                None => {
                    self.heap.incref(v);
                    v
                }
            };
            self.heap.incref(k);
            self.dict_set(new_state, k, value);
        }
        let s = self.sym("state");
        self.set_attr(Value::Obj(opt), s, Value::Obj(new_state))?;
        Ok(Value::None)
    }

    /// `Optimizer._cast`: dicts rebuilt, tensors cast to the parameter's dtype and device
    /// (the same tensor when they already match), anything else shared.
    fn cast_state_value(
        &mut self,
        param: ObjId,
        v: Value,
        key: Option<&str>,
        capturable: bool,
    ) -> R<Value> {
        if let Some(value) = self.tensor_data(v) {
            let Some(p) = self.tensor_data(Value::Obj(param)) else {
                self.heap.incref(v);
                return Ok(v);
            };
            let (dtype, device) = if key == Some("step") {
                if !capturable {
                    self.heap.incref(v);
                    return Ok(v);
                }
                (Dtype::Float32, p.device)
            } else if p.dtype.is_floating() {
                (p.dtype, p.device)
            } else {
                (value.dtype, p.device)
            };
            if dtype == value.dtype && device == value.device {
                self.heap.incref(v);
                return Ok(v);
            }
            return self.new_tensor_as(value.shape, dtype, device, None, Category::OptimizerState);
        }
        let Some(id) = v.obj() else {
            self.heap.incref(v);
            return Ok(v);
        };
        let ObjKind::Dict(items) = self.heap.kind(id) else {
            self.heap.incref(v);
            return Ok(v);
        };
        let items = items.clone();
        let new = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, item) in items {
            let name = match k {
                Value::Str(s) => Some(self.names.name(s).to_string()),
                _ => None,
            };
            let c = self.cast_state_value(param, item, name.as_deref(), capturable)?;
            self.heap.incref(k);
            self.dict_set(new, k, c);
        }
        Ok(Value::Obj(new))
    }

    /// The lengths of the `params` lists of saved param groups.
    fn group_lengths(&mut self, groups: Value) -> R<Vec<usize>> {
        let items = self.iterable_items(groups)?;
        let key = self.sym("params");
        let mut lens = Vec::new();
        for g in items {
            let params = match g.obj().map(|d| self.heap.kind(d)) {
                Some(ObjKind::Dict(entries)) => entries
                    .iter()
                    .find(|(k, _)| *k == Value::Str(key))
                    .map(|(_, v)| *v),
                _ => None,
            };
            let Some(params) = params else {
                return self.error("KeyError: 'params'");
            };
            lens.push(self.iterable_items(params)?.len());
        }
        Ok(lens)
    }

    /// The optimizer's `state` dict (a new reference).
    pub(super) fn optimizer_state(&mut self, opt: ObjId) -> R<ObjId> {
        let s = self.sym("state");
        match self.get_attr(Value::Obj(opt), s)? {
            Value::Obj(d) if matches!(self.heap.kind(d), ObjKind::Dict(_)) => Ok(d),
            other => {
                self.heap.decref(other);
                self.error("TypeError: optimizer state is missing")
            }
        }
    }

    /// An attribute if the object has it (a new reference).
    fn lookup_attr_opt(&mut self, obj: ObjId, name: crate::heap::Sym) -> R<Option<Value>> {
        let attrs = match self.heap.kind(obj) {
            ObjKind::Instance { attrs, .. } => attrs.clone(),
            _ => return Ok(None),
        };
        let found = match attrs {
            crate::heap::Attrs::Inline(items) => {
                items.iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
            }
            crate::heap::Attrs::Dict(Some(d)) => match self.heap.kind(d) {
                ObjKind::Dict(items) => items
                    .iter()
                    .find(|(k, _)| *k == Value::Str(name))
                    .map(|(_, v)| *v),
                _ => None,
            },
            crate::heap::Attrs::Dict(None) => None,
        };
        if let Some(v) = found {
            self.heap.incref(v);
        }
        Ok(found)
    }
}
