//! The special methods of user classes that builtin operations call: `__getitem__`,
//! `__setitem__`, `__delitem__`, `__len__`, `__iter__` / `__next__`, `__contains__`,
//! `__eq__`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};

impl<'a> Interpreter<'a> {
    /// The class of a plain user instance that defines `name` (torch classes excluded).
    pub(super) fn user_special(&mut self, obj: Value, name: &str) -> Option<(ObjId, Value)> {
        let Value::Obj(id) = obj else { return None };
        let ObjKind::Instance { class, .. } = self.heap.kind(id) else {
            return None;
        };
        let class = *class;
        if self.torch_class(class).is_some() && !self.is_user_dataset_class(class) {
            return None;
        }
        let sym = self.names.intern(name);
        self.class_lookup(class, sym).map(|m| (class, m))
    }

    /// Calls `obj.name(*args)` if `obj` is a user instance whose class defines it; `args`
    /// are owned. Hands the arguments back when it does not.
    pub(super) fn call_special(
        &mut self,
        obj: Value,
        name: &str,
        args: Vec<Value>,
    ) -> Result<R<Value>, Vec<Value>> {
        let Some((class, method)) = self.user_special(obj, name) else {
            return Err(args);
        };
        let bound = match self.bind_class_attr(method, Some(obj), class) {
            Ok(b) => b,
            Err(e) => {
                self.heap.decref_all(args);
                return Ok(Err(e));
            }
        };
        let r = self.call(bound, args, Vec::new());
        self.heap.decref(bound);
        Ok(r)
    }

    /// `iter(obj)` for a `for` loop or comprehension: a user instance's `__iter__` result;
    /// anything else is iterated as it is. Takes and returns ownership.
    pub(super) fn user_iter(&mut self, iterable: Value) -> R<Value> {
        // `Tensor.__iter__`: the rows of `unbind(0)` (tensor_iter.rs).
        if let Some(r) = self.tensor_iter(iterable) {
            self.heap.decref(iterable);
            return r;
        }
        if let Some(r) = self.data_iter(iterable) {
            self.heap.decref(iterable);
            return r;
        }
        if let Some(children) = self.container_iter(iterable) {
            self.heap.decref(iterable);
            return Ok(children);
        }
        if let Some(w) = self.is_weak_container(iterable) {
            let list = self.weak_iter_list(w);
            self.heap.decref(iterable);
            return Ok(list);
        }
        match self.call_special(iterable, "__iter__", Vec::new()) {
            Ok(r) => {
                self.heap.decref(iterable);
                r
            }
            Err(_) => Ok(iterable),
        }
    }

    /// The next item of a user iterator (`__next__`), or `None` when it raises
    /// `StopIteration`.
    pub(super) fn user_next(&mut self, iterator: Value) -> R<Option<Value>> {
        if let Some(r) = self.data_next(iterator) {
            return r;
        }
        self.exc.handler_depth += 1;
        let r = self.call_special(iterator, "__next__", Vec::new());
        self.exc.handler_depth -= 1;
        match r {
            Ok(Ok(v)) => Ok(Some(v)),
            Ok(Err(e)) => {
                let e = self.materialise_here(e);
                let stop = self.builtin_exception("StopIteration");
                match (Self::raised_exception(&e), stop) {
                    (Some(x), Some(Value::Obj(stop))) if self.exception_is(x, stop) => {
                        self.discard(e);
                        Ok(None)
                    }
                    _ => Err(e),
                }
            }
            Err(_) => {
                let cname = self.class_of(iterator).map(|c| self.class_name(c));
                self.error(format!(
                    "TypeError: '{}' object is not an iterator",
                    cname.unwrap_or_default()
                ))
            }
        }
    }

    /// Turns an error into an exception object as if a handler were waiting for it.
    fn materialise_here(&mut self, e: Box<super::interp::Exc>) -> Box<super::interp::Exc> {
        self.exc.handler_depth += 1;
        let e = self.materialise(e);
        self.exc.handler_depth -= 1;
        e
    }

    fn exception_is(&self, exception: ObjId, class: ObjId) -> bool {
        match self.heap.kind(exception) {
            ObjKind::Exception(e) => self.class_derives_from(e.class, class),
            _ => false,
        }
    }

    /// `len(obj)` through `__len__`.
    pub(super) fn user_len(&mut self, obj: Value) -> Option<R<i64>> {
        if let Some(n) = self.container_len(obj) {
            return Some(Ok(n));
        }
        if let Some(n) = self.data_len(obj) {
            return Some(n);
        }
        let r = self.call_special(obj, "__len__", Vec::new()).ok()?;
        Some(match r {
            Ok(Value::Int(n)) if n >= 0 => Ok(n),
            Ok(other) => {
                self.heap.decref(other);
                self.error("TypeError: __len__() should return an integer >= 0")
            }
            Err(e) => Err(e),
        })
    }

    /// `a == b` / `x in c` through `__eq__` / `__contains__`; `None` when not defined.
    pub(super) fn user_predicate(
        &mut self,
        obj: Value,
        name: &str,
        other: Value,
    ) -> Option<R<bool>> {
        if name == "__eq__"
            && let Some(eq) = self.namespace_eq(obj, other)
        {
            return Some(Ok(eq));
        }
        self.heap.incref(other);
        let r = match self.call_special(obj, name, vec![other]) {
            Ok(r) => r,
            Err(args) => {
                self.heap.decref_all(args);
                return None;
            }
        };
        Some(match r {
            Ok(v) => {
                let t = self.truth(v);
                self.heap.decref(v);
                t
            }
            Err(e) => Err(e),
        })
    }
}
