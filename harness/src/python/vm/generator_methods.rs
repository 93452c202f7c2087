//! The methods of a generator object: `send`, `throw` and `close` (`GeneratorExit` at the
//! suspension point), and the PEP 442 finalisation of one dropped while suspended.

use super::generators::{Resume, Step};
use crate::heap::{GenState, ObjId, ObjKind, Value};
use crate::python::interp::{Exc, Frame, Interpreter, R};
use crate::python::small_map::SmallMap;

impl<'a> Interpreter<'a> {
    /// `gen.send(v)`, `gen.throw(e)`, `gen.close()` (arguments owned by the caller).
    pub(in crate::python) fn generator_method(
        &mut self,
        generator: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        if self.is_async_generator(Value::Obj(generator)) {
            return self.asyncgen_method(generator, method, args);
        }
        let step = match (method, args) {
            ("send", [v]) => {
                self.heap.incref(*v);
                self.resume_generator(generator, Resume::Send(*v))?
            }
            ("__next__", []) => self.resume_generator(generator, Resume::Send(Value::None))?,
            ("throw", [e]) => {
                let e = self.exception_to_throw(*e)?;
                self.resume_generator(generator, Resume::Throw(e))?
            }
            ("close", []) => return self.close_generator(generator).map(|()| Value::None),
            _ => {
                return self
                    .unsupported(format!("generator method '{method}' with these arguments"));
            }
        };
        match step {
            Step::Yielded(v) => Ok(v),
            Step::Returned(v) => self.raise_builtin("StopIteration", vec![v]),
        }
    }

    /// `gen.close()`: `GeneratorExit` raised at the suspension point. Suspended inside a
    /// `try`/`finally`, the `finally` blocks run; a `yield` there is CPython's
    /// `RuntimeError: generator ignored GeneratorExit`. Otherwise nothing runs: the frame is
    /// released.
    pub(in crate::python) fn close_generator(&mut self, generator: ObjId) -> R<()> {
        let in_finally = matches!(
            self.heap.kind(generator),
            ObjKind::Generator(g) if g.state == GenState::Suspended && g.in_try_block()
        );
        if in_finally {
            let class = match self.builtin_exception("GeneratorExit") {
                Some(Value::Obj(c)) => c,
                _ => return self.error("GeneratorExit is missing"),
            };
            self.exc.handler_depth += 1;
            let exception = self.new_exception(class, Vec::new());
            let thrown = self.raising(exception);
            self.exc.handler_depth -= 1;
            return match self.resume_generator(generator, Resume::Throw(thrown)) {
                Ok(Step::Yielded(v)) => {
                    self.heap.decref(v);
                    self.close_generator(generator)?;
                    let message = self.new_str("generator ignored GeneratorExit");
                    self.raise_builtin("RuntimeError", vec![message])
                }
                Ok(Step::Returned(v)) => {
                    self.heap.decref(v);
                    Ok(())
                }
                Err(e) => {
                    let ends_quietly = Self::raised_exception(&e).is_some_and(|x| {
                        let name = match self.heap.kind(x) {
                            ObjKind::Exception(d) => self.class_name(d.class),
                            _ => String::new(),
                        };
                        name == "GeneratorExit" || name == "StopIteration"
                    });
                    if ends_quietly {
                        self.discard(e);
                        Ok(())
                    } else {
                        Err(e)
                    }
                }
            };
        }
        let keeps_unstarted = self.heap.profile.generator_close_keeps_unstarted_frame;
        let (frame_parts, release) = match self.heap.kind_mut(generator) {
            // 3.12/3.13 `gen_close` marks an unstarted generator finished and leaves its
            // frame (the arguments) to the generator's deallocation (measured: an argument
            // outlives `close()` there, not on 3.8 – 3.11 and 3.14+).
            ObjKind::Generator(g) if g.state == GenState::Created && keeps_unstarted => {
                g.state = GenState::Closed;
                return Ok(());
            }
            ObjKind::Generator(g)
                if g.state != GenState::Closed && g.state != GenState::Running =>
            {
                g.state = GenState::Closed;
                let parts = (
                    (g.code, std::mem::take(&mut g.locals)),
                    std::mem::take(&mut g.cells),
                    std::mem::take(&mut g.stack),
                    g.frame_object.take(),
                    g.exc_state.take(),
                );
                (Some(parts), g.frame_release.take())
            }
            ObjKind::Generator(g) if g.state == GenState::Running => {
                return self.error("ValueError: generator already executing");
            }
            _ => (None, None),
        };
        let Some(((code, locals), cells, stack, object, exc_state)) = frame_parts else {
            return Ok(());
        };
        let locals = self.locals_from_named(code, locals);
        let frame = Frame {
            code: Some(code),
            name: crate::heap::Sym(0),
            line: 0,
            object,
            used_zombie: false,
            locals,
            cells: SmallMap::from_entries(cells),
            class_namespaces: Vec::new(),
        };
        self.heap.decref_all(stack);
        // Suspended in an `except` clause or a `finally` entered by an exception: the
        // exception it was handling goes with the frame.
        self.drop_exc_state(exc_state);
        self.release_generator_frame(frame, release);
        Ok(())
    }

    /// PEP 442: runs the finalizer of each generator dropped while suspended in a `try` or
    /// `with` (`close()`: `GeneratorExit` at its `yield`, its `finally` blocks and exits
    /// run) and each user instance's `__del__`, then drops the reference that kept it. CPython runs it inside the decref; the
    /// model runs it when the statement that dropped it ends. An exception it raises is
    /// reported as CPython's "Exception ignored in" and swallowed.
    pub(in crate::python) fn run_pending_finalizers(&mut self) -> R<()> {
        while !self.heap.pending_finalizers.is_empty() {
            let id = self.heap.pending_finalizers.remove(0);
            // The finalizer's caller catches what it raises (`PyErr_WriteUnraisable`).
            self.exc.handler_depth += 1;
            let r = if matches!(self.heap.kind(id), ObjKind::Instance { .. }) {
                self.run_user_del(id)
            } else {
                self.close_generator(id)
            };
            self.exc.handler_depth -= 1;
            self.heap.decref_id(id);
            if let Err(e) = r {
                if Self::raised_exception(&e).is_none() {
                    return Err(e);
                }
                self.discard(e);
            }
        }
        Ok(())
    }

    /// A user instance's `__del__` (queued by the heap when its count reached zero).
    fn run_user_del(&mut self, id: ObjId) -> R<()> {
        match self.call_special(Value::Obj(id), "__del__", Vec::new()) {
            Ok(r) => {
                let v = r?;
                self.heap.decref(v);
                Ok(())
            }
            Err(_) => Ok(()),
        }
    }

    /// The exception `throw(e)` raises: an exception instance, or a class to instantiate.
    pub(super) fn exception_to_throw(&mut self, e: Value) -> R<Box<Exc>> {
        let exception = match e {
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Exception(_)) => {
                self.heap.incref(e);
                id
            }
            Value::Obj(id) if self.is_exception_class(id) => self.new_exception(id, Vec::new()),
            _ => return self.error("TypeError: exceptions must derive from BaseException"),
        };
        // Not chained to the caller's handled exception (CPython restores it as the error
        // indicator without `_PyErr_SetObject`); from 3.9 the generator's own handled
        // exception becomes its `__context__` when it resumes (`run_vm`).
        Ok(Box::new(Exc::Raised {
            exception,
            tb_depth: None,
            offset: self.offset,
        }))
    }
}
