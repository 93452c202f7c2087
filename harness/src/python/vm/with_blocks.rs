//! `with` blocks in VM-compiled bodies, which may suspend inside the block: entering pushes
//! what the exit needs onto the frame's value stack (so a suspended generator keeps its
//! manager alive, as CPython's frame keeps the bound `__exit__`), and the exit runs when
//! the body ends, raises, or the generator is closed at a `yield` inside it. Plain bodies
//! run the same instructions, their exit tokens kept on the plain frame's value stack.

use super::plain_try::PlainSlot;
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use crate::python::interp::{Interpreter, R};
use crate::python::natives;
use ruff_python_ast as ast;
use std::sync::atomic::{AtomicU64, Ordering};

static WITH_BLOCKS: AtomicU64 = AtomicU64::new(0);

/// How many `with` items compiled plain bodies have entered in this process: lets a test
/// tell that a `with` ran on the VM and not in the tree walker.
pub fn with_blocks_entered_by_vm() -> u64 {
    WITH_BLOCKS.load(Ordering::Relaxed)
}

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
        let r = self.vm_exit_call(exit, exception);
        self.heap.decref(exit);
        r
    }

    /// Runs the exit of token `exit` (borrowed: the caller drops it after, as CPython pops
    /// the bound `__exit__` after the exception); returns whether the exception is
    /// suppressed.
    fn vm_exit_call(&mut self, exit: Value, exception: Option<ObjId>) -> R<bool> {
        match exit {
            Value::Bool(saved) => {
                self.grad_enabled = saved;
                Ok(false)
            }
            Value::None => Ok(false),
            Value::Obj(id) if self.is_autocast(exit) => {
                self.autocast_exit(id);
                Ok(false)
            }
            Value::Obj(id) if self.is_contextlib_manager(exit) => {
                self.contextlib_exit(id, exception)
            }
            _ => {
                let args = match exception {
                    Some(x) => self.sys_exc_info_items(x),
                    None => vec![Value::None; 3],
                };
                let v = self.call(exit, args, Vec::new())?;
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

    /// Whether exit token `exit` takes the exception: an object's bound `__exit__` or a
    /// `contextlib` manager (a grad mode, `nullcontext` and `autocast` only restore state).
    fn exit_takes_exception(&self, exit: Value) -> bool {
        matches!(exit, Value::Obj(_)) && !self.is_autocast(exit)
    }

    // ----- `with` in plain bodies: the exit token is a slot of the frame's value stack -----

    /// `BEFORE_WITH`: enters the item's manager, keeps its exit token on the value stack
    /// and stores the entered value to the item's target.
    pub(super) fn plain_with_enter(&mut self, item: &'a ast::WithItem) -> R<()> {
        self.at(&item.context_expr);
        let manager = self.eval(&item.context_expr)?;
        let (exit, entered) = self.vm_enter_with(manager)?;
        WITH_BLOCKS.fetch_add(1, Ordering::Relaxed);
        self.plain_slots.push(PlainSlot::Exit(exit));
        match &item.optional_vars {
            Some(target) => self.store(target, entered),
            None => {
                self.heap.decref(entered);
                Ok(())
            }
        }
    }

    /// Sets up the handler of the `with` body whose exit token is on top of the stack.
    pub(super) fn plain_setup_with(&mut self, handler: u32) {
        let counts = match self.plain_slots.last() {
            Some(&PlainSlot::Exit(exit)) => self.exit_takes_exception(exit),
            _ => unreachable!("WithEnter pushes the exit"),
        };
        self.plain_setup(handler, counts);
    }

    /// The body ended, or a way out leaves it: the exit `under` slots below the top is
    /// called with `None` x3.
    pub(super) fn plain_with_exit(&mut self, under: u32) -> R<()> {
        let at = self.plain_slots.len() - 1 - under as usize;
        let PlainSlot::Exit(exit) = self.plain_slots.remove(at) else {
            unreachable!("WithEnter pushes the exit")
        };
        self.vm_exit_with(exit, None).map(|_| ())
    }

    /// `WITH_EXCEPT_START` at the handler (the stack holds the exit token, then the handled
    /// exception): the exit is called with the exception; a true result suppresses it
    /// (the run goes on after the `with`), otherwise it is re-raised. An error of the exit
    /// itself replaces it, made an object while the exception is its `__context__`.
    pub(super) fn plain_with_exit_exc(&mut self) -> R<()> {
        let n = self.plain_slots.len();
        let exit = match &mut self.plain_slots[n - 2] {
            PlainSlot::Exit(exit) => std::mem::replace(exit, Value::None),
            _ => unreachable!("WithEnter pushes the exit"),
        };
        let Some(&PlainSlot::Handling { exception, .. }) = self.plain_slots.last() else {
            unreachable!("a handler runs with the exception it handles")
        };
        let r = self
            .vm_exit_call(exit, Some(exception))
            .map_err(|err| self.materialise(err));
        let r = match r {
            Ok(false) => Err(self.reraise_handled()),
            Ok(true) => Ok(()),
            Err(err) => Err(err),
        };
        // The handled exception (suppressed or gone on) goes first, then the exit.
        self.drop_slots(n - 2);
        self.heap.decref(exit);
        r
    }
}
