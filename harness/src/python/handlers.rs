//! The simple statements that raise (`raise`, `assert`), the context-manager protocol the
//! VM's `with` uses, and the refusals of `try`/`except*` and `async with` outside a
//! coroutine. `try` and `with` themselves are instructions (`vm/compile_try.rs`,
//! `vm/with_blocks.rs`); the semantics they rely on (exception objects, chaining,
//! tracebacks) live in `exceptions.rs` and `frames.rs`.

use super::interp::{Exc, Flow, Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use ruff_python_ast as ast;

impl<'a> Interpreter<'a> {
    /// `try`/`except*` (`try` and `with` are compiled to instructions, `vm/compile_try.rs`):
    /// refused, located, when it runs.
    pub(super) fn exec_try_star(&mut self, t: &'a ast::StmtTry) -> R<Flow> {
        self.at(t);
        self.unsupported(super::constructs::Construct::ExceptStar.what())
    }

    /// `raise`, `raise X`, `raise X from Y`.
    pub(super) fn exec_raise(&mut self, r: &'a ast::StmtRaise) -> R<Flow> {
        self.at(r);
        let Some(exc_expr) = &r.exc else {
            return match self.exc.handling.last() {
                Some(&e) => {
                    self.heap.incref(Value::Obj(e));
                    Err(Box::new(Exc::Raised {
                        exception: e,
                        tb_depth: Some(self.frames.len()),
                        offset: self.offset,
                    }))
                }
                None => {
                    let text = Value::Str(self.names.intern("No active exception to reraise"));
                    self.raise_builtin("RuntimeError", vec![text])
                }
            };
        };
        let v = self.eval(exc_expr)?;
        self.at(&**exc_expr);
        let exception = self.exception_instance(v)?;
        if let Some(cause_expr) = &r.cause {
            let c = match self.eval(cause_expr) {
                Ok(c) => c,
                Err(err) => {
                    self.heap.decref_id(exception);
                    return Err(err);
                }
            };
            let cause = match c {
                Value::None => None,
                other => match self.exception_instance(other) {
                    Ok(x) => Some(x),
                    Err(err) => {
                        self.heap.decref_id(exception);
                        return Err(err);
                    }
                },
            };
            self.set_cause(exception, cause);
        }
        self.at(r);
        Err(self.raising(exception))
    }

    /// What `raise v` raises: an instance as it is, a class instantiated without arguments.
    fn exception_instance(&mut self, v: Value) -> R<ObjId> {
        match v {
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Exception(_)) => Ok(id),
            Value::Obj(id)
                if matches!(self.heap.kind(id), ObjKind::Class(_))
                    && self.is_exception_class(id) =>
            {
                let r = self.instantiate_exception(id, Vec::new(), Vec::new());
                self.heap.decref(v);
                match r? {
                    Value::Obj(x) => Ok(x),
                    other => {
                        self.heap.decref(other);
                        self.error("TypeError: exceptions must derive from BaseException")
                    }
                }
            }
            other => {
                self.heap.decref(other);
                self.error("TypeError: exceptions must derive from BaseException")
            }
        }
    }

    /// `assert test, msg`: `AssertionError(msg)`.
    pub(super) fn exec_assert(&mut self, a: &'a ast::StmtAssert) -> R<Flow> {
        if self.eval_truth(&a.test)? {
            return Ok(Flow::Normal);
        }
        let args = match &a.msg {
            Some(m) => vec![self.eval(m)?],
            None => Vec::new(),
        };
        self.at(&*a.test);
        self.raise_builtin("AssertionError", args)
    }

    /// `async with` outside a coroutine (`with` is compiled to instructions,
    /// `vm/with_blocks.rs`): refused, located, when it runs.
    pub(super) fn exec_async_with(&mut self, w: &'a ast::StmtWith) -> R<Flow> {
        self.at(w);
        self.unsupported(super::constructs::Construct::AsyncWith.what())
    }

    pub(super) fn is_context_manager(&mut self, v: Value) -> bool {
        let Value::Obj(id) = v else { return false };
        let ObjKind::Instance { class, .. } = self.heap.kind(id) else {
            return false;
        };
        let class = *class;
        let enter = self.names.intern("__enter__");
        let exit = self.names.intern("__exit__");
        self.class_lookup(class, enter).is_some() && self.class_lookup(class, exit).is_some()
    }

    /// `BEFORE_WITH` on an object with `__enter__` and `__exit__` (owned `manager`): both
    /// looked up as bound methods, then `__enter__` called. Returns the bound `__exit__`,
    /// kept for the block, and what `__enter__` returned (both owned).
    pub(super) fn enter_context_manager(&mut self, manager: Value) -> R<(Value, Value)> {
        let enter_sym = self.names.intern("__enter__");
        let exit_sym = self.names.intern("__exit__");
        let enter = self.get_attr(manager, enter_sym);
        let exit = self.get_attr(manager, exit_sym);
        self.heap.decref(manager);
        let (enter, exit) = match (enter, exit) {
            (Ok(a), Ok(b)) => (a, b),
            (a, b) => {
                let mut first = None;
                for r in [a, b] {
                    match r {
                        Ok(v) => self.heap.decref(v),
                        Err(e) if first.is_none() => first = Some(e),
                        Err(e) => self.discard(e),
                    }
                }
                return Err(first.expect("one lookup failed"));
            }
        };
        let entered = self.call(enter, Vec::new(), Vec::new());
        self.heap.decref(enter);
        match entered {
            Ok(v) => Ok((exit, v)),
            Err(e) => {
                self.heap.decref(exit);
                Err(e)
            }
        }
    }

    /// `(type, value, traceback)` of an exception, as new references.
    pub(super) fn sys_exc_info_items(&mut self, exception: ObjId) -> Vec<Value> {
        let (class, tb) = match self.heap.kind(exception) {
            ObjKind::Exception(d) => (
                Value::Obj(d.class),
                d.traceback.map_or(Value::None, Value::Obj),
            ),
            _ => (Value::None, Value::None),
        };
        let items = vec![class, Value::Obj(exception), tb];
        for &v in &items {
            self.heap.incref(v);
        }
        items
    }
}
