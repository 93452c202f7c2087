//! A minimal, deterministic asyncio event loop: `asyncio.run`, `create_task`, `gather`,
//! `sleep`, and awaiting tasks and futures.
//!
//! It follows `BaseEventLoop._run_once`: a FIFO of ready callbacks (CPython's `_ready`
//! deque of handles), run in the order they were scheduled, and timers ordered by deadline
//! then by the order they were made. Time is virtual: when nothing is ready the clock jumps
//! to the earliest deadline, so `sleep(x)` never waits and runs are reproducible. Because
//! the clock only moves while nothing is ready, moving due timers to the ready queue at
//! batch boundaries (as `_run_once` does) and appending them gives the same order.
//!
//! A task's step resumes its coroutine (`Task.__step`): what the coroutine yields decides
//! when it runs again. A bare `yield` (`sleep(0)`) reschedules it at the back of the queue;
//! a pending future takes a wake-up callback; a finished future schedules the step at once.
//! A finished future schedules its callbacks with `call_soon`, one hop each, as
//! `Future.__schedule_callbacks` does (a gather child's completion, then the gathering
//! future's, then the waiting task's step).
//!
//! `asyncio.run` stops as `run_until_complete` does: the main task's done callback stops
//! the loop, and the batch of callbacks under way still runs; then the tasks still pending
//! are cancelled and run to their end (`cancellation.rs`).
//!
//! Objects counted for the collector: each task, future and gathering future is one
//! gen-0 object (C `_asyncio.Task`/`Future`; `_GatheringFuture` counted as one). Handles,
//! the bound step methods and context copies are not modelled, nor the loop's own objects
//! after setup; `asyncio.run` counts the loop's setup objects measured on CPython (see
//! [`loop_setup_objects`]).

use crate::heap::{Callback, FutureData, FutureRole, FutureState, ObjId, ObjKind, Value};
use crate::python::interp::{Interpreter, R};
use std::collections::VecDeque;

use super::generators::{Resume, Step};

/// The running loop's queues; every entry holds a reference to its object.
#[derive(Default)]
pub(in crate::python) struct EventLoop {
    pub(super) ready: VecDeque<Callback>,
    /// Pending timers (deadline, order made, the future they resolve), kept sorted.
    pub(super) timers: Vec<(f64, u64, ObjId)>,
    clock: f64,
    timers_made: u64,
    /// Callbacks left in the batch under way (`_run_once` runs the ready queue's length at
    /// the start of a batch; what those schedule runs in the next one).
    batch_left: usize,
    /// `loop.stop()` was called: the loop ends when the batch under way is done.
    stopping: bool,
    /// The `_asyncgens` weak set: a weak reference (owned) per async generator iterated
    /// while the loop ran (`asyncgen_hooks.rs`).
    pub(super) asyncgens: Vec<ObjId>,
}

/// Gen-0 objects `asyncio.run` allocates before the coroutine's first line, less the ones
/// the model makes itself (the main coroutine, its ≤ 3.10 frame and the main task).
/// Measured on CPython with a cold loop (the first `asyncio.run` of the process, after
/// `import asyncio` and `gc.collect()`): `gc.get_count()[0]` inside `async def main()`:
/// 122 (3.8.18), 123 (3.9.18), 124 (3.10.13), 68 (3.11.7), 66 (3.12.1), 66 (3.13.0).
/// Command: `python -c 'import asyncio,gc` … `gc.collect(); asyncio.run(main())'` (the
/// script is in the report of issue 13, session 4). 3.14+ take 3.13's figure (not measured).
fn loop_setup_objects(minor: u8) -> u64 {
    match minor {
        ..=8 => 122 - 3,
        9 => 123 - 3,
        10 => 124 - 3,
        11 => 68 - 2,
        _ => 66 - 2,
    }
}

impl<'a> Interpreter<'a> {
    /// `asyncio.run(coro)`: a loop, a main task for the coroutine, run until it is done.
    /// The argument is borrowed.
    pub(in crate::python) fn asyncio_run(&mut self, coroutine: Value) -> R<Value> {
        if self.event_loop.is_some() {
            return self
                .error("RuntimeError: asyncio.run() cannot be called from a running event loop");
        }
        let Value::Obj(coro) = coroutine else {
            return self.not_a_coroutine(coroutine);
        };
        if !matches!(self.heap.kind(coro), ObjKind::Generator(g) if g.coroutine) {
            return self.not_a_coroutine(coroutine);
        }
        self.count_untracked_allocations(loop_setup_objects(self.heap.profile.version.minor));
        self.event_loop = Some(Box::default());
        self.heap.incref(coroutine);
        let main = self.new_task(coro);
        self.add_done_callback(main, Callback::Stop(main));
        let run = self
            .run_until_stopped()
            .and_then(|()| self.cancel_all_tasks())
            .and_then(|()| self.shutdown_asyncgens());
        self.close_loop();
        let outcome = run.and_then(|()| self.future_outcome(main));
        self.heap.decref_id(main);
        outcome
    }

    fn not_a_coroutine<T>(&mut self, v: Value) -> R<T> {
        let t = self.value_type_name(v);
        self.error(format!(
            "ValueError: a coroutine was expected, got <{t} object>"
        ))
    }

    fn running_loop(&mut self) -> R<&mut EventLoop> {
        if self.event_loop.is_none() {
            return self.error("RuntimeError: no running event loop");
        }
        Ok(self.event_loop.as_deref_mut().expect("checked above"))
    }

    /// A task for a coroutine (owned), scheduled to take its first step (`call_soon`).
    /// Returns the task (a new reference).
    pub(super) fn new_task(&mut self, coroutine: ObjId) -> ObjId {
        let task = self.alloc(ObjKind::Future(Box::new(FutureData::new(
            FutureRole::Task { coroutine },
        ))));
        self.call_soon(Callback::Step(task));
        task
    }

    /// Schedules a callback, taking a reference to its target.
    pub(super) fn call_soon(&mut self, callback: Callback) {
        self.heap.incref(Value::Obj(callback.target()));
        if let Some(l) = self.event_loop.as_deref_mut() {
            l.ready.push_back(callback);
        }
    }

    /// `asyncio.create_task(coro)`: the argument is borrowed.
    pub(in crate::python) fn asyncio_create_task(&mut self, coroutine: Value) -> R<Value> {
        self.running_loop()?;
        match coroutine {
            Value::Obj(c) if matches!(self.heap.kind(c), ObjKind::Generator(g) if g.coroutine) => {
                self.heap.incref(coroutine);
                Ok(Value::Obj(self.new_task(c)))
            }
            // `wait_for(...)` is a coroutine on CPython, wrapped in a task here; the model
            // starts the `wait_for` itself (no task object around it).
            Value::Obj(f) if self.is_unarmed_wait_for(f) => {
                self.arm_wait_for(f)?;
                self.heap.incref(coroutine);
                Ok(coroutine)
            }
            _ => {
                let t = self.value_type_name(coroutine);
                self.error(format!(
                    "TypeError: a coroutine was expected, got <{t} object>"
                ))
            }
        }
    }

    /// `asyncio.sleep(delay)`: a future that the awaiting task arms.
    pub(in crate::python) fn asyncio_sleep(&mut self, delay: f64) -> R<Value> {
        let f = FutureData::new(FutureRole::Sleep { delay });
        Ok(Value::Obj(self.alloc(ObjKind::Future(Box::new(f)))))
    }

    /// `asyncio.gather(*aws)`: each coroutine wrapped in a task (in argument order), one
    /// gathering future over them. Arguments are borrowed.
    pub(in crate::python) fn asyncio_gather(&mut self, awaitables: &[Value]) -> R<Value> {
        self.running_loop()?;
        let mut children = Vec::with_capacity(awaitables.len());
        for &a in awaitables {
            match a {
                Value::Obj(c) if matches!(self.heap.kind(c), ObjKind::Generator(g) if g.coroutine) =>
                {
                    self.heap.incref(a);
                    children.push(self.new_task(c));
                }
                Value::Obj(f) if matches!(self.heap.kind(f), ObjKind::Future(_)) => {
                    // CPython wraps `sleep(d)` (a coroutine) in a task that starts its timer;
                    // the model starts the timer itself (no task object).
                    self.arm_sleep(f)?;
                    self.arm_wait_for(f)?;
                    self.heap.incref(a);
                    children.push(f);
                }
                _ => {
                    self.heap.decref_all(children.into_iter().map(Value::Obj));
                    let t = self.value_type_name(a);
                    return self.error(format!(
                        "TypeError: An asyncio.Future, a coroutine or an awaitable is required, got <{t} object>"
                    ));
                }
            }
        }
        let pending = children.len() as u32;
        let mut data = FutureData::new(FutureRole::Gather {
            children: children.clone(),
            pending,
        });
        if children.is_empty() {
            let empty = self.alloc(ObjKind::List(Vec::new()));
            data.state = FutureState::Done(Value::Obj(empty));
        }
        let outer = self.alloc(ObjKind::Future(Box::new(data)));
        for child in children {
            self.add_done_callback(child, Callback::GatherChild(outer));
        }
        Ok(Value::Obj(outer))
    }

    /// Registers a callback on a future (a reference to its target is taken); on a finished
    /// future it is scheduled at once.
    pub(super) fn add_done_callback(&mut self, future: ObjId, callback: Callback) {
        let ObjKind::Future(f) = self.heap.kind_mut(future) else {
            return;
        };
        if f.state == FutureState::Pending {
            f.callbacks.push(callback);
            self.heap.incref(Value::Obj(callback.target()));
        } else {
            self.call_soon(callback);
        }
    }

    /// Finishes a future with an outcome (owned) and schedules its callbacks in order.
    pub(super) fn resolve(&mut self, future: ObjId, outcome: FutureState) {
        let callbacks = match self.heap.kind_mut(future) {
            ObjKind::Future(f) if f.state == FutureState::Pending => {
                f.state = outcome;
                std::mem::take(&mut f.callbacks)
            }
            _ => {
                match outcome {
                    FutureState::Done(v) => self.heap.decref(v),
                    FutureState::Failed(e) => self.heap.decref_id(e),
                    FutureState::Pending | FutureState::Cancelled => {}
                }
                return;
            }
        };
        for c in callbacks {
            // The reference the future held moves to the ready queue.
            if let Some(l) = self.event_loop.as_deref_mut() {
                l.ready.push_back(c);
            } else {
                self.heap.decref_id(c.target());
            }
        }
    }

    /// `run_until_complete`'s `run_forever`: runs batches of callbacks until a batch in
    /// which the main task's done callback stopped the loop is over, so callbacks already
    /// scheduled in that batch still run (a task created just before `main` returns takes
    /// its first step).
    fn run_until_stopped(&mut self) -> R<()> {
        loop {
            let Some(l) = self.event_loop.as_deref_mut() else {
                return Ok(());
            };
            if l.batch_left == 0 {
                if l.stopping {
                    return Ok(());
                }
                if l.ready.is_empty() && !self.fire_next_timers() {
                    return self.error(
                        "RuntimeError: the event loop has nothing to run and the main task is not done (it would wait forever)",
                    );
                }
                let Some(l) = self.event_loop.as_deref_mut() else {
                    return Ok(());
                };
                l.batch_left = l.ready.len();
                continue;
            }
            l.batch_left -= 1;
            let Some(callback) = l.ready.pop_front() else {
                l.batch_left = 0;
                continue;
            };
            let r = self.run_callback(callback);
            self.heap.decref_id(callback.target());
            self.release_dropped_storages(None);
            r?;
        }
    }

    /// Runs callbacks until every future of `awaited` is done.
    pub(super) fn run_until_done(&mut self, awaited: &[ObjId]) -> R<()> {
        loop {
            let done = awaited.iter().all(|&f| {
                matches!(
                    self.heap.kind(f),
                    ObjKind::Future(f) if f.state != FutureState::Pending
                )
            });
            if done {
                return Ok(());
            }
            let next = match self.event_loop.as_deref_mut() {
                Some(l) => l.ready.pop_front(),
                None => return Ok(()),
            };
            match next {
                Some(callback) => {
                    let r = self.run_callback(callback);
                    self.heap.decref_id(callback.target());
                    self.release_dropped_storages(None);
                    r?;
                }
                None => {
                    if !self.fire_next_timers() {
                        return self.error(
                            "RuntimeError: the event loop has nothing to run and the main task (or, at shutdown, a cancelled task) is not done (it would wait forever)",
                        );
                    }
                }
            }
        }
    }

    /// Advances the virtual clock to the earliest deadline and resolves the timers due then,
    /// in deadline then creation order. False when there is none.
    fn fire_next_timers(&mut self) -> bool {
        let Some(l) = self.event_loop.as_deref_mut() else {
            return false;
        };
        let Some(&(deadline, _, _)) = l.timers.first() else {
            return false;
        };
        l.clock = l.clock.max(deadline);
        let clock = l.clock;
        let due = l.timers.iter().take_while(|t| t.0 <= clock).count();
        let fired: Vec<ObjId> = l.timers.drain(..due).map(|t| t.2).collect();
        for future in fired {
            self.resolve(future, FutureState::Done(Value::None));
            self.heap.decref_id(future);
        }
        true
    }

    fn run_callback(&mut self, callback: Callback) -> R<()> {
        match callback {
            Callback::Step(task) => self.step_task(task),
            Callback::GatherChild(outer) => {
                self.gather_child_done(outer);
                Ok(())
            }
            Callback::WaitForInner(outer) => {
                self.wait_for_inner_done(outer);
                Ok(())
            }
            Callback::WaitForTimer(outer) => {
                self.wait_for_timer_fired(outer);
                Ok(())
            }
            Callback::Stop(_) => {
                if let Some(l) = self.event_loop.as_deref_mut() {
                    l.stopping = true;
                }
                Ok(())
            }
        }
    }

    /// `_GatheringFuture`'s child callback: the first failure fails it; when every child is
    /// done it gets the list of their results, in argument order.
    fn gather_child_done(&mut self, outer: ObjId) {
        let (children, pending) = match self.heap.kind_mut(outer) {
            // Already failed by an earlier child: nothing more to report.
            ObjKind::Future(f) if f.state != FutureState::Pending => return,
            ObjKind::Future(f) => match &mut f.role {
                FutureRole::Gather { children, pending } => {
                    *pending = pending.saturating_sub(1);
                    (children.clone(), *pending)
                }
                _ => return,
            },
            _ => return,
        };
        let failed = children.iter().copied().find(|&c| {
            matches!(self.heap.kind(c), ObjKind::Future(f)
                if matches!(f.state, FutureState::Failed(_) | FutureState::Cancelled))
        });
        if let Some(child) = failed {
            let e = self.failure_of(child);
            self.resolve(outer, FutureState::Failed(e));
            return;
        }
        if pending > 0 {
            return;
        }
        let results: Vec<Value> = children
            .iter()
            .map(|&c| match self.heap.kind(c) {
                ObjKind::Future(f) => match f.state {
                    FutureState::Done(v) => v,
                    _ => Value::None,
                },
                _ => Value::None,
            })
            .collect();
        for &v in &results {
            self.heap.incref(v);
        }
        let list = self.alloc(ObjKind::List(results));
        self.resolve(outer, FutureState::Done(Value::Obj(list)));
    }

    /// `Task.__step`: resumes the coroutine; what it yields decides when it runs again.
    /// Python exceptions end the task (they are caught there, so they are objects); model
    /// errors (an unsupported construct, the run's OOM) stop the run.
    fn step_task(&mut self, task: ObjId) -> R<()> {
        let (coroutine, waiter, must_cancel) = match self.heap.kind_mut(task) {
            ObjKind::Future(f) if f.state == FutureState::Pending => match f.role {
                FutureRole::Task { coroutine } => (
                    coroutine,
                    f.waiter.take(),
                    std::mem::take(&mut f.must_cancel),
                ),
                _ => return Ok(()),
            },
            _ => return Ok(()),
        };
        if let Some(w) = waiter {
            self.heap.decref_id(w);
        }
        let how = if must_cancel {
            let e = self.new_cancelled_error();
            Resume::Throw(self.raising(e))
        } else {
            Resume::Send(Value::None)
        };
        self.exc.handler_depth += 1;
        let step = self.resume_generator(coroutine, how);
        self.exc.handler_depth -= 1;
        match step {
            Ok(Step::Returned(v)) => self.task_returned(task, v),
            Ok(Step::Yielded(v)) => self.task_yielded(task, v)?,
            Err(e) => match Self::raised_exception(&e) {
                Some(x) => {
                    self.heap.incref(Value::Obj(x));
                    self.discard(e);
                    if self.is_cancelled_error(x) {
                        self.task_cancelled(task, x);
                    } else {
                        self.resolve(task, FutureState::Failed(x));
                    }
                }
                None => return Err(e),
            },
        }
        Ok(())
    }

    /// What a task's coroutine yielded (owned): `None` (a bare `yield`) runs it again after
    /// the callbacks already ready; a future wakes it when done; `sleep(d)` arms a timer.
    fn task_yielded(&mut self, task: ObjId, yielded: Value) -> R<()> {
        let future = match yielded {
            Value::None => {
                self.call_soon(Callback::Step(task));
                return Ok(());
            }
            Value::Obj(f) if matches!(self.heap.kind(f), ObjKind::Future(_)) => f,
            other => {
                self.heap.decref(other);
                return self.error(
                    "RuntimeError: Task got bad yield (a coroutine yielded something that is not a future)",
                );
            }
        };
        if self.is_unarmed_wait_for(future) {
            self.arm_wait_for(future)?;
        }
        let sleep = match self.heap.kind(future) {
            ObjKind::Future(f) => match f.role {
                FutureRole::Sleep { delay } if f.state == FutureState::Pending => Some(delay),
                _ => None,
            },
            _ => None,
        };
        match sleep {
            // `sleep(0)` is a bare yield in CPython: the task runs again after the callbacks
            // already ready.
            Some(delay) if delay <= 0.0 => {
                self.resolve(future, FutureState::Done(Value::None));
                self.call_soon(Callback::Step(task));
            }
            Some(_) => {
                self.add_done_callback(future, Callback::Step(task));
                self.arm_sleep(future)?;
                self.set_waiter(task, future);
                return Ok(());
            }
            None => {
                self.add_done_callback(future, Callback::Step(task));
                self.set_waiter(task, future);
                return Ok(());
            }
        }
        self.heap.decref_id(future);
        Ok(())
    }

    /// Starts the timer of an `asyncio.sleep` future that has not started (`call_later`): it
    /// is resolved when the virtual clock reaches its deadline; `sleep(0)` is resolved now.
    fn arm_sleep(&mut self, future: ObjId) -> R<()> {
        let delay = match self.heap.kind_mut(future) {
            ObjKind::Future(f) => match f.role {
                FutureRole::Sleep { delay } if f.state == FutureState::Pending => {
                    f.role = FutureRole::Plain;
                    delay
                }
                _ => return Ok(()),
            },
            _ => return Ok(()),
        };
        if delay <= 0.0 {
            self.resolve(future, FutureState::Done(Value::None));
            return Ok(());
        }
        self.start_timer(future, delay)
    }

    /// Resolves `future` when the virtual clock has moved `delay` on (`call_later`); the
    /// timer list takes a reference.
    pub(super) fn start_timer(&mut self, future: ObjId, delay: f64) -> R<()> {
        self.heap.incref(Value::Obj(future));
        let l = self.running_loop()?;
        let deadline = l.clock + delay;
        let order = l.timers_made;
        l.timers_made += 1;
        let at = l
            .timers
            .iter()
            .position(|t| (t.0, t.1) > (deadline, order))
            .unwrap_or(l.timers.len());
        l.timers.insert(at, (deadline, order, future));
        Ok(())
    }

    /// `asyncio.run`'s shutdown, after the tasks still pending were cancelled and run to
    /// their end ([`Interpreter::cancel_all_tasks`]): callbacks and timers still queued
    /// are dropped.
    fn close_loop(&mut self) {
        let Some(l) = self.event_loop.take() else {
            return;
        };
        let EventLoop {
            ready,
            timers,
            asyncgens,
            ..
        } = *l;
        self.heap.decref_all(asyncgens.into_iter().map(Value::Obj));
        self.heap
            .decref_all(ready.into_iter().map(|c| Value::Obj(c.target())));
        self.heap
            .decref_all(timers.into_iter().map(|t| Value::Obj(t.2)));
    }
}

impl<'a> Interpreter<'a> {
    /// The asyncio natives; arguments are borrowed.
    pub(in crate::python) fn asyncio_call(
        &mut self,
        n: crate::python::natives::Native,
        p: &[Value],
        kw: &[(crate::heap::Sym, Value)],
    ) -> R<Value> {
        use crate::python::natives::Native;
        if n == Native::AsyncioWaitFor {
            return match (p, kw) {
                ([aw, t], []) => self.asyncio_wait_for(*aw, *t),
                ([aw], [(k, t)]) if self.names.name(*k) == "timeout" => {
                    self.asyncio_wait_for(*aw, *t)
                }
                _ => self.unsupported(
                    "asyncio.wait_for with these arguments (it takes an awaitable and a timeout)",
                ),
            };
        }
        if let Some(&(k, _)) = kw.first() {
            let k = self.names.name(k).to_string();
            return self.unsupported(format!("keyword argument '{k}' of an asyncio function"));
        }
        match (n, p) {
            (Native::AsyncioRun, [c]) => self.asyncio_run(*c),
            (Native::AsyncioGather, aws) => self.asyncio_gather(aws),
            (Native::AsyncioSleep, [d]) => match crate::python::natives::float_of(*d) {
                Some(delay) => self.asyncio_sleep(delay),
                None => self.error("TypeError: asyncio.sleep() needs a number of seconds"),
            },
            (Native::AsyncioCreateTask, [c]) => self.asyncio_create_task(*c),
            _ => self.unsupported("this asyncio call (arguments)"),
        }
    }
}
