//! An instance's `__dict__` as a value: `obj.__dict__`, `vars(obj)` and
//! `obj.__dict__ = d`, and the names CPython gives classes (`__module__`, `__qualname__`).
//!
//! Where attributes live decides what reading `__dict__` makes. Up to 3.10 an instance's
//! attributes are in a dict made by its first store, and `__dict__` returns that dict
//! (made now when no attribute was ever stored). From 3.11 they are inline values, and the
//! first read of `__dict__` makes a dict of them that the instance keeps from then on
//! (`_PyObject_MakeDictFromInstanceAttributes`): the dict comes from the dict free list,
//! it holds the values, and later stores go to it. Measured on 3.8 – 3.15 with
//! `tests/vm_instance_dict.rs`'s probes: with the dict free list filled, neither reading
//! `__dict__` nor `vars()` counts an object beyond the instance itself, and the dict reads
//! and writes through to the attributes.

use super::interp::{Interpreter, R};
use crate::heap::{Attrs, ObjId, ObjKind, Value};

impl Interpreter<'_> {
    /// `obj.__dict__` of an instance (new reference): its attribute dict, made now if the
    /// attributes are inline or none was ever stored.
    pub(in crate::python) fn instance_dict(&mut self, id: ObjId) -> R<Value> {
        let (class, existing) = match self.heap.kind(id) {
            ObjKind::Instance { class, attrs } => (*class, attrs),
            _ => unreachable!("checked by the caller"),
        };
        if let Attrs::Dict(Some(d)) = existing {
            let d = *d;
            self.heap.incref(Value::Obj(d));
            return Ok(Value::Obj(d));
        }
        if self.instances_without_dict(class) {
            let cname = self.class_name(class);
            return self.error(format!(
                "AttributeError: '{cname}' object has no attribute '__dict__'"
            ));
        }
        let moved = match self.heap.kind_mut(id) {
            ObjKind::Instance {
                attrs: Attrs::Inline(items),
                ..
            } => std::mem::take(items),
            _ => Vec::new(),
        };
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        for (name, value) in moved {
            // The references move from the instance to the dict.
            self.dict_set(dict, Value::Str(name), value);
        }
        if let ObjKind::Instance { attrs, .. } = self.heap.kind_mut(id) {
            *attrs = Attrs::Dict(Some(dict));
        }
        self.heap.incref(Value::Obj(dict));
        Ok(Value::Obj(dict))
    }

    /// `obj.__dict__ = value` on an instance, taking over `value`: the instance's attributes
    /// become the new dict's entries (the old dict or inline values are released).
    pub(in crate::python) fn set_instance_dict(&mut self, id: ObjId, value: Value) -> R<()> {
        let class = match self.heap.kind(id) {
            ObjKind::Instance { class, .. } => *class,
            _ => unreachable!("checked by the caller"),
        };
        if self.instances_without_dict(class) {
            self.heap.decref(value);
            let cname = self.class_name(class);
            return self.error(format!(
                "AttributeError: '{cname}' object has no attribute '__dict__'"
            ));
        }
        let Some(dict) = value
            .obj()
            .filter(|&d| matches!(self.heap.kind(d), ObjKind::Dict(_)))
        else {
            let t = self.type_name_of(value);
            self.heap.decref(value);
            return self.error(format!(
                "TypeError: __dict__ must be set to a dictionary, not a '{t}'"
            ));
        };
        let old = match self.heap.kind_mut(id) {
            ObjKind::Instance { attrs, .. } => std::mem::replace(attrs, Attrs::Dict(Some(dict))),
            _ => unreachable!("checked above"),
        };
        match old {
            Attrs::Inline(items) => self.heap.decref_all(items.into_iter().map(|(_, v)| v)),
            Attrs::Dict(Some(d)) => self.heap.decref(Value::Obj(d)),
            Attrs::Dict(None) => {}
        }
        Ok(())
    }

    /// `vars(obj)` (argument borrowed): the `__dict__` of an instance or a function; a
    /// class's (a `mappingproxy`) and `vars()` without an argument (the caller's locals)
    /// are refused.
    pub(in crate::python) fn vars_builtin(&mut self, p: &[Value]) -> R<Value> {
        let [obj] = p else {
            return match p {
                [] => self.unsupported("`vars()` without an argument (the caller's locals)"),
                _ => self.error(format!(
                    "TypeError: vars expected at most 1 argument, got {}",
                    p.len()
                )),
            };
        };
        match obj.obj().map(|id| (id, self.heap.kind(id))) {
            Some((id, ObjKind::Instance { .. })) => self.instance_dict(id),
            Some((_, ObjKind::Function(_))) => {
                let name = self.names.intern("__dict__");
                self.get_attr(*obj, name)
            }
            Some((_, ObjKind::Class(_))) => {
                self.unsupported("`vars(cls)` and `cls.__dict__` (a class's mappingproxy)")
            }
            _ => self.error("TypeError: vars() argument must have __dict__ attribute"),
        }
    }

    /// `cls.__qualname__` (new reference): the class statement's dotted path, when every
    /// class statement of that name has the same one; refused where two differ, since a
    /// class object does not record which statement made it.
    pub(in crate::python) fn class_qualname(&mut self, class: ObjId) -> R<Value> {
        let ObjKind::Class(c) = self.heap.kind(class) else {
            unreachable!("checked by the caller")
        };
        let name = c.name;
        let mut distinct: Vec<String> = Vec::new();
        for &(n, step) in &self.codes.class_qualnames {
            let q = self.codes.qualname(step, &self.names);
            if n == name && !distinct.contains(&q) {
                distinct.push(q);
            }
        }
        match distinct.as_slice() {
            [] => Ok(Value::Str(name)),
            [q] => Ok(Value::Str(self.names.intern(q))),
            _ => self.unsupported(format!(
                "`__qualname__` of class `{}`: class statements of that name are nested differently",
                self.names.name(name)
            )),
        }
    }
}
