//! Cancelling tasks and futures (`Task.cancel`, `Future.cancel`) and `asyncio.run`'s
//! shutdown, which cancels the tasks still pending (CPython's `_cancel_all_tasks`).
//!
//! As in `asyncio.tasks.Task.cancel`: a finished task cannot be cancelled (`False`); a task
//! suspended on a future cancels that future, which wakes the task so that its `await`
//! raises `CancelledError`; a task that is not waiting (scheduled, or not started) is
//! marked, and its next step throws `CancelledError` into the coroutine. A coroutine that
//! lets `CancelledError` out finishes its task as cancelled (`task.cancelled()`); awaiting
//! it raises that error. Cancelling a gathering future cancels its children.
//!
//! Objects counted for the collector: a cancelled future holds no exception; reading its
//! outcome makes a new `CancelledError`, except that from 3.9 a task keeps the one its
//! coroutine let out and hands it to the first read (`_make_cancelled_error`). CPython's
//! cancel message and the `__context__` chaining of 3.9+ are not modelled.

use crate::heap::{Callback, FutureRole, FutureState, ObjId, ObjKind, Value};
use crate::python::interp::{Interpreter, R};

impl<'a> Interpreter<'a> {
    /// A new `CancelledError()` (owned).
    pub(super) fn new_cancelled_error(&mut self) -> ObjId {
        let class = self.asyncio_cancelled_class();
        self.new_exception(class, Vec::new())
    }

    /// Whether an exception object is a `CancelledError` (or a subclass).
    pub(super) fn is_cancelled_error(&mut self, exception: ObjId) -> bool {
        let class = match self.heap.kind(exception) {
            ObjKind::Exception(e) => e.class,
            _ => return false,
        };
        let cancelled = self.asyncio_cancelled_class();
        self.class_derives_from(class, cancelled)
    }

    /// Records that a finished future ended by cancellation.
    fn mark_cancelled(&mut self, future: ObjId) {
        if let ObjKind::Future(f) = self.heap.kind_mut(future) {
            f.cancelled = true;
        }
    }

    /// The task's coroutine let `CancelledError` (owned) out: the task is cancelled. From
    /// 3.9 the task keeps that error (`_cancelled_exc`, with its traceback and so the
    /// frames it passed) until its outcome is first read; 3.8 drops it.
    pub(super) fn task_cancelled(&mut self, task: ObjId, error: ObjId) {
        if self.heap.profile.version.minor >= 9 {
            self.resolve(task, FutureState::Failed(error));
        } else {
            self.heap.decref_id(error);
            self.resolve(task, FutureState::Cancelled);
        }
        self.mark_cancelled(task);
    }

    /// The exception a failed or cancelled future's outcome raises (a new reference): a
    /// cancelled future hands over the `CancelledError` it kept (once), otherwise a new one
    /// (`_make_cancelled_error`).
    pub(in crate::python) fn failure_of(&mut self, future: ObjId) -> ObjId {
        let (state, cancelled) = match self.heap.kind(future) {
            ObjKind::Future(f) => (f.state, f.cancelled),
            _ => (FutureState::Cancelled, true),
        };
        match (state, cancelled) {
            (FutureState::Failed(e), false) => {
                self.heap.incref(Value::Obj(e));
                e
            }
            (FutureState::Failed(e), true) => {
                if let ObjKind::Future(f) = self.heap.kind_mut(future) {
                    f.state = FutureState::Cancelled;
                }
                e
            }
            _ => self.new_cancelled_error(),
        }
    }

    /// The task is now suspended on `future` (the reference moves to the task).
    pub(super) fn set_waiter(&mut self, task: ObjId, future: ObjId) {
        let old = match self.heap.kind_mut(task) {
            ObjKind::Future(f) => f.waiter.replace(future),
            _ => Some(future),
        };
        if let Some(old) = old {
            self.heap.decref_id(old);
        }
    }

    /// The coroutine returned (the value is owned): the task's result, unless it was asked
    /// to cancel during this very step (CPython then cancels it and drops the result).
    pub(super) fn task_returned(&mut self, task: ObjId, value: Value) {
        let must_cancel = match self.heap.kind_mut(task) {
            ObjKind::Future(f) => std::mem::take(&mut f.must_cancel),
            _ => false,
        };
        if must_cancel {
            self.heap.decref(value);
            self.finish_cancelled(task);
        } else {
            self.resolve(task, FutureState::Done(value));
        }
    }

    /// Finishes a pending future as cancelled and schedules its callbacks.
    pub(super) fn finish_cancelled(&mut self, future: ObjId) {
        self.resolve(future, FutureState::Cancelled);
        self.mark_cancelled(future);
    }

    /// `future.cancel()` / `task.cancel()`: whether the cancellation was requested.
    pub(in crate::python) fn cancel_future(&mut self, future: ObjId) -> bool {
        let (role, waiter) = match self.heap.kind(future) {
            ObjKind::Future(f) if f.state == FutureState::Pending => (f.role.clone(), f.waiter),
            _ => return false,
        };
        match role {
            FutureRole::Task { .. } => {
                if let Some(w) = waiter
                    && self.cancel_future(w)
                {
                    return true;
                }
                if let ObjKind::Future(f) = self.heap.kind_mut(future) {
                    f.must_cancel = true;
                }
                true
            }
            FutureRole::Gather { children, .. } => {
                let mut any = false;
                for child in children {
                    any |= self.cancel_future(child);
                }
                any
            }
            FutureRole::WaitFor(_) => self.cancel_wait_for(future),
            FutureRole::Plain | FutureRole::Sleep { .. } => {
                self.drop_timer(future);
                self.finish_cancelled(future);
                true
            }
        }
    }

    /// Removes a cancelled future's timer, so the virtual clock does not move to it
    /// (`_run_once` discards cancelled timer handles without waiting for them).
    pub(super) fn drop_timer(&mut self, future: ObjId) {
        let Some(l) = self.event_loop.as_deref_mut() else {
            return;
        };
        if let Some(at) = l.timers.iter().position(|t| t.2 == future) {
            l.timers.remove(at);
            self.heap.decref_id(future);
        }
    }

    /// `asyncio.run`'s `_cancel_all_tasks`: every task still pending is cancelled, then the
    /// loop runs until they are all done (their `except`/`finally` blocks run). The tasks
    /// are those the loop can reach (queued steps, timers, and what waits on them), in the
    /// order found; CPython iterates a weak set of all tasks (approximation: a pending task
    /// that nothing the loop holds refers to is not cancelled).
    pub(super) fn cancel_all_tasks(&mut self) -> R<()> {
        let tasks = self.pending_tasks();
        if tasks.is_empty() {
            return Ok(());
        }
        for &t in &tasks {
            self.heap.incref(Value::Obj(t));
        }
        for &t in &tasks {
            self.cancel_future(t);
        }
        let run = self.run_until_done(&tasks);
        self.heap.decref_all(tasks.into_iter().map(Value::Obj));
        run
    }

    /// The pending tasks reachable from the loop's queues, in the order found.
    fn pending_tasks(&self) -> Vec<ObjId> {
        let Some(l) = self.event_loop.as_deref() else {
            return Vec::new();
        };
        let mut todo: Vec<ObjId> = l.ready.iter().map(|c| c.target()).collect();
        todo.extend(l.timers.iter().map(|t| t.2));
        todo.reverse();
        let mut seen: Vec<ObjId> = Vec::new();
        let mut tasks = Vec::new();
        while let Some(id) = todo.pop() {
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            let ObjKind::Future(f) = self.heap.kind(id) else {
                continue;
            };
            if f.state != FutureState::Pending {
                continue;
            }
            let mut next: Vec<ObjId> = f.callbacks.iter().map(|c: &Callback| c.target()).collect();
            match &f.role {
                FutureRole::Task { .. } => tasks.push(id),
                FutureRole::Gather { children, .. } => next.extend(children.iter().copied()),
                FutureRole::WaitFor(w) => next.extend(w.armed.then_some(w.inner)),
                FutureRole::Plain | FutureRole::Sleep { .. } => {}
            }
            next.extend(f.waiter);
            next.reverse();
            todo.extend(next);
        }
        tasks
    }
}
