//! `async with` and `async for` at run time: the protocol methods of user classes
//! (`__aenter__`/`__aexit__`, `__aiter__`/`__anext__`) are called and their awaitables
//! pushed for the frame to await, so a coroutine suspends inside them as CPython's does.

use crate::heap::{ObjId, Value};
use crate::python::interp::{Exc, Interpreter, R};

impl<'a> Interpreter<'a> {
    /// `BEFORE_ASYNC_WITH`: takes `manager` (owned); pushes its bound `__aexit__`, then
    /// the awaitable iterator of `__aenter__()` and its position.
    pub(super) fn vm_async_with_enter(&mut self, manager: Value, stack: &mut Vec<Value>) -> R<()> {
        if self.user_special(manager, "__aenter__").is_none()
            || self.user_special(manager, "__aexit__").is_none()
        {
            let t = self.value_type_name(manager);
            self.heap.decref(manager);
            return self.error(format!(
                "TypeError: '{t}' object does not support the asynchronous context manager protocol"
            ));
        }
        let exit_sym = self.names.intern("__aexit__");
        let exit = match self.get_attr(manager, exit_sym) {
            Ok(exit) => exit,
            Err(e) => {
                self.heap.decref(manager);
                return Err(e);
            }
        };
        let entered = self.call_special(manager, "__aenter__", Vec::new());
        self.heap.decref(manager);
        let awaitable = match entered {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                self.heap.decref(exit);
                return Err(e);
            }
            Err(_) => unreachable!("checked above"),
        };
        stack.push(exit);
        let iterator = self.awaitable_iterator(awaitable)?;
        stack.push(iterator);
        stack.push(Value::Int(0));
        Ok(())
    }

    /// The normal end of an `async with` body, or a `return` out of it (its value `under`
    /// slots above the exit): calls the exit taken from the stack with no exception and
    /// pushes its awaitable iterator and position.
    pub(super) fn vm_async_with_exit(&mut self, stack: &mut Vec<Value>, under: usize) -> R<()> {
        let exit = stack.remove(stack.len() - 1 - under);
        let r = self.call(exit, vec![Value::None; 3], Vec::new());
        self.heap.decref(exit);
        let iterator = self.awaitable_iterator(r?)?;
        stack.push(iterator);
        stack.push(Value::Int(0));
        Ok(())
    }

    /// The exceptional end of an `async with` body: calls `exit` (owned) with the exception
    /// and awaits the result to its end (an `__aexit__` that suspends to the event loop
    /// while an exception is being handled is refused, located); returns whether the
    /// exception is suppressed.
    pub(super) fn vm_async_exit_exc(&mut self, exit: Value, exception: Option<ObjId>) -> R<bool> {
        let args = match exception {
            Some(x) => self.sys_exc_info_items(x),
            None => vec![Value::None; 3],
        };
        let r = self.call(exit, args, Vec::new());
        self.heap.decref(exit);
        let v = self.await_to_end(r?)?;
        let suppress = self.truth(v);
        self.heap.decref(v);
        suppress
    }

    /// `GET_AITER`: the async iterator of `iterable` (owned).
    pub(super) fn vm_get_aiter(&mut self, iterable: Value) -> R<Value> {
        // An async generator is its own async iterator.
        if self.is_async_generator(iterable) {
            return Ok(iterable);
        }
        match self.call_special(iterable, "__aiter__", Vec::new()) {
            Ok(r) => {
                self.heap.decref(iterable);
                r
            }
            Err(_) => {
                let t = self.value_type_name(iterable);
                self.heap.decref(iterable);
                self.error(format!(
                    "TypeError: 'async for' requires an object with __aiter__ method, got {t}"
                ))
            }
        }
    }

    /// `GET_ANEXT`: pushes the awaitable iterator of `__anext__()` of the async iterator
    /// on top of the stack, and its position.
    pub(super) fn vm_get_anext(&mut self, stack: &mut Vec<Value>) -> R<()> {
        let iterator = *stack.last().expect("GetAIter pushes the iterator");
        // An async generator's `__anext__()` awaitable is modelled by the generator itself:
        // resuming it runs its body to its next `yield` (the item) or through its `await`s.
        if self.is_async_generator(iterator) {
            if let Value::Obj(agen) = iterator {
                self.asyncgen_first_iter(agen);
            }
            self.heap.incref(iterator);
            stack.push(iterator);
            stack.push(Value::Int(0));
            return Ok(());
        }
        let awaitable = match self.call_special(iterator, "__anext__", Vec::new()) {
            Ok(r) => r?,
            Err(_) => {
                let t = self.value_type_name(iterator);
                return self.error(format!(
                    "TypeError: 'async for' received an invalid object from __aiter__: {t}"
                ));
            }
        };
        let awaitable = self.awaitable_iterator(awaitable)?;
        stack.push(awaitable);
        stack.push(Value::Int(0));
        Ok(())
    }

    /// Whether `v` is an async generator (an `async def` with `yield`, called).
    pub(in crate::python) fn is_async_generator(&self, v: Value) -> bool {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                crate::heap::ObjKind::Generator(g) => {
                    g.coroutine && self.codes.get(g.code).is_generator
                }
                _ => false,
            },
            _ => false,
        }
    }

    /// Whether a failed `__anext__()` await ends its `async for` (`StopAsyncIteration`);
    /// if so the exception is discarded and the awaitable popped.
    pub(super) fn anext_exhausted(&mut self, e: Box<Exc>, stack: &mut Vec<Value>) -> R<()> {
        let stop = match (
            Self::raised_exception(&e),
            self.builtin_exception("StopAsyncIteration"),
        ) {
            (Some(x), Some(Value::Obj(class))) => match self.heap.kind(x) {
                crate::heap::ObjKind::Exception(d) => self.class_derives_from(d.class, class),
                _ => false,
            },
            _ => false,
        };
        if !stop {
            return Err(e);
        }
        self.discard(e);
        let n = stack.len();
        let popped: Vec<Value> = stack.drain(n - 2..).collect();
        self.heap.decref_all(popped);
        Ok(())
    }
}
