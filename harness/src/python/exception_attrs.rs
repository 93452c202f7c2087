//! Attribute access and methods of exceptions, tracebacks and frame objects.

use super::interp::{Interpreter, R};
use crate::heap::{Attrs, ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// `e.args`, `e.__traceback__`, `tb.tb_frame`, `frame.f_back`, an exception's own
    /// attributes (its `__dict__`), then its class's (methods bind).
    pub(super) fn exception_object_attr(&mut self, obj: Value, id: ObjId, name: Sym) -> R<Value> {
        let text = self.names.name_rc(name);
        let found = match self.heap.kind(id) {
            ObjKind::Exception(_) => self.exception_attr(id, &text),
            ObjKind::Traceback(_) => self.traceback_attr(id, &text),
            _ => self.frame_attr(id, &text),
        };
        if let Some(v) = found {
            return Ok(v);
        }
        let ObjKind::Exception(e) = self.heap.kind(id) else {
            let t = self.heap.kind(id).type_name();
            return self.unsupported(format!("`{t}.{text}`"));
        };
        let (class, dict) = (e.class, e.dict.clone());
        if let Attrs::Dict(Some(d)) = dict
            && let ObjKind::Dict(items) = self.heap.kind(d)
            && let Some(&(_, v)) = items.iter().find(|(k, _)| *k == Value::Str(name))
        {
            self.heap.incref(v);
            return Ok(v);
        }
        match self.class_lookup(class, name) {
            Some(Value::Obj(f)) if matches!(self.heap.kind(f), ObjKind::Function(_)) => {
                self.heap.incref(Value::Obj(f));
                self.heap.incref(obj);
                let m = self.alloc(ObjKind::BoundMethod {
                    func: f,
                    receiver: obj,
                });
                Ok(Value::Obj(m))
            }
            Some(v) => {
                self.heap.incref(v);
                Ok(v)
            }
            None => {
                let cname = self.class_name(class);
                self.error(format!(
                    "AttributeError: '{cname}' object has no attribute '{text}'"
                ))
            }
        }
    }

    /// `e.name = value` (owned): `__traceback__`, `__context__`, `__cause__` are slots;
    /// anything else goes to the exception's `__dict__`, created on first use.
    pub(super) fn set_exception_attr(&mut self, id: ObjId, name: Sym, value: Value) -> R<()> {
        let text = self.names.name_rc(name);
        match &*text {
            "__traceback__" => return self.set_exception_traceback(id, value),
            "__context__" | "__cause__" => {
                let new = match value {
                    Value::None => None,
                    Value::Obj(x) if matches!(self.heap.kind(x), ObjKind::Exception(_)) => Some(x),
                    other => {
                        self.heap.decref(other);
                        return self.error(format!(
                            "TypeError: exception {text} must be None or derive from BaseException"
                        ));
                    }
                };
                let old = match self.heap.kind_mut(id) {
                    ObjKind::Exception(e) if &*text == "__context__" => {
                        std::mem::replace(&mut e.context, new)
                    }
                    ObjKind::Exception(e) => {
                        e.suppress_context = true;
                        std::mem::replace(&mut e.cause, new)
                    }
                    _ => new,
                };
                if let Some(old) = old {
                    self.heap.decref_id(old);
                }
                return Ok(());
            }
            _ => {}
        }
        let existing = match self.heap.kind(id) {
            ObjKind::Exception(e) => match e.dict {
                Attrs::Dict(d) => d,
                Attrs::Inline(_) => None,
            },
            _ => None,
        };
        let dict = match existing {
            Some(d) => d,
            None => {
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                if let ObjKind::Exception(e) = self.heap.kind_mut(id) {
                    e.dict = Attrs::Dict(Some(d));
                }
                d
            }
        };
        self.dict_set(dict, Value::Str(name), value);
        Ok(())
    }

    /// `e.with_traceback(tb)`, `frame.clear()`, and methods of user exception classes.
    pub(super) fn call_exception_object_method(
        &mut self,
        recv: Value,
        id: ObjId,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let text = self.names.name_rc(name);
        let is_frame = matches!(self.heap.kind(id), ObjKind::Frame(_));
        match (&*text, is_frame, args.as_slice()) {
            ("with_traceback", false, [tb]) if kwargs.is_empty() => {
                let tb = *tb;
                self.set_exception_traceback(id, tb)?;
                self.heap.incref(recv);
                Ok(recv)
            }
            ("clear", true, []) if kwargs.is_empty() => {
                self.clear_frame(id)?;
                Ok(Value::None)
            }
            _ if is_frame => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                self.unsupported(format!("`frame.{text}()`"))
            }
            _ => {
                let f = match self.get_attr(recv, name) {
                    Ok(f) => f,
                    Err(e) => {
                        self.heap.decref_all(args);
                        self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                        return Err(e);
                    }
                };
                let r = self.call(f, args, kwargs);
                self.heap.decref(f);
                r
            }
        }
    }

    /// `torch.OutOfMemoryError` and `torch.cuda.OutOfMemoryError`.
    pub(super) fn torch_exception_attr(&mut self, module: Value, name: Sym) -> Option<Value> {
        let m = super::natives::module_display_of(module);
        if m == "sys" && self.names.name(name) == "version_info" {
            return Some(self.sys_version_info());
        }
        if m == "dataclasses" && self.names.name(name) == "FrozenInstanceError" {
            return Some(self.dataclasses_frozen_class());
        }
        if m == "asyncio" && self.names.name(name) == "TimeoutError" {
            return Some(Value::Obj(self.asyncio_timeout_class()));
        }
        if m == "asyncio" && self.names.name(name) == "CancelledError" {
            return Some(Value::Obj(self.asyncio_cancelled_class()));
        }
        if m == "asyncio" {
            let n = self.names.name(name);
            if let Some(q) = super::exceptions::ASYNCIO_QUEUE_ERRORS
                .iter()
                .find(|q| **q == n)
            {
                return self.builtin_exception_class(q);
            }
        }
        ((m == "torch" || m == "torch.cuda") && self.names.name(name) == "OutOfMemoryError")
            .then(|| self.torch_oom_class())
    }
}
