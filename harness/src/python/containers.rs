//! `nn.ModuleList` and `nn.ModuleDict`, and indexing/`len`/iteration of `nn.Sequential`
//! (and of `nn.ParameterList` / `nn.ParameterDict`, whose entries `parameter_containers`
//! stores).
//!
//! As in PyTorch (`torch/nn/modules/container.py`), a container keeps its children as
//! registered submodules named `"0"`, `"1"`, ... (a list) or by their keys (a dict), so
//! `parameters()`, `state_dict()` (`layers.0.weight`), `.to()` and `zero_grad()` walk them
//! like any other child. Memory-wise the point is who holds them: a module appended to a
//! `ModuleList` every step stays alive (with its parameters) as long as the list does.

use super::interp::{Interpreter, R};
use super::natives;
use super::torchlib::TorchClass;
use crate::heap::{ObjId, Sym, Value};

impl Interpreter<'_> {
    /// The container kind of `v` (`ModuleList`, `ModuleDict` or `Sequential`), if it is one.
    pub(super) fn container_kind(&self, v: Value) -> Option<TorchClass> {
        self.instance_torch_class(v).filter(|k| {
            matches!(
                k,
                TorchClass::ModuleList
                    | TorchClass::ModuleDict
                    | TorchClass::Sequential
                    | TorchClass::ParameterList
                    | TorchClass::ParameterDict
            )
        })
    }

    /// The registered children of a container, in registration order (borrowed).
    pub(super) fn container_children(&self, container: ObjId) -> Vec<(Sym, Value)> {
        if let Some(kind) = self
            .instance_torch_class(Value::Obj(container))
            .filter(|k| k.holds_parameters())
        {
            return self.parameter_container_entries(container, kind);
        }
        self.attr_values(container)
            .into_iter()
            .filter(|(k, v)| {
                !self.names.name(*k).starts_with('_')
                    && self
                        .instance_torch_class(*v)
                        .is_some_and(TorchClass::is_module)
            })
            .collect()
    }

    /// `nn.ModuleList(modules)` / `nn.Sequential(*modules)`: children named by position.
    pub(super) fn new_module_list(&mut self, kind: TorchClass, modules: &[Value]) -> R<ObjId> {
        for &m in modules {
            self.check_child_module(kind, m)?;
        }
        let names: Vec<String> = (0..modules.len()).map(|i| i.to_string()).collect();
        let mut attrs = Vec::with_capacity(modules.len());
        for (name, &m) in names.iter().zip(modules) {
            attrs.push((name.as_str(), self.container_entry(kind, m)?));
        }
        self.new_torch_instance(kind, attrs)
    }

    /// `nn.ModuleDict(modules)`: a dict or an iterable of `(key, module)` pairs.
    pub(super) fn new_module_dict(&mut self, source: Option<Value>) -> R<ObjId> {
        let d = self.new_torch_instance(TorchClass::ModuleDict, vec![])?;
        if let Some(source) = source {
            self.module_dict_update(d, source)?;
        }
        Ok(d)
    }

    /// What a container stores for `m` (borrowed; the result is owned): the module itself,
    /// or for a parameter container a plain tensor made a `Parameter`.
    fn container_entry(&mut self, kind: TorchClass, m: Value) -> R<Value> {
        if kind.holds_parameters() {
            return self.parameter_entry(m);
        }
        self.heap.incref(m);
        Ok(m)
    }

    /// PyTorch's `Module.add_module` refuses what is not a module (a parameter container
    /// takes any object).
    fn check_child_module(&mut self, kind: TorchClass, m: Value) -> R<()> {
        if kind.holds_parameters()
            || self
                .instance_torch_class(m)
                .is_some_and(TorchClass::is_module)
        {
            return Ok(());
        }
        let tname = self.value_type_name(m);
        let container = match kind {
            TorchClass::ModuleDict => "ModuleDict",
            TorchClass::Sequential => "Sequential",
            _ => "ModuleList",
        };
        self.error(format!(
            "TypeError: {tname} is not a Module subclass (adding it to an nn.{container})"
        ))
    }

    fn module_dict_update(&mut self, d: ObjId, source: Value) -> R<()> {
        let pairs: Vec<(Value, Value)> = match source {
            Value::Obj(id) => match self.heap.kind(id) {
                crate::heap::ObjKind::Dict(items) => items.clone(),
                crate::heap::ObjKind::List(items) | crate::heap::ObjKind::Tuple(items) => {
                    let mut pairs = Vec::new();
                    for &p in items {
                        match p {
                            Value::Obj(pid) => match self.heap.kind(pid) {
                                crate::heap::ObjKind::Tuple(kv)
                                | crate::heap::ObjKind::List(kv)
                                    if kv.len() == 2 =>
                                {
                                    pairs.push((kv[0], kv[1]))
                                }
                                _ => {
                                    return self.error(
                                        "TypeError: ModuleDict update sequence element should be a (key, module) pair",
                                    );
                                }
                            },
                            _ => {
                                return self.error(
                                    "TypeError: ModuleDict update sequence element should be a (key, module) pair",
                                );
                            }
                        }
                    }
                    pairs
                }
                _ => return self.error("TypeError: ModuleDict(modules) expects a dict or pairs"),
            },
            _ => return self.error("TypeError: ModuleDict(modules) expects a dict or pairs"),
        };
        for (k, m) in pairs {
            let Value::Str(key) = k else {
                return self.error("TypeError: module name should be a string");
            };
            self.check_child_module(TorchClass::ModuleDict, m)?;
            self.heap.incref(m);
            self.set_attr(Value::Obj(d), key, m)?;
        }
        Ok(())
    }

    /// Methods of `ModuleList` / `ModuleDict`; `None` when `name` is not one.
    pub(super) fn container_method(
        &mut self,
        recv: ObjId,
        kind: TorchClass,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        if kind.holds_parameters()
            && let Some(v) = self.parameter_container_method(recv, kind, name, args)?
        {
            return Ok(Some(v));
        }
        let this = Value::Obj(recv);
        let result = match (kind, name) {
            (TorchClass::ModuleList | TorchClass::Sequential, "append") => {
                let [m] = args else {
                    return self.error("TypeError: append() takes exactly one argument");
                };
                self.check_child_module(kind, *m)?;
                let n = self.container_children(recv).len();
                let key = self.names.intern(&n.to_string());
                self.heap.incref(*m);
                self.set_attr(this, key, *m)?;
                self.heap.incref(this);
                this
            }
            (TorchClass::ModuleList | TorchClass::Sequential, "extend") => {
                let [source] = args else {
                    return self.error("TypeError: extend() takes exactly one argument");
                };
                let items = match self.container_kind(*source) {
                    Some(_) => {
                        let Value::Obj(s) = *source else {
                            unreachable!()
                        };
                        self.container_children(s)
                            .into_iter()
                            .map(|(_, v)| v)
                            .collect()
                    }
                    None => self.iterable_items(*source)?,
                };
                for m in items {
                    self.check_child_module(kind, m)?;
                    let n = self.container_children(recv).len();
                    let key = self.names.intern(&n.to_string());
                    self.heap.incref(m);
                    self.set_attr(this, key, m)?;
                }
                self.heap.incref(this);
                this
            }
            (TorchClass::ModuleList | TorchClass::Sequential, "insert") => {
                let [Value::Int(index), m] = args else {
                    return self.error("TypeError: insert(index, module)");
                };
                self.check_child_module(kind, *m)?;
                let children: Vec<Value> = self
                    .container_children(recv)
                    .into_iter()
                    .map(|(_, v)| v)
                    .collect();
                let n = children.len() as i64;
                let at = if *index < 0 { *index + n } else { *index }.clamp(0, n) as usize;
                // Shift the tail up by one name, last first, then place the new module.
                for k in (at..children.len()).rev() {
                    let key = self.names.intern(&(k + 1).to_string());
                    self.heap.incref(children[k]);
                    self.set_attr(this, key, children[k])?;
                }
                let key = self.names.intern(&at.to_string());
                self.heap.incref(*m);
                self.set_attr(this, key, *m)?;
                Value::None
            }
            (TorchClass::ModuleDict | TorchClass::ParameterDict, "keys" | "values" | "items") => {
                let children = self.container_children(recv);
                let mut out = Vec::with_capacity(children.len());
                for (k, v) in children {
                    self.heap.incref(v);
                    out.push(match name {
                        "keys" => {
                            self.heap.decref(v);
                            Value::Str(k)
                        }
                        "values" => v,
                        _ => Value::Obj(
                            self.alloc(crate::heap::ObjKind::Tuple(vec![Value::Str(k), v])),
                        ),
                    });
                }
                // PyTorch returns dict views over `_modules`; a list holds the same references.
                Value::Obj(self.alloc(crate::heap::ObjKind::List(out)))
            }
            (
                TorchClass::ModuleList
                | TorchClass::Sequential
                | TorchClass::ModuleDict
                | TorchClass::ParameterDict,
                "pop",
            ) => {
                // `v = self[key]; del self[key]; return v` (no default key).
                let [key] = args else {
                    return self
                        .error("TypeError: pop() missing 1 required positional argument: 'key'");
                };
                let children = self.container_children(recv);
                let at = self.container_position(&children, kind, *key)?;
                let mut removed = self.container_remove(recv, kind, &[at])?;
                removed.pop().unwrap_or(Value::None)
            }
            (TorchClass::ModuleDict | TorchClass::ParameterDict, "clear") => {
                let all: Vec<usize> = (0..self.container_children(recv).len()).collect();
                let removed = self.container_remove(recv, kind, &all)?;
                self.heap.decref_all(removed);
                Value::None
            }
            (TorchClass::ModuleDict, "update") => {
                let [source] = args else {
                    return self.error("TypeError: update() takes exactly one argument");
                };
                self.module_dict_update(recv, *source)?;
                Value::None
            }
            _ => return Ok(None),
        };
        Ok(Some(result))
    }

    /// `len(container)`.
    pub(super) fn container_len(&self, v: Value) -> Option<i64> {
        self.container_kind(v)?;
        let Value::Obj(id) = v else { return None };
        Some(self.container_children(id).len() as i64)
    }

    /// `iter(container)`: a list of the children (the keys for a `ModuleDict`), owned.
    pub(super) fn container_iter(&mut self, v: Value) -> Option<Value> {
        let kind = self.container_kind(v)?;
        let Value::Obj(id) = v else { return None };
        let items: Vec<Value> = self
            .container_children(id)
            .into_iter()
            .map(|(k, m)| {
                if kind.is_keyed_container() {
                    Value::Str(k)
                } else {
                    self.heap.incref(m);
                    m
                }
            })
            .collect();
        Some(Value::Obj(self.alloc(crate::heap::ObjKind::List(items))))
    }
}

impl<'a> Interpreter<'a> {
    /// `container[index]`: a child by position or key; a slice of a list or `Sequential`
    /// is a new container of the same kind holding the same children.
    pub(super) fn container_subscript(
        &mut self,
        container: ObjId,
        kind: TorchClass,
        index: &mut natives::Index,
    ) -> R<Value> {
        let children = self.container_children(container);
        if let Some(bounds) = index.slice() {
            let (lower, upper, step) = natives::slice_bounds(self, bounds)?;
            if kind.is_keyed_container() {
                return self.error("TypeError: unhashable type: 'slice'");
            }
            let picked: Vec<Value> = self
                .slice_positions((lower, upper, step), children.len())?
                .into_iter()
                .map(|i| children[i].1)
                .collect();
            return Ok(Value::Obj(self.new_module_list(kind, &picked)?));
        }
        let key = index.key(self)?;
        let key = match natives::index_int(self, key)? {
            Some(i) => Value::Int(i),
            None => key,
        };
        self.heap.incref(key);
        let found = match (kind, key) {
            (TorchClass::ModuleDict | TorchClass::ParameterDict, Value::Str(k)) => {
                children.iter().find(|(name, _)| *name == k).map(|c| c.1)
            }
            (TorchClass::ParameterDict, other) => {
                let failed = self.parameter_dict_key(other);
                self.heap.decref(other);
                return failed.map(|_| Value::None);
            }
            (TorchClass::ModuleDict, other) => {
                self.heap.decref(other);
                return self.error("KeyError: ModuleDict keys are strings");
            }
            (_, Value::Int(i)) => {
                let n = children.len() as i64;
                let at = if i < 0 { i + n } else { i };
                if !(0..n).contains(&at) {
                    return self.error(format!("IndexError: index {i} is out of range"));
                }
                Some(children[at as usize].1)
            }
            (_, other) => {
                self.heap.decref(other);
                return self.error("TypeError: container indices must be integers or slices");
            }
        };
        match found {
            Some(m) => {
                self.heap.incref(m);
                Ok(m)
            }
            None => match key {
                Value::Str(k) => self.error(format!("KeyError: '{}'", self.names.name(k))),
                _ => self.error("KeyError"),
            },
        }
    }

    /// `container[index] = module` (takes `value`): replaces a child of a list by position,
    /// or registers one under a key of a `ModuleDict`.
    pub(super) fn container_store(
        &mut self,
        container: ObjId,
        kind: TorchClass,
        index: &mut natives::Index,
        value: Value,
    ) -> R<()> {
        let key = match index.key(self) {
            Ok(k) => k,
            Err(e) => {
                self.heap.decref(value);
                return Err(e);
            }
        };
        self.heap.incref(key);
        if let Err(e) = self.check_child_module(kind, value) {
            self.heap.decref(value);
            self.heap.decref(key);
            return Err(e);
        }
        let name = match (kind, key) {
            (TorchClass::ModuleDict | TorchClass::ParameterDict, Value::Str(k)) => k,
            (TorchClass::ParameterDict, other) => {
                let failed = self.parameter_dict_key(other);
                self.heap.decref(other);
                self.heap.decref(value);
                return failed.map(|_| ());
            }
            (TorchClass::ModuleDict, other) => {
                self.heap.decref(other);
                self.heap.decref(value);
                return self.error("TypeError: module name should be a string");
            }
            (_, Value::Int(i)) => {
                let n = self.container_children(container).len() as i64;
                let at = if i < 0 { i + n } else { i };
                if !(0..n).contains(&at) {
                    self.heap.decref(value);
                    return self.error(format!("IndexError: index {i} is out of range"));
                }
                self.names.intern(&at.to_string())
            }
            (_, other) => {
                self.heap.decref(other);
                self.heap.decref(value);
                return self.error("TypeError: container indices must be integers");
            }
        };
        let value = if kind.holds_parameters() {
            let entry = self.parameter_entry(value);
            self.heap.decref(value);
            entry?
        } else {
            value
        };
        self.set_attr(Value::Obj(container), name, value)
    }
}

impl<'a> Interpreter<'a> {
    /// `del container[index]`: removes children (a list's or `Sequential`'s by position or
    /// slice, a `ModuleDict`'s by key); a module nothing else holds dies with its
    /// parameters.
    pub(super) fn container_delete(
        &mut self,
        container: ObjId,
        kind: TorchClass,
        index: &mut natives::Index,
    ) -> R<()> {
        if kind == TorchClass::ParameterList {
            // PyTorch's `ParameterList` defines no `__delitem__`.
            return self.error("TypeError: 'ParameterList' object doesn't support item deletion");
        }
        let children = self.container_children(container);
        let picked = match index.slice() {
            Some(bounds) if !kind.is_keyed_container() => {
                let bounds = natives::slice_bounds(self, bounds)?;
                self.slice_positions(bounds, children.len())?
            }
            Some(_) => return self.error("TypeError: unhashable type: 'slice'"),
            None => {
                let key = index.key(self)?;
                self.heap.incref(key);
                vec![self.container_position(&children, kind, key)?]
            }
        };
        let removed = self.container_remove(container, kind, &picked)?;
        self.heap.decref_all(removed);
        Ok(())
    }

    /// The positions a slice `(lower, upper, step)` picks of `n` children.
    fn slice_positions(
        &self,
        (lower, upper, step): (Option<i64>, Option<i64>, Option<i64>),
        n: usize,
    ) -> R<Vec<usize>> {
        let n = n as i64;
        let step = step.unwrap_or(1);
        if step <= 0 {
            return self.unsupported("a container slice with a step below 1");
        }
        let fix = |i: i64| if i < 0 { (i + n).max(0) } else { i.min(n) };
        let (start, stop) = (fix(lower.unwrap_or(0)), fix(upper.unwrap_or(n)));
        Ok((start..stop)
            .step_by(step as usize)
            .map(|i| i as usize)
            .collect())
    }

    /// The position of `key` (consumed) among `children`: an index of a list or
    /// `Sequential` (negative from the end), a key of a `ModuleDict`, or PyTorch's error.
    fn container_position(
        &mut self,
        children: &[(Sym, Value)],
        kind: TorchClass,
        key: Value,
    ) -> R<usize> {
        match (kind, key) {
            (TorchClass::ModuleDict | TorchClass::ParameterDict, Value::Str(k)) => {
                match children.iter().position(|(name, _)| *name == k) {
                    Some(at) => Ok(at),
                    None => self.error(format!("KeyError: '{}'", self.names.name(k))),
                }
            }
            (TorchClass::ParameterDict, other) => {
                let failed = self.parameter_dict_key(other);
                self.heap.decref(other);
                failed.map(|_| 0)
            }
            (_, Value::Int(i)) if kind != TorchClass::ModuleDict => {
                let n = children.len() as i64;
                let at = if i < 0 { i + n } else { i };
                if !(0..n).contains(&at) {
                    return self.error(format!("IndexError: index {i} is out of range"));
                }
                Ok(at as usize)
            }
            (_, other) => {
                let type_name = self.value_type_name(other);
                self.heap.decref(other);
                self.error(format!(
                    "TypeError: container indices must be integers or strings, not {type_name}"
                ))
            }
        }
    }

    /// Unregisters the children at `positions` (returned, owned) and, for a list or
    /// `Sequential`, renames the rest `"0"`, `"1"`, ... in order, as PyTorch rebuilds
    /// `_modules` after a deletion.
    fn container_remove(
        &mut self,
        container: ObjId,
        kind: TorchClass,
        positions: &[usize],
    ) -> R<Vec<Value>> {
        let children = self.container_children(container);
        let mut removed = Vec::new();
        let mut kept = Vec::new();
        for (i, (name, _)) in children.iter().enumerate() {
            let taken = self.take_instance_attr(container, *name);
            match taken {
                Some(v) if positions.contains(&i) => removed.push(v),
                Some(v) => kept.push((*name, v)),
                None => {}
            }
        }
        for (i, (name, v)) in kept.into_iter().enumerate() {
            let name = if kind.is_keyed_container() {
                name
            } else {
                self.names.intern(&i.to_string())
            };
            self.set_attr(Value::Obj(container), name, v)?;
        }
        Ok(removed)
    }
}

impl Interpreter<'_> {
    /// `x in container`: a key of a `ModuleDict` / `ParameterDict`; for a list-like
    /// container Python falls back to iteration, comparing each entry by identity.
    pub(super) fn container_contains(&self, container: ObjId, needle: Value) -> bool {
        let keyed = self
            .instance_torch_class(Value::Obj(container))
            .is_some_and(TorchClass::is_keyed_container);
        self.container_children(container)
            .into_iter()
            .any(|(k, v)| {
                if keyed {
                    needle == Value::Str(k)
                } else {
                    needle == v
                }
            })
    }
}
