//! Running compiled comprehensions (`compile_comp.rs`) on the interpreter's value stack.
//!
//! The container and each loop's iterable sit on the value stack; what else a running
//! comprehension holds (the outer bindings of its targets, its frame, each loop's index and
//! counted iterator) is a record here, found by the container's position. An error that
//! unwinds the stack ends the comprehensions begun above the base it unwinds to
//! ([`Interpreter::comp_unwound_to`]) in the tree walker's order: the temporaries and
//! iterables top first (each counted iterator freed with its iterable), then the targets'
//! outer bindings back, the frame left, the function freed, then the container.

use super::compile_comp::{Comp, CompOp};
use super::eval_expr_more::Flow;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::python::interp::{Interpreter, R};
use crate::python::scope::NameScope;
use crate::python::scope::symbol;
use ruff_python_ast::Expr;
use std::cell::RefCell;

/// One loop of a running comprehension: where its iterable sits on the value stack, the
/// index of its next item, whether `GET_ITER` counted an iterator for it.
struct Loop {
    at: usize,
    index: usize,
    hidden: bool,
}

/// A running comprehension.
struct Running {
    /// Where its container sits on the value stack.
    container: usize,
    /// The function object counted for it (≤ 3.11).
    function: bool,
    /// The size of that function's closure tuple (0: none).
    closure: usize,
    frame: Option<(u32, bool)>,
    /// The targets' outer bindings, owned, put back when it ends.
    saved: Vec<Saved>,
    loops: Vec<Loop>,
}

/// A target's outer binding while the comprehension runs.
enum Saved {
    /// The name's value, taken out of the enclosing scope.
    Value(Sym, Option<Value>),
    /// A loop variable that a nested function captures: the enclosing frame's cell for it,
    /// replaced by a fresh cell of the comprehension's (`MAKE_CELL` from 3.12, the
    /// comprehension function's cell before), so closures made in the comprehension keep
    /// its value after it ends.
    Cell(Sym, ObjId),
}

thread_local! {
    /// The running comprehensions, nested ones above outer ones.
    static RUNNING: RefCell<Vec<Running>> = const { RefCell::new(Vec::new()) };
}

impl<'a> Interpreter<'a> {
    pub(super) fn run_comp(&mut self, op: CompOp<'a>) -> R<Flow> {
        Ok(match op {
            CompOp::Begin { comp, closure } => {
                self.begin_comp(comp, closure);
                Flow::Next
            }
            CompOp::Iter => {
                let v = self.expr_stack.pop().expect("an iterable");
                let v = self.user_iter(v)?;
                let hidden = self.count_loop_iterator(v);
                self.expr_stack.push(v);
                let at = self.expr_stack.len() - 1;
                RUNNING.with_borrow_mut(|r| {
                    let running = r.last_mut().expect("a running comprehension");
                    running.loops.push(Loop {
                        at,
                        index: 0,
                        hidden,
                    });
                });
                Flow::Next
            }
            CompOp::Next { target, exit } => self.comp_next(target, exit)?,
            CompOp::Append { at } => {
                self.comp_append(at)?;
                Flow::Next
            }
            CompOp::End => {
                let running = RUNNING
                    .with_borrow_mut(|r| r.pop())
                    .expect("a running comprehension");
                self.end_comp(running);
                Flow::Next
            }
        })
    }

    /// Counts the function (≤ 3.11) and its closure tuple of `closure` cells (`BUILD_TUPLE`
    /// before `MAKE_FUNCTION`: from the tuple free list when it holds one), enters the frame
    /// (≤ 3.10), pushes the container and takes the targets' outer bindings (as the tree
    /// walker did, in its order).
    fn begin_comp(&mut self, comp: Comp<'a>, closure: u32) {
        let function = self.heap.profile.version.minor <= 11;
        let closure = if function { closure as usize } else { 0 };
        if closure > 0 && self.heap.count_tuple_allocation(closure) {
            self.collection_due();
        }
        if function {
            self.count_untracked_allocations(1);
        }
        let frame = self.enter_comprehension_frame(comp.node());
        let container = match comp {
            Comp::List(c) => {
                self.at(c);
                ObjKind::List(Vec::new())
            }
            Comp::Set(c) => {
                self.at(c);
                ObjKind::Set {
                    table: Box::default(),
                    frozen: false,
                }
            }
            Comp::Dict(c) => {
                self.at(c);
                ObjKind::Dict(Vec::new())
            }
        };
        let container = Value::Obj(self.alloc(container));
        let mut targets = Vec::new();
        for g in comp.generators() {
            target_names(&g.target, &mut targets, self);
        }
        let saved = targets.iter().map(|&n| self.shadow(n)).collect();
        let at = self.expr_stack.len();
        self.expr_stack.push(container);
        RUNNING.with_borrow_mut(|r| {
            // Records of stacks a panic abandoned.
            while r.last().is_some_and(|x| x.container >= at) {
                r.pop();
            }
            r.push(Running {
                container: at,
                function,
                closure,
                frame,
                saved,
                loops: Vec::new(),
            });
        });
    }

    /// `FOR_ITER` of the innermost loop: the next item into `target`, or the loop dropped
    /// (its iterable released, its counted iterator freed) and a jump to `exit`.
    fn comp_next(&mut self, target: &'a Expr, exit: u32) -> R<Flow> {
        let (at, index) = RUNNING.with_borrow(|r| {
            let l = r.last().and_then(|x| x.loops.last()).expect("a loop");
            (l.at, l.index)
        });
        let iterable = self.expr_stack[at];
        match self.next_item(iterable, index)? {
            Some(item) => {
                RUNNING.with_borrow_mut(|r| {
                    if let Some(l) = r.last_mut().and_then(|x| x.loops.last_mut()) {
                        l.index += 1;
                    }
                });
                if let Err(e) = self.budget_step() {
                    self.heap.decref(item);
                    return Err(e);
                }
                self.store(target, item)?;
                Ok(Flow::Next)
            }
            None => {
                let hidden = RUNNING.with_borrow_mut(|r| {
                    let l = r.last_mut().and_then(|x| x.loops.pop()).expect("a loop");
                    l.hidden
                });
                let v = self.expr_stack.pop().expect("the iterable");
                debug_assert_eq!(self.expr_stack.len(), at);
                self.heap.decref(v);
                if hidden {
                    self.free_loop_iterator();
                }
                Ok(Flow::Jump(exit))
            }
        }
    }

    /// `LIST_APPEND`, `SET_ADD`, `MAP_ADD`: the element (owned) into the container.
    fn comp_append(&mut self, at: u32) -> R<()> {
        let container = RUNNING.with_borrow(|r| r.last().expect("running").container);
        let Value::Obj(id) = self.expr_stack[container] else {
            unreachable!("a container")
        };
        let v = self.expr_stack.pop().expect("an element");
        match self.heap.kind(id) {
            ObjKind::List(_) => {
                if let ObjKind::List(items) = self.heap.kind_mut(id) {
                    items.push(v);
                }
            }
            ObjKind::Set { .. } => self.set_add(id, v)?,
            ObjKind::Dict(_) => {
                let k = self.expr_stack.pop().expect("a key");
                self.offset = at;
                if let Err(e) = self.check_dict_key(k) {
                    self.heap.decref(k);
                    self.heap.decref(v);
                    return Err(e);
                }
                self.dict_set(id, k, v);
            }
            _ => unreachable!("a comprehension's container"),
        }
        Ok(())
    }

    /// Puts the targets' outer bindings back (the comprehension's own released), leaves
    /// the frame and frees the function.
    fn end_comp(&mut self, running: Running) {
        for saved in running.saved {
            match saved {
                Saved::Value(name, old) => {
                    if let Some(inner) = self.take_name(name) {
                        self.heap.decref(inner);
                    }
                    if let Some(v) = old {
                        self.store_name(name, v);
                    }
                }
                Saved::Cell(name, outer) => {
                    let frame = self.frames.last_mut().expect("a frame");
                    if let Some(ours) = frame.cells.insert(name, outer) {
                        self.heap.decref_id(ours);
                    }
                }
            }
        }
        self.leave_comprehension_frame(running.frame);
        if running.closure > 0 {
            self.heap.count_tuple_deallocation(running.closure);
        }
        if running.function {
            self.uncount(1);
        }
    }

    /// Takes `name`'s outer binding for the comprehension (see [`Saved`]).
    fn shadow(&mut self, name: Sym) -> Saved {
        let frame = self.frames.last().expect("a frame");
        let cell = frame.class_namespaces.is_empty()
            && frame.code.is_some_and(|code| {
                self.codes.get(code).scopes.get(&name) == Some(&NameScope::Cell)
            });
        let outer = frame.cells.get(&name).copied();
        match outer {
            Some(outer) if cell => {
                let ours = self.alloc(ObjKind::Cell(None));
                let frame = self.frames.last_mut().expect("a frame");
                frame.cells.insert(name, ours);
                Saved::Cell(name, outer)
            }
            _ => Saved::Value(name, self.take_name(name)),
        }
    }

    /// The value stack is being unwound to `base` by an error: ends every comprehension
    /// begun above it (see the module doc), releasing what it holds there.
    pub(super) fn comp_unwound_to(&mut self, base: usize) {
        while let Some(running) = RUNNING.with_borrow_mut(|r| {
            r.last()
                .is_some_and(|x| x.container >= base)
                .then(|| r.pop())
                .flatten()
        }) {
            while self.expr_stack.len() > running.container + 1 {
                let v = self.expr_stack.pop().expect("checked above");
                let at = self.expr_stack.len();
                self.heap.decref(v);
                if running.loops.iter().any(|l| l.at == at && l.hidden) {
                    self.free_loop_iterator();
                }
            }
            let container = self.expr_stack.pop().expect("the container");
            self.end_comp(running);
            self.heap.decref(container);
        }
    }
}

/// Names a `for` target binds (`i`, `(k, v)`), in order.
fn target_names(target: &Expr, out: &mut Vec<Sym>, it: &mut Interpreter<'_>) {
    match target {
        Expr::Name(n) => out.push(symbol(&n.node_index, n.id.as_str(), &mut it.names)),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, out, it)),
        Expr::List(t) => t.elts.iter().for_each(|e| target_names(e, out, it)),
        _ => {}
    }
}
