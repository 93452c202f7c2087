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
use super::natives::Native;
use crate::heap::{DictSubclass, ObjId, ObjKind, Value};
use crate::torch::{Category, Dtype};

impl Interpreter<'_> {
    /// `optimizer.state_dict()`: each group's entries but `params`, then `params` as
    /// indices numbered across groups in order; the state keyed by those indices.
    pub(super) fn optimizer_state_dict(&mut self, opt: ObjId) -> R<Value> {
        let groups = self.optimizer_groups(opt)?;
        let params_key = self.sym("params");
        let mut packed_groups = Vec::new();
        let mut index_of: Vec<(ObjId, i64)> = Vec::new();
        for (group, params) in groups {
            let entries = match self.heap.kind(group) {
                ObjKind::Dict(items) => items.clone(),
                _ => Vec::new(),
            };
            let packed = self.alloc(ObjKind::Dict(Vec::new()));
            for (k, v) in entries {
                if k == Value::Str(params_key) {
                    continue;
                }
                self.heap.incref(k);
                self.heap.incref(v);
                self.dict_set(packed, k, v);
            }
            // `param_mappings.update({id(p): i for i, p in enumerate(group['params'], start)
            // if id(p) not in param_mappings})`.
            let mut indices = Vec::new();
            for p in params {
                let i = match index_of.iter().find(|(q, _)| *q == p) {
                    Some(&(_, i)) => i,
                    None => {
                        let i = index_of.len() as i64;
                        index_of.push((p, i));
                        i
                    }
                };
                indices.push(Value::Int(i));
            }
            let list = self.alloc(ObjKind::List(indices));
            self.dict_set(packed, Value::Str(params_key), Value::Obj(list));
            packed_groups.push(Value::Obj(packed));
        }
        let groups = self.alloc(ObjKind::List(packed_groups));

        let state = self.optimizer_state(opt)?;
        let entries = match self.heap.kind(state) {
            ObjKind::Dict(items) => items.clone(),
            _ => Vec::new(),
        };
        self.heap.decref_id(state);
        let packed = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, v) in entries {
            let key = match k {
                Value::Obj(p) if self.is_tensor(k) => index_of
                    .iter()
                    .find(|(q, _)| *q == p)
                    .map(|&(_, i)| Value::Int(i)),
                _ => None,
            };
            let key = match key {
                Some(i) => i,
                None => {
                    self.heap.incref(k);
                    k
                }
            };
            self.heap.incref(v);
            self.dict_set(packed, key, v);
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
        // `state_dict.copy()` (transient) and `deepcopy(state_dict['param_groups'])`, which
        // become the optimizer's new groups.
        self.heap.incref(Value::Obj(source));
        let shallow = self.shallow_copy(Value::Obj(source))?;
        self.heap.decref(Value::Obj(source));
        self.heap.decref(shallow);
        let groups_copy = self.deepcopy(saved_groups)?;
        let r = self.load_groups_and_state(opt, saved_state, groups_copy);
        self.heap.decref(groups_copy);
        r
    }

    fn load_groups_and_state(
        &mut self,
        opt: ObjId,
        saved_state: Value,
        groups_copy: Value,
    ) -> R<Value> {
        let groups = self.optimizer_groups(opt)?;
        let Some(copy_list) = groups_copy.obj() else {
            return self.error("TypeError: state_dict['param_groups'] must be a list");
        };
        let saved = self.group_list(copy_list)?;
        if saved.len() != groups.len() {
            return self
                .error("ValueError: loaded state dict has a different number of parameter groups");
        }
        // The saved indices are read as values, not objects.
        let params_key = self.sym("params");
        let mut saved_ids: Vec<Vec<Value>> = Vec::new();
        for (d, _) in &saved {
            let ps = self.dict_str_get(*d, params_key).unwrap_or(Value::None);
            saved_ids.push(self.iterable_items(ps)?);
        }
        if groups
            .iter()
            .zip(&saved_ids)
            .any(|((_, ps), ids)| ps.len() != ids.len())
        {
            return self.error(
                "ValueError: loaded state dict contains a parameter group that doesn't match the size of optimizer's group",
            );
        }
        // `id_map`: saved index -> parameter, and each saved group's `capturable`/`fused`
        // (which decide where `step` goes).
        let mut id_map: Vec<(Value, ObjId, bool)> = Vec::new();
        for (((d, _), ids), (_, ps)) in saved.iter().zip(&saved_ids).zip(&groups) {
            let mut on_device = false;
            for flag in ["capturable", "fused"] {
                let s = self.sym(flag);
                if let Some(v) = self.dict_str_get(*d, s) {
                    on_device |= self.truth(v)?;
                }
            }
            for (&id, &p) in ids.iter().zip(ps) {
                id_map.push((id, p, on_device));
            }
        }
        // `update_group`: each deep-copied saved group takes the current group's params.
        for ((d, _), (current, _)) in saved.iter().zip(&groups) {
            if let Some(ps) = self.dict_str_get(*current, params_key) {
                self.heap.incref(ps);
                self.dict_set(*d, Value::Str(params_key), ps);
            }
        }
        let entries = match saved_state.obj().map(|d| self.heap.kind(d)) {
            Some(ObjKind::Dict(items)) => items.clone(),
            _ => return self.error("TypeError: state_dict['state'] must be a dict"),
        };
        let new_state = self.new_optimizer_state()?;
        for (k, v) in entries {
            match id_map.iter().find(|(id, _, _)| *id == k) {
                Some(&(_, p, capturable)) => {
                    let value = self.cast_state_value(p, v, None, capturable)?;
                    self.heap.incref(Value::Obj(p));
                    self.dict_set(new_state, Value::Obj(p), value);
                }
                None => {
                    self.heap.incref(k);
                    self.heap.incref(v);
                    self.dict_set(new_state, k, v);
                }
            }
        }
        let s = self.sym("state");
        self.set_attr(Value::Obj(opt), s, Value::Obj(new_state))?;
        let g = self.sym("param_groups");
        self.heap.incref(groups_copy);
        self.set_attr(Value::Obj(opt), g, groups_copy)?;
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

    /// `defaultdict(dict)`: the optimizer's `state` (`Optimizer.__init__`, and the new state
    /// `load_state_dict` builds), so `opt.state[p]` of a parameter without state is a new
    /// empty dict, stored under `p`.
    pub(super) fn new_optimizer_state(&mut self) -> R<ObjId> {
        let dict_type = Value::Native(Native::Dict.id());
        match self.new_dict_subclass(DictSubclass::DefaultDict, &[dict_type], &[])? {
            Value::Obj(d) => Ok(d),
            _ => self.error("internal: defaultdict() made no dict"),
        }
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
}
