//! Running compiled expressions (`compile_expr.rs`) on the interpreter's value stack, and
//! the plain instructions whose operands they are ([`Compiled`]).

use super::compile::VmCode;
use super::compile_expr::{Compiled, ExprCode, Op};
use crate::heap::{ObjKind, Sym, Value};
use crate::python::interp::{Interpreter, MAX_EVAL_DEPTH, R};
use crate::python::measured_loop::key_of;
use crate::python::scope::symbol;
use ruff_python_ast as ast;
use std::sync::atomic::{AtomicU64, Ordering};

static RUN: AtomicU64 = AtomicU64::new(0);

/// How many expressions have run compiled (not through the tree evaluator) in this
/// process: lets a test tell that an expression ran on the VM.
pub fn expressions_run_compiled() -> u64 {
    RUN.load(Ordering::Relaxed)
}

/// Where a compiled plain instruction sends control.
pub(super) enum Step {
    Next(u32),
    /// A `return`: the value (owned).
    Return(Value),
}

impl<'a> Interpreter<'a> {
    /// Evaluates a compiled expression to a new reference. On an error the temporaries it
    /// pushed are released, top first, before the error goes on.
    pub(super) fn eval_compiled(&mut self, vm: &VmCode<'a>, code: ExprCode<'a>) -> R<Value> {
        // Values bound to split nodes (`split.rs`) are found by the tree evaluator only.
        if !self.vm_substitutes.is_empty() {
            return self.eval(code.root);
        }
        RUN.fetch_add(1, Ordering::Relaxed);
        self.eval_depth += 1;
        let base = self.expr_stack.len();
        let result = if self.eval_depth > MAX_EVAL_DEPTH {
            self.at(code.root);
            self.unsupported(format!(
                "expressions and calls nested deeper than {MAX_EVAL_DEPTH} levels"
            ))
        } else {
            self.run_ops(vm, code)
        };
        self.eval_depth -= 1;
        match result {
            Ok(()) => {
                debug_assert_eq!(self.expr_stack.len(), base + 1);
                Ok(self
                    .expr_stack
                    .pop()
                    .expect("an expression leaves its value"))
            }
            Err(e) => {
                self.comp_unwound_to(base);
                super::eval_expr_starred::unwound_to(base);
                super::eval_call_ex::unwound_to(base);
                while self.expr_stack.len() > base {
                    let v = self.expr_stack.pop().expect("checked above");
                    self.heap.decref(v);
                }
                Err(e)
            }
        }
    }

    fn pop(&mut self) -> Value {
        self.expr_stack.pop().expect("an operand is on the stack")
    }

    pub(super) fn run_ops(&mut self, vm: &VmCode<'a>, code: ExprCode<'a>) -> R<()> {
        let mut pc = code.start;
        while pc < code.end {
            self.run_due_finalizers()?; // finalizers queued by the last op's decrefs (`pep442.rs`)
            let op = vm.exprs[pc as usize];
            pc += 1;
            let v = match op {
                Op::EvalTree { e, depth } => {
                    super::eval_expr_more::count_fallback();
                    self.eval_depth += depth;
                    let v = self.eval(e);
                    self.eval_depth -= depth;
                    v?
                }
                Op::Const(v) => v,
                Op::LoadName { name, at } => {
                    self.offset = at;
                    self.load_name(name)?
                }
                Op::LoadFast { slot, name, at } => {
                    self.offset = at;
                    self.load_fast(slot, name)?
                }
                Op::LoadDeref { name, at } => {
                    self.offset = at;
                    self.load_deref(name)?
                }
                Op::LoadGlobal { name, at } => {
                    self.offset = at;
                    self.load_global(name)?
                }
                Op::LoadAttr { attr, at } => {
                    let obj = self.pop();
                    self.offset = at;
                    let v = self.get_attr(obj, attr);
                    self.heap.decref(obj);
                    v?
                }
                Op::Binary { op, at } => {
                    let r = self.pop();
                    let l = self.pop();
                    self.offset = at;
                    let out = self.binary(op, l, r, false);
                    self.heap.decref(l);
                    self.heap.decref(r);
                    out?
                }
                Op::Unary { op, at } => {
                    let v = self.pop();
                    self.offset = at;
                    let out = self.unary(op, v);
                    self.heap.decref(v);
                    out?
                }
                Op::Compare { op, at } => {
                    let r = self.pop();
                    let l = self.pop();
                    self.offset = at;
                    self.compare_once(op, l, r)?
                }
                Op::ShortCircuit { or, target } => {
                    let v = *self.expr_stack.last().expect("an operand");
                    if self.truth(v)? == or {
                        pc = target;
                    } else {
                        self.pop();
                        self.heap.decref(v);
                    }
                    continue;
                }
                Op::JumpIfFalse { target } => {
                    let v = self.pop();
                    let t = self.truth(v);
                    self.heap.decref(v);
                    if !t? {
                        pc = target;
                    }
                    continue;
                }
                Op::Jump { target } => {
                    pc = target;
                    continue;
                }
                Op::Subscript(op) => self.run_subscript_op(op)?,
                Op::BuildTuple { len } => {
                    let items = self.take_top(len as usize);
                    Value::Obj(self.alloc(ObjKind::Tuple(items)))
                }
                Op::BuildList { len } => {
                    let items = self.take_top(len as usize);
                    Value::Obj(self.alloc(ObjKind::List(items)))
                }
                Op::Call { call } => self.compiled_call(call, None)?,
                Op::CallMethod { name, call } => self.compiled_call(call, Some(name))?,
                Op::StoreFast { slot } => {
                    let v = self.pop();
                    self.store_fast(slot, v);
                    continue;
                }
                Op::DeleteFast { slot, name, at } => {
                    self.offset = at;
                    self.delete_fast(slot, name)?;
                    continue;
                }
                Op::More(op) => match self.run_more(op)? {
                    super::eval_expr_more::Flow::Push(v) => v,
                    super::eval_expr_more::Flow::Next => continue,
                    super::eval_expr_more::Flow::Jump(target) => {
                        pc = target;
                        continue;
                    }
                },
                Op::Defs(op) => self.run_def_op(op)?,
                Op::Comp(op) => match self.run_comp(op)? {
                    super::eval_expr_more::Flow::Push(v) => v,
                    super::eval_expr_more::Flow::Next => continue,
                    super::eval_expr_more::Flow::Jump(target) => {
                        pc = target;
                        continue;
                    }
                },
                Op::CallEx(op) => match self.run_call_ex(op)? {
                    Some(v) => v,
                    None => continue,
                },
            };
            self.expr_stack.push(v);
        }
        Ok(())
    }

    /// The top `len` values, in push order, off the stack.
    fn take_top(&mut self, len: usize) -> Vec<Value> {
        let from = self.expr_stack.len() - len;
        self.expr_stack.split_off(from)
    }

    /// The call site of a compiled call (`eval_call`'s, after its arguments): the callee (or
    /// the receiver of method `method`), the positional arguments and the keyword values
    /// are on the stack.
    fn compiled_call(&mut self, c: &'a ast::ExprCall, method: Option<Sym>) -> R<Value> {
        let nargs = c.arguments.args.len();
        let nkw = c.arguments.keywords.len();
        let top = self.expr_stack.len();
        let callee = self.expr_stack[top - nkw - nargs - 1];
        // Room for the receiver a call puts in front of the arguments, as `eval_call` makes.
        let extra = usize::from(nargs > 0 && prepends_receiver(self, callee));
        let kwargs: Vec<(Sym, Value)> = if nkw == 0 {
            Vec::new()
        } else {
            let mut kwargs = Vec::with_capacity(nkw);
            for (i, k) in c.arguments.keywords.iter().enumerate() {
                let name = k.arg.as_ref().expect("compiled calls have no `**`");
                let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
                kwargs.push((sym, self.expr_stack[top - nkw + i]));
            }
            self.expr_stack.truncate(top - nkw);
            kwargs
        };
        let mut args = self.argument_vector(nargs + extra);
        args.extend(self.expr_stack.drain(top - nkw - nargs..top - nkw));
        let callee = self.pop();
        self.at(c);
        let mut call_keywords = std::mem::take(&mut self.call_keywords);
        call_keywords.clear();
        call_keywords.extend(c.arguments.keywords.iter().filter_map(|k| {
            let name = k.arg.as_ref()?;
            let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
            Some((sym, k.range.start().to_u32()))
        }));
        self.call_keywords = call_keywords;
        let r = match method {
            None => {
                // A plain `CALL`, which 3.13+ specialize per site.
                if nkw == 0 {
                    self.heap
                        .call_sites
                        .set_site(c as *const ast::ExprCall as usize);
                }
                self.call(callee, args, kwargs)
            }
            Some(name) => self.call_method(callee, name, args, kwargs),
        };
        self.heap.decref(callee);
        r
    }

    /// Runs a plain instruction with a compiled operand.
    pub(super) fn run_compiled_instr(
        &mut self,
        vm: &VmCode<'a>,
        instr: Compiled<'a>,
        ip: u32,
        base: usize,
    ) -> R<Step> {
        match instr {
            Compiled::ExprStmt(stmt, code) => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, code)?;
                self.heap.decref(v);
                self.statement_end()?;
            }
            Compiled::Assign(stmt, a, code) => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, code)?;
                for (i, target) in a.targets.iter().enumerate() {
                    if i + 1 < a.targets.len() {
                        self.heap.incref(v);
                    }
                    self.store(target, v)?;
                }
                self.statement_end()?;
            }
            Compiled::Return(stmt, code) | Compiled::ReturnValue(stmt, code) => {
                self.statement_start(stmt)?;
                let v = self.eval_compiled(vm, code)?;
                if let Err(e) = self.statement_end() {
                    self.heap.decref(v);
                    return Err(e);
                }
                if let Compiled::ReturnValue(..) = instr {
                    self.plain_slots.push(super::PlainSlot::Value(v));
                } else {
                    return Ok(Step::Return(v));
                }
            }
            Compiled::JumpIfFalse(test, target) => {
                let v = self.eval_compiled(vm, test)?;
                let t = self.truth(v);
                self.heap.decref(v);
                if !t? {
                    return Ok(Step::Next(target));
                }
            }
            Compiled::WhileTest { test, exit, depth } => {
                let at = self.plain_loop_pass_ends(base, depth);
                self.at(test.root);
                let v = self.eval_compiled(vm, test)?;
                let t = self.truth(v);
                self.heap.decref(v);
                if !t? {
                    return Ok(Step::Next(exit));
                }
                self.plain_pass_begins(at);
            }
            Compiled::LoopIter { iter, depth } => {
                let iterable = self.eval_compiled(vm, iter)?;
                let iterable = self.user_iter(iterable)?;
                let counted = self.count_loop_iterator(iterable);
                self.begin_plain_loop(Some(iterable), counted, key_of(iter.root), base, depth);
            }
            Compiled::Stmt(code) => self.run_stmt_code(vm, code)?,
            Compiled::Fast(code) => return self.run_fast(vm, code, ip, base),
        }
        Ok(Step::Next(ip + 1))
    }
}

/// Whether a call of `callee` (or of a method of it) puts a receiver in front of the
/// arguments (as `eval_call` decides): a class, a bound method, an instance.
fn prepends_receiver(it: &Interpreter<'_>, callee: Value) -> bool {
    match callee {
        Value::Obj(id) => matches!(
            it.heap.kind(id),
            ObjKind::Class(_) | ObjKind::BoundMethod { .. } | ObjKind::Instance { .. }
        ),
        _ => false,
    }
}
