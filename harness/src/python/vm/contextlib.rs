//! `contextlib`'s generator-based managers and `suppress`.
//!
//! `@contextmanager` returns a function (CPython's `helper`, a closure over the generator
//! function with `functools.wraps`' `__dict__`); calling it calls the generator function
//! and wraps the generator in a `_GeneratorContextManager`, which also keeps the call's
//! arguments until `__enter__`. `__enter__` runs the generator to its first `yield`;
//! `__exit__` resumes it (a normal exit) or throws the exception in at the `yield`
//! (suppressed when the generator returns, propagated when the same exception comes back).
//! Between the two the suspended generator holds its frame, and the tensors in it.
//!
//! Objects counted, measured with CPython 3.8–3.15 (`tests/generators.rs`): decorating
//! counts 3 (function, cell, `__dict__`; the closure tuple comes from its free list);
//! calling the decorated function counts the generator and the manager; `suppress(E)` 1.

use crate::heap::{GenState, ObjId, ObjKind, Sym, Value, WrapperKind};
use crate::python::interp::{Interpreter, R};
use crate::python::vm::generators::{Resume, Step};

/// The items of a `ContextManagerFunction` wrapper: the closure tuple (one cell holding the
/// generator function) and the `__dict__` (`__wrapped__`).
const CLOSURE: usize = 0;

impl<'a> Interpreter<'a> {
    /// `contextlib.contextmanager(func)` (argument borrowed).
    pub(in crate::python) fn contextmanager_decorate(&mut self, p: &[Value]) -> R<Value> {
        let [func] = p else {
            return self.error("TypeError: contextmanager() takes exactly one argument");
        };
        self.heap.incref(*func);
        let cell = self.alloc(ObjKind::Cell(Some(*func)));
        let closure = self.alloc(ObjKind::Tuple(vec![Value::Obj(cell)]));
        let wrapped = self.names.intern("__wrapped__");
        self.heap.incref(*func);
        let dict = self.alloc(ObjKind::Dict(vec![(Value::Str(wrapped), *func)]));
        Ok(Value::Obj(self.alloc(ObjKind::Wrapper(
            WrapperKind::ContextManagerFunction,
            vec![Value::Obj(closure), Value::Obj(dict)],
        ))))
    }

    /// The generator function a `@contextmanager` function closes over (borrowed).
    fn contextmanager_target(&self, wrapper: ObjId) -> Value {
        let ObjKind::Wrapper(_, items) = self.heap.kind(wrapper) else {
            return Value::None;
        };
        let Value::Obj(closure) = items[CLOSURE] else {
            return Value::None;
        };
        let ObjKind::Tuple(cells) = self.heap.kind(closure) else {
            return Value::None;
        };
        match cells
            .first()
            .map(|&c| (c, c.obj().map(|c| self.heap.kind(c))))
        {
            Some((_, Some(ObjKind::Cell(Some(f))))) => *f,
            _ => Value::None,
        }
    }

    /// Calling a `@contextmanager` function: the generator, wrapped with the arguments
    /// (owned) in a new `_GeneratorContextManager`.
    pub(in crate::python) fn contextmanager_call(
        &mut self,
        wrapper: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let func = self.contextmanager_target(wrapper);
        for &v in args.iter().chain(kwargs.iter().map(|(_, v)| v)) {
            self.heap.incref(v);
        }
        let stored_args = if args.is_empty() {
            crate::python::natives::constant_tuple(self, Vec::new())
        } else {
            Value::Obj(self.alloc(ObjKind::Tuple(args.clone())))
        };
        let stored_kwargs = kwargs
            .iter()
            .map(|&(k, v)| (Value::Str(k), v))
            .collect::<Vec<_>>();
        let stored_kwargs = Value::Obj(self.alloc(ObjKind::Dict(stored_kwargs)));
        let generator = match self.call(func, args, kwargs) {
            Ok(g) => g,
            Err(e) => {
                self.heap.decref_all([stored_args, stored_kwargs]);
                return Err(e);
            }
        };
        self.heap.incref(func);
        Ok(Value::Obj(self.alloc(ObjKind::Wrapper(
            WrapperKind::GeneratorContextManager,
            vec![generator, func, stored_args, stored_kwargs],
        ))))
    }

    /// `contextlib.suppress(*exceptions)` (arguments borrowed): the manager and its tuple.
    pub(in crate::python) fn new_suppress(&mut self, p: &[Value]) -> R<Value> {
        for &v in p {
            self.heap.incref(v);
        }
        let exceptions = if p.is_empty() {
            crate::python::natives::constant_tuple(self, Vec::new())
        } else {
            Value::Obj(self.alloc(ObjKind::Tuple(p.to_vec())))
        };
        Ok(Value::Obj(self.alloc(ObjKind::Wrapper(
            WrapperKind::Suppress,
            vec![exceptions],
        ))))
    }

    /// Whether `with` over `v` is one of these managers.
    pub(in crate::python) fn is_contextlib_manager(&self, v: Value) -> bool {
        matches!(
            v.obj().map(|id| self.heap.kind(id)),
            Some(ObjKind::Wrapper(
                WrapperKind::GeneratorContextManager | WrapperKind::Suppress,
                _
            ))
        )
    }

    /// `__enter__`: a generator manager drops its stored call (`del self.args, self.kwds,
    /// self.func`) and runs the generator to its first `yield`.
    pub(super) fn contextlib_enter(&mut self, id: ObjId) -> R<Value> {
        let (kind, generator, stored) = match self.heap.kind_mut(id) {
            ObjKind::Wrapper(kind, items) if *kind == WrapperKind::GeneratorContextManager => {
                let stored: Vec<Value> = items[1..]
                    .iter_mut()
                    .map(|v| std::mem::replace(v, Value::None))
                    .collect();
                (*kind, items[0], stored)
            }
            ObjKind::Wrapper(kind, _) => (*kind, Value::None, Vec::new()),
            _ => unreachable!("checked by is_contextlib_manager"),
        };
        self.heap.decref_all(stored);
        if kind == WrapperKind::Suppress {
            return Ok(Value::None);
        }
        let Some(generator) = self.generator_of(generator) else {
            let t = self.type_name_of(generator);
            return self.error(format!("TypeError: '{t}' object is not an iterator"));
        };
        match self.resume_generator(generator, Resume::Send(Value::None))? {
            Step::Yielded(v) => Ok(v),
            Step::Returned(v) => {
                self.heap.decref(v);
                let message = self.new_str("generator didn't yield");
                self.raise_builtin("RuntimeError", vec![message])
            }
        }
    }

    fn generator_of(&self, v: Value) -> Option<ObjId> {
        v.obj()
            .filter(|&g| matches!(self.heap.kind(g), ObjKind::Generator(_)))
    }

    /// `__exit__`, with the exception being handled (`None` on a normal exit); returns
    /// whether the exception is suppressed.
    pub(super) fn contextlib_exit(&mut self, id: ObjId, exception: Option<ObjId>) -> R<bool> {
        let (kind, first) = match self.heap.kind(id) {
            ObjKind::Wrapper(kind, items) => (*kind, items[0]),
            _ => unreachable!("checked by is_contextlib_manager"),
        };
        if kind == WrapperKind::Suppress {
            return match exception {
                None => Ok(false),
                Some(x) => self.exception_matches(x, first),
            };
        }
        let Some(generator) = self.generator_of(first) else {
            return Ok(false);
        };
        let Some(exception) = exception else {
            return match self.resume_generator(generator, Resume::Send(Value::None))? {
                Step::Returned(v) => {
                    self.heap.decref(v);
                    Ok(false)
                }
                Step::Yielded(v) => {
                    self.heap.decref(v);
                    self.generator_did_not_stop(generator, "generator didn't stop")
                }
            };
        };
        self.heap.incref(Value::Obj(exception));
        let thrown = self.raising(exception);
        match self.resume_generator(generator, Resume::Throw(thrown)) {
            // The generator caught it and finished: suppressed (a `StopIteration` other than
            // the one thrown in).
            Ok(Step::Returned(v)) => {
                self.heap.decref(v);
                Ok(true)
            }
            Ok(Step::Yielded(v)) => {
                self.heap.decref(v);
                self.generator_did_not_stop(generator, "generator didn't stop after throw()")
            }
            Err(e) => match Self::raised_exception(&e) {
                // The same exception came back: not suppressed, and `__exit__` does not raise.
                Some(back) if back == exception || self.wraps_thrown(back, exception) => {
                    self.discard(e);
                    Ok(false)
                }
                _ => Err(e),
            },
        }
    }

    /// PEP 479: a `StopIteration` thrown in comes back as a `RuntimeError` caused by it.
    fn wraps_thrown(&self, back: ObjId, thrown: ObjId) -> bool {
        match self.heap.kind(back) {
            ObjKind::Exception(d) => {
                d.cause == Some(thrown) && self.class_name(d.class) == "RuntimeError"
            }
            _ => false,
        }
    }

    /// The generator yielded again: it is closed and `RuntimeError` is raised.
    fn generator_did_not_stop(&mut self, generator: ObjId, message: &str) -> R<bool> {
        if matches!(self.heap.kind(generator), ObjKind::Generator(g) if g.state != GenState::Closed)
        {
            self.close_generator(generator)?;
        }
        let message = self.new_str(message);
        self.raise_builtin("RuntimeError", vec![message])
    }
}
