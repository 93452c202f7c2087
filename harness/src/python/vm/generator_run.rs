//! The VM loop of generator and coroutine frames (`generators.rs` builds and resumes
//! them) and its exception routing: a `try` handler set up in the frame takes an exception
//! raised below it, the value stack is unwound to the handler's height, and the exception
//! is handled while the handler's code runs.

use super::compile::{Dest, Instr, NO_LOOP, VmCode};
use super::generators::{FrameState, Resume, Stop};
use super::plain::PlainExit;
use crate::heap::{ObjId, Value};
use crate::python::interp::{Exc, Flow, Interpreter, R};
use crate::python::scope::symbol;

/// A handler entry that marks an `except` clause (or a handler's `finally` or `__exit__`
/// call) running: the exception handled before it is saved on the value stack at the
/// entry's height, with its offset, as CPython's `PUSH_EXC_INFO` saves it.
pub(in crate::python) const CLAUSE: u32 = u32::MAX;

/// The `try` and `with` blocks among a frame's handler entries.
fn try_blocks(handlers: &[(u32, u32)]) -> u32 {
    handlers.iter().filter(|h| h.0 != CLAUSE).count() as u32
}

impl<'a> Interpreter<'a> {
    /// The VM loop with its exception routing: an exception raised inside a `try`/`finally`
    /// unwinds the value stack to the block's depth and runs the `finally` block, which
    /// re-raises it at its end. `resumed`: the frame stopped at a `yield` (the instruction at
    /// `ip`) and takes `how` there; otherwise it starts at `ip`.
    pub(super) fn run_vm(
        &mut self,
        vm: &VmCode<'a>,
        frame: FrameState<'_>,
        resumed: bool,
        how: Resume,
    ) -> R<Stop> {
        let FrameState {
            ip,
            stack,
            handlers,
            exc_state,
        } = frame;
        // The blocks the frame was suspended in are entered again.
        self.exc.handler_depth += try_blocks(handlers);
        let mut resume = Some(how);
        if !resumed && let Some(Resume::Send(v)) = resume.take() {
            self.heap.decref(v);
        }
        // A frame suspended while handling an exception handles it again (CPython pushes
        // the generator's `gi_exc_state` onto the thread's exception stack on resumption).
        let saved_exception = *exc_state;
        let mut pending_exc: Option<Box<Exc>> = exc_state.take().map(|exception| {
            // The saved references become the handling entry's and the in-flight error's.
            self.exc.handling.push(exception);
            Box::new(Exc::Raised {
                exception,
                tb_depth: Some(self.frames.len()),
                offset: self.offset,
            })
        });
        // `gen.throw(e)` into a frame suspended while handling an exception: from 3.9 that
        // exception becomes `e.__context__` (`_PyErr_ChainStackItem` in `_gen_throw`,
        // bpo-29587; 3.8 leaves it unset).
        if saved_exception.is_some()
            && self.heap.profile.version.minor >= 9
            && let Some(Resume::Throw(e)) = &resume
            && let Some(thrown) = Self::raised_exception(e)
        {
            self.set_context(thrown);
        }
        loop {
            match self.run_span(vm, ip, stack, resume.take(), &mut pending_exc, handlers) {
                Ok(stop) => {
                    self.exc.handler_depth -= try_blocks(handlers);
                    match stop {
                        Stop::Suspended(_) => *exc_state = self.suspend_handling(pending_exc),
                        Stop::Returned(_) => self.drop_pending(pending_exc),
                    }
                    return Ok(stop);
                }
                Err(e) => {
                    let Some(at) = handlers.iter().rposition(|h| h.0 != CLAUSE) else {
                        // Nothing here catches it: the clauses it leaves end.
                        while matches!(handlers.last(), Some(&(CLAUSE, _))) {
                            self.end_clause(stack, handlers, &mut pending_exc);
                        }
                        self.drop_pending(pending_exc);
                        return Err(e);
                    };
                    let e = self.unwinding(e);
                    // The clauses entered since the handler was set up are left.
                    while handlers.len() > at + 1 {
                        self.end_clause(stack, handlers, &mut pending_exc);
                    }
                    let (handler, depth) = handlers.pop().expect("found above");
                    self.exc.handler_depth -= 1;
                    let Some(x) = Self::raised_exception(&e) else {
                        // Not a Python exception: the run stops here.
                        self.drop_pending(pending_exc);
                        self.exc.handler_depth -= try_blocks(handlers);
                        handlers.clear();
                        return Err(e);
                    };
                    let unwound: Vec<Value> = stack.drain(depth as usize..).collect();
                    self.heap.decref_all(unwound);
                    // `PUSH_EXC_INFO`: the exception handled until now is saved under the
                    // new one (with where it was raised), and handled again when the
                    // clause ends.
                    let (saved, offset) = match pending_exc.take().map(|old| *old) {
                        Some(Exc::Raised {
                            exception, offset, ..
                        }) => {
                            self.end_handling();
                            (Value::Obj(exception), offset)
                        }
                        _ => (Value::None, 0),
                    };
                    stack.push(saved);
                    stack.push(Value::Int(i64::from(offset)));
                    handlers.push((CLAUSE, depth));
                    self.begin_handling(x);
                    pending_exc = Some(e);
                    *ip = handler;
                }
            }
        }
    }

    /// An `except` clause (or a handler's `finally` or `__exit__` call) ends: its exception
    /// is handled no more, and the one handled before it is handled again.
    fn end_clause(
        &mut self,
        stack: &mut Vec<Value>,
        handlers: &mut Vec<(u32, u32)>,
        pending: &mut Option<Box<Exc>>,
    ) {
        if let Some(e) = pending.take() {
            self.end_handling();
            self.discard(e);
        }
        self.restore_saved(stack, handlers, pending);
    }

    /// `POP_EXCEPT`: the clause's entry goes and the exception saved under it (if any) is
    /// handled again.
    fn restore_saved(
        &mut self,
        stack: &mut Vec<Value>,
        handlers: &mut Vec<(u32, u32)>,
        pending: &mut Option<Box<Exc>>,
    ) {
        let Some(&(CLAUSE, depth)) = handlers.last() else {
            return;
        };
        handlers.pop();
        let above: Vec<Value> = stack.drain(depth as usize + 2..).collect();
        self.heap.decref_all(above);
        let offset = match stack.pop() {
            Some(Value::Int(o)) => o as u32,
            _ => unreachable!("a clause's entry saves an offset"),
        };
        if let Some(Value::Obj(exception)) = stack.pop() {
            // The stack's reference becomes the in-flight error's.
            self.begin_handling(exception);
            *pending = Some(Box::new(Exc::Raised {
                exception,
                tb_depth: Some(self.frames.len()),
                offset,
            }));
        }
    }

    /// The frame suspends while handling `pending`: the exception leaves the thread's
    /// exception stack (the caller sees its own again) and its two references (the handling
    /// entry's and the in-flight error's) go to the generator.
    fn suspend_handling(&mut self, pending: Option<Box<Exc>>) -> Option<ObjId> {
        let pending = pending?;
        let exception = Self::raised_exception(&pending)?;
        match self.exc.handling.iter().rposition(|&e| e == exception) {
            Some(at) => {
                self.exc.handling.remove(at);
            }
            None => self.heap.incref(Value::Obj(exception)),
        }
        // The in-flight error's reference is kept (dropping the box releases nothing).
        drop(pending);
        Some(exception)
    }

    /// The frame ends while handling `pending` (a `return` or an exception leaving an
    /// `except` or `finally` block): its handling ends and its reference goes.
    fn drop_pending(&mut self, pending: Option<Box<Exc>>) {
        if let Some(e) = pending {
            self.end_handling();
            self.discard(e);
        }
    }

    /// `except E as name:` ends with `name = None; del name`.
    fn delete_clause_name(&mut self, name: Option<&ruff_python_ast::Identifier>) {
        if let Some(n) = name {
            let sym = symbol(&n.node_index, n.as_str(), &mut self.names);
            if let Some(v) = self.take_name(sym) {
                self.heap.decref(v);
            }
        }
    }

    /// A saved [`GeneratorData::exc_state`] that will not be handled again.
    pub(super) fn drop_exc_state(&mut self, exc_state: Option<ObjId>) {
        if let Some(e) = exc_state {
            self.heap.decref_id(e);
            self.heap.decref_id(e);
        }
    }

    /// Runs instructions from `ip` until the frame suspends or returns, or an exception is
    /// raised (`ip` then points at the raising instruction).
    fn run_span(
        &mut self,
        vm: &VmCode<'a>,
        ip: &mut u32,
        stack: &mut Vec<Value>,
        resume: Option<Resume>,
        pending_exc: &mut Option<Box<Exc>>,
        handlers: &mut Vec<(u32, u32)>,
    ) -> R<Stop> {
        // The value sent into a `yield from` step on this pass.
        let mut pending = resume;
        if pending.is_some()
            && let Instr::Yield { target, at, .. } = vm.instrs[*ip as usize]
        {
            self.offset = at;
            match pending.take() {
                Some(Resume::Send(v)) => match target {
                    Dest::Store(t) => self.store(t, v)?,
                    Dest::Push => stack.push(v),
                    Dest::Drop | Dest::Return => self.heap.decref(v),
                },
                Some(Resume::Throw(e)) => return Err(e),
                None => {}
            }
            *ip += 1;
        }
        let mut ip_local = *ip;
        let base = self.vm_substitutes.len();
        let result = self.run_instructions(
            vm,
            &mut ip_local,
            stack,
            &mut pending,
            pending_exc,
            handlers,
        );
        // Bindings the last instruction did not take (it raised or suspended first).
        self.clear_substitutes(base);
        *ip = ip_local;
        result
    }

    fn run_instructions(
        &mut self,
        vm: &VmCode<'a>,
        ip_out: &mut u32,
        stack: &mut Vec<Value>,
        pending: &mut Option<Resume>,
        pending_exc: &mut Option<Box<Exc>>,
        handlers: &mut Vec<(u32, u32)>,
    ) -> R<Stop> {
        let mut ip = *ip_out;
        let base = self.vm_substitutes.len();
        // Bindings made by the previous instruction (`Bind`), for this one only.
        let mut bound = false;
        loop {
            if bound {
                bound = false;
            } else if self.vm_substitutes.len() > base {
                self.clear_substitutes(base);
            }
            match vm.instrs[ip as usize] {
                Instr::Push(e) => {
                    let v = self.eval(e)?;
                    stack.push(v);
                    ip += 1;
                }
                Instr::Bind { start, len } => {
                    let values = stack.split_off(stack.len() - len as usize);
                    let nodes = &vm.bound[start as usize..(start + len) as usize];
                    self.bind_substitutes(nodes, values);
                    bound = true;
                    ip += 1;
                }
                Instr::Exec { stmt, exit, head } => match self.exec(stmt)? {
                    Flow::Normal => ip += 1,
                    Flow::Return(v) => {
                        *ip_out = ip;
                        return Ok(Stop::Returned(v));
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
                Instr::Yield { value, at, .. } => {
                    self.offset = at;
                    let v = match value {
                        Some(e) => self.eval(e)?,
                        None => Value::None,
                    };
                    self.async_gen_yielded = vm.async_generator;
                    {
                        *ip_out = ip;
                        return Ok(Stop::Suspended(v));
                    };
                }
                Instr::GetAwaitable(e) => {
                    let awaitable = self.eval(e)?;
                    let iterator = self.awaitable_iterator(awaitable)?;
                    stack.push(iterator);
                    stack.push(Value::Int(0));
                    ip += 1;
                }
                Instr::YieldFromStart(e) => {
                    let iterable = self.eval(e)?;
                    stack.push(iterable);
                    stack.push(Value::Int(0));
                    ip += 1;
                }
                Instr::GetIter(e) => {
                    let iterable = self.eval(e)?;
                    let iterable = self.user_iter(iterable)?;
                    let iterable = self.hidden_loop_iterator(iterable);
                    self.claim_iteration_loop(crate::python::measured_loop::key_of(e), iterable);
                    stack.push(iterable);
                    stack.push(Value::Int(0));
                    ip += 1;
                }
                Instr::YieldFromStep { target, at } => {
                    self.offset = at;
                    let how = pending.take().unwrap_or(Resume::Send(Value::None));
                    match self.delegate(stack, how)? {
                        Some(v) => {
                            *ip_out = ip;
                            return Ok(Stop::Suspended(v));
                        }
                        None => {
                            let result = stack.pop().unwrap_or(Value::None);
                            // The statement ends: storages whose last tensor died go now.
                            self.release_dropped_storages(None);
                            match target {
                                Dest::Store(t) => self.store(t, result)?,
                                Dest::Drop => self.heap.decref(result),
                                Dest::Push => stack.push(result),
                                Dest::Return => {
                                    *ip_out = ip;
                                    return Ok(Stop::Returned(result));
                                }
                            }
                            ip += 1;
                        }
                    }
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
                Instr::ForIter { target, exit } => {
                    let n = stack.len();
                    let (iterable, Value::Int(i)) = (stack[n - 2], stack[n - 1]) else {
                        unreachable!("GetIter pushes an iterable and its position")
                    };
                    let marks = self.vm_iteration_loop == Some(iterable);
                    if marks && i > 0 {
                        self.close_iteration(true);
                    }
                    match self.next_item(iterable, i as usize)? {
                        Some(v) => {
                            stack[n - 1] = Value::Int(i + 1);
                            if marks {
                                self.open_iteration(i as u32);
                            }
                            self.store(target, v)?;
                            ip += 1;
                        }
                        None => ip = exit,
                    }
                }
                Instr::PopIter => {
                    stack.pop();
                    if let Some(v) = stack.pop() {
                        self.release_iteration_loop(v);
                        self.heap.decref(v);
                    }
                    ip += 1;
                }
                Instr::SetupFinally { handler } => {
                    handlers.push((handler, stack.len() as u32));
                    self.exc.handler_depth += 1;
                    ip += 1;
                }
                Instr::PopFinally => {
                    handlers.pop();
                    self.exc.handler_depth -= 1;
                    ip += 1;
                }
                Instr::EndFinally => {
                    if let Some(e) = pending_exc.take() {
                        self.end_handling();
                        self.restore_saved(stack, handlers, pending_exc);
                        *ip_out = ip;
                        return Err(e);
                    }
                    ip += 1;
                }
                Instr::MatchExcept { class, name, next } => {
                    let Some(exception) = pending_exc.as_deref().and_then(Self::raised_exception)
                    else {
                        unreachable!("a handler is entered with the exception it handles")
                    };
                    let matched = match class {
                        None => true,
                        Some(class) => {
                            let spec = self.eval(class)?;
                            self.at(class);
                            let m = self.exception_matches(exception, spec);
                            self.heap.decref(spec);
                            m?
                        }
                    };
                    if !matched {
                        ip = next;
                        continue;
                    }
                    if let Some(n) = name {
                        let sym = symbol(&n.node_index, n.as_str(), &mut self.names);
                        self.heap.incref(Value::Obj(exception));
                        self.store_name(sym, Value::Obj(exception));
                    }
                    ip += 1;
                }
                Instr::EndExcept { name } => {
                    self.end_clause(stack, handlers, pending_exc);
                    self.delete_clause_name(name);
                    ip += 1;
                }
                Instr::WithEnter(item) => {
                    self.at(&item.context_expr);
                    let manager = self.eval(&item.context_expr)?;
                    let (exit, entered) = self.vm_enter_with(manager)?;
                    stack.push(exit);
                    match &item.optional_vars {
                        Some(target) => self.store(target, entered)?,
                        None => self.heap.decref(entered),
                    }
                    ip += 1;
                }
                Instr::WithExit { under } => {
                    // A `return` leaving the block keeps its value above the exit.
                    let at = stack.len() - 1 - under as usize;
                    let exit = stack.remove(at);
                    self.vm_exit_with(exit, None)?;
                    ip += 1;
                }
                Instr::WithExitExc | Instr::AsyncWithExitExc => {
                    // Under the clause's saved exception and offset; its slot goes when the
                    // clause ends.
                    let n = stack.len();
                    let exit = std::mem::replace(&mut stack[n - 3], Value::None);
                    let exception = pending_exc.as_deref().and_then(Self::raised_exception);
                    let exited = if matches!(vm.instrs[ip as usize], Instr::AsyncWithExitExc) {
                        self.vm_async_exit_exc(exit, exception)
                    } else {
                        self.vm_exit_with(exit, exception)
                    };
                    let suppressed = match exited {
                        Ok(s) => s,
                        Err(err) => {
                            self.end_clause(stack, handlers, pending_exc);
                            stack.pop();
                            *ip_out = ip;
                            return Err(err);
                        }
                    };
                    if suppressed {
                        self.end_clause(stack, handlers, pending_exc);
                        stack.pop();
                    } else if let Some(e) = pending_exc.take() {
                        self.end_handling();
                        self.restore_saved(stack, handlers, pending_exc);
                        stack.pop();
                        *ip_out = ip;
                        return Err(e);
                    }
                    ip += 1;
                }
                Instr::AsyncWithEnter(item) => {
                    self.at(&item.context_expr);
                    let manager = self.eval(&item.context_expr)?;
                    self.vm_async_with_enter(manager, stack)?;
                    ip += 1;
                }
                Instr::AsyncWithExit => {
                    self.vm_async_with_exit(stack, 0)?;
                    ip += 1;
                }
                Instr::AsyncWithExitUnder { under } => {
                    self.vm_async_with_exit(stack, under as usize)?;
                    ip += 1;
                }
                Instr::GetAIter(e) => {
                    let iterable = self.eval(e)?;
                    let iterator = self.vm_get_aiter(iterable)?;
                    stack.push(iterator);
                    ip += 1;
                }
                Instr::GetANext => {
                    self.vm_get_anext(stack)?;
                    ip += 1;
                }
                Instr::AnextStep { target, exit, at } => {
                    self.offset = at;
                    let how = pending.take().unwrap_or(Resume::Send(Value::None));
                    match self.delegate(stack, how) {
                        Ok(Some(v)) => {
                            *ip_out = ip;
                            return Ok(Stop::Suspended(v));
                        }
                        Ok(None) => {
                            let item = stack.pop().unwrap_or(Value::None);
                            self.store(target, item)?;
                            // The previous item's storage goes when the target is rebound.
                            self.release_dropped_storages(None);
                            ip += 1;
                        }
                        Err(e) => {
                            self.anext_exhausted(e, stack)?;
                            ip = exit;
                        }
                    }
                }
                Instr::PopTop => {
                    if let Some(v) = stack.pop() {
                        self.heap.decref(v);
                    }
                    ip += 1;
                }
                Instr::PlainRegion { end } => match self.run_plain_span(vm, ip + 1, end)? {
                    PlainExit::Return(v) => {
                        *ip_out = ip;
                        return Ok(Stop::Returned(v));
                    }
                    PlainExit::At(next) => ip = next,
                    PlainExit::Carry(v, next) => {
                        stack.push(v);
                        ip = next;
                    }
                },
                Instr::LeaveClause { name, under } => {
                    let kept = stack.split_off(stack.len() - under as usize);
                    self.end_clause(stack, handlers, pending_exc);
                    stack.extend(kept);
                    self.delete_clause_name(name);
                    ip += 1;
                }
                Instr::DropValue { under } => {
                    // A way out of a `finally` body that a `return` runs: its value goes.
                    let at = stack.len() - 1 - under as usize;
                    let v = stack.remove(at);
                    self.heap.decref(v);
                    ip += 1;
                }
                Instr::ReturnTop => {
                    let v = stack.pop().expect("the return value was pushed");
                    *ip_out = ip;
                    return Ok(Stop::Returned(v));
                }
                Instr::StmtStart(_)
                | Instr::StmtEnd
                | Instr::LoopIter { .. }
                | Instr::LoopStart { .. }
                | Instr::LoopNext { .. }
                | Instr::WhileTest { .. }
                | Instr::LoopEnd { .. }
                | Instr::ExprStmt(..)
                | Instr::AssignStmt(..)
                | Instr::ReturnStmt(..)
                | Instr::RaiseStmt(..)
                | Instr::ReturnValue(..)
                | Instr::ExitRegion { .. }
                | Instr::PopExcept { .. }
                | Instr::SetupWith { .. }
                | Instr::Compiled(_) => {
                    unreachable!("plain instructions run inside a plain region")
                }
                Instr::Return(value) => {
                    let v = match value {
                        Some(e) => self.eval(e)?,
                        None => Value::None,
                    };
                    {
                        *ip_out = ip;
                        return Ok(Stop::Returned(v));
                    };
                }
            }
        }
    }
}
