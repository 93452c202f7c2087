//! `nn.ParameterList` and `nn.ParameterDict`: modules whose entries are registered as
//! parameters named `"0"`, `"1"`, ... (a list) or by their keys (a dict).
//!
//! As in PyTorch's `container.py`, every entry goes through one store (`__setitem__`)
//! that turns a plain tensor into a `Parameter` (a new tensor object on the same storage,
//! `requires_grad=True`) and sets it as an attribute, so `parameters()`, `state_dict()`
//! (`plist.0`), `.to()`, `zero_grad()` and optimizers reach it like any other
//! parameter. The memory point is ownership: a list grown every step keeps every tensor
//! it was given alive for as long as the list lives.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl TorchClass {
    /// `ParameterList` or `ParameterDict`.
    pub(super) fn holds_parameters(self) -> bool {
        matches!(self, TorchClass::ParameterList | TorchClass::ParameterDict)
    }

    /// A container indexed by string keys (`ModuleDict`, `ParameterDict`).
    pub(super) fn is_keyed_container(self) -> bool {
        matches!(self, TorchClass::ModuleDict | TorchClass::ParameterDict)
    }
}

impl Interpreter<'_> {
    /// `nn.ParameterList(values=None)` / `nn.ParameterDict(parameters=None)`.
    pub(super) fn construct_parameter_container(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let keyword = if kind == TorchClass::ParameterList {
            "values"
        } else {
            "parameters"
        };
        let sym = self.names.intern(keyword);
        let source = kwargs
            .iter()
            .find(|(k, _)| *k == sym)
            .map(|(_, v)| *v)
            .or(args.first().copied())
            .filter(|v| *v != Value::None);
        let container = self.new_torch_instance(kind, vec![])?;
        if let Some(source) = source {
            let done = if kind == TorchClass::ParameterList {
                self.parameter_list_extend(container, source)
            } else {
                self.parameter_dict_update(container, source)
            };
            if let Err(e) = done {
                self.heap.decref(Value::Obj(container));
                return Err(e);
            }
        }
        Ok(container)
    }

    /// The entries of a parameter container, in order: a list's attributes named by
    /// position, a dict's public attributes other than the module's `training` flag.
    pub(super) fn parameter_container_entries(
        &self,
        container: ObjId,
        kind: TorchClass,
    ) -> Vec<(Sym, Value)> {
        self.attr_values(container)
            .into_iter()
            .filter(|(k, _)| {
                let name = self.names.name(*k);
                if kind == TorchClass::ParameterList {
                    !name.is_empty() && name.bytes().all(|b| b.is_ascii_digit())
                } else {
                    !name.starts_with('_') && name != "training"
                }
            })
            .collect()
    }

    /// What a parameter container stores for `value` (borrowed; the result is owned):
    /// a tensor that is not yet a `Parameter` becomes `Parameter(value)`, anything else is
    /// kept as it is (PyTorch accepts any object and registers only parameters).
    pub(super) fn parameter_entry(&mut self, value: Value) -> R<Value> {
        let tensor = match value {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) if !t.is_param => Some(t.clone()),
                _ => None,
            },
            _ => None,
        };
        let Some(t) = tensor else {
            self.heap.incref(value);
            return Ok(value);
        };
        let param = self.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None)))?;
        if let Value::Obj(id) = param
            && let ObjKind::Tensor(td) = self.heap.kind_mut(id)
        {
            td.is_param = true;
            td.requires_grad = true;
        }
        Ok(param)
    }

    /// `plist.append(value)`: stores it under the next position.
    fn parameter_list_append(&mut self, list: ObjId, value: Value) -> R<()> {
        let n = self
            .parameter_container_entries(list, TorchClass::ParameterList)
            .len();
        let entry = self.parameter_entry(value)?;
        let key = self.names.intern(&n.to_string());
        self.set_attr(Value::Obj(list), key, entry)
    }

    /// `plist.extend(values)`: PyTorch refuses a tensor (iterable, but never unpacked)
    /// and anything not iterable.
    fn parameter_list_extend(&mut self, list: ObjId, values: Value) -> R<()> {
        let refused = match values {
            Value::Obj(id) => matches!(self.heap.kind(id), ObjKind::Tensor(_)),
            Value::Str(_) => false,
            _ => true,
        };
        if refused {
            let type_name = self.value_type_name(values);
            return self.error(format!(
                "TypeError: ParameterList.extend should be called with an iterable, but got {type_name}"
            ));
        }
        let items = self.collect_items(values)?;
        let mut done = Ok(());
        for v in &items {
            done = self.parameter_list_append(list, *v);
            if done.is_err() {
                break;
            }
        }
        self.heap.decref_all(items);
        done
    }

    /// `pdict.update(parameters)`, PyTorch's order: a `ParameterDict`'s own order, a plain
    /// mapping's keys sorted, a sequence of pairs as given.
    pub(super) fn parameter_dict_update(&mut self, dict: ObjId, source: Value) -> R<()> {
        let pairs: Vec<(Value, Value)> = match source {
            Value::Obj(id) if self.container_kind(source) == Some(TorchClass::ParameterDict) => {
                self.parameter_container_entries(id, TorchClass::ParameterDict)
                    .into_iter()
                    .map(|(k, v)| (Value::Str(k), v))
                    .collect()
            }
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Dict(_)) => {
                let ObjKind::Dict(items) = self.heap.kind(id) else {
                    unreachable!()
                };
                let mut items = items.clone();
                if items.iter().all(|(k, _)| matches!(k, Value::Str(_))) {
                    items.sort_by(|(a, _), (b, _)| match (a, b) {
                        (Value::Str(a), Value::Str(b)) => {
                            self.names.name(*a).cmp(self.names.name(*b))
                        }
                        _ => std::cmp::Ordering::Equal,
                    });
                }
                items
            }
            Value::Obj(id)
                if matches!(self.heap.kind(id), ObjKind::List(_) | ObjKind::Tuple(_)) =>
            {
                let (ObjKind::List(items) | ObjKind::Tuple(items)) = self.heap.kind(id).clone()
                else {
                    unreachable!()
                };
                let mut pairs = Vec::with_capacity(items.len());
                for (j, p) in items.into_iter().enumerate() {
                    let kv = match p {
                        Value::Obj(pid) => match self.heap.kind(pid) {
                            ObjKind::Tuple(kv) | ObjKind::List(kv) => Some(kv.clone()),
                            _ => None,
                        },
                        Value::Str(_) => None,
                        _ => {
                            let type_name = self.value_type_name(p);
                            return self.error(format!(
                                "TypeError: ParameterDict update sequence element #{j} should be Iterable; is{type_name}"
                            ));
                        }
                    };
                    match kv {
                        Some(kv) if kv.len() == 2 => pairs.push((kv[0], kv[1])),
                        Some(kv) => {
                            return self.error(format!(
                                "ValueError: ParameterDict update sequence element #{j} has length {}; 2 is required",
                                kv.len()
                            ));
                        }
                        None => {
                            return self.unsupported(
                                "a ParameterDict update element that is not a tuple or list",
                            );
                        }
                    }
                }
                pairs
            }
            _ => {
                let type_name = self.value_type_name(source);
                return self.error(format!(
                    "TypeError: ParametersDict.update should be called with an iterable of key/value pairs, but got {type_name}"
                ));
            }
        };
        for (k, v) in pairs {
            let key = self.parameter_dict_key(k)?;
            let entry = self.parameter_entry(v)?;
            self.set_attr(Value::Obj(dict), key, entry)?;
        }
        Ok(())
    }

    /// A `ParameterDict` key (borrowed): a string, or PyTorch's `_key_to_attr` error.
    pub(super) fn parameter_dict_key(&mut self, key: Value) -> R<Sym> {
        match key {
            Value::Str(k) => Ok(k),
            other => {
                let type_name = self.value_type_name(other);
                self.error(format!(
                    "TypeError: Index given to ParameterDict cannot be used as a key as it is not a string (type is '{type_name}'). Open an issue on github if you need non-string keys."
                ))
            }
        }
    }

    /// Methods only parameter containers have (or that differ from the module
    /// containers'); `None` when `name` is not one.
    pub(super) fn parameter_container_method(
        &mut self,
        recv: ObjId,
        kind: TorchClass,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        let this = Value::Obj(recv);
        let result = match (kind, name) {
            (TorchClass::ParameterList, "append") => {
                let [v] = args else {
                    return self.error("TypeError: append() takes exactly one argument");
                };
                self.parameter_list_append(recv, *v)?;
                self.heap.incref(this);
                this
            }
            (TorchClass::ParameterList, "extend") => {
                let [v] = args else {
                    return self.error("TypeError: extend() takes exactly one argument");
                };
                self.parameter_list_extend(recv, *v)?;
                self.heap.incref(this);
                this
            }
            (TorchClass::ParameterDict, "update") => {
                let [v] = args else {
                    return self.error("TypeError: update() takes exactly one argument");
                };
                self.parameter_dict_update(recv, *v)?;
                Value::None
            }
            (TorchClass::ParameterDict, "get") => {
                let (key, default) = match args {
                    [k] => (*k, Value::None),
                    [k, d] => (*k, *d),
                    _ => return self.error("TypeError: get(key, default=None)"),
                };
                let key = self.parameter_dict_key(key)?;
                let found = self
                    .parameter_container_entries(recv, kind)
                    .into_iter()
                    .find(|(k, _)| *k == key)
                    .map_or(default, |(_, v)| v);
                self.heap.incref(found);
                found
            }
            (TorchClass::ParameterList, "insert" | "pop") => {
                return self.error(format!(
                    "AttributeError: 'ParameterList' object has no attribute '{name}'"
                ));
            }
            _ => return Ok(None),
        };
        Ok(Some(result))
    }
}
