//! Running the ops of `compile_expr_starred.rs`: starred displays and folded constant
//! sets on the interpreter's value stack.

use super::compile_expr_starred::{Display, StarredOp};
use crate::heap::{ObjKind, Value};
use crate::python::interp::{Interpreter, R};
use std::cell::RefCell;

thread_local! {
    /// Where the markers of the starred displays being built sit on the value stack
    /// (nested displays above outer ones). An error that unwinds the stack drops the
    /// entries above the base it unwinds to ([`unwound_to`]).
    static STARTS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The value stack was unwound to `base` by an error: the displays begun above it are gone.
pub(super) fn unwound_to(base: usize) {
    STARTS.with_borrow_mut(|starts| {
        while starts.last().is_some_and(|&at| at >= base) {
            starts.pop();
        }
    });
}

impl<'a> Interpreter<'a> {
    /// Runs one op; returns the value to push, if any.
    pub(super) fn run_starred(&mut self, op: StarredOp<'a>) -> R<Option<Value>> {
        Ok(match op {
            StarredOp::Begin => {
                let at = self.expr_stack.len();
                STARTS.with_borrow_mut(|starts| starts.push(at));
                Some(Value::None)
            }
            StarredOp::Spread { at } => {
                let iterable = self.expr_stack.pop().expect("a `*` operand");
                self.offset = at;
                let items = self.collect_items(iterable);
                self.heap.decref(iterable);
                self.expr_stack.extend(items?);
                None
            }
            StarredOp::Build(display) => {
                let start = STARTS
                    .with_borrow_mut(|starts| starts.pop())
                    .expect("a starred display's marker");
                let items = self.expr_stack.split_off(start + 1);
                self.expr_stack.pop();
                Some(self.starred_display(display, items)?)
            }
            StarredOp::ConstSet(s) => Some(self.eval_set_display(s)?),
        })
    }

    /// The display of `items` (owned), made as `interp/starred.rs` and `sets.rs` make it.
    fn starred_display(&mut self, display: Display, items: Vec<Value>) -> R<Value> {
        Ok(Value::Obj(match display {
            Display::List => self.alloc(ObjKind::List(items)),
            Display::Tuple => {
                let list = self.alloc(ObjKind::List(items.clone()));
                for &v in &items {
                    self.heap.incref(v);
                }
                self.heap.decref_id(list);
                self.alloc(ObjKind::Tuple(items))
            }
            Display::Set => {
                let set = self.alloc(ObjKind::Set {
                    table: Box::default(),
                    frozen: false,
                });
                let mut items = items.into_iter();
                while let Some(v) = items.next() {
                    if let Err(e) = self.set_add(set, v) {
                        self.heap.decref_all(items);
                        self.heap.decref_id(set);
                        return Err(e);
                    }
                }
                set
            }
        }))
    }
}
