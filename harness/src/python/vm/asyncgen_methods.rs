//! The awaitables of an async generator's methods (`Objects/genobject.c`):
//! `agen.asend(v)` and `agen.__anext__()` make an `async_generator_asend`, `agen.athrow(e)`
//! and `agen.aclose()` an `async_generator_athrow` (GC objects, counted when made; `athrow`
//! keeps its argument tuple), and `anext(agen, default)` (3.10+) an `anext_awaitable` that
//! turns `StopAsyncIteration` into the default. Awaiting one resumes the generator: an item
//! it yields is the awaitable's result, what its own `await`s yield goes up to the event
//! loop. Each can be awaited once ("cannot reuse already awaited ..."), and one started
//! while another of the same generator is still in flight raises "asynchronous generator
//! is already running" (`ag_running_async`).
//!
//! Measured on CPython 3.8 – 3.13 (`harness/tests/vm_gen_asyncgen_methods.rs`): each
//! awaitable is one object, `athrow(E)` two (its tuple), `g.__anext__` one more (the
//! method-wrapper bound when it is looked up), `anext(g, d)` two (it calls `__anext__()` at
//! once). Approximations: the 3.12+ value wrapper of each item (a GC object there) is not
//! counted; `athrow(type, value, traceback)` is refused.

use super::generators::{Resume, Step};
use crate::heap::{GenState, ObjId, ObjKind, Value, WrapperKind};
use crate::python::interp::{Exc, Interpreter, R};

/// States of an asend/athrow awaitable (CPython's `AWAITABLE_STATE_*`).
const INIT: i64 = 0;
const ITER: i64 = 1;
const CLOSED: i64 = 2;

/// One step of awaiting an async generator method's awaitable.
pub(super) enum AwaitStep {
    /// The generator awaits something: this goes up to the event loop (owned).
    Yielded(Value),
    /// The awaitable's result (owned).
    Done(Value),
}

impl<'a> Interpreter<'a> {
    /// `asend`, `__anext__`, `athrow`, `aclose` of an async generator (arguments owned by
    /// the caller): the awaitable object.
    pub(super) fn asyncgen_method(
        &mut self,
        agen: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        let (kind, items) = match (method, args) {
            ("asend", [v]) => {
                self.heap.incref(*v);
                (WrapperKind::AsyncGenASend, vec![*v])
            }
            ("__anext__", []) => {
                // `__anext__` is a slot: looking it up binds a method-wrapper object.
                let name = self.new_str("__anext__");
                let bound = self.new_wrapper(WrapperKind::BuiltinMethod, vec![Value::None, name]);
                self.heap.decref(bound);
                (WrapperKind::AsyncGenASend, vec![Value::None])
            }
            ("athrow", [e]) => {
                self.heap.incref(*e);
                let tuple = Value::Obj(self.alloc(ObjKind::Tuple(vec![*e])));
                (WrapperKind::AsyncGenAThrow, vec![tuple])
            }
            ("aclose", []) => (WrapperKind::AsyncGenAThrow, vec![Value::None]),
            _ => {
                return self.unsupported(format!(
                    "async generator method '{method}' with these arguments"
                ));
            }
        };
        Ok(self.asyncgen_awaitable(agen, kind, items))
    }

    /// Makes the awaitable holding `agen` and `items` (owned); the loop's `firstiter` hook
    /// runs first, as `async_gen_init_hooks` does for each method.
    pub(super) fn asyncgen_awaitable(
        &mut self,
        agen: ObjId,
        kind: WrapperKind,
        items: Vec<Value>,
    ) -> Value {
        self.asyncgen_first_iter(agen);
        self.heap.incref(Value::Obj(agen));
        let mut all = Vec::with_capacity(3);
        all.push(Value::Obj(agen));
        all.extend(items);
        all.push(Value::Int(INIT));
        self.new_wrapper(kind, all)
    }

    /// Whether the builtin `name` is not yet in this CPython version (`anext`: 3.10), so
    /// using it is a `NameError`.
    pub(in crate::python) fn builtin_missing_in_version(&self, name: &str) -> bool {
        name == "anext" && self.heap.profile.version.minor < 10
    }

    /// `anext(aiter)` / `anext(aiter, default)` (3.10+; arguments owned by the caller).
    pub(in crate::python) fn builtin_anext(&mut self, args: &[Value]) -> R<Value> {
        let (iterator, default) = match args {
            [i] => (*i, None),
            [i, d] => (*i, Some(*d)),
            _ => return self.error("TypeError: anext expected 1 or 2 arguments"),
        };
        let awaitable = match iterator {
            Value::Obj(agen) if self.is_async_generator(iterator) => {
                self.asyncgen_awaitable(agen, WrapperKind::AsyncGenASend, vec![Value::None])
            }
            _ => match self.call_special(iterator, "__anext__", Vec::new()) {
                Ok(r) => r?,
                Err(_) => {
                    let t = self.value_type_name(iterator);
                    return self.error(format!("TypeError: '{t}' object is not an async iterator"));
                }
            },
        };
        let Some(default) = default else {
            return Ok(awaitable);
        };
        let awaitable = self.awaitable_iterator(awaitable)?;
        self.heap.incref(default);
        Ok(self.new_wrapper(
            WrapperKind::AnextAwaitable,
            vec![awaitable, default, Value::Int(0)],
        ))
    }

    /// Whether `id` is one of this file's awaitables (`await` delegates to it).
    pub(super) fn is_asyncgen_awaitable(&self, id: ObjId) -> bool {
        matches!(
            self.heap.kind(id),
            ObjKind::Wrapper(
                WrapperKind::AsyncGenASend
                    | WrapperKind::AsyncGenAThrow
                    | WrapperKind::AnextAwaitable,
                _
            )
        )
    }

    /// One step of awaiting `id` (an asend, athrow or anext awaitable) with `how` (owned).
    pub(super) fn asyncgen_await_step(&mut self, id: ObjId, how: Resume) -> R<AwaitStep> {
        let (kind, items) = match self.heap.kind(id) {
            ObjKind::Wrapper(k, items) => (*k, items.clone()),
            _ => unreachable!("is_asyncgen_awaitable checked it"),
        };
        if kind == WrapperKind::AnextAwaitable {
            return self.anext_awaitable_step(id, &items, how);
        }
        let (Value::Obj(agen), Value::Int(state)) = (items[0], items[2]) else {
            unreachable!("asyncgen_awaitable lays the items out")
        };
        let is_asend = kind == WrapperKind::AsyncGenASend;
        let is_aclose = !is_asend && items[1] == Value::None;
        if state == CLOSED {
            self.drop_how(how);
            let message = if is_asend {
                "cannot reuse already awaited __anext__()/asend()"
            } else {
                "cannot reuse already awaited aclose()/athrow()"
            };
            return self.raise_runtime_error(message);
        }
        let (gen_state, running) = match self.heap.kind(agen) {
            ObjKind::Generator(g) => (g.state, g.running_async),
            _ => unreachable!("an async generator"),
        };
        let how = if state == INIT {
            if running {
                self.drop_how(how);
                self.set_awaitable_state(id, CLOSED);
                let message = if is_asend {
                    "anext(): asynchronous generator is already running"
                } else if is_aclose {
                    "aclose(): asynchronous generator is already running"
                } else {
                    "athrow(): asynchronous generator is already running"
                };
                return self.raise_runtime_error(message);
            }
            if !is_asend && matches!(gen_state, GenState::Closed) {
                // A finished generator: `aclose()` and `athrow()` end with `None`.
                self.drop_how(how);
                self.set_awaitable_state(id, CLOSED);
                return Ok(AwaitStep::Done(Value::None));
            }
            match how {
                Resume::Throw(e) => Resume::Throw(e),
                Resume::Send(v) if !is_asend && v != Value::None => {
                    self.heap.decref(v);
                    self.set_awaitable_state(id, CLOSED);
                    return self.raise_runtime_error(
                        "can't send non-None value to a just-started coroutine",
                    );
                }
                Resume::Send(v) if is_asend => {
                    // `send(None)` sends the value given to `asend`.
                    let sent = if v == Value::None { items[1] } else { v };
                    self.heap.incref(sent);
                    self.heap.decref(v);
                    Resume::Send(sent)
                }
                Resume::Send(_) if is_aclose => Resume::Throw(self.generator_exit()?),
                Resume::Send(_) => Resume::Throw(self.athrow_exception(items[1])?),
            }
        } else {
            how
        };
        self.set_awaitable_state(id, ITER);
        self.set_running_async(agen, true);
        if is_asend && gen_state == GenState::Closed {
            self.drop_how(how);
            return self.asyncgen_awaitable_ends(id, agen, Ok(None), is_asend, is_aclose);
        }
        self.async_gen_yielded = false;
        let stepped = self.resume_generator(agen, how);
        let item = std::mem::take(&mut self.async_gen_yielded);
        match stepped {
            Ok(Step::Yielded(v)) if !item => Ok(AwaitStep::Yielded(v)),
            Ok(Step::Yielded(v)) => {
                self.asyncgen_awaitable_ends(id, agen, Ok(Some(v)), is_asend, is_aclose)
            }
            Ok(Step::Returned(v)) => {
                self.heap.decref(v);
                self.asyncgen_awaitable_ends(id, agen, Ok(None), is_asend, is_aclose)
            }
            Err(e) => self.asyncgen_awaitable_ends(id, agen, Err(e), is_asend, is_aclose),
        }
    }

    /// The awaitable is done: the generator yielded an item (`Some`), finished (`None`) or
    /// raised.
    fn asyncgen_awaitable_ends(
        &mut self,
        id: ObjId,
        agen: ObjId,
        outcome: R<Option<Value>>,
        is_asend: bool,
        is_aclose: bool,
    ) -> R<AwaitStep> {
        self.set_awaitable_state(id, CLOSED);
        self.set_running_async(agen, false);
        match outcome {
            Ok(Some(v)) if is_aclose => {
                self.heap.decref(v);
                self.close_generator(agen)?;
                self.raise_runtime_error("async generator ignored GeneratorExit")
            }
            Ok(Some(v)) => Ok(AwaitStep::Done(v)),
            Ok(None) if is_aclose => Ok(AwaitStep::Done(Value::None)),
            Ok(None) => {
                let _ = is_asend;
                self.raise_builtin("StopAsyncIteration", Vec::new())
            }
            Err(e)
                if is_aclose
                    && self.exception_named(&e, &["GeneratorExit", "StopAsyncIteration"]) =>
            {
                self.discard(e);
                Ok(AwaitStep::Done(Value::None))
            }
            Err(e) => Err(e),
        }
    }

    /// One step of `anext(aiter, default)`'s awaitable: the inner awaitable's step, with
    /// `StopAsyncIteration` replaced by the default.
    fn anext_awaitable_step(&mut self, id: ObjId, items: &[Value], how: Resume) -> R<AwaitStep> {
        let (inner, default) = (items[0], items[1]);
        let stepped = match inner {
            Value::Obj(i) if self.is_asyncgen_awaitable(i) => self.asyncgen_await_step(i, how),
            Value::Obj(i) => match self.resume_generator(i, how) {
                Ok(Step::Yielded(v)) => Ok(AwaitStep::Yielded(v)),
                Ok(Step::Returned(v)) => Ok(AwaitStep::Done(v)),
                Err(e) => Err(e),
            },
            _ => unreachable!("builtin_anext stores an awaitable iterator"),
        };
        let _ = id;
        match stepped {
            Err(e) if self.exception_named(&e, &["StopAsyncIteration"]) => {
                self.discard(e);
                self.heap.incref(default);
                Ok(AwaitStep::Done(default))
            }
            other => other,
        }
    }

    /// The exception `athrow(arg)` raises when first awaited: `arg` instantiated if a class.
    fn athrow_exception(&mut self, args: Value) -> R<Box<Exc>> {
        let arg = match args {
            Value::Obj(t) => match self.heap.kind(t) {
                ObjKind::Tuple(items) => items[0],
                _ => Value::None,
            },
            _ => Value::None,
        };
        self.exception_to_throw(arg)
    }

    /// A new `GeneratorExit`, raised (what `aclose()` throws in).
    fn generator_exit(&mut self) -> R<Box<Exc>> {
        let Some(Value::Obj(class)) = self.builtin_exception("GeneratorExit") else {
            return self.error("GeneratorExit is missing");
        };
        self.exc.handler_depth += 1;
        let exception = self.new_exception(class, Vec::new());
        let thrown = self.raising(exception);
        self.exc.handler_depth -= 1;
        Ok(thrown)
    }

    /// Whether `e` is a raised exception of (a subclass of) one of the builtin `names`.
    fn exception_named(&mut self, e: &Exc, names: &[&str]) -> bool {
        let Some(x) = Self::raised_exception(e) else {
            return false;
        };
        let ObjKind::Exception(d) = self.heap.kind(x) else {
            return false;
        };
        let class = d.class;
        names.iter().any(|n| match self.builtin_exception(n) {
            Some(Value::Obj(base)) => self.class_derives_from(class, base),
            _ => false,
        })
    }

    fn raise_runtime_error<T>(&mut self, message: &str) -> R<T> {
        let message = self.new_str(message);
        self.raise_builtin("RuntimeError", vec![message])
    }

    fn set_awaitable_state(&mut self, id: ObjId, state: i64) {
        if let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id) {
            items[2] = Value::Int(state);
        }
    }

    fn set_running_async(&mut self, agen: ObjId, running: bool) {
        if let ObjKind::Generator(g) = self.heap.kind_mut(agen) {
            g.running_async = running;
        }
    }

    fn drop_how(&mut self, how: Resume) {
        match how {
            Resume::Send(v) => self.heap.decref(v),
            Resume::Throw(e) => self.discard(e),
        }
    }
}
