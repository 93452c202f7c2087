//! The `dataclasses` module's functions: `fields`, `is_dataclass`, `asdict`, `astuple`
//! (which deep-copy what an instance holds) and `replace`.

use super::dataclasses::*;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// The field names of a dataclass, in order (empty for other classes).
    pub(super) fn dataclass_field_names(&self, class: ObjId) -> Vec<Sym> {
        self.dataclass_fields_of(class)
            .into_iter()
            .filter_map(|f| match self.field_items(f)[FIELD_NAME] {
                Value::Str(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// The `Field` objects of a dataclass (borrowed), in order.
    pub(super) fn dataclass_fields_of(&self, class: ObjId) -> Vec<ObjId> {
        let Some(sym) = self.names.lookup("__dataclass_fields__") else {
            return Vec::new();
        };
        match self.class_lookup(class, sym) {
            Some(Value::Obj(d)) => match self.heap.kind(d) {
                ObjKind::Dict(entries) => entries.iter().filter_map(|(_, f)| f.obj()).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The class of a dataclass instance.
    pub(super) fn dataclass_instance_class(&self, v: Value) -> Option<ObjId> {
        match self.heap.kind(v.obj()?) {
            ObjKind::Instance { class, .. } if !self.dataclass_fields_of(*class).is_empty() => {
                Some(*class)
            }
            _ => None,
        }
    }

    /// `dataclasses.fields(x)`: a tuple of the `Field` objects.
    pub(in crate::python) fn dataclass_fields_call(&mut self, p: &[Value]) -> R<Value> {
        let class = match p {
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => Some(*c),
            [v] => self.dataclass_instance_class(*v),
            _ => None,
        };
        let Some(class) = class.filter(|c| !self.dataclass_fields_of(*c).is_empty()) else {
            return self.error("TypeError: must be called with a dataclass type or instance");
        };
        let fields: Vec<Value> = self
            .dataclass_fields_of(class)
            .into_iter()
            .map(Value::Obj)
            .collect();
        for f in &fields {
            self.heap.incref(*f);
        }
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(fields))))
    }

    /// `dataclasses.is_dataclass(x)`.
    pub(in crate::python) fn dataclass_is(&mut self, p: &[Value]) -> R<Value> {
        let yes = match p {
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => {
                !self.dataclass_fields_of(*c).is_empty()
            }
            [v] => self.dataclass_instance_class(*v).is_some(),
            _ => return self.error("TypeError: is_dataclass() takes exactly one argument"),
        };
        Ok(Value::Bool(yes))
    }

    /// `dataclasses.asdict(x)` / `astuple(x)`: the fields, recursively through dataclass
    /// instances, lists, tuples and dicts (new containers), anything else deep-copied.
    pub(in crate::python) fn dataclass_asdict(&mut self, p: &[Value], as_tuple: bool) -> R<Value> {
        let what = if as_tuple { "astuple" } else { "asdict" };
        match p {
            [v] if self.dataclass_instance_class(*v).is_some() => self.as_inner(*v, as_tuple),
            _ => self.error(format!(
                "TypeError: {what}() should be called on dataclass instances"
            )),
        }
    }

    pub(super) fn as_inner(&mut self, v: Value, as_tuple: bool) -> R<Value> {
        if let Some(class) = self.dataclass_instance_class(v) {
            let id = v.obj().expect("an instance");
            let names = self.dataclass_field_names(class);
            let mut pairs = Vec::with_capacity(names.len());
            for n in names {
                let item = self.instance_attr(id, n).unwrap_or(Value::None);
                match self.as_inner(item, as_tuple) {
                    Ok(c) => pairs.push((Value::Str(n), c)),
                    Err(e) => {
                        self.heap.decref_all(pairs.into_iter().map(|(_, c)| c));
                        return Err(e);
                    }
                }
            }
            if as_tuple {
                let items = pairs.into_iter().map(|(_, c)| c).collect();
                return Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))));
            }
            let d = self.alloc(ObjKind::Dict(Vec::new()));
            for (k, c) in pairs {
                self.dict_set(d, k, c);
            }
            return Ok(Value::Obj(d));
        }
        let container = v.obj().map(|id| self.heap.kind(id).clone());
        match container {
            Some(ObjKind::List(items)) | Some(ObjKind::Tuple(items)) => {
                let is_list = matches!(
                    self.heap.kind(v.obj().expect("an object")),
                    ObjKind::List(_)
                );
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match self.as_inner(item, as_tuple) {
                        Ok(c) => out.push(c),
                        Err(e) => {
                            self.heap.decref_all(out);
                            return Err(e);
                        }
                    }
                }
                let kind = if is_list {
                    ObjKind::List(out)
                } else {
                    ObjKind::Tuple(out)
                };
                Ok(Value::Obj(self.alloc(kind)))
            }
            Some(ObjKind::Dict(entries)) => {
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                for (k, item) in entries {
                    let key = self.as_inner(k, as_tuple);
                    let value = self.as_inner(item, as_tuple);
                    match (key, value) {
                        (Ok(k), Ok(c)) => self.dict_set(d, k, c),
                        (k, c) => {
                            for r in [k, c].into_iter().flatten() {
                                self.heap.decref(r);
                            }
                            self.heap.decref_id(d);
                            return self.error("TypeError: a dict item could not be copied");
                        }
                    }
                }
                Ok(Value::Obj(d))
            }
            _ => self.deepcopy(v),
        }
    }

    /// `dataclasses.replace(obj, **changes)`: a new instance from the class, built with
    /// `obj`'s init fields overridden by `changes`.
    pub(in crate::python) fn dataclass_replace(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let Some((obj, class)) = p
            .first()
            .and_then(|v| self.dataclass_instance_class(*v).map(|c| (*v, c)))
            .filter(|_| p.len() == 1)
        else {
            return self.error("TypeError: replace() should be called on dataclass instances");
        };
        let id = obj.obj().expect("an instance");
        let mut kwargs: Vec<(Sym, Value)> = Vec::new();
        for f in self.dataclass_fields_of(class) {
            let items = self.field_items(f).to_vec();
            let Value::Str(name) = items[FIELD_NAME] else {
                continue;
            };
            if items[FIELD_INIT] != Value::Bool(true) {
                if kw.iter().any(|(k, _)| *k == name) {
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    return self.error(format!(
                        "ValueError: field {} is declared with init=False, it cannot be specified with replace()",
                        self.names.name(name)
                    ));
                }
                continue;
            }
            let value = match kw.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => *v,
                None => self.instance_attr(id, name).unwrap_or(Value::None),
            };
            self.heap.incref(value);
            kwargs.push((name, value));
        }
        for (k, v) in kw {
            if !kwargs.iter().any(|(n, _)| n == k) {
                self.heap.incref(*v);
                kwargs.push((*k, *v));
            }
        }
        self.heap.incref(Value::Obj(class));
        let r = self.call(Value::Obj(class), Vec::new(), kwargs);
        self.heap.decref(Value::Obj(class));
        r
    }
}
