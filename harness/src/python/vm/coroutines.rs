//! `await`: what an awaitable delegates to, and awaiting outside the VM.
//!
//! Awaiting is `yield from` on the awaitable's iterator (CPython's `GET_AWAITABLE` then
//! `SEND`): a coroutine is resumed in place; a future yields itself to the task that awaits
//! it until it is done, then gives its result; a user awaitable's `__await__` must return an
//! iterator (a generator), which is delegated to like any `yield from`.
//!
//! Objects counted for the collector: a coroutine is a generator object with the
//! coroutine flag, so it counts as a generator does (measured by
//! `harness/tests/generators.rs`: 2 gen-0 objects on ≤ 3.10 with a fresh frame, 1 from
//! 3.11); `await` itself allocates nothing.

use crate::heap::{FutureState, ObjId, ObjKind, Value};
use crate::python::interp::{Interpreter, R};

use super::generators::Resume;

impl<'a> Interpreter<'a> {
    /// The iterator `await` delegates to (CPython's `_PyCoro_GetAwaitableIter`). Takes and
    /// returns ownership.
    pub(in crate::python) fn awaitable_iterator(&mut self, awaitable: Value) -> R<Value> {
        if let Value::Obj(id) = awaitable {
            match self.heap.kind(id) {
                ObjKind::Generator(g) if g.coroutine && !self.is_async_generator(awaitable) => {
                    return Ok(awaitable);
                }
                ObjKind::Future(_) => return Ok(awaitable),
                ObjKind::Wrapper(..) if self.is_asyncgen_awaitable(id) => return Ok(awaitable),
                ObjKind::Instance { .. } => {
                    return match self.call_special(awaitable, "__await__", Vec::new()) {
                        Ok(result) => {
                            self.heap.decref(awaitable);
                            self.check_await_result(result?)
                        }
                        Err(_) => self.not_awaitable(awaitable),
                    };
                }
                _ => {}
            }
        }
        self.not_awaitable(awaitable)
    }

    /// `__await__` must return an iterator that is not a coroutine.
    fn check_await_result(&mut self, iterator: Value) -> R<Value> {
        let verdict = match iterator {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Generator(g) if g.coroutine => Some("__await__() returned a coroutine"),
                ObjKind::Generator(_) | ObjKind::Wrapper(..) => None,
                ObjKind::Instance { .. } => {
                    if self.user_special(iterator, "__next__").is_some() {
                        None
                    } else {
                        Some("")
                    }
                }
                _ => Some(""),
            },
            _ => Some(""),
        };
        match verdict {
            None => Ok(iterator),
            Some(message) => {
                let message = if message.is_empty() {
                    format!(
                        "__await__() returned non-iterator of type '{}'",
                        self.value_type_name(iterator)
                    )
                } else {
                    message.to_string()
                };
                self.heap.decref(iterator);
                self.raise_type_error(message)
            }
        }
    }

    fn not_awaitable(&mut self, value: Value) -> R<Value> {
        let message = format!(
            "object {} can't be used in 'await' expression",
            self.value_type_name(value)
        );
        self.heap.decref(value);
        self.raise_type_error(message)
    }

    fn raise_type_error<T>(&mut self, message: String) -> R<T> {
        let message = self.new_str(&message);
        self.raise_builtin("TypeError", vec![message])
    }

    pub(in crate::python) fn value_type_name(&self, v: Value) -> String {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => self.class_name(*class),
                other => other.type_name().to_string(),
            },
            Value::None => "NoneType".to_string(),
            Value::Bool(_) => "bool".to_string(),
            Value::Int(_) => "int".to_string(),
            Value::Float(_) => "float".to_string(),
            Value::Str(_) => "str".to_string(),
            Value::Module(_) => "module".to_string(),
            _ => "builtin_function_or_method".to_string(),
        }
    }

    /// An `await` the VM does not compile (in a nested scope such as a comprehension):
    /// the awaitable is run to its end here. One that would
    /// suspend to the event loop cannot, and is refused at the `await`.
    pub(in crate::python) fn await_to_end(&mut self, awaitable: Value) -> R<Value> {
        let offset = self.offset;
        let iterator = self.awaitable_iterator(awaitable)?;
        let mut stack = vec![iterator, Value::Int(0)];
        match self.delegate(&mut stack, Resume::Send(Value::None)) {
            Ok(None) => Ok(stack.pop().unwrap_or(Value::None)),
            Ok(Some(yielded)) => {
                self.heap.decref(yielded);
                self.heap.decref_all(stack);
                self.offset = offset;
                self.unsupported(
                    "an `await` that suspends to the event loop in a nested scope (a comprehension or a lambda; the workload VM suspends at the `await`s of a coroutine's own body)",
                )
            }
            Err(e) => {
                self.heap.decref_all(stack);
                Err(e)
            }
        }
    }

    /// One step of awaiting a future (`Future.__await__`): the first step yields the future
    /// to the task unless it is already done; `None` when its outcome is ready.
    pub(super) fn future_await_step(
        &mut self,
        future: ObjId,
        position: i64,
        how: Resume,
    ) -> R<Option<Value>> {
        match how {
            Resume::Throw(e) => return Err(e),
            Resume::Send(v) => self.heap.decref(v),
        }
        let pending = matches!(
            self.heap.kind(future),
            ObjKind::Future(f) if f.state == FutureState::Pending
        );
        match (pending, position) {
            (false, _) => Ok(None),
            (true, 0) => {
                self.heap.incref(Value::Obj(future));
                Ok(Some(Value::Obj(future)))
            }
            (true, _) => self.error("RuntimeError: await wasn't used with future"),
        }
    }

    /// A finished future's result (a new reference) or its exception, raised.
    pub(in crate::python) fn future_outcome(&mut self, future: ObjId) -> R<Value> {
        let state = match self.heap.kind(future) {
            ObjKind::Future(f) => f.state,
            _ => FutureState::Pending,
        };
        match state {
            FutureState::Done(v) => {
                self.heap.incref(v);
                Ok(v)
            }
            FutureState::Failed(_) | FutureState::Cancelled => {
                let e = self.failure_of(future);
                Err(self.raising(e))
            }
            FutureState::Pending => self.error("asyncio.InvalidStateError: Result is not set."),
        }
    }

    /// `task.done()`, `task.result()`, `task.cancelled()`, `task.cancel()` (arguments owned by the caller).
    pub(in crate::python) fn future_method(
        &mut self,
        future: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        let pending = matches!(
            self.heap.kind(future),
            ObjKind::Future(f) if f.state == FutureState::Pending
        );
        match (method, args) {
            ("done", []) => Ok(Value::Bool(!pending)),
            ("cancelled", []) => Ok(Value::Bool(matches!(
                self.heap.kind(future),
                ObjKind::Future(f) if f.cancelled
            ))),
            ("cancel", []) => Ok(Value::Bool(self.cancel_future(future))),
            ("result", []) => self.future_outcome(future),
            _ => self.unsupported(format!(
                "asyncio future method '{method}' with these arguments"
            )),
        }
    }
}
