//! asyncio's futures and tasks as model objects: a `Future` holds its result (or exception)
//! until it is freed, a `Task` is a future that owns the coroutine it drives, and a
//! gathering future holds its children. What they reference keeps memory alive exactly as
//! CPython's `_asyncio.Future`/`Task` and `_GatheringFuture` do: a finished task keeps its
//! result (a tensor) alive while anything keeps the task.

use super::{Edge, ObjId, Value};

/// Where a future is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FutureState {
    Pending,
    /// Holds the result (owned).
    Done(Value),
    /// Holds the exception object (owned).
    Failed(ObjId),
    /// Cancelled, holding no exception: reading the outcome makes a new `CancelledError`.
    Cancelled,
}

/// What a future stands for.
#[derive(Debug, Clone, PartialEq)]
pub enum FutureRole {
    /// A plain future, resolved by the event loop (`asyncio.sleep(d)`'s timer).
    Plain,
    /// `asyncio.sleep(delay)` before its first suspension: awaiting it arms the timer.
    Sleep { delay: f64 },
    /// A task: drives its coroutine (owned) until it finishes.
    Task { coroutine: ObjId },
    /// `asyncio.gather`: the children (owned) and how many are not finished yet.
    Gather { children: Vec<ObjId>, pending: u32 },
    /// `asyncio.wait_for(aw, timeout)` (see [`WaitFor`]).
    WaitFor(Box<WaitFor>),
}

/// `asyncio.wait_for`'s state: what it waits on, and the timer and helper objects that
/// `tasks.py` makes for it once it is first awaited.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitFor {
    /// The awaitable (owned); once armed, the task that runs it (or the future itself).
    pub inner: ObjId,
    pub timeout: f64,
    /// Armed: the inner task exists and the timer runs.
    pub armed: bool,
    /// The timer's future (owned) while it runs.
    pub timer: Option<ObjId>,
    /// The deadline passed: the inner awaitable was cancelled.
    pub timed_out: bool,
    /// The objects `tasks.py` keeps while it waits (the waiter future, the callback
    /// partial, handles: owned), counted as CPython counts them.
    pub helpers: Vec<ObjId>,
}

/// What the event loop runs when a future finishes: a callback registered on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Callback {
    /// Step the task (owned reference): resume its coroutine.
    Step(ObjId),
    /// A gather child finished: tell the gathering future (owned reference).
    GatherChild(ObjId),
    /// `asyncio.run`'s main task finished (`_run_until_complete_cb`, owned reference): the
    /// loop stops once the batch of callbacks under way is done.
    Stop(ObjId),
    /// The awaitable of an `asyncio.wait_for` (owned reference) finished.
    WaitForInner(ObjId),
    /// The timer of an `asyncio.wait_for` (owned reference) fired.
    WaitForTimer(ObjId),
}

impl Callback {
    pub fn target(self) -> ObjId {
        match self {
            Callback::Step(t)
            | Callback::GatherChild(t)
            | Callback::Stop(t)
            | Callback::WaitForInner(t)
            | Callback::WaitForTimer(t) => t,
        }
    }
}

/// A future or task.
#[derive(Debug, Clone)]
pub struct FutureData {
    pub state: FutureState,
    pub role: FutureRole,
    /// Callbacks run (scheduled with `call_soon`) when it finishes; each holds a reference.
    pub callbacks: Vec<Callback>,
    /// Finished by cancellation (`Future.cancelled()`); the state then holds the
    /// `CancelledError` that awaiting it raises.
    pub cancelled: bool,
    /// A task asked to cancel while not waiting on a future (`Task._must_cancel`): its next
    /// step throws `CancelledError` into the coroutine.
    pub must_cancel: bool,
    /// The future a task is suspended on (`Task._fut_waiter`, owned): `cancel()` cancels it.
    pub waiter: Option<ObjId>,
}

impl FutureData {
    pub fn new(role: FutureRole) -> Self {
        FutureData {
            state: FutureState::Pending,
            role,
            callbacks: Vec::new(),
            cancelled: false,
            must_cancel: false,
            waiter: None,
        }
    }

    pub fn is_task(&self) -> bool {
        matches!(self.role, FutureRole::Task { .. })
    }

    /// The type name Python shows.
    pub fn type_name(&self) -> &'static str {
        match self.role {
            FutureRole::Task { .. } => "Task",
            FutureRole::Gather { .. } => "_GatheringFuture",
            FutureRole::Plain | FutureRole::Sleep { .. } => "Future",
            FutureRole::WaitFor(_) => "coroutine",
        }
    }

    /// The references `FutureObj_traverse`/`TaskObj_traverse` visit.
    pub fn traverse(&self, value: &mut impl FnMut(Value, Edge)) {
        match self.state {
            FutureState::Done(v) => value(v, Edge::Role("_result")),
            FutureState::Failed(e) => value(Value::Obj(e), Edge::Role("_exception")),
            FutureState::Pending | FutureState::Cancelled => {}
        }
        match &self.role {
            FutureRole::Task { coroutine } => value(Value::Obj(*coroutine), Edge::Role("_coro")),
            FutureRole::Gather { children, .. } => {
                for &c in children {
                    value(Value::Obj(c), Edge::Role("_children"));
                }
            }
            FutureRole::Plain | FutureRole::Sleep { .. } => {}
            FutureRole::WaitFor(w) => {
                value(Value::Obj(w.inner), Edge::Role("fut"));
                for &t in w.timer.iter().chain(&w.helpers) {
                    value(Value::Obj(t), Edge::Role("waiter"));
                }
            }
        }
        for c in &self.callbacks {
            value(Value::Obj(c.target()), Edge::Role("_callbacks"));
        }
        if let Some(w) = self.waiter {
            value(Value::Obj(w), Edge::Role("_fut_waiter"));
        }
    }

    /// Drops its references (the collector's `tp_clear`).
    pub fn clear(&mut self, out: &mut Vec<Value>) {
        let role = std::mem::replace(&mut self.role, FutureRole::Plain);
        let state = std::mem::replace(&mut self.state, FutureState::Pending);
        let callbacks = std::mem::take(&mut self.callbacks);
        out.extend(self.waiter.take().map(Value::Obj));
        Self::push_all(state, role, callbacks, &mut |v| out.push(v));
    }

    /// Every reference it owns, when it is freed.
    pub fn references(self, push: &mut impl FnMut(Value)) {
        if let Some(w) = self.waiter {
            push(Value::Obj(w));
        }
        Self::push_all(self.state, self.role, self.callbacks, push);
    }

    fn push_all(
        state: FutureState,
        role: FutureRole,
        callbacks: Vec<Callback>,
        push: &mut impl FnMut(Value),
    ) {
        match state {
            FutureState::Done(v) => push(v),
            FutureState::Failed(e) => push(Value::Obj(e)),
            FutureState::Pending | FutureState::Cancelled => {}
        }
        match role {
            FutureRole::Task { coroutine } => push(Value::Obj(coroutine)),
            FutureRole::Gather { children, .. } => {
                children.into_iter().for_each(|c| push(Value::Obj(c)))
            }
            FutureRole::Plain | FutureRole::Sleep { .. } => {}
            FutureRole::WaitFor(w) => {
                push(Value::Obj(w.inner));
                w.timer
                    .into_iter()
                    .chain(w.helpers)
                    .for_each(|t| push(Value::Obj(t)));
            }
        }
        callbacks
            .into_iter()
            .for_each(|c| push(Value::Obj(c.target())));
    }
}
