//! The VM loop of plain bodies: a function or method that does not suspend runs its
//! compiled body on a frame that lives for the call only, and the module body runs the same
//! way. Code is compiled once per code object (`Interpreter::plain_code`).
//!
//! Loops keep their state (iterable, position, whether they mark the measured iterations)
//! on the interpreter's loop stack, so a call allocates nothing for them. The order of
//! what a loop does matches the tree walker it replaces: the back edge's eval-breaker
//! check (3.12+), then the pass's iteration mark closes, then the next item is taken;
//! `break` and `return` close the open pass; an exception leaves it to the run's end
//! (`close_iteration(false)`). One difference from the walker, where it was wrong: an
//! exhausted loop releases its iterator before its `else` block, as CPython's `FOR_ITER`
//! does (the walker released it after).

use super::compile::{Instr, NO_LOOP, VmCode};
use super::eval_expr::Step;
use super::plain_try::{PlainBase, PlainSlot};
use crate::heap::Value;
use crate::python::interp::{Flow, Interpreter, R};
use crate::python::measured_loop::key_of;
use std::rc::Rc;

/// How a run of plain instructions ended.
pub(super) enum PlainExit {
    /// The body returned this value (owned).
    Return(Value),
    /// Control left the region for this instruction.
    At(u32),
    /// A `return` left the region for this instruction with its value (owned), to leave
    /// blocks of the suspending body around the region (`Instr::ExitRegion`).
    Carry(Value, u32),
}

/// A running plain loop.
pub(in crate::python) struct PlainLoop {
    /// A `for` loop's iterable (owned); `None` for `while`.
    iterable: Option<Value>,
    /// Whether CPython's hidden iterator was counted ([`Interpreter::count_loop_iterator`]).
    counted: bool,
    /// Whether its passes are the measured iterations.
    marks: bool,
    /// Whether an iteration mark is open.
    open: bool,
    /// Passes begun (the next item's index).
    passes: usize,
}

impl<'a> Interpreter<'a> {
    /// The compiled body of plain function `code`, compiled on its first call.
    pub(in crate::python) fn plain_code(
        &mut self,
        code: u32,
        body: &'a [ruff_python_ast::Stmt],
    ) -> R<Rc<VmCode<'a>>> {
        let index = code as usize;
        if let Some(Some(c)) = self.plain_codes.get(index) {
            return Ok(Rc::clone(c));
        }
        let compiled = match super::compile_plain::compile_plain(body) {
            Ok(mut c) => {
                super::compile_expr::resolve_names(&mut c.exprs, self.codes.get(code));
                super::store_fast::resolve_stores(&mut c, self.codes.get(code));
                Rc::new(c)
            }
            Err(refusal) => {
                self.offset = refusal.offset;
                return self.unsupported(refusal.construct);
            }
        };
        if self.plain_codes.len() <= index {
            self.plain_codes.resize(index + 1, None);
        }
        self.plain_codes[index] = Some(Rc::clone(&compiled));
        Ok(compiled)
    }

    /// Runs a class statement's body (the class namespace is the innermost frame's, so its
    /// names bind there), compiled on its first run.
    pub(in crate::python) fn run_class_body(
        &mut self,
        c: &'a ruff_python_ast::StmtClassDef,
    ) -> R<()> {
        let key = c as *const _ as usize;
        let vm = match self.class_codes.get(&key) {
            Some(vm) => Rc::clone(vm),
            None => match super::compile_plain::compile_plain(&c.body) {
                Ok(vm) => {
                    let vm = Rc::new(vm);
                    self.class_codes.insert(key, Rc::clone(&vm));
                    vm
                }
                Err(refusal) => {
                    self.offset = refusal.offset;
                    return self.unsupported(refusal.construct);
                }
            },
        };
        let v = self.run_plain(&vm)?;
        self.heap.decref(v);
        Ok(())
    }

    /// Runs the module body.
    pub(in crate::python) fn run_module_body(
        &mut self,
        body: &'a [ruff_python_ast::Stmt],
    ) -> R<()> {
        let vm = match super::compile_plain::compile_plain(body) {
            Ok(c) => c,
            Err(refusal) => {
                self.offset = refusal.offset;
                return self.unsupported(refusal.construct);
            }
        };
        let v = self.run_plain(&vm)?;
        self.heap.decref(v);
        Ok(())
    }

    /// Runs a plain body to its end; returns its return value (owned). An exception
    /// raised inside a `try` goes to the innermost handler (`plain_try.rs`), and the run
    /// goes on there.
    pub(in crate::python) fn run_plain(&mut self, vm: &VmCode<'a>) -> R<Value> {
        match self.run_plain_span(vm, 0, vm.instrs.len() as u32)? {
            PlainExit::Return(v) => Ok(v),
            PlainExit::At(_) | PlainExit::Carry(..) => {
                unreachable!("a plain body ends with a return")
            }
        }
    }

    /// Runs the plain instructions `start..end` (a whole plain body, or a plain region of a
    /// suspending body) until they return or control leaves them.
    pub(super) fn run_plain_span(&mut self, vm: &VmCode<'a>, start: u32, end: u32) -> R<PlainExit> {
        let base = PlainBase {
            loops: self.plain_loops.len(),
            slots: self.plain_slots.len(),
            blocks: self.plain_blocks.len(),
        };
        let mut ip = start;
        loop {
            match self.run_plain_instructions(vm, base.loops, ip, start..end) {
                Ok(exit) => {
                    debug_assert_eq!(self.plain_slots.len(), base.slots);
                    debug_assert_eq!(self.plain_blocks.len(), base.blocks);
                    return Ok(exit);
                }
                Err(e) => match self.plain_catch(e, &base) {
                    Ok(handler) => ip = handler,
                    Err(e) => {
                        self.plain_unwind_all(&base);
                        return Err(e);
                    }
                },
            }
        }
    }

    fn run_plain_instructions(
        &mut self,
        vm: &VmCode<'a>,
        base: usize,
        start: u32,
        span: std::ops::Range<u32>,
    ) -> R<PlainExit> {
        let mut ip: u32 = start;
        loop {
            // Control left a plain region (its end, or a jump to a loop of the suspending
            // body around it); a whole body never leaves its span.
            if ip.wrapping_sub(span.start) >= span.end - span.start {
                return Ok(PlainExit::At(ip));
            }
            match vm.instrs[ip as usize] {
                Instr::Exec { stmt, exit, head } => match self.exec_leaf(stmt)? {
                    Flow::Normal => ip += 1,
                    Flow::Return(v) if self.plain_loops.len() == base => {
                        return Ok(PlainExit::Return(v));
                    }
                    Flow::Return(v) => {
                        return self.return_from_loops(v, base).map(PlainExit::Return);
                    }
                    Flow::Break if exit != NO_LOOP => ip = exit,
                    Flow::Continue if head != NO_LOOP => {
                        self.eval_breaker();
                        ip = head;
                    }
                    Flow::Break | Flow::Continue => {
                        return self.error("SyntaxError: 'break' outside loop");
                    }
                },
                Instr::ExprStmt(stmt, e) => {
                    self.statement_start(stmt)?;
                    let v = self.eval(e)?;
                    self.heap.decref(v);
                    self.statement_end()?;
                    ip += 1;
                }
                Instr::AssignStmt(stmt, a) => {
                    self.statement_start(stmt)?;
                    self.exec_assign(a)?;
                    self.statement_end()?;
                    ip += 1;
                }
                Instr::ReturnStmt(stmt, value) => {
                    self.statement_start(stmt)?;
                    let v = match value {
                        Some(e) => self.eval(e)?,
                        None => Value::None,
                    };
                    if let Err(e) = self.statement_end() {
                        self.heap.decref(v);
                        return Err(e);
                    }
                    if self.plain_loops.len() == base {
                        return Ok(PlainExit::Return(v));
                    }
                    return self.return_from_loops(v, base).map(PlainExit::Return);
                }
                Instr::StmtStart(stmt) => {
                    self.statement_start(stmt)?;
                    ip += 1;
                }
                Instr::StmtEnd => {
                    self.statement_end()?;
                    ip += 1;
                }
                Instr::JumpIfFalse(test, target) => {
                    ip = if self.eval_truth(test)? {
                        ip + 1
                    } else {
                        target
                    };
                }
                Instr::Jump(target) => {
                    // A backward jump is a loop's back edge: an eval-breaker check.
                    if target <= ip {
                        self.eval_breaker();
                    }
                    ip = target;
                }
                Instr::LoopIter { iter, depth } => {
                    let iterable = self.eval(iter)?;
                    let iterable = self.user_iter(iterable)?;
                    let counted = self.count_loop_iterator(iterable);
                    self.begin_plain_loop(Some(iterable), counted, key_of(iter), base, depth);
                    ip += 1;
                }
                Instr::LoopStart { test, depth } => {
                    self.begin_plain_loop(None, false, key_of(test), base, depth);
                    ip += 1;
                }
                Instr::LoopNext {
                    target,
                    exit,
                    depth,
                } => match self.plain_loop_next(base, depth)? {
                    Some(item) => {
                        self.store(target, item)?;
                        ip += 1;
                    }
                    None => ip = exit,
                },
                Instr::WhileTest { test, exit, depth } => {
                    let at = self.plain_loop_pass_ends(base, depth);
                    self.at(test);
                    if self.eval_truth(test)? {
                        self.plain_pass_begins(at);
                        ip += 1;
                    } else {
                        ip = exit;
                    }
                }
                Instr::LoopEnd { depth } => {
                    self.finish_inner_loops(base + depth as usize + 1);
                    self.end_plain_loop(true);
                    // What the loop released is finalized before the `else` block runs.
                    self.statement_end()?;
                    ip += 1;
                }
                Instr::Return(None) => return Ok(PlainExit::Return(Value::None)),
                Instr::RaiseStmt(stmt, r) => {
                    self.statement_start(stmt)?;
                    self.exec_raise(r)?;
                    self.statement_end()?;
                    ip += 1;
                }
                Instr::SetupFinally { handler } => {
                    self.plain_setup(handler, true);
                    ip += 1;
                }
                Instr::PopFinally => {
                    self.plain_pop_block();
                    ip += 1;
                }
                Instr::WithEnter(item) => {
                    self.plain_with_enter(item)?;
                    ip += 1;
                }
                Instr::SetupWith { handler } => {
                    self.plain_setup_with(handler);
                    ip += 1;
                }
                Instr::WithExit { under } => {
                    self.plain_with_exit(under)?;
                    ip += 1;
                }
                Instr::WithExitExc => {
                    self.plain_with_exit_exc()?;
                    ip += 1;
                }
                Instr::MatchExcept { class, name, next } => {
                    ip = if self.plain_match_except(class, name)? {
                        ip + 1
                    } else {
                        next
                    };
                }
                Instr::EndExcept { .. } => {
                    self.pop_handled(0);
                    ip += 1;
                }
                Instr::PopExcept { under } => {
                    self.pop_handled(under);
                    ip += 1;
                }
                Instr::EndFinally => return Err(self.reraise_handled()),
                Instr::ReturnValue(stmt, value) => {
                    self.statement_start(stmt)?;
                    let v = match value {
                        Some(e) => self.eval(e)?,
                        None => Value::None,
                    };
                    if let Err(e) = self.statement_end() {
                        self.heap.decref(v);
                        return Err(e);
                    }
                    self.plain_slots.push(PlainSlot::Value(v));
                    ip += 1;
                }
                Instr::DropValue { under } => {
                    self.drop_kept_value(under);
                    ip += 1;
                }
                Instr::ReturnTop => return Ok(PlainExit::Return(self.pop_return_value())),
                Instr::ExitRegion { to } => {
                    return Ok(PlainExit::Carry(self.pop_return_value(), to));
                }
                Instr::Compiled(c) => match self.run_compiled_instr(vm, c, ip, base)? {
                    Step::Next(next) => ip = next,
                    Step::Return(v) if self.plain_loops.len() == base => {
                        return Ok(PlainExit::Return(v));
                    }
                    Step::Return(v) => {
                        return self.return_from_loops(v, base).map(PlainExit::Return);
                    }
                },
                _ => unreachable!("a plain body compiles no suspension point"),
            }
        }
    }

    pub(super) fn begin_plain_loop(
        &mut self,
        iterable: Option<Value>,
        counted: bool,
        key: crate::python::measured_loop::LoopKey,
        base: usize,
        depth: u32,
    ) {
        self.finish_inner_loops(base + depth as usize);
        let marks = self.claims_iteration_loop(key);
        if marks {
            self.iteration_loop_seen = true;
        }
        self.loop_depth += 1;
        self.plain_loops.push(PlainLoop {
            iterable,
            counted,
            marks,
            open: false,
            passes: 0,
        });
    }

    /// The head of the loop at `depth`: loops entered inside it and left without their
    /// end (a `continue` of this loop from an inner loop's `else`) end, and the pass that
    /// ran closes its mark. Returns the loop's index on the loop stack.
    pub(super) fn plain_loop_pass_ends(&mut self, base: usize, depth: u32) -> usize {
        let at = base + depth as usize;
        self.finish_inner_loops(at + 1);
        let l = &mut self.plain_loops[at];
        if l.marks && l.open {
            l.open = false;
            self.close_iteration(true);
        }
        at
    }

    /// A `for` loop's head (`FOR_ITER`): the pass that ran ends, and the next item (a new
    /// reference) begins the next pass; `None` when the iterable is exhausted.
    pub(super) fn plain_loop_next(&mut self, base: usize, depth: u32) -> R<Option<Value>> {
        let at = self.plain_loop_pass_ends(base, depth);
        let (iterable, index) = match &self.plain_loops[at] {
            PlainLoop {
                iterable: Some(v),
                passes,
                ..
            } => (*v, *passes),
            _ => unreachable!("LoopIter enters a `for` loop with its iterable"),
        };
        let item = self.next_item(iterable, index)?;
        if item.is_some() {
            self.plain_pass_begins(at);
        }
        Ok(item)
    }

    pub(super) fn plain_pass_begins(&mut self, at: usize) {
        let l = &mut self.plain_loops[at];
        let pass = l.passes;
        l.passes += 1;
        if l.marks {
            l.open = true;
            self.open_iteration(pass as u32);
        }
    }

    /// Ends the loops above `len` on the loop stack, innermost first, as `break` does.
    fn finish_inner_loops(&mut self, len: usize) {
        while self.plain_loops.len() > len {
            self.end_plain_loop(true);
        }
    }

    /// Ends the innermost loop: `completed` closes an open pass as completed (`break`,
    /// `return`); its iterable (and hidden iterator) go.
    pub(super) fn end_plain_loop(&mut self, completed: bool) {
        let l = self.plain_loops.pop().expect("a loop is running");
        if completed && l.marks && l.open {
            self.close_iteration(true);
        }
        self.loop_depth -= 1;
        if let Some(v) = l.iterable {
            self.heap.decref(v);
        }
        if l.counted {
            self.free_loop_iterator();
        }
        if l.marks && self.recorder.iteration().is_some() {
            self.close_iteration(false);
        }
    }

    /// `return` inside loops: each ends (its open pass completed) and, as a statement that
    /// ends, runs the per-statement work.
    fn return_from_loops(&mut self, v: Value, base: usize) -> R<Value> {
        while self.plain_loops.len() > base {
            self.end_plain_loop(true);
            if let Err(e) = self.statement_end() {
                self.heap.decref(v);
                return Err(e);
            }
        }
        Ok(v)
    }
}
