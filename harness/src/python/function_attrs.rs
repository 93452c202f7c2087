//! Attributes of function objects and builtin functions as users' leak reports use them:
//! counters and histories stored on a function (`train_step.calls += 1`,
//! `train_step.history.append(loss)`), `fn.__name__` in logs, `key=d.get` and
//! `store = outputs.append` (a bound builtin method as a value), and `sys.getrefcount`.
//!
//! A function's attributes live in its `__dict__`, made by the first store (CPython's
//! `func_dict`, from the dict free list, so the first store counts no allocation when the
//! free list holds a dict, as measured on 3.8 – 3.13); the dict is an edge of the function
//! for the collector, so a tensor stored on a function lives as long as the function.

use super::interp::{Interpreter, R};
use super::scope::Body;
use crate::heap::{NativeId, ObjId, ObjKind, Sym, Value, WrapperKind};
use ruff_python_ast::{Expr, Stmt};

impl<'a> Interpreter<'a> {
    /// `f.name` on a user function (new reference).
    pub(in crate::python) fn function_attr(&mut self, id: ObjId, name: Sym) -> R<Value> {
        let ObjKind::Function(f) = self.heap.kind(id) else {
            unreachable!("checked by caller")
        };
        let (code, fname, dict) = (f.code, f.name, f.dict);
        if let Some(d) = dict
            && let ObjKind::Dict(items) = self.heap.kind(d)
            && let Some(&(_, v)) = items.iter().find(|(k, _)| *k == Value::Str(name))
        {
            self.heap.incref(v);
            return Ok(v);
        }
        match self.names.name(name) {
            "__name__" => Ok(Value::Str(fname)),
            "__module__" => Ok(Value::Str(self.names.intern("__main__"))),
            "__dict__" => {
                let d = self.function_dict(id);
                self.heap.incref(Value::Obj(d));
                Ok(Value::Obj(d))
            }
            "__doc__" => self.function_doc(code),
            "__qualname__" => {
                let path = self
                    .codes
                    .qualname(self.codes.get(code).qualname, &self.names);
                Ok(Value::Str(self.names.intern(&path)))
            }
            other => {
                let message =
                    format!("AttributeError: 'function' object has no attribute '{other}'");
                self.error(message)
            }
        }
    }

    /// `f.name = value` on a user function, taking over `value`.
    pub(in crate::python) fn set_function_attr(
        &mut self,
        id: ObjId,
        name: Sym,
        value: Value,
    ) -> R<()> {
        match self.names.name(name) {
            "__name__" | "__qualname__" | "__doc__" | "__module__" | "__dict__"
            | "__defaults__" | "__code__" => {
                self.heap.decref(value);
                let attr = self.names.name(name).to_string();
                self.unsupported(format!("assigning `{attr}` of a function"))
            }
            _ => {
                let d = self.function_dict(id);
                self.dict_set(d, Value::Str(name), value);
                Ok(())
            }
        }
    }

    /// The function's `__dict__` (borrowed), made on first use.
    fn function_dict(&mut self, id: ObjId) -> ObjId {
        if let ObjKind::Function(f) = self.heap.kind(id)
            && let Some(d) = f.dict
        {
            return d;
        }
        let d = self.alloc(ObjKind::Dict(Vec::new()));
        if let ObjKind::Function(f) = self.heap.kind_mut(id) {
            f.dict = Some(d);
        }
        d
    }

    /// `f.__doc__`: the docstring as written (one line; a multi-line docstring is refused,
    /// since CPython 3.13 strips its indentation and earlier versions keep it), or `None`.
    fn function_doc(&mut self, code: u32) -> R<Value> {
        if code as usize >= self.codes.list.len() {
            return Ok(Value::None);
        }
        let Body::Def(def) = self.codes.get(code).body else {
            return Ok(Value::None);
        };
        let Some(Stmt::Expr(e)) = def.body.first() else {
            return Ok(Value::None);
        };
        let Expr::StringLiteral(s) = &*e.value else {
            return Ok(Value::None);
        };
        let text = s.value.to_str().to_string();
        if text.contains('\n') {
            return self.unsupported(
                "`__doc__` of a multi-line docstring (its indentation differs by version)",
            );
        }
        Ok(Value::Str(self.names.intern(&text)))
    }

    /// `__name__` of a builtin reached as a module attribute (`F.cross_entropy.__name__`
    /// is `'cross_entropy'`): the attribute name it was looked up by (the smallest, if
    /// several names lead to it).
    pub(in crate::python) fn native_name(&mut self, n: NativeId) -> Option<Value> {
        let name = self
            .module_attr_cache
            .iter()
            .filter(|(_, v)| **v == Some(Value::Native(n)))
            .map(|((_, sym), _)| self.names.name(*sym).to_string())
            .min()?;
        Some(Value::Str(self.names.intern(&name)))
    }

    /// `recv.name` taken as a value, for a method of a builtin container (`d.get`,
    /// `lst.append`): CPython's bound `builtin_function_or_method`, one GC object that
    /// holds its receiver (measured: storing `d.get` counts one allocation on 3.8 – 3.13).
    pub(in crate::python) fn bound_builtin_method(&mut self, recv: Value, name: Sym) -> Value {
        self.heap.incref(recv);
        self.new_wrapper(WrapperKind::BuiltinMethod, vec![recv, Value::Str(name)])
    }

    /// Calls a bound builtin method: the receiver's method, as `recv.name(...)` calls it.
    pub(in crate::python) fn call_builtin_method(
        &mut self,
        items: &[Value],
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let (recv, Value::Str(name)) = (items[0], items[1]) else {
            unreachable!("made by bound_builtin_method")
        };
        self.heap.incref(recv);
        let r = self.call_method(recv, name, args, kwargs);
        self.heap.decref(recv);
        r
    }

    /// Attributes of a bound method (`self.forward.__self__`, as functionals that need the
    /// module behind a callable read it): `__self__`, `__func__`, and the function's
    /// attributes, which CPython's method object forwards.
    pub(in crate::python) fn bound_method_attr(
        &mut self,
        func: ObjId,
        receiver: Value,
        name: Sym,
    ) -> R<Value> {
        match self.names.name(name) {
            "__self__" => {
                self.heap.incref(receiver);
                Ok(receiver)
            }
            "__func__" => {
                self.heap.incref(Value::Obj(func));
                Ok(Value::Obj(func))
            }
            // CPython's method object forwards every other attribute to its function
            // (`'function' object has no attribute ...` included).
            _ if matches!(self.heap.kind(func), ObjKind::Function(_)) => {
                self.function_attr(func, name)
            }
            other => {
                let message = format!("AttributeError: 'method' object has no attribute '{other}'");
                self.error(message)
            }
        }
    }

    /// Attributes of a bound builtin method: `__name__`, `__self__`.
    pub(in crate::python) fn builtin_method_attr(
        &mut self,
        items: &[Value],
        name: Sym,
    ) -> R<Value> {
        match self.names.name(name) {
            "__name__" => Ok(items[1]),
            "__self__" => {
                self.heap.incref(items[0]);
                Ok(items[0])
            }
            other => {
                let message = format!(
                    "AttributeError: 'builtin_function_or_method' object has no attribute '{other}'"
                );
                self.error(message)
            }
        }
    }

    /// `sys.getrefcount(x)`: the model's reference count of `x`, which includes the
    /// argument's own reference as CPython's does (2 for an object held by one name).
    /// Approximation: on ≤ 3.10 a caller's value stack keeps its own reference to each
    /// argument for the duration of a call, one more than the model counts for an object
    /// passed down as an argument (3.11+ share it with the callee's frame, as the model does).
    /// Values the model keeps outside its heap (ints, strings, `None`) are refused: their
    /// CPython count depends on caching, interning and (3.12+) immortality.
    pub(in crate::python) fn sys_getrefcount(&mut self, args: &[Value]) -> R<Value> {
        match args {
            [Value::Obj(id)] => Ok(Value::Int(i64::from(self.heap.get(*id).refcount))),
            [_] => self.unsupported(
                "`sys.getrefcount` of a number, string, `None` or builtin (CPython's count \
                 depends on caching, interning and immortal objects); nearest supported: \
                 an object, a container or a tensor",
            ),
            _ => self.error(format!(
                "TypeError: sys.getrefcount() takes exactly one argument ({} given)",
                args.len()
            )),
        }
    }
}
