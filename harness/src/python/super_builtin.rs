//! `super(cls)` and `super(cls, obj)` called with arguments (`Objects/typeobject.c`
//! `super_init`): argument 1 must be a class; `obj` an instance of `cls` or of a subclass,
//! or a subclass itself (`super(B, cls)` in a classmethod), else CPython's `TypeError`
//! (worded as 3.13 words it from 3.13). Both forms make one super object, a GC object as
//! CPython's is; a one-argument super is unbound: a method looked up through it is
//! CPython's `AttributeError` (`super_getattro` skips the MRO without an object).
//!
//! Reading an attribute of a super object other than calling it (`super().tag`,
//! `super().size` through a property, `init = super().__init__`) looks the name up after
//! the defining class and binds what it finds as `super_getattro` does with the object's
//! class as the start type: a function becomes a bound method (a new object, counted as
//! attribute access counts one) or stays the plain function for `super(B, cls)`, a
//! classmethod binds the class, a staticmethod gives the function, a property runs its
//! getter, a plain class attribute is returned as it is. A name that only `object`, a
//! torch class or a builtin exception would supply is refused (located) rather than
//! answered wrongly.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};

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

    /// `proxy.name` for a super object that is not called (new reference).
    pub(in crate::python) fn super_attr(
        &mut self,
        proxy: ObjId,
        name: crate::heap::Sym,
    ) -> R<Value> {
        let self_sym = self.names.intern("__self__");
        let start_sym = self.names.intern("__thisclass__");
        let (Some(receiver), Some(Value::Obj(start))) = (
            self.instance_attr(proxy, self_sym),
            self.instance_attr(proxy, start_sym),
        ) else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let text = self.names.name(name).to_string();
        let missing = |it: &Self| {
            it.error(format!(
                "AttributeError: 'super' object has no attribute '{text}'"
            ))
        };
        if receiver == Value::None {
            return missing(self);
        }
        let base = match self.heap.kind(start) {
            ObjKind::Class(c) => c.base,
            _ => None,
        };
        let Some(found) = base.and_then(|b| self.class_lookup(b, name)) else {
            // What `object`, a torch class or an exception class would supply is not known here.
            let mut cur = base;
            let mut builtin_base = false;
            while let Some(c) = cur {
                builtin_base |= self.torch_class(c).is_some() || self.is_exception_class(c);
                cur = match self.heap.kind(c) {
                    ObjKind::Class(k) => k.base,
                    _ => None,
                };
            }
            if builtin_base || (text.starts_with("__") && text.ends_with("__")) {
                return self.unsupported(format!(
                    "`super().{text}` read as a value where a builtin class defines it"
                ));
            }
            return missing(self);
        };
        let receiver_is_class =
            matches!(receiver, Value::Obj(r) if matches!(self.heap.kind(r), ObjKind::Class(_)));
        // The start type `super_getattro` hands to `__get__`: the receiver's class, or the
        // receiver itself when it is a class (`super(B, cls)`).
        let start_type = if receiver_is_class {
            receiver.obj()
        } else {
            self.class_of(receiver)
        };
        let Some(start_type) = start_type else {
            return self.unsupported(format!("`super().{text}` on this receiver"));
        };
        match found {
            Value::Obj(f) if matches!(self.heap.kind(f), ObjKind::Function(_)) => {
                if receiver_is_class {
                    // `function.__get__(None, cls)` is the function itself.
                    self.heap.incref(found);
                    return Ok(found);
                }
                self.heap.incref(found);
                self.heap.incref(receiver);
                Ok(Value::Obj(
                    self.alloc(ObjKind::BoundMethod { func: f, receiver }),
                ))
            }
            v if self.is_wrapper(v) => {
                let instance = (!receiver_is_class).then_some(receiver);
                self.bind_class_attr(v, instance, start_type)
            }
            v => {
                self.heap.incref(v);
                Ok(v)
            }
        }
    }
}
