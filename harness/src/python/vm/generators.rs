//! Generator objects and the VM loop that runs their compiled bodies.
//!
//! Calling a generator function builds its frame and hands it to a new generator object
//! without running anything. `next()`/`send()`/`throw()` push the frame back onto the
//! interpreter's frame stack, run instructions from the saved instruction pointer until the
//! next `yield` (the frame, instruction pointer and loop iterables go back into the
//! object) or the end of the body (the frame is released).
//!
//! Objects counted for the collector, measured with CPython 3.8–3.13 (see
//! `harness/tests/generators.rs`, which re-measures on every pyenv interpreter present):
//! creating a generator counts 2 gen-0 objects on ≤ 3.10 (the frame object, then the
//! generator) and 1 from 3.11 (the frame is embedded in the generator); a generator run
//! to its end releases its ≤ 3.10 frame object (−1, to the code's zombie frame or the
//! frame free list). Generator expressions are not compiled here yet.

use super::compile::VmCode;
use crate::heap::{FrameRelease, GenState, GeneratorData, ObjId, ObjKind, Value, WrapperKind};
use crate::python::interp::{Exc, Frame, Interpreter, R};
use crate::python::scope::Body;
use crate::python::small_map::SmallMap;
use std::rc::Rc;

/// How a run of a generator's frame ended.
pub(in crate::python) enum Step {
    /// Suspended at a `yield` with this value (owned).
    Yielded(Value),
    /// Finished with this return value (owned): `StopIteration.value`.
    Returned(Value),
}

/// What a generator is resumed with.
pub(in crate::python) enum Resume {
    /// `next()` (a `None`) or `send(value)` (owned).
    Send(Value),
    /// `throw(exception)`: the exception is raised at the suspension point.
    Throw(Box<Exc>),
}

/// A generator frame's VM state, taken out of the generator object while it runs.
pub(super) struct FrameState<'s> {
    pub(super) ip: &'s mut u32,
    pub(super) stack: &'s mut Vec<Value>,
    pub(super) handlers: &'s mut Vec<(u32, u32)>,
    /// The exception it was handling when it suspended ([`GeneratorData::exc_state`]).
    pub(super) exc_state: &'s mut Option<ObjId>,
}

/// Where the VM loop stopped.
pub(super) enum Stop {
    Suspended(Value),
    Returned(Value),
}

impl<'a> Interpreter<'a> {
    /// The compiled body of generator function `code`, compiled on its first call.
    fn vm_code(&mut self, code: u32) -> R<Rc<VmCode<'a>>> {
        if let Some(c) = self.vm_codes.get(&code) {
            return Ok(Rc::clone(c));
        }
        let def = match self.codes.get(code).body {
            Body::Def(d) => d,
            Body::Lambda(_) => return self.unsupported("`yield` in a lambda"),
        };
        match super::compile::compile(&def.body, self.codes.get(code).is_async) {
            Ok(mut c) => {
                super::compile_expr::resolve_names(&mut c.exprs, self.codes.get(code));
                super::store_fast::resolve_stores(&mut c, self.codes.get(code));
                let c = Rc::new(c);
                self.vm_codes.insert(code, Rc::clone(&c));
                Ok(c)
            }
            Err(refusal) => {
                self.offset = refusal.offset;
                self.unsupported(refusal.construct)
            }
        }
    }

    /// A call of a generator function: its frame (arguments bound) goes into a new
    /// generator object.
    pub(in crate::python) fn new_generator(
        &mut self,
        func: ObjId,
        code: u32,
        frame: Frame,
        coroutine: bool,
    ) -> R<Value> {
        if let Err(e) = self.vm_code(code) {
            self.drop_frame_contents(frame);
            return Err(e);
        }
        // ≤ 3.10 the frame object is allocated by the call, before the generator.
        let frame_release = if self.heap.profile.frame_objects {
            Some(if self.enter_frame_object(code) {
                FrameRelease::Zombie { code }
            } else {
                FrameRelease::FreeList
            })
        } else {
            None
        };
        self.heap.incref(Value::Obj(func));
        let data = GeneratorData {
            func,
            code,
            name: frame.name,
            coroutine,
            state: GenState::Created,
            ip: 0,
            line: frame.line,
            locals: self.take_named_locals(code, frame.locals),
            cells: frame.cells.into_entries(),
            stack: Vec::new(),
            handlers: Vec::new(),
            frame_object: None,
            frame_release,
            finalized: false,
            exc_state: None,
            running_async: false,
        };
        let id = self.alloc(ObjKind::Generator(Box::new(data)));
        Ok(Value::Obj(id))
    }

    fn drop_frame_contents(&mut self, frame: Frame) {
        self.release_frame_contents(frame);
    }

    /// Runs a generator until its next `yield` or its end.
    pub(in crate::python) fn resume_generator(&mut self, generator: ObjId, how: Resume) -> R<Step> {
        let ObjKind::Generator(g) = self.heap.kind_mut(generator) else {
            self.drop_resume(how);
            return self.error("TypeError: not a generator");
        };
        match (g.state, &how) {
            (GenState::Running, _) => {
                self.drop_resume(how);
                return self.error("ValueError: generator already executing");
            }
            (GenState::Closed, Resume::Send(_)) => {
                let coroutine = g.coroutine;
                self.drop_resume(how);
                if coroutine {
                    return self.error("RuntimeError: cannot reuse already awaited coroutine");
                }
                return Ok(Step::Returned(Value::None));
            }
            (GenState::Closed, Resume::Throw(_)) => {
                let Resume::Throw(e) = how else {
                    unreachable!()
                };
                return Err(e);
            }
            (GenState::Created, Resume::Send(v)) if *v != Value::None => {
                self.drop_resume(how);
                return self
                    .error("TypeError: can't send non-None value to a just-started generator");
            }
            _ => {}
        }
        let started = g.state == GenState::Suspended;
        // Resuming pushes a frame, as a call does (`yield from` chains, recursive generators).
        if self.frames.len() > crate::python::interp::RECURSION_LIMIT {
            self.drop_resume(how);
            return self.error("RecursionError: maximum recursion depth exceeded");
        }
        let ObjKind::Generator(g) = self.heap.kind_mut(generator) else {
            unreachable!("checked above")
        };
        g.state = GenState::Running;
        let code = g.code;
        let coroutine = g.coroutine;
        let ip = g.ip;
        let mut stack = std::mem::take(&mut g.stack);
        let mut handlers = std::mem::take(&mut g.handlers);
        let mut exc_state = g.exc_state.take();
        let named = std::mem::take(&mut g.locals);
        let mut frame = Frame {
            code: Some(code),
            name: g.name,
            line: g.line,
            object: g.frame_object.take(),
            used_zombie: matches!(g.frame_release, Some(FrameRelease::Zombie { .. })),
            locals: Default::default(),
            cells: SmallMap::from_entries(std::mem::take(&mut g.cells)),
            class_namespaces: Vec::new(),
        };
        frame.locals = self.locals_from_named(code, named);
        // A throw into a generator that has not started raises before its first line.
        let resume = match (started, how) {
            (false, Resume::Throw(e)) => Err(e),
            (_, how) => Ok(how),
        };
        let vm = self.vm_code(code)?;
        self.frames.push(frame);
        let mut ip = ip;
        let result = match resume {
            Ok(how) => {
                let frame_state = FrameState {
                    ip: &mut ip,
                    stack: &mut stack,
                    handlers: &mut handlers,
                    exc_state: &mut exc_state,
                };
                self.run_vm(&vm, frame_state, started, how)
            }
            Err(e) => {
                self.drop_exc_state(exc_state.take());
                Err(e)
            }
        };
        let result = result.map_err(|e| self.unwinding(e));
        let frame = self.frames.pop().expect("pushed above");
        match result {
            Ok(Stop::Suspended(v)) => {
                let named = self.take_named_locals(code, frame.locals);
                if let ObjKind::Generator(g) = self.heap.kind_mut(generator) {
                    g.state = GenState::Suspended;
                    g.ip = ip;
                    g.handlers = handlers;
                    g.line = frame.line;
                    g.locals = named;
                    g.cells = frame.cells.into_entries();
                    g.stack = stack;
                    g.exc_state = exc_state;
                    g.frame_object = frame.object;
                }
                Ok(Step::Yielded(v))
            }
            Ok(Stop::Returned(v)) => {
                self.finish_generator(generator, frame, stack);
                Ok(Step::Returned(v))
            }
            Err(e) => {
                self.finish_generator(generator, frame, stack);
                Err(self.pep479(e, coroutine))
            }
        }
    }

    /// PEP 479: a `StopIteration` leaving a generator's or coroutine's frame becomes
    /// `RuntimeError: generator raised StopIteration` (its `__cause__` and `__context__`).
    fn pep479(&mut self, e: Box<Exc>, coroutine: bool) -> Box<Exc> {
        let message = if coroutine {
            "coroutine raised StopIteration"
        } else {
            "generator raised StopIteration"
        };
        let Some(stop) = Self::raised_exception(&e) else {
            // Nothing could catch it: the run stops with CPython's message.
            return match *e {
                Exc::Error { message: ref m, .. } if m.starts_with("StopIteration") => {
                    match self.error::<()>(format!("RuntimeError: {message}")) {
                        Err(converted) => converted,
                        Ok(()) => unreachable!("error() fails"),
                    }
                }
                _ => e,
            };
        };
        let stop_class = self.builtin_exception("StopIteration");
        let is_stop = match (self.heap.kind(stop), stop_class) {
            (ObjKind::Exception(d), Some(Value::Obj(class))) => {
                self.class_derives_from(d.class, class)
            }
            _ => false,
        };
        let Some(Value::Obj(runtime)) = self.builtin_exception("RuntimeError") else {
            return e;
        };
        if !is_stop {
            return e;
        }
        let text = self.new_str(message);
        let error = self.new_exception(runtime, vec![text]);
        let raised = self.raising(error);
        // The in-flight reference to the StopIteration becomes `__cause__`; one more for
        // `__context__` (replacing what `raising` set).
        self.heap.incref(Value::Obj(stop));
        let old_context = match self.heap.kind_mut(error) {
            ObjKind::Exception(d) => {
                d.cause = Some(stop);
                d.suppress_context = true;
                d.context.replace(stop)
            }
            _ => None,
        };
        if let Some(old) = old_context {
            self.heap.decref_id(old);
        }
        drop(e);
        raised
    }

    /// Releases a generator's frame as a returning call's frame is released: a frame object
    /// that something took is retired, otherwise the locals go and the frame goes back to where
    /// it came from (the code's zombie frame or the free list).
    pub(super) fn release_generator_frame(&mut self, frame: Frame, release: Option<FrameRelease>) {
        match frame.object {
            Some(_) => self.retire_frame(frame),
            None => {
                self.drop_frame_contents(frame);
                if let Some(release) = release {
                    let code = match release {
                        FrameRelease::Zombie { code } => Some(code),
                        _ => None,
                    };
                    self.leave_frame_object(code.unwrap_or(0), code.is_some());
                }
            }
        }
    }

    /// The frame of a generator that returned or raised is released, as a call's is.
    fn finish_generator(&mut self, generator: ObjId, frame: Frame, stack: Vec<Value>) {
        self.heap.decref_all(stack);
        let release = match self.heap.kind_mut(generator) {
            ObjKind::Generator(g) => {
                g.state = GenState::Closed;
                g.frame_release.take()
            }
            _ => None,
        };
        self.release_generator_frame(frame, release);
    }

    fn drop_resume(&mut self, how: Resume) {
        match how {
            Resume::Send(v) => self.heap.decref(v),
            Resume::Throw(e) => self.discard(e),
        }
    }

    /// `GET_ITER` of a compiled `for` loop: over a list or tuple (up to 3.14; 3.15's virtual
    /// iterators skip it), a dict or a deque, CPython's loop holds a GC-allocated iterator,
    /// as [`Interpreter::count_loop_iterator`] counts for the evaluator's loops. Here it is
    /// a real iterator object on the frame's value stack, so that a generator suspended in
    /// the loop keeps it (and it goes with the frame, however the frame ends).
    pub(super) fn hidden_loop_iterator(&mut self, iterable: Value) -> Value {
        let wrapped = match iterable {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::List(_) | ObjKind::Tuple(_) => self.heap.sequence_loops_make_iterators(),
                ObjKind::Dict(_) | ObjKind::Deque { .. } => true,
                _ => false,
            },
            _ => false,
        };
        if wrapped {
            self.new_wrapper(WrapperKind::SeqIter, vec![iterable, Value::Int(0)])
        } else {
            iterable
        }
    }

    /// A compiled `for` loop that is the workload's first loop outside any other marks the
    /// iterations, as the evaluator's loops do (its iterable identifies it while it runs).
    pub(super) fn claim_iteration_loop(
        &mut self,
        key: crate::python::measured_loop::LoopKey,
        iterable: Value,
    ) {
        if self.claims_iteration_loop(key) && matches!(iterable, Value::Obj(_)) {
            self.iteration_loop_seen = true;
            self.vm_iteration_loop = Some(iterable);
        }
    }

    /// The iteration loop ends (exhausted or left by `break`): an iteration still open
    /// completed (`break` ends its pass as the evaluator's loops count it).
    pub(super) fn release_iteration_loop(&mut self, iterable: Value) {
        if self.vm_iteration_loop == Some(iterable) {
            self.vm_iteration_loop = None;
            if self.recorder.iteration().is_some() {
                self.close_iteration(true);
            }
        }
    }

    /// One step of `yield from`: the sub-iterator's next item, or `None` when it is
    /// exhausted, leaving its result (a sub-generator's return value) on the stack in place
    /// of the sub-iterator and its position.
    pub(super) fn delegate(&mut self, stack: &mut Vec<Value>, how: Resume) -> R<Option<Value>> {
        let n = stack.len();
        let (sub, Value::Int(i)) = (stack[n - 2], stack[n - 1]) else {
            unreachable!("YieldFromStart pushes an iterator and its position")
        };
        let (is_generator, is_future) = match sub {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Generator(_) => (true, false),
                ObjKind::Future(_) => (false, true),
                _ => (false, false),
            },
            _ => (false, false),
        };
        let awaitable = match sub {
            Value::Obj(id) if self.is_asyncgen_awaitable(id) => Some(id),
            _ => None,
        };
        let result = if let Some(id) = awaitable {
            match self.asyncgen_await_step(id, how)? {
                super::asyncgen_methods::AwaitStep::Yielded(v) => return Ok(Some(v)),
                super::asyncgen_methods::AwaitStep::Done(v) => v,
            }
        } else if let (true, Value::Obj(id)) = (is_generator, sub) {
            self.async_gen_yielded = false;
            match self.resume_generator(id, how)? {
                // An async generator's item: `__anext__()`'s awaitable is done with it.
                Step::Yielded(v) if std::mem::take(&mut self.async_gen_yielded) => v,
                Step::Yielded(v) => return Ok(Some(v)),
                Step::Returned(v) if self.is_async_generator(sub) => {
                    self.heap.decref(v);
                    return self.raise_builtin("StopAsyncIteration", Vec::new());
                }
                Step::Returned(v) => v,
            }
        } else if let (true, Value::Obj(id)) = (is_future, sub) {
            match self.future_await_step(id, i, how)? {
                Some(v) => {
                    stack[n - 1] = Value::Int(i + 1);
                    return Ok(Some(v));
                }
                None => self.awaited_outcome(id)?,
            }
        } else {
            match how {
                Resume::Throw(e) => return Err(e),
                Resume::Send(Value::None) => {}
                Resume::Send(v) => {
                    self.heap.decref(v);
                    return self.error(
                        "AttributeError: the iterator of `yield from` has no attribute 'send'",
                    );
                }
            }
            match self.next_item(sub, i as usize)? {
                Some(v) => {
                    stack[n - 1] = Value::Int(i + 1);
                    return Ok(Some(v));
                }
                None => Value::None,
            }
        };
        stack.truncate(n - 2);
        self.heap.decref(sub);
        stack.push(result);
        Ok(None)
    }

    /// The next item of a generator for iteration (`for`, `list()`, `next()`), or `None`
    /// when it finishes.
    pub(in crate::python) fn generator_next(&mut self, generator: ObjId) -> R<Option<Value>> {
        match self.resume_generator(generator, Resume::Send(Value::None))? {
            Step::Yielded(v) => Ok(Some(v)),
            Step::Returned(v) => {
                self.heap.decref(v);
                Ok(None)
            }
        }
    }

    /// `next(iterator)`: a generator, a lazy iterator or a user iterator's next item, or
    /// `None` when it is exhausted.
    pub(in crate::python) fn iterator_next(&mut self, iterator: Value) -> R<Option<Value>> {
        match iterator {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Generator(_) => self.generator_next(id),
                ObjKind::Wrapper(..) => self.lazy_next(id),
                ObjKind::Instance { .. } => self.user_next(iterator),
                other => {
                    let t = other.type_name();
                    self.error(format!("TypeError: '{t}' object is not an iterator"))
                }
            },
            _ => self.error("TypeError: object is not an iterator"),
        }
    }
}
