//! `asyncio.Queue`: a FIFO of items between tasks, with the futures of the tasks waiting to
//! get (queue empty) or to put (queue full), as CPython's `asyncio/queues.py` keeps them
//! (`_queue`, `_getters`, `_putters` deques; `_unfinished_tasks` and the `_finished`
//! event behind `task_done`/`join`).
//!
//! The queue is a native object holding its deques, so the items it holds stay referenced
//! (a queue of N tensors keeps N tensors' bytes allocated) until they are taken.
//!
//! `put`/`get`/`join` return a future instead of a coroutine: one already done when the
//! operation need not wait (awaiting it does not suspend, as CPython's coroutine does not),
//! else a pending one kept in the waiters' deque. Where CPython wakes a waiter with
//! `set_result(None)` and lets the woken task retry (`get_nowait`/`put_nowait` when it
//! runs), the model completes the operation when it wakes the waiter: a getter's future
//! gets the item, a putter's item enters the queue. The items are held the whole time in
//! both, only by a different object while the woken task has not run yet (`qsize()` then
//! differs by the items handed over). A cancelled waiter is dropped from its deque at the
//! next operation on the queue (CPython removes it when its task handles the
//! cancellation); a getter cancelled after it was handed its item loses the item (CPython
//! puts it back in line). `put(x)`/`get()` act when called, not when awaited.
//!
//! Objects counted for the collector: `Queue()` is 6 gen-0 objects on CPython 3.11 – 3.13
//! (the instance, its three deques, the `Event` and the event's waiters deque) and 8 on
//! 3.8 – 3.10 (with the two instances' dicts), measured as `gc.get_count()[0]` deltas
//! (`gc.disable()`, a second `Queue(maxsize=2)` after a first: on 3.8/3.9 the first call
//! with the keyword makes one object more, once; re-measured by
//! `tests/vm_asyncio_queue.rs`); the model counts its handle, four deques (the join
//! waiters standing for the event's) and, untracked, the event and the ≤ 3.10 dicts. A waiting get/put/join allocates one future, as
//! CPython's `create_future()`; the other operations keep nothing (measured 0).

use crate::heap::{FutureData, FutureRole, FutureState, ObjId, ObjKind, Sym, Value};
use crate::python::interp::{Interpreter, R};

/// The queue's type name (its `CppHandle` tag).
pub(in crate::python) const QUEUE_TYPE: &str = "Queue";

/// Slots of the queue's `held` values.
const ITEMS: usize = 0;
const GETTERS: usize = 1;
const PUTTERS: usize = 2;
/// The items of the waiting putters, in the order of `PUTTERS` (not a CPython object: there
/// each item is held by its `put` coroutine's frame).
const PUT_ITEMS: usize = 3;
const JOINERS: usize = 4;
const MAXSIZE: usize = 5;
const UNFINISHED: usize = 6;

impl<'a> Interpreter<'a> {
    /// `asyncio.Queue(maxsize=0)`; arguments are borrowed.
    pub(in crate::python) fn asyncio_queue_new(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let mut maxsize = p.first().copied();
        for &(k, v) in kw {
            if self.names.name(k) == "maxsize" && maxsize.is_none() {
                maxsize = Some(v);
            } else {
                let k = self.names.name(k).to_string();
                return self.error(format!(
                    "TypeError: Queue() got an unexpected keyword argument '{k}'"
                ));
            }
        }
        let maxsize = match maxsize {
            None => 0,
            Some(Value::Int(n)) => n,
            Some(Value::Bool(b)) => i64::from(b),
            Some(_) => return self.error("TypeError: Queue(maxsize) needs an int"),
        };
        if p.len() > 1 {
            return self.error("TypeError: Queue() takes at most 1 positional argument");
        }
        let mut held = Vec::with_capacity(7);
        for slot in 0..5 {
            let deque = ObjKind::Deque {
                items: Vec::new(),
                maxlen: None,
            };
            let id = if slot == PUT_ITEMS {
                self.heap.insert_uncounted(deque)
            } else {
                self.alloc(deque)
            };
            held.push(Value::Obj(id));
        }
        held.push(Value::Int(maxsize));
        held.push(Value::Int(0));
        // The `Event` behind `join` (its waiters deque is `JOINERS`); up to 3.10 the queue's
        // and the event's instance dicts too.
        let dicts = if self.heap.profile.version.minor <= 10 {
            2
        } else {
            0
        };
        self.count_untracked_allocations(1 + dicts);
        Ok(Value::Obj(self.alloc(ObjKind::CppHandle {
            type_name: QUEUE_TYPE,
            held,
        })))
    }

    fn queue_slot(&self, queue: ObjId, slot: usize) -> Value {
        match self.heap.kind(queue) {
            ObjKind::CppHandle { held, .. } => held.get(slot).copied().unwrap_or(Value::None),
            _ => Value::None,
        }
    }

    fn queue_int(&self, queue: ObjId, slot: usize) -> i64 {
        match self.queue_slot(queue, slot) {
            Value::Int(n) => n,
            _ => 0,
        }
    }

    fn set_queue_int(&mut self, queue: ObjId, slot: usize, n: i64) {
        if let ObjKind::CppHandle { held, .. } = self.heap.kind_mut(queue)
            && let Some(v) = held.get_mut(slot)
        {
            *v = Value::Int(n);
        }
    }

    /// The items of one of the queue's deques.
    fn queue_deque(&mut self, queue: ObjId, slot: usize) -> &mut Vec<Value> {
        let Value::Obj(d) = self.queue_slot(queue, slot) else {
            unreachable!("a queue's deque slots hold deques")
        };
        match self.heap.kind_mut(d) {
            ObjKind::Deque { items, .. } => items,
            _ => unreachable!("a queue's deque slots hold deques"),
        }
    }

    fn queue_len(&mut self, queue: ObjId) -> i64 {
        self.queue_deque(queue, ITEMS).len() as i64
    }

    fn queue_full(&mut self, queue: ObjId) -> bool {
        let maxsize = self.queue_int(queue, MAXSIZE);
        maxsize > 0 && self.queue_len(queue) >= maxsize
    }

    fn future_pending(&self, future: Value) -> bool {
        matches!(future, Value::Obj(f) if matches!(
            self.heap.kind(f), ObjKind::Future(d) if d.state == FutureState::Pending))
    }

    /// Drops the waiters already finished (cancelled) from the getters and putters.
    fn drop_finished_waiters(&mut self, queue: ObjId) {
        let getters = std::mem::take(self.queue_deque(queue, GETTERS));
        let (live, gone): (Vec<Value>, Vec<Value>) =
            getters.into_iter().partition(|&f| self.future_pending(f));
        *self.queue_deque(queue, GETTERS) = live;
        self.heap.decref_all(gone);
        let putters = std::mem::take(self.queue_deque(queue, PUTTERS));
        let items = std::mem::take(self.queue_deque(queue, PUT_ITEMS));
        let mut gone = Vec::new();
        for (f, item) in putters.into_iter().zip(items) {
            if self.future_pending(f) {
                self.queue_deque(queue, PUTTERS).push(f);
                self.queue_deque(queue, PUT_ITEMS).push(item);
            } else {
                gone.push(f);
                gone.push(item);
            }
        }
        self.heap.decref_all(gone);
    }

    /// A new future, done with `value` (owned).
    fn done_future(&mut self, value: Value) -> Value {
        let mut data = FutureData::new(FutureRole::Plain);
        data.state = FutureState::Done(value);
        Value::Obj(self.alloc(ObjKind::Future(Box::new(data))))
    }

    /// A new pending future, kept (one reference) in the deque `slot`; returns the other.
    fn waiting_future(&mut self, queue: ObjId, slot: usize) -> Value {
        let f = Value::Obj(self.alloc(ObjKind::Future(Box::new(FutureData::new(
            FutureRole::Plain,
        )))));
        self.heap.incref(f);
        self.queue_deque(queue, slot).push(f);
        f
    }

    /// `put_nowait(item)` (item owned): the first waiting getter is handed the item, else it
    /// joins the queue.
    fn queue_put_now(&mut self, queue: ObjId, item: Value) {
        let unfinished = self.queue_int(queue, UNFINISHED);
        self.set_queue_int(queue, UNFINISHED, unfinished + 1);
        loop {
            let getters = self.queue_deque(queue, GETTERS);
            if getters.is_empty() {
                self.queue_deque(queue, ITEMS).push(item);
                return;
            }
            let getter = getters.remove(0);
            if self.future_pending(getter) {
                if let Value::Obj(g) = getter {
                    self.resolve(g, FutureState::Done(item));
                }
                self.heap.decref(getter);
                return;
            }
            self.heap.decref(getter);
        }
    }

    /// `get_nowait()` on a queue with items: the first item (owned); the first waiting
    /// putter's item takes the place freed.
    fn queue_get_now(&mut self, queue: ObjId) -> Value {
        let item = self.queue_deque(queue, ITEMS).remove(0);
        loop {
            if self.queue_deque(queue, PUTTERS).is_empty() {
                break;
            }
            let putter = self.queue_deque(queue, PUTTERS).remove(0);
            let put_item = self.queue_deque(queue, PUT_ITEMS).remove(0);
            if self.future_pending(putter) {
                self.queue_put_now(queue, put_item);
                if let Value::Obj(p) = putter {
                    self.resolve(p, FutureState::Done(Value::None));
                }
                self.heap.decref(putter);
                break;
            }
            self.heap.decref(putter);
            self.heap.decref(put_item);
        }
        item
    }

    fn raise_queue_error<T>(&mut self, name: &str) -> R<T> {
        self.raise_builtin(name, Vec::new())
    }

    /// The queue's methods; arguments are borrowed.
    pub(in crate::python) fn queue_method(
        &mut self,
        queue: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        self.drop_finished_waiters(queue);
        match (method, args) {
            ("qsize", []) => Ok(Value::Int(self.queue_len(queue))),
            ("empty", []) => Ok(Value::Bool(self.queue_len(queue) == 0)),
            ("full", []) => Ok(Value::Bool(self.queue_full(queue))),
            ("put_nowait", [item]) => {
                if self.queue_full(queue) {
                    return self.raise_queue_error("QueueFull");
                }
                self.heap.incref(*item);
                self.queue_put_now(queue, *item);
                Ok(Value::None)
            }
            ("put", [item]) => {
                self.heap.incref(*item);
                if self.queue_full(queue) {
                    let f = self.waiting_future(queue, PUTTERS);
                    self.queue_deque(queue, PUT_ITEMS).push(*item);
                    return Ok(f);
                }
                self.queue_put_now(queue, *item);
                Ok(self.done_future(Value::None))
            }
            ("get_nowait", []) => {
                if self.queue_len(queue) == 0 {
                    return self.raise_queue_error("QueueEmpty");
                }
                Ok(self.queue_get_now(queue))
            }
            ("get", []) => {
                if self.queue_len(queue) == 0 {
                    return Ok(self.waiting_future(queue, GETTERS));
                }
                let item = self.queue_get_now(queue);
                Ok(self.done_future(item))
            }
            ("task_done", []) => {
                let unfinished = self.queue_int(queue, UNFINISHED);
                if unfinished <= 0 {
                    let m = self.new_str("task_done() called too many times");
                    return self.raise_builtin("ValueError", vec![m]);
                }
                self.set_queue_int(queue, UNFINISHED, unfinished - 1);
                if unfinished == 1 {
                    let joiners = std::mem::take(self.queue_deque(queue, JOINERS));
                    for j in joiners {
                        if let Value::Obj(f) = j {
                            self.resolve(f, FutureState::Done(Value::None));
                        }
                        self.heap.decref(j);
                    }
                }
                Ok(Value::None)
            }
            ("join", []) => {
                if self.queue_int(queue, UNFINISHED) > 0 {
                    return Ok(self.waiting_future(queue, JOINERS));
                }
                Ok(self.done_future(Value::None))
            }
            _ => self.unsupported(format!(
                "asyncio.Queue method '{method}' with these arguments"
            )),
        }
    }
}
