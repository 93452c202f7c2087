//! `with` blocks in VM-compiled bodies, which may suspend inside the block: entering pushes
//! what the exit needs onto the frame's value stack (so a suspended generator keeps its
//! manager alive, as CPython's frame keeps the bound `__exit__`), and the exit runs when
//! the body ends, raises, or the generator is closed at a `yield` inside it.

use crate::heap::{ObjKind, Value, WrapperKind};
use crate::python::interp::{Interpreter, R};
use crate::python::natives;

impl<'a> Interpreter<'a> {
    /// Enters `manager` (owned). Returns the exit token (owned) and the entered value: a
    /// grad mode's token is the mode to restore (a bool), `nullcontext`'s is `None`, a
    /// `contextlib` manager's is the manager, an object's is its bound `__exit__`.
    pub(super) fn vm_enter_with(&mut self, manager: Value) -> R<(Value, Value)> {
        if let Value::Native(n) = manager
            && let Some(mode) = natives::grad_mode_of(n)
        {
            let saved = natives::grad_mode_restored(n).unwrap_or(self.grad_enabled);
            self.grad_enabled = mode;
            return Ok((Value::Bool(saved), Value::None));
        }
        if let Value::Obj(w) = manager
            && let ObjKind::Wrapper(WrapperKind::NullContext, items) = self.heap.kind(w)
        {
            let enter = items[0];
            self.heap.incref(enter);
            self.heap.decref(manager);
            return Ok((Value::None, enter));
        }
        if let Value::Obj(id) = manager
            && self.is_autocast(manager)
        {
            self.autocast_enter(id);
            self.heap.incref(manager);
            return Ok((manager, manager));
        }
        if self.is_contextlib_manager(manager) {
            let Value::Obj(id) = manager else {
                unreachable!("checked above")
            };
            return match self.contextlib_enter(id) {
                Ok(entered) => Ok((manager, entered)),
                Err(e) => {
                    self.heap.decref(manager);
                    Err(e)
                }
            };
        }
        if !self.is_context_manager(manager) {
            self.heap.decref(manager);
            return self.unsupported(
                "this context manager (torch.no_grad, enable_grad, inference_mode, contextlib's, or an object with __enter__ and __exit__)",
            );
        }
        self.enter_context_manager(manager)
    }

    /// Runs the exit of token `exit` (owned) with the exception being handled, if any;
    /// returns whether the exception is suppressed.
    pub(super) fn vm_exit_with(
        &mut self,
        exit: Value,
        exception: Option<crate::heap::ObjId>,
    ) -> R<bool> {
        match exit {
            Value::Bool(saved) => {
                self.grad_enabled = saved;
                Ok(false)
            }
            Value::None => Ok(false),
            Value::Obj(id) if self.is_autocast(exit) => {
                self.autocast_exit(id);
                self.heap.decref(exit);
                Ok(false)
            }
            Value::Obj(id) if self.is_contextlib_manager(exit) => {
                let r = self.contextlib_exit(id, exception);
                self.heap.decref(exit);
                r
            }
            _ => {
                let args = match exception {
                    Some(x) => self.sys_exc_info_items(x),
                    None => vec![Value::None; 3],
                };
                let r = self.call(exit, args, Vec::new());
                self.heap.decref(exit);
                let v = r?;
                let suppress = if exception.is_some() {
                    self.truth(v)
                } else {
                    Ok(false)
                };
                self.heap.decref(v);
                suppress
            }
        }
    }
}
