//! `super(cls)` and `super(cls, obj)` called with arguments (`Objects/typeobject.c`
//! `super_init`): argument 1 must be a class; `obj` an instance of `cls` or of a subclass,
//! or a subclass itself (`super(B, cls)` in a classmethod), else CPython's `TypeError`
//! (worded as 3.13 words it from 3.13). Both forms make one super object, a GC object as
//! CPython's is; a one-argument super is unbound: a method looked up through it is
//! CPython's `AttributeError` (`super_getattro` skips the MRO without an object).

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

impl<'a> Interpreter<'a> {
    /// `super(*p)`: the zero-argument form is [`Self::make_super`].
    pub(in crate::python) fn super_builtin(&mut self, p: &[Value]) -> R<Value> {
        if p.len() > 2 {
            return self.error(format!(
                "TypeError: super() expected at most 2 arguments, got {}",
                p.len()
            ));
        }
        let Some(&first) = p.first() else {
            return self.make_super();
        };
        let cls = match first {
            Value::Obj(c) if matches!(self.heap.kind(c), ObjKind::Class(_)) => c,
            other => {
                // "must be type" up to 3.10, "must be a type" from 3.11.
                let t = self.type_name_of(other);
                let a = if self.heap.profile.version.minor >= 11 {
                    "a "
                } else {
                    ""
                };
                return self.error(format!(
                    "TypeError: super() argument 1 must be {a}type, not {t}"
                ));
            }
        };
        let Some(&obj) = p.get(1) else {
            return self.super_proxy(cls, Value::None);
        };
        let fits = match obj {
            Value::Obj(o) if matches!(self.heap.kind(o), ObjKind::Class(_)) => {
                self.class_derives_from(o, cls)
            }
            _ => self
                .class_of(obj)
                .is_some_and(|c| self.class_derives_from(c, cls)),
        };
        if fits {
            return self.super_proxy(cls, obj);
        }
        if self.heap.profile.version.minor < 13 {
            return self
                .error("TypeError: super(type, obj): obj must be an instance or subtype of type");
        }
        let of = match self.class_of(obj) {
            Some(c) => self.class_name(c),
            None => self.type_name_of(obj).to_string(),
        };
        let this = self.class_name(cls);
        self.error(format!(
            "TypeError: super(type, obj): obj (instance of {of}) is not an instance or subtype of type ({this})."
        ))
    }
}
