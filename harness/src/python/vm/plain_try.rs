//! `try` in plain bodies at run time: the handlers set up (`SETUP_FINALLY`), the frame's
//! value stack (a `return` value kept while `finally` bodies run, the exceptions that
//! `except` clauses and `finally` bodies handle) and where an exception goes.
//!
//! A handled exception sits on the value stack and on the interpreter's stack of handled
//! exceptions (`exc.handling`: what `sys.exc_info()`, bare `raise` and `__context__` see),
//! so a `try` inside an `except` clause keeps the outer exception: when the inner one is
//! handled, the outer one is handled again. Each slot holds one reference to its exception.

use crate::heap::{ObjId, Sym, Value};
use crate::python::interp::{Exc, Interpreter, R};
use crate::python::scope::symbol;
use ruff_python_ast::{self as ast, Expr};
use std::sync::atomic::{AtomicU64, Ordering};

static CAUGHT: AtomicU64 = AtomicU64::new(0);

/// How many exceptions the handlers of compiled plain bodies have caught in this process:
/// lets a test tell that a `try` ran on the VM and not in the tree walker.
pub fn exceptions_caught_by_vm() -> u64 {
    CAUGHT.load(Ordering::Relaxed)
}

/// A slot of a plain frame's value stack.
pub(in crate::python) enum PlainSlot {
    /// A `return` value kept while the blocks it leaves are left.
    Value(Value),
    /// What a `with` block's exit needs (the token of [`Interpreter::vm_enter_with`]).
    Exit(Value),
    /// An exception being handled, where it was raised, and the `as` name its clause bound.
    Handling {
        exception: ObjId,
        offset: u32,
        name: Option<Sym>,
    },
}

/// A `try` handler set up: where it starts, and the value stack's and loop stack's
/// heights to unwind to.
pub(in crate::python) struct PlainBlock {
    handler: u32,
    slots: u32,
    loops: u32,
    /// Whether it counts in `exc.handler_depth` (errors inside become exception objects).
    counts: bool,
}

/// Where a plain frame's stacks start.
pub(super) struct PlainBase {
    pub(super) loops: usize,
    pub(super) slots: usize,
    pub(super) blocks: usize,
}

impl<'a> Interpreter<'a> {
    /// `SETUP_FINALLY`: while it is set up, an exception can be caught, so errors become
    /// exception objects.
    pub(super) fn plain_setup(&mut self, handler: u32, counts: bool) {
        self.plain_blocks.push(PlainBlock {
            handler,
            slots: self.plain_slots.len() as u32,
            loops: self.plain_loops.len() as u32,
            counts,
        });
        self.exc.handler_depth += u32::from(counts);
    }

    /// `POP_BLOCK`: the innermost handler ends.
    pub(super) fn plain_pop_block(&mut self) {
        let block = self.plain_blocks.pop().expect("a handler is set up");
        self.exc.handler_depth -= u32::from(block.counts);
    }

    /// An error raised in a plain frame: taken by its innermost handler (whose
    /// instruction is returned) if it is a Python exception and the frame has one.
    /// Otherwise it goes on (the caller unwinds the frame's stacks).
    pub(super) fn plain_catch(&mut self, e: Box<Exc>, base: &PlainBase) -> Result<u32, Box<Exc>> {
        if self.plain_blocks.len() == base.blocks {
            return Err(e);
        }
        // Made an object (its `__context__` the exception handled where it was raised)
        // while the handler still counts, with this frame's traceback entry.
        let e = self.unwinding(e);
        let block = self.plain_blocks.pop().expect("checked above");
        self.exc.handler_depth -= u32::from(block.counts);
        let Exc::Raised {
            exception, offset, ..
        } = *e
        else {
            // Not a Python exception: the run stops here.
            return Err(e);
        };
        self.drop_slots(block.slots as usize);
        while self.plain_loops.len() > block.loops as usize {
            self.end_plain_loop(false);
        }
        CAUGHT.fetch_add(1, Ordering::Relaxed);
        // The in-flight error's reference goes to the slot.
        self.begin_handling(exception);
        self.plain_slots.push(PlainSlot::Handling {
            exception,
            offset,
            name: None,
        });
        Ok(block.handler)
    }

    /// An error leaves the frame: what its stacks hold goes, its handlers end.
    pub(super) fn plain_unwind_all(&mut self, base: &PlainBase) {
        self.drop_slots(base.slots);
        while self.plain_blocks.len() > base.blocks {
            self.plain_pop_block();
        }
        while self.plain_loops.len() > base.loops {
            self.end_plain_loop(false);
        }
    }

    pub(super) fn drop_slots(&mut self, len: usize) {
        while self.plain_slots.len() > len {
            let slot = self.plain_slots.pop().expect("checked");
            self.drop_slot(slot);
        }
    }

    /// `POP_EXCEPT` (then `name = None; del name` for `except E as name`).
    fn drop_slot(&mut self, slot: PlainSlot) {
        match slot {
            PlainSlot::Value(v) | PlainSlot::Exit(v) => self.heap.decref(v),
            PlainSlot::Handling {
                exception, name, ..
            } => {
                debug_assert_eq!(self.exc.handling.last(), Some(&exception));
                self.end_handling();
                self.heap.decref_id(exception);
                if let Some(sym) = name
                    && let Some(v) = self.take_name(sym)
                {
                    self.heap.decref(v);
                }
            }
        }
    }

    /// The exception handled `under` slots below the top stops being handled.
    pub(super) fn pop_handled(&mut self, under: u32) {
        let at = self.plain_slots.len() - 1 - under as usize;
        let slot = self.plain_slots.remove(at);
        debug_assert!(matches!(slot, PlainSlot::Handling { .. }));
        self.drop_slot(slot);
    }

    /// The kept return value `under` slots below the top is replaced (dropped).
    pub(super) fn drop_kept_value(&mut self, under: u32) {
        let at = self.plain_slots.len() - 1 - under as usize;
        let slot = self.plain_slots.remove(at);
        debug_assert!(matches!(slot, PlainSlot::Value(_)));
        self.drop_slot(slot);
    }

    /// The value a `return` through blocks kept.
    pub(super) fn pop_return_value(&mut self) -> Value {
        match self.plain_slots.pop() {
            Some(PlainSlot::Value(v)) => v,
            _ => unreachable!("ReturnValue pushes the value"),
        }
    }

    /// `RERAISE` at the end of a `finally` body entered by an exception, or after `except`
    /// clauses none of which matched: the handled exception goes on from where it was
    /// raised (this frame's traceback entry is already made).
    pub(super) fn reraise_handled(&mut self) -> Box<Exc> {
        let Some(PlainSlot::Handling {
            exception, offset, ..
        }) = self.plain_slots.pop()
        else {
            unreachable!("a handler runs with the exception it handles")
        };
        self.end_handling();
        Box::new(Exc::Raised {
            exception,
            tb_depth: Some(self.frames.len()),
            offset,
        })
    }

    /// An `except` clause: whether the handled exception matches `class` (any when
    /// absent); a match binds it to `name`.
    pub(super) fn plain_match_except(
        &mut self,
        class: Option<&'a Expr>,
        name: Option<&'a ast::Identifier>,
    ) -> R<bool> {
        let Some(&PlainSlot::Handling { exception, .. }) = self.plain_slots.last() else {
            unreachable!("a handler runs with the exception it handles")
        };
        if let Some(class) = class {
            let spec = self.eval(class)?;
            self.at(class);
            let m = self.exception_matches(exception, spec);
            self.heap.decref(spec);
            if !m? {
                return Ok(false);
            }
        }
        if let Some(n) = name {
            let sym = symbol(&n.node_index, n.as_str(), &mut self.names);
            self.heap.incref(Value::Obj(exception));
            self.store_name(sym, Value::Obj(exception));
            if let Some(PlainSlot::Handling { name, .. }) = self.plain_slots.last_mut() {
                *name = Some(sym);
            }
        }
        Ok(true)
    }
}
