//! The asyncio loop's async generator hooks (`sys.set_asyncgen_hooks`, installed while the
//! loop runs; `Lib/asyncio/base_events.py`): the first `__anext__()` of an async generator
//! calls the loop's `firstiter` hook, which adds it to the loop's `_asyncgens` weak set (a
//! weak reference per generator, made here as a model object); at the end of `asyncio.run`,
//! after the pending tasks are cancelled, `shutdown_asyncgens()` calls `aclose()` on each
//! one still alive, so an unfinished generator's `finally` runs then and its frame lets go
//! of what it held. Approximations: `aclose()` runs to its end at once (a `finally` that
//! awaits something that suspends ends as "ignored GeneratorExit", swallowed as
//! `return_exceptions=True` swallows it), the task and `gather` that CPython makes for it
//! are not counted, and the finalizer hook (an unfinished generator freed while the loop
//! runs gets `aclose()` scheduled as a task) is not modelled: such a generator is closed
//! when freed, as outside a loop.

use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use crate::python::interp::{Interpreter, R};

impl<'a> Interpreter<'a> {
    /// The `firstiter` hook: an async generator's first `__anext__()` while a loop runs.
    pub(super) fn asyncgen_first_iter(&mut self, agen: ObjId) {
        let unstarted = matches!(self.heap.kind(agen),
            ObjKind::Generator(g) if g.state == crate::heap::GenState::Created);
        if !unstarted || self.event_loop.is_none() {
            return;
        }
        let weak = self.alloc(ObjKind::Wrapper(WrapperKind::WeakRef, vec![Value::None]));
        self.heap.register_weak(weak, agen);
        if let Some(l) = self.event_loop.as_mut() {
            l.asyncgens.push(weak);
        }
    }

    /// `loop.shutdown_asyncgens()`: `aclose()` on each tracked async generator still alive
    /// and unfinished; what they raise is swallowed.
    pub(super) fn shutdown_asyncgens(&mut self) -> R<()> {
        let Some(l) = self.event_loop.as_mut() else {
            return Ok(());
        };
        let tracked = std::mem::take(&mut l.asyncgens);
        let mut result = Ok(());
        for weak in tracked {
            let agen = self.heap.weak_target(weak);
            let unfinished = agen.is_some_and(|g| {
                matches!(self.heap.kind(g),
                    ObjKind::Generator(d) if d.state == crate::heap::GenState::Suspended)
            });
            if let (true, Some(agen), Ok(())) = (unfinished, agen, &result) {
                self.heap.incref(Value::Obj(agen));
                self.exc.handler_depth += 1;
                let closed = self.close_generator(agen);
                self.exc.handler_depth -= 1;
                self.heap.decref_id(agen);
                if let Err(e) = closed {
                    if Self::raised_exception(&e).is_some() {
                        self.discard(e);
                    } else {
                        result = Err(e);
                    }
                }
            }
            self.heap.decref_id(weak);
        }
        result
    }
}
