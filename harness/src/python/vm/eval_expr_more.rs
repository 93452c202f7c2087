//! Running the ops of `compile_expr_more.rs` on the interpreter's value stack, and the
//! count of tree-evaluator fallbacks (`Op::EvalTree`) that tells a test whether a script
//! ran without the tree evaluator.

use super::compile_expr_more::MoreOp;
use crate::heap::{ObjKind, Value};
use crate::python::interp::{Interpreter, R};
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};

static FALLBACKS: AtomicU64 = AtomicU64::new(0);

/// How many sub-expressions of compiled expressions the tree evaluator evaluated in this
/// process (`Op::EvalTree`): a script using only compiled forms leaves it unchanged.
pub fn expressions_evaluated_by_tree() -> u64 {
    FALLBACKS.load(Ordering::Relaxed)
}

/// Counts one `Op::EvalTree`.
pub(super) fn count_fallback() {
    FALLBACKS.fetch_add(1, Ordering::Relaxed);
}

thread_local! {
    /// The texts of the f-strings being built (nested ones above outer ones), found by the
    /// index their marker on the value stack holds, with the marker's position there. An
    /// error unwinds the marker and leaves the text; the next f-string drops it.
    static TEXTS: RefCell<Vec<(usize, String)>> = const { RefCell::new(Vec::new()) };
}

/// Where an op sends control.
pub(super) enum Flow {
    /// Push this value and go on.
    Push(Value),
    /// Go on (the op pushed what it pushes, or nothing).
    Next,
    /// Continue at this op.
    Jump(u32),
}

impl<'a> Interpreter<'a> {
    pub(super) fn run_more(&mut self, op: MoreOp<'a>) -> R<Flow> {
        Ok(match op {
            MoreOp::ChainLink { op, at, end } => {
                let right = self.expr_stack.pop().expect("a right operand");
                let left = self.expr_stack.pop().expect("a left operand");
                self.offset = at;
                match self.compare_link(op, left, right)? {
                    None => Flow::Push(right),
                    Some(value) => {
                        self.expr_stack.push(value);
                        Flow::Jump(end)
                    }
                }
            }
            MoreOp::BuildDict { len, at } => {
                // `BUILD_MAP`: the dict takes its own references to the pairs in order, then
                // the stack's are released, top first (a replaced duplicate and, on an
                // unhashable key, the pairs already in the freed dict die there).
                let from = self.expr_stack.len() - 2 * len as usize;
                let dict = self.alloc(ObjKind::Dict(Vec::new()));
                let mut failed = None;
                for i in (from..self.expr_stack.len()).step_by(2) {
                    let (k, v) = (self.expr_stack[i], self.expr_stack[i + 1]);
                    self.offset = at;
                    if let Err(e) = self.check_dict_key(k) {
                        failed = Some(e);
                        break;
                    }
                    self.heap.incref(k);
                    self.heap.incref(v);
                    self.dict_set(dict, k, v);
                }
                if failed.is_some() {
                    self.heap.decref_id(dict);
                }
                while self.expr_stack.len() > from {
                    let v = self.expr_stack.pop().expect("checked above");
                    self.heap.decref(v);
                }
                match failed {
                    Some(e) => return Err(e),
                    None => Flow::Push(Value::Obj(dict)),
                }
            }
            MoreOp::BuildSet { len } => {
                let from = self.expr_stack.len() - len as usize;
                let set = self.alloc(ObjKind::Set {
                    table: Box::default(),
                    frozen: false,
                });
                let mut items = self.expr_stack.split_off(from).into_iter();
                while let Some(v) = items.next() {
                    if let Err(e) = self.set_add(set, v) {
                        self.heap.decref_all(items);
                        self.heap.decref_id(set);
                        return Err(e);
                    }
                }
                Flow::Push(Value::Obj(set))
            }
            MoreOp::ConstTuple(t) => {
                let key = std::ptr::from_ref(t) as usize;
                Flow::Push(crate::python::natives::cached_constant(self, key, |it| {
                    t.elts.iter().map(|x| it.eval(x)).collect()
                })?)
            }
            MoreOp::FStringStart { at } => {
                self.offset = at;
                let stack = &self.expr_stack;
                let index = TEXTS.with_borrow_mut(|texts| {
                    // Texts whose marker is gone were left by an error.
                    while let Some(&(at, _)) = texts.last()
                        && stack.get(at) != Some(&Value::Int(texts.len() as i64 - 1))
                    {
                        texts.pop();
                    }
                    texts.push((stack.len(), String::new()));
                    texts.len() - 1
                });
                Flow::Push(Value::Int(index as i64))
            }
            MoreOp::Text(text) => {
                let index = self.text_index();
                TEXTS.with_borrow_mut(|texts| texts[index].1.push_str(text));
                Flow::Next
            }
            MoreOp::FormatField(field) => {
                let v = self.expr_stack.pop().expect("a field's value");
                let piece = self.fstring_piece(v, field);
                self.heap.decref(v);
                let piece = piece?;
                let index = self.text_index();
                TEXTS.with_borrow_mut(|texts| texts[index].1.push_str(&piece));
                Flow::Next
            }
            MoreOp::FormatFieldSpec(field) => {
                let spec = self.expr_stack.pop().expect("a field's spec");
                let v = self.expr_stack.pop().expect("a field's value");
                let Value::Str(spec) = spec else {
                    unreachable!("a spec's ops leave its text")
                };
                let spec = self.names.name(spec).to_string();
                let piece = self.fstring_piece_with(v, field, &spec);
                self.heap.decref(v);
                let piece = piece?;
                let index = self.text_index();
                TEXTS.with_borrow_mut(|texts| texts[index].1.push_str(&piece));
                Flow::Next
            }
            MoreOp::FStringEnd => {
                let index = self.text_index();
                self.expr_stack.pop();
                let text = TEXTS.with_borrow_mut(|texts| {
                    let text = std::mem::take(&mut texts[index].1);
                    texts.truncate(index);
                    text
                });
                Flow::Push(Value::Str(self.names.intern(&text)))
            }
            MoreOp::Starred(op) => match self.run_starred(op)? {
                Some(v) => Flow::Push(v),
                None => Flow::Next,
            },
            MoreOp::StoreNamed { target } => {
                let v = *self.expr_stack.last().expect("a value");
                self.heap.incref(v);
                self.store(target, v)?;
                Flow::Next
            }
        })
    }

    /// The text index the f-string marker on top of the stack holds.
    fn text_index(&self) -> usize {
        match self.expr_stack.last() {
            Some(Value::Int(i)) => *i as usize,
            _ => unreachable!("an f-string's marker is on top"),
        }
    }
}
