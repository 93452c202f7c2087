//! The statements that route exceptions: `try` / `except` / `else` / `finally`, `raise`
//! and `with`. The semantics they rely on (exception objects, chaining, tracebacks) live in
//! `exceptions.rs` and `frames.rs`; this file only walks the statements.

use super::interp::{Exc, Flow, Interpreter, R};
use super::natives;
use super::scope::symbol;
use crate::heap::{ObjId, ObjKind, Value};
use ruff_python_ast::{self as ast, Stmt};

impl<'a> Interpreter<'a> {
    /// `try:` with its handlers, `else` and `finally`. A `finally` runs on every way out
    /// but an uncatchable error (an unsupported construct stops the run where it is).
    pub(super) fn exec_try(&mut self, t: &'a ast::StmtTry) -> R<Flow> {
        if t.is_star {
            self.at(t);
            return self.unsupported(super::constructs::Construct::ExceptStar.what());
        }
        let has_finally = !t.finalbody.is_empty();
        self.exc.handler_depth += 1;
        let body = self.exec_block(&t.body);
        let outcome = match body {
            Ok(Flow::Normal) => {
                if !has_finally {
                    self.exc.handler_depth -= 1;
                }
                self.exec_block(&t.orelse)
            }
            Ok(flow) => {
                if !has_finally {
                    self.exc.handler_depth -= 1;
                }
                Ok(flow)
            }
            Err(e) => {
                let e = self.unwinding(e);
                if !has_finally {
                    self.exc.handler_depth -= 1;
                }
                self.handle(t, e)
            }
        };
        if !has_finally {
            return outcome;
        }
        let outcome = match outcome {
            Err(e) => Err(self.unwinding(e)),
            other => other,
        };
        self.exc.handler_depth -= 1;
        let pending = match &outcome {
            Err(e) => match Self::raised_exception(e) {
                Some(x) => Some(x),
                // Not a Python exception: the run stops here.
                None => return outcome,
            },
            Ok(_) => None,
        };
        if let Some(x) = pending {
            self.begin_handling(x);
        }
        let fin = self.exec_block(&t.finalbody);
        let fin = match fin {
            Err(e) => Err(self.materialise(e)),
            other => other,
        };
        if pending.is_some() {
            self.end_handling();
        }
        match fin {
            Ok(Flow::Normal) => outcome,
            other => {
                self.drop_outcome(outcome);
                other
            }
        }
    }

    /// Releases what a superseded outcome holds (a return value, an exception).
    fn drop_outcome(&mut self, outcome: R<Flow>) {
        match outcome {
            Ok(Flow::Return(v)) => self.heap.decref(v),
            Ok(_) => {}
            Err(e) => self.discard(e),
        }
    }

    /// Looks for the `except` clause of an exception in flight and runs it.
    fn handle(&mut self, t: &'a ast::StmtTry, e: Box<Exc>) -> R<Flow> {
        let Some(exception) = Self::raised_exception(&e) else {
            return Err(e);
        };
        // The exception counts as handled while the clauses are matched (PUSH_EXC_INFO).
        self.begin_handling(exception);
        for handler in &t.handlers {
            let ast::ExceptHandler::ExceptHandler(h) = handler;
            let matched = match &h.type_ {
                None => Ok(true),
                Some(type_expr) => match self.eval(type_expr) {
                    Ok(spec) => {
                        self.at(&**type_expr);
                        let m = self.exception_matches(exception, spec);
                        self.heap.decref(spec);
                        m
                    }
                    Err(err) => Err(err),
                },
            };
            let matched = match matched {
                Ok(m) => m,
                Err(err) => {
                    let err = self.materialise(err);
                    self.end_handling();
                    self.discard(e);
                    return Err(err);
                }
            };
            if !matched {
                continue;
            }
            // The exception in flight goes to the `as` name (or is dropped).
            let name = h
                .name
                .as_ref()
                .map(|n| symbol(&n.node_index, n.as_str(), &mut self.names));
            match name {
                Some(sym) => self.store_name(sym, Value::Obj(exception)),
                None => self.heap.decref_id(exception),
            }
            drop(e);
            let result = match self.exec_block(&h.body) {
                Err(err) => Err(self.materialise(err)),
                other => other,
            };
            self.end_handling();
            // `except E as name:` ends with `name = None; del name`.
            if let Some(sym) = name
                && let Some(v) = self.take_name(sym)
            {
                self.heap.decref(v);
            }
            return result;
        }
        self.end_handling();
        Err(e)
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

    /// `with a, b: body`: grad-mode managers of torch, and objects with `__enter__` and
    /// `__exit__`.
    pub(super) fn exec_with(&mut self, w: &'a ast::StmtWith) -> R<Flow> {
        if w.is_async {
            self.at(w);
            return self.unsupported(super::constructs::Construct::AsyncWith.what());
        }
        self.with_items(&w.items, &w.body)
    }

    pub(super) fn with_items(&mut self, items: &'a [ast::WithItem], body: &'a [Stmt]) -> R<Flow> {
        let Some((item, rest)) = items.split_first() else {
            return self.exec_block(body);
        };
        self.at(&item.context_expr);
        let manager = self.eval(&item.context_expr)?;
        if let Value::Native(n) = manager
            && let Some(mode) = natives::grad_mode_of(n)
        {
            if item.optional_vars.is_some() {
                return self.unsupported("`with ... as` on a grad-mode context manager");
            }
            let saved = natives::grad_mode_restored(n).unwrap_or(self.grad_enabled);
            self.grad_enabled = mode;
            let flow = self.with_items(rest, body);
            self.grad_enabled = saved;
            return flow;
        }
        if let Value::Obj(w) = manager
            && let ObjKind::Wrapper(crate::heap::WrapperKind::NullContext, items) =
                self.heap.kind(w)
        {
            let enter = items[0];
            self.heap.incref(enter);
            self.heap.decref(manager);
            match &item.optional_vars {
                Some(target) => self.store(target, enter)?,
                None => self.heap.decref(enter),
            }
            return self.with_items(rest, body);
        }
        if let Value::Obj(id) = manager
            && self.is_autocast(manager)
        {
            self.autocast_enter(id);
            let stored = match &item.optional_vars {
                Some(target) => {
                    self.heap.incref(manager);
                    self.store(target, manager)
                }
                None => Ok(()),
            };
            let flow = stored.and_then(|()| self.with_items(rest, body));
            self.autocast_exit(id);
            self.heap.decref(manager);
            return flow;
        }
        if self.is_contextlib_manager(manager) {
            return self.contextlib_with(manager, item, rest, body);
        }
        if !self.is_context_manager(manager) {
            self.heap.decref(manager);
            return self.unsupported(
                "this context manager (torch.no_grad, enable_grad, inference_mode, or an object with __enter__ and __exit__)",
            );
        }
        self.with_manager(manager, item, rest, body)
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

    /// The context-manager protocol (`BEFORE_WITH` / `WITH_EXCEPT_START`): `__enter__` and
    /// `__exit__` are looked up as bound methods, `__exit__`'s kept for the block.
    fn with_manager(
        &mut self,
        manager: Value,
        item: &'a ast::WithItem,
        rest: &'a [ast::WithItem],
        body: &'a [Stmt],
    ) -> R<Flow> {
        let (exit, entered) = self.enter_context_manager(manager)?;
        match &item.optional_vars {
            Some(target) => {
                if let Err(e) = self.store(target, entered) {
                    self.heap.decref(exit);
                    return Err(e);
                }
            }
            None => self.heap.decref(entered),
        }
        self.exc.handler_depth += 1;
        let outcome = match self.with_items(rest, body) {
            Err(e) => Err(self.unwinding(e)),
            ok => ok,
        };
        self.exc.handler_depth -= 1;
        let result = match outcome {
            Ok(flow) => {
                let r = self.call(exit, vec![Value::None; 3], Vec::new());
                match r {
                    Ok(v) => {
                        self.heap.decref(v);
                        Ok(flow)
                    }
                    Err(e) => {
                        if let Flow::Return(v) = flow {
                            self.heap.decref(v);
                        }
                        Err(e)
                    }
                }
            }
            Err(e) => match Self::raised_exception(&e) {
                None => Err(e),
                Some(exception) => {
                    self.begin_handling(exception);
                    let args = self.sys_exc_info_items(exception);
                    let r = self.call(exit, args, Vec::new());
                    let r = match r {
                        Ok(v) => {
                            let t = self.truth(v);
                            self.heap.decref(v);
                            t
                        }
                        Err(err) => Err(self.materialise(err)),
                    };
                    self.end_handling();
                    match r {
                        Ok(true) => {
                            self.discard(e);
                            Ok(Flow::Normal)
                        }
                        Ok(false) => Err(e),
                        Err(err) => {
                            self.discard(e);
                            Err(err)
                        }
                    }
                }
            },
        };
        self.heap.decref(exit);
        result
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
