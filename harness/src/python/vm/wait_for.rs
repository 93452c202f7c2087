//! `asyncio.wait_for(aw, timeout)`: the awaitable runs under a deadline; when the deadline
//! passes first it is cancelled (its `except`/`finally` blocks run and its frame lets go of
//! what it held) and the awaiting coroutine gets `TimeoutError`.
//!
//! Modelled on `tasks.py` of 3.8 – 3.11: awaiting `wait_for` wraps a coroutine in a task
//! (`ensure_future`), arms a timer (`call_later`) and waits; the inner task's completion
//! hands its outcome over and cancels the timer; the timer firing first cancels the inner
//! task, waits for it to finish (`_cancel_and_wait`), then raises `TimeoutError` — from the
//! inner task's `CancelledError` on 3.9+ (`raise TimeoutError() from exc`, so the caught
//! error keeps the cancelled frames through `__cause__`), without a cause on 3.8. If the
//! inner task finished anyway, 3.9+ return its outcome and 3.8 raises all the same.
//! `asyncio.TimeoutError` is its own `Exception` class before 3.11 and the builtin
//! `TimeoutError` from 3.11.
//!
//! Approximations: from 3.12 CPython awaits the coroutine in the awaiting task under
//! `timeouts.timeout` (no inner task; the deadline cancels the awaiting task and
//! `Timeout.__aexit__` turns the `CancelledError` into `TimeoutError` from it); the model
//! keeps the ≤ 3.11 task, which takes its steps one loop iteration later. A cancelled
//! `wait_for` finishes at once instead of waiting for the inner task to end its
//! cancellation. `timeout=None` awaits the awaitable itself (CPython's `return await fut`
//! without the `wait_for` coroutine); a timeout ≤ 0 arms a timer due now.
//!
//! Objects counted for the collector: the `wait_for` coroutine (the future that stands for
//! it), the inner task, the timer, and the objects `tasks.py` keeps while it waits that the
//! model does not name one by one (the waiter future, the callback `partial`, the handles
//! and contexts; held as placeholder futures and freed with it). Their total while the inner
//! coroutine runs its first step is the one measured on CPython (`gc.get_count()[0]` at the
//! inner coroutine's first line minus before `await wait_for(c, 5)`, `c` made before):
//! 5 on 3.8.18 – 3.13.0, 3 on 3.14 and 3.15; 0 once it returned.

use crate::heap::{Callback, FutureData, FutureRole, FutureState, ObjId, ObjKind, Value, WaitFor};
use crate::python::interp::{Interpreter, R};

/// The objects that exist while the inner coroutine takes its first step, the inner
/// coroutine itself not included (see the module notes for the measurement).
fn objects_while_waiting(minor: u8) -> usize {
    if minor <= 13 { 5 } else { 3 }
}

/// Objects the model makes itself: the `wait_for` future, the inner task, the timer.
const MODELLED_OBJECTS: usize = 3;

impl<'a> Interpreter<'a> {
    /// `asyncio.wait_for(aw, timeout)`; arguments are borrowed. Returns the awaitable that
    /// stands for the `wait_for` coroutine.
    pub(in crate::python) fn asyncio_wait_for(&mut self, aw: Value, timeout: Value) -> R<Value> {
        let awaitable = match aw {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Generator(g) if g.coroutine && !self.is_async_generator(aw) => Some(id),
                ObjKind::Future(_) => Some(id),
                _ => None,
            },
            _ => None,
        };
        let Some(inner) = awaitable else {
            let t = self.value_type_name(aw);
            return self.error(format!(
                "TypeError: An asyncio.Future, a coroutine or an awaitable is required, got <{t} object>"
            ));
        };
        self.heap.incref(aw);
        let timeout = match timeout {
            Value::None => return Ok(aw),
            t => match crate::python::natives::float_of(t) {
                Some(t) => t,
                None => {
                    self.heap.decref(aw);
                    return self.error("TypeError: asyncio.wait_for() needs a number of seconds or None as its timeout");
                }
            },
        };
        let state = WaitFor {
            inner,
            timeout,
            armed: false,
            timer: None,
            timed_out: false,
            helpers: Vec::new(),
        };
        let outer = FutureData::new(FutureRole::WaitFor(Box::new(state)));
        Ok(Value::Obj(self.alloc(ObjKind::Future(Box::new(outer)))))
    }

    fn wait_for_state(&mut self, outer: ObjId) -> Option<&mut WaitFor> {
        match self.heap.kind_mut(outer) {
            ObjKind::Future(f) if f.state == FutureState::Pending => match &mut f.role {
                FutureRole::WaitFor(w) => Some(w),
                _ => None,
            },
            _ => None,
        }
    }

    /// Whether a future is a `wait_for` not yet awaited.
    pub(super) fn is_unarmed_wait_for(&self, future: ObjId) -> bool {
        matches!(self.heap.kind(future), ObjKind::Future(f)
            if matches!(&f.role, FutureRole::WaitFor(w) if !w.armed))
    }

    /// The first await of a `wait_for`: the coroutine becomes a task, the timer starts.
    pub(super) fn arm_wait_for(&mut self, outer: ObjId) -> R<()> {
        let Some(w) = self.wait_for_state(outer) else {
            return Ok(());
        };
        if w.armed {
            return Ok(());
        }
        w.armed = true;
        let (inner, timeout) = (w.inner, w.timeout);
        let helper_count =
            objects_while_waiting(self.heap.profile.version.minor).saturating_sub(MODELLED_OBJECTS);
        let helpers: Vec<ObjId> = (0..helper_count)
            .map(|_| {
                self.alloc(ObjKind::Future(Box::new(FutureData::new(
                    FutureRole::Plain,
                ))))
            })
            .collect();
        let is_coroutine = matches!(self.heap.kind(inner), ObjKind::Generator(_));
        // The reference to the coroutine moves to its task; the state owns the task.
        let inner = if is_coroutine {
            self.new_task(inner)
        } else {
            inner
        };
        let timer = self.alloc(ObjKind::Future(Box::new(FutureData::new(
            FutureRole::Plain,
        ))));
        if let Some(w) = self.wait_for_state(outer) {
            w.inner = inner;
            w.timer = Some(timer);
            w.helpers = helpers;
        }
        self.add_done_callback(inner, Callback::WaitForInner(outer));
        self.add_done_callback(timer, Callback::WaitForTimer(outer));
        self.start_timer(timer, timeout.max(0.0))
    }

    /// The deadline passed while the inner awaitable runs: it is cancelled; the outcome
    /// comes when it has finished ([`Interpreter::wait_for_inner_done`]).
    pub(super) fn wait_for_timer_fired(&mut self, outer: ObjId) {
        let Some(w) = self.wait_for_state(outer) else {
            return;
        };
        let timer = w.timer.take();
        let inner = w.inner;
        let inner_pending =
            matches!(self.heap.kind(inner), ObjKind::Future(f) if f.state == FutureState::Pending);
        if inner_pending && let Some(w) = self.wait_for_state(outer) {
            w.timed_out = true;
        }
        if let Some(t) = timer {
            self.heap.decref_id(t);
        }
        if inner_pending {
            self.cancel_future(inner);
        }
    }

    /// The inner awaitable finished: its outcome becomes the `wait_for`'s, or, after the
    /// deadline, `TimeoutError`.
    pub(super) fn wait_for_inner_done(&mut self, outer: ObjId) {
        let Some(w) = self.wait_for_state(outer) else {
            return;
        };
        let (inner, timed_out) = (w.inner, w.timed_out);
        let timer = w.timer.take();
        let helpers = std::mem::take(&mut w.helpers);
        if let Some(t) = timer {
            self.drop_timer(t);
            self.heap.decref_id(t);
        }
        self.heap.decref_all(helpers.into_iter().map(Value::Obj));
        let (state, cancelled) = match self.heap.kind(inner) {
            ObjKind::Future(f) => (f.state, f.cancelled),
            _ => (FutureState::Cancelled, true),
        };
        let minor = self.heap.profile.version.minor;
        let outcome = if timed_out && (cancelled || minor <= 8) {
            let class = self.asyncio_timeout_class();
            let error = self.new_exception(class, Vec::new());
            if minor >= 9 {
                // `raise TimeoutError() from exc` inside `except CancelledError as exc`.
                let cancelled_error = self.failure_of(inner);
                self.heap.incref(Value::Obj(cancelled_error));
                if let ObjKind::Exception(e) = self.heap.kind_mut(error) {
                    e.context = Some(cancelled_error);
                }
                self.set_cause(error, Some(cancelled_error));
            }
            FutureState::Failed(error)
        } else {
            match state {
                FutureState::Done(v) => {
                    self.heap.incref(v);
                    FutureState::Done(v)
                }
                _ => FutureState::Failed(self.failure_of(inner)),
            }
        };
        self.resolve(outer, outcome);
    }

    /// The task awaiting a `wait_for` is cancelled: the inner awaitable and the timer are
    /// cancelled with it.
    pub(super) fn cancel_wait_for(&mut self, outer: ObjId) -> bool {
        let Some(w) = self.wait_for_state(outer) else {
            return false;
        };
        let (inner, armed) = (w.inner, w.armed);
        let timer = w.timer.take();
        let helpers = std::mem::take(&mut w.helpers);
        if let Some(t) = timer {
            self.drop_timer(t);
            self.heap.decref_id(t);
        }
        self.heap.decref_all(helpers.into_iter().map(Value::Obj));
        if armed {
            self.cancel_future(inner);
        }
        self.finish_cancelled(outer);
        true
    }

    /// The outcome of an awaited future (a new reference, or raised). A `wait_for`
    /// stands for a coroutine, which hands its outcome over once and keeps nothing, so the
    /// caught `TimeoutError` (whose traceback holds the awaiting frame) does not come back
    /// to it.
    pub(super) fn awaited_outcome(&mut self, future: ObjId) -> R<Value> {
        let taken = match self.heap.kind_mut(future) {
            ObjKind::Future(f) if matches!(f.role, FutureRole::WaitFor(_)) => match f.state {
                FutureState::Done(_) | FutureState::Failed(_) => Some(std::mem::replace(
                    &mut f.state,
                    FutureState::Done(Value::None),
                )),
                FutureState::Pending | FutureState::Cancelled => None,
            },
            _ => None,
        };
        match taken {
            Some(FutureState::Done(v)) => Ok(v),
            Some(FutureState::Failed(e)) => Err(self.raising(e)),
            _ => self.future_outcome(future),
        }
    }
}
