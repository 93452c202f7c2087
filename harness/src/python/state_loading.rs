//! `Module.load_state_dict(state_dict, strict=True)`: what it allocates and holds.
//!
//! PyTorch copies each entry into the existing parameter or buffer (`param.copy_(input)`
//! under `no_grad`): no device memory is allocated, whatever device the entry is on, and the
//! module keeps no reference to the dict or its tensors. So a `load_state_dict` in a loop
//! costs nothing by itself; what grows is whatever keeps the loaded dicts. The copy bumps
//! each target's version counter (a tensor saved for backward from the old value is then an
//! error, as in PyTorch). Errors follow `Module.load_state_dict`: missing and unexpected keys
//! (when `strict`), and shape mismatches (always), in one `RuntimeError`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};

impl Interpreter<'_> {
    /// `module.load_state_dict(state_dict, strict)`; returns `(missing_keys, unexpected_keys)`.
    pub(super) fn load_state_dict(
        &mut self,
        module: ObjId,
        source: Value,
        strict: bool,
    ) -> R<Value> {
        let entries: Vec<(Value, Value)> =
            match source {
                Value::Obj(d) => match self.heap.kind(d) {
                    ObjKind::Dict(items) => items.clone(),
                    _ => return self.error(
                        "TypeError: Expected state_dict to be dict-like, got a non-dict object.",
                    ),
                },
                _ => {
                    return self.error(
                        "TypeError: Expected state_dict to be dict-like, got a non-dict object.",
                    );
                }
            };
        let mut targets = Vec::new();
        self.walk_module(module, "", "state_targets", &mut targets)?;
        let mut mismatches = Vec::new();
        let mut unexpected = Vec::new();
        let mut loaded = vec![false; targets.len()];
        for (key, value) in &entries {
            let Some(index) = targets.iter().position(|(k, _)| k == key) else {
                unexpected.push(self.display(*key));
                continue;
            };
            loaded[index] = true;
            let (Some(target), Some(input)) =
                (self.tensor_data(targets[index].1), self.tensor_data(*value))
            else {
                mismatches.push(format!(
                    "While copying the parameter named \"{}\", expected torch.Tensor or Tensor-like object from checkpoint but received {}",
                    self.display(*key),
                    self.type_name_of(*value)
                ));
                continue;
            };
            if target.shape != input.shape {
                mismatches.push(format!(
                    "size mismatch for {}: copying a param with shape torch.Size({:?}) from checkpoint, the shape in current model is torch.Size({:?}).",
                    self.display(*key),
                    input.shape,
                    target.shape
                ));
                continue;
            }
            // `param.copy_(input)` under no_grad: into the existing storage.
            self.storages.bump_version(target.storage);
        }
        let missing: Vec<String> = targets
            .iter()
            .zip(&loaded)
            .filter(|(_, done)| !**done)
            .map(|((k, _), _)| self.display(*k))
            .collect();
        for (k, v) in targets {
            self.heap.decref(k);
            self.heap.decref(v);
        }
        let mut errors = Vec::new();
        if strict && !missing.is_empty() {
            errors.push(format!(
                "Missing key(s) in state_dict: {}. ",
                quoted(&missing)
            ));
        }
        if strict && !unexpected.is_empty() {
            errors.push(format!(
                "Unexpected key(s) in state_dict: {}. ",
                quoted(&unexpected)
            ));
        }
        errors.extend(mismatches);
        if !errors.is_empty() {
            let class = match self.heap.kind(module) {
                ObjKind::Instance { class, .. } => self.class_name(*class),
                _ => "Module".to_string(),
            };
            return self.error(format!(
                "RuntimeError: Error(s) in loading state_dict for {class}:\n\t{}",
                errors.join("\n\t")
            ));
        }
        // `_IncompatibleKeys(missing_keys, unexpected_keys)`, a named tuple: here a tuple.
        let lists: Vec<Value> = [missing, unexpected]
            .into_iter()
            .map(|names| {
                let items = names
                    .iter()
                    .map(|n| Value::Str(self.names.intern(n)))
                    .collect();
                Value::Obj(self.alloc(ObjKind::List(items)))
            })
            .collect();
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(lists))))
    }

    /// `type(v).__name__` for messages.
    pub(super) fn type_name_of(&self, v: Value) -> &'static str {
        match v {
            Value::None => "NoneType",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bool(_) => "bool",
            Value::Obj(id) => self.heap.kind(id).type_name(),
            _ => "object",
        }
    }
}

fn quoted(names: &[String]) -> String {
    names
        .iter()
        .map(|n| format!("\"{n}\""))
        .collect::<Vec<_>>()
        .join(", ")
}
