//! The compiler from a function body to the VM's instructions.
//!
//! Control flow around a suspension point (`if`/`while`/`for`, `try`, `with`,
//! `break`/`continue`, `return`) becomes instructions with resolved jump targets; the
//! statements between suspension points are plain regions compiled as plain bodies are
//! (`compile_plain.rs`).

use super::compile_try::FBlock;
use ruff_python_ast::visitor::{Visitor, walk_expr, walk_stmt};
use ruff_python_ast::{self as ast, Expr, Stmt};
use ruff_text_size::Ranged;

pub(in crate::python) use super::instructions::{Dest, Instr, NO_LOOP};

/// A compiled body.
pub(in crate::python) struct VmCode<'a> {
    pub(in crate::python) instrs: Vec<Instr<'a>>,
    /// The expression nodes that [`Instr::Bind`] instructions name.
    pub(in crate::python) bound: Vec<&'a Expr>,
    /// An `async def` body with `yield`: its `yield`s hand items to `async for`, its
    /// `await`s suspend to the event loop.
    pub(in crate::python) async_generator: bool,
    /// The compiled expressions of its plain instructions (`compile_expr.rs`).
    pub(in crate::python) exprs: Vec<super::compile_expr::Op<'a>>,
}

/// Why a body cannot be compiled yet: the offset and the construct.
pub(in crate::python) struct Refusal {
    pub(in crate::python) offset: u32,
    pub(in crate::python) construct: &'static str,
}

/// Whether a function body suspends (`yield`, `yield from`), not counting nested scopes.
pub(in crate::python) fn is_generator_body(body: &[Stmt]) -> bool {
    body.iter().any(|s| stmt_suspends(s, false))
}

/// Whether a statement contains a `yield` of the current scope (an `await` too when
/// `awaits`).
fn stmt_suspends(s: &Stmt, awaits: bool) -> bool {
    let mut finder = YieldFinder {
        found: false,
        awaits,
    };
    finder.visit_stmt(s);
    finder.found
}

fn expr_suspends(e: &Expr, awaits: bool) -> bool {
    let mut finder = YieldFinder {
        found: false,
        awaits,
    };
    finder.visit_expr(e);
    finder.found
}

struct YieldFinder {
    found: bool,
    /// Coroutine bodies: `await` is a suspension point too.
    awaits: bool,
}

impl<'b> Visitor<'b> for YieldFinder {
    fn visit_stmt(&mut self, stmt: &'b Stmt) {
        match stmt {
            // Nested scopes suspend their own frames.
            Stmt::FunctionDef(_) | Stmt::ClassDef(_) => {}
            // `async for` and `async with` await their protocol methods.
            Stmt::For(ast::StmtFor { is_async: true, .. })
            | Stmt::With(ast::StmtWith { is_async: true, .. })
                if self.awaits =>
            {
                self.found = true
            }
            _ if !self.found => walk_stmt(self, stmt),
            _ => {}
        }
    }
    fn visit_expr(&mut self, expr: &'b Expr) {
        match expr {
            Expr::Yield(_) | Expr::YieldFrom(_) => self.found = true,
            Expr::Await(_) if self.awaits => self.found = true,
            Expr::Lambda(_)
            | Expr::Generator(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_) => {}
            _ if !self.found => walk_expr(self, expr),
            _ => {}
        }
    }
}

/// Compiles a generator function's or coroutine's (`coroutine`) body.
pub(in crate::python) fn compile<'a>(
    body: &'a [Stmt],
    coroutine: bool,
) -> Result<VmCode<'a>, Refusal> {
    let mut c = Compiler {
        instrs: Vec::new(),
        bound: Vec::new(),
        loops: Vec::new(),
        coroutine,
        plain: false,
        plain_depth: 0,
        fblocks: Vec::new(),
        exprs: Vec::new(),
        expr_depth: 0,
        deferred_exits: Vec::new(),
    };
    c.block(body)?;
    c.instrs.push(Instr::Return(None));
    Ok(VmCode {
        instrs: c.instrs,
        bound: c.bound,
        async_generator: coroutine && is_generator_body(body),
        exprs: c.exprs,
    })
}

/// A loop being compiled: its head, and the jumps to its exit to patch.
pub(super) struct LoopCtx {
    pub(super) head: u32,
    /// Jumps (and leaf statements that may `break`) whose exit is the loop's end.
    pub(super) breaks: Vec<usize>,
}

pub(super) struct Compiler<'a> {
    pub(super) instrs: Vec<Instr<'a>>,
    /// The nodes [`Instr::Bind`] names.
    pub(super) bound: Vec<&'a Expr>,
    pub(super) loops: Vec<LoopCtx>,
    /// Compiling a coroutine: `await`s are suspension points.
    pub(super) coroutine: bool,
    /// Compiling a body that never suspends: compound statements become instructions too
    /// (`compile_plain.rs`).
    pub(super) plain: bool,
    /// Plain loops around the statement being compiled.
    pub(super) plain_depth: u32,
    /// Plain bodies: the blocks around the statement being compiled that a `return`,
    /// `break` or `continue` leaves through (`compile_try.rs`).
    pub(super) fblocks: Vec<super::compile_try::FBlock<'a>>,
    /// The expression pool (`compile_expr.rs`).
    pub(super) exprs: Vec<super::compile_expr::Op<'a>>,
    /// The nesting of the expression node being compiled.
    pub(super) expr_depth: u32,
    /// Ways out of the plain region being compiled that leave blocks of the suspending body
    /// around it: the region's exit instruction and the kind (`compile_try.rs`).
    pub(super) deferred_exits: Vec<(usize, super::compile_try::Exit)>,
}

pub(super) fn offset(node: &impl Ranged) -> u32 {
    node.range().start().to_u32()
}

impl<'a> Compiler<'a> {
    pub(super) fn here(&self) -> u32 {
        self.instrs.len() as u32
    }

    /// A block. In a body that suspends, each run of statements without a suspension point
    /// is a plain region ([`Instr::PlainRegion`]): compiled as a plain body's statements.
    pub(super) fn block(&mut self, body: &'a [Stmt]) -> Result<(), Refusal> {
        if self.plain {
            return body.iter().try_for_each(|s| self.plain_stmt(s));
        }
        let mut rest = body;
        while let Some(first) = rest.first() {
            if self.suspends(first) {
                self.stmt(first)?;
                rest = &rest[1..];
                continue;
            }
            let n = rest.iter().take_while(|s| !self.suspends(s)).count();
            let (region, after) = rest.split_at(n);
            self.plain_region(region)?;
            rest = after;
        }
        Ok(())
    }

    /// Statements without a suspension point in a body that suspends: compiled as a plain
    /// body's, behind an [`Instr::PlainRegion`] that says where they end.
    fn plain_region(&mut self, region: &'a [Stmt]) -> Result<(), Refusal> {
        let at = self.instrs.len();
        self.instrs.push(Instr::PlainRegion { end: NO_LOOP });
        self.plain = true;
        let compiled = region.iter().try_for_each(|s| self.plain_stmt(s));
        self.plain = false;
        compiled?;
        self.compile_operands(at + 1);
        let end = self.here();
        self.instrs[at] = Instr::PlainRegion { end };
        self.deferred_ways_out()
    }

    /// Compiles the body of a loop of a suspending body; a plain region inside sees it as
    /// the loop its `break`/`continue` leaves to.
    pub(super) fn gen_loop_body(&mut self, body: &'a [Stmt]) -> Result<(), Refusal> {
        self.fblocks.push(super::compile_try::FBlock::GenLoop {
            index: self.loops.len() - 1,
        });
        let compiled = self.block(body);
        self.fblocks.pop();
        compiled
    }

    /// A jump to the innermost loop's exit, patched when the loop ends.
    fn emit_break(&mut self) {
        let at = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        if let Some(l) = self.loops.last_mut() {
            l.breaks.push(at);
        }
    }

    /// Whether the statement holds a suspension point: a `yield`, or in a coroutine an
    /// `await` (nested scopes suspend their own frames).
    fn suspends(&self, s: &Stmt) -> bool {
        stmt_suspends(s, self.coroutine)
    }

    pub(super) fn suspends_expr(&self, e: &Expr) -> bool {
        expr_suspends(e, self.coroutine)
    }

    /// Whether `e` itself is a suspension point (its operand may hold more).
    fn is_suspension(&self, e: &Expr) -> bool {
        matches!(e, Expr::Yield(_) | Expr::YieldFrom(_))
            || (self.coroutine && matches!(e, Expr::Await(_)))
    }

    /// A suspension point whose result goes to `target`.
    pub(super) fn suspension(&mut self, e: &'a Expr, target: Dest<'a>) -> Result<(), Refusal> {
        match e {
            Expr::Yield(y) => {
                if let Some(v) = y.value.as_deref()
                    && self.suspends_expr(v)
                {
                    self.split_bind(v)?;
                }
                self.instrs.push(Instr::Yield {
                    value: y.value.as_deref(),
                    target,
                    at: offset(y),
                });
                Ok(())
            }
            Expr::YieldFrom(y) => self.yield_from(y, target),
            _ => self.await_(e, target),
        }
    }

    /// A simple statement holding suspension points inside a larger expression: the
    /// expression is split and the statement then runs from the bound values.
    fn split_statement(&mut self, s: &'a Stmt) -> Result<(), Refusal> {
        let refuse = |e: &Expr| Refusal {
            offset: first_suspension(e),
            construct: "`yield` or `await` in this part of a statement (assignment targets, `raise ... from`, an `assert` message)",
        };
        let (value, others): (&'a Expr, Vec<&'a Expr>) = match s {
            Stmt::Expr(e) => (&e.value, Vec::new()),
            Stmt::Assign(a) => (&a.value, a.targets.iter().collect()),
            Stmt::AugAssign(a) => (&a.value, vec![&a.target]),
            Stmt::AnnAssign(a) if a.value.is_some() => {
                (a.value.as_deref().expect("checked"), vec![&a.target])
            }
            Stmt::Raise(r) if r.exc.is_some() => (
                r.exc.as_deref().expect("checked"),
                r.cause.iter().map(|c| &**c).collect(),
            ),
            Stmt::Assert(a) => (&a.test, a.msg.iter().map(|m| &**m).collect()),
            _ => {
                return Err(Refusal {
                    offset: offset(s),
                    construct: "`yield` or `await` in this statement",
                });
            }
        };
        if let Some(e) = others.into_iter().find(|e| self.suspends_expr(e)) {
            return Err(refuse(e));
        }
        if !self.suspends_expr(value) {
            return Err(refuse(value));
        }
        self.split_bind(value)?;
        self.leaf(s)
    }

    fn stmt(&mut self, s: &'a Stmt) -> Result<(), Refusal> {
        if !self.suspends(s) {
            return if self.plain {
                self.plain_stmt(s)
            } else {
                self.plain_region(std::slice::from_ref(s))
            };
        }
        match s {
            Stmt::Expr(e) if self.is_suspension(&e.value) => self.suspension(&e.value, Dest::Drop),
            Stmt::Assign(a)
                if a.targets.len() == 1
                    && self.is_suspension(&a.value)
                    && !self.suspends_expr(&a.targets[0]) =>
            {
                self.suspension(&a.value, Dest::Store(&a.targets[0]))
            }
            Stmt::Return(r) if self.gen_blocks_to_leave() => {
                let v = r
                    .value
                    .as_deref()
                    .expect("a bare `return` does not suspend");
                self.gen_return(v)
            }
            Stmt::Return(r) => match r.value.as_deref() {
                Some(v @ Expr::Await(_)) => self.suspension(v, Dest::Return),
                Some(v) => {
                    self.split_bind(v)?;
                    self.instrs.push(Instr::Return(Some(v)));
                    Ok(())
                }
                None => unreachable!("a bare `return` does not suspend"),
            },
            Stmt::Expr(_)
            | Stmt::Assign(_)
            | Stmt::AugAssign(_)
            | Stmt::AnnAssign(_)
            | Stmt::Raise(_)
            | Stmt::Assert(_) => self.split_statement(s),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::While(w) => {
                let head = self.here();
                if self.suspends_expr(&w.test) {
                    self.split_bind(&w.test)?;
                }
                let test_at = self.instrs.len();
                self.instrs.push(Instr::JumpIfFalse(&w.test, NO_LOOP));
                self.loops.push(LoopCtx {
                    head,
                    breaks: Vec::new(),
                });
                self.gen_loop_body(&w.body)?;
                self.instrs.push(Instr::Jump(head));
                let ctx = self.loops.pop().expect("pushed above");
                let else_start = self.here();
                self.instrs[test_at] = Instr::JumpIfFalse(&w.test, else_start);
                self.block(&w.orelse)?;
                let end = self.here();
                self.patch(&ctx.breaks, end);
                Ok(())
            }
            Stmt::For(f) => {
                if f.is_async {
                    return self.async_for(f);
                }
                if self.suspends_expr(&f.iter) {
                    self.split_bind(&f.iter)?;
                }
                self.instrs.push(Instr::GetIter(&f.iter));
                let head = self.here();
                self.instrs.push(Instr::ForIter {
                    target: &f.target,
                    exit: NO_LOOP,
                });
                self.loops.push(LoopCtx {
                    head,
                    breaks: Vec::new(),
                });
                self.gen_loop_body(&f.body)?;
                self.instrs.push(Instr::Jump(head));
                let ctx = self.loops.pop().expect("pushed above");
                let exhausted = self.here();
                self.instrs[head as usize] = Instr::ForIter {
                    target: &f.target,
                    exit: exhausted,
                };
                self.instrs.push(Instr::PopIter);
                self.block(&f.orelse)?;
                // `break` pops the iterable and skips the `else` block.
                let skip_at = self.instrs.len();
                self.instrs.push(Instr::Jump(NO_LOOP));
                let broke = self.here();
                self.instrs.push(Instr::PopIter);
                let end = self.here();
                self.instrs[skip_at] = Instr::Jump(end);
                self.patch(&ctx.breaks, broke);
                Ok(())
            }
            Stmt::Try(t) => self.try_stmt(t),
            Stmt::With(w) => self.with_stmt(w),
            _ => Err(Refusal {
                offset: offset(s),
                construct: "`yield` in this statement",
            }),
        }
    }

    /// `try` around a suspension point. With a `finally`, the `finally` block is compiled
    /// twice: once after the body (and its handlers), once as the handler that re-raises
    /// (and once more at each way out of the body through it, `compile_try.rs`).
    fn try_stmt(&mut self, t: &'a ast::StmtTry) -> Result<(), Refusal> {
        let refuse = |construct| {
            Err(Refusal {
                offset: offset(t),
                construct,
            })
        };
        if t.is_star {
            return refuse("`except*` around `yield` or `await`");
        }
        if t.finalbody.is_empty() {
            return self.try_except(t);
        }
        let setup = self.instrs.len();
        self.instrs.push(Instr::SetupFinally { handler: NO_LOOP });
        // A way out of the body or its clauses runs the `finally` body (`compile_try.rs`).
        self.fblocks.push(FBlock::GenFinally(&t.finalbody));
        let compiled = if t.handlers.is_empty() {
            self.block(&t.body)
        } else {
            self.try_except(t)
        };
        self.fblocks.pop();
        compiled?;
        self.instrs.push(Instr::PopFinally);
        if t.handlers.is_empty() {
            self.block(&t.orelse)?;
        }
        self.block(&t.finalbody)?;
        let skip = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        let handler = self.here();
        self.instrs[setup] = Instr::SetupFinally { handler };
        // Entered by an exception: a way out of this copy ends its handling (the exception
        // is discarded, as CPython's `POP_EXCEPT` on a `return` in `finally` does).
        self.fblocks.push(FBlock::GenHandling(None));
        let compiled = self.block(&t.finalbody);
        self.fblocks.pop();
        compiled?;
        self.instrs.push(Instr::EndFinally);
        let end = self.here();
        self.instrs[skip] = Instr::Jump(end);
        Ok(())
    }

    /// `with a, b: body` around a suspension point: each item enters its manager and
    /// guards the rest with a handler that calls its exit with the exception.
    pub(super) fn with_stmt(&mut self, w: &'a ast::StmtWith) -> Result<(), Refusal> {
        let refuse = |construct| {
            Err(Refusal {
                offset: offset(w),
                construct,
            })
        };
        let targets = || w.items.iter().filter_map(|i| i.optional_vars.as_deref());
        if targets().any(|e| self.suspends_expr(e)) {
            return refuse("`yield` or `await` in a `with` item's target");
        }
        self.with_items(&w.items, &w.body, w.is_async)
    }

    fn with_items(
        &mut self,
        items: &'a [ast::WithItem],
        body: &'a [Stmt],
        is_async: bool,
    ) -> Result<(), Refusal> {
        let Some((item, rest)) = items.split_first() else {
            return self.block(body);
        };
        if self.suspends_expr(&item.context_expr) {
            self.split_bind(&item.context_expr)?;
        }
        if is_async {
            self.async_with_enter(item);
        } else {
            self.instrs.push(Instr::WithEnter(item));
        }
        let setup = self.instrs.len();
        self.instrs.push(Instr::SetupFinally { handler: NO_LOOP });
        // A `return`/`break`/`continue` may leave the block (`compile_try.rs`).
        self.fblocks.push(if self.plain {
            FBlock::With
        } else {
            FBlock::GenWith(item, is_async)
        });
        let compiled = self.with_items(rest, body, is_async);
        self.fblocks.pop();
        compiled?;
        self.instrs.push(Instr::PopFinally);
        if is_async {
            self.async_with_exit(item);
        } else {
            self.instrs.push(Instr::WithExit { under: 0 });
        }
        let skip = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        let handler = self.here();
        self.instrs[setup] = if self.plain {
            Instr::SetupWith { handler }
        } else {
            Instr::SetupFinally { handler }
        };
        self.instrs.push(if is_async {
            Instr::AsyncWithExitExc
        } else {
            Instr::WithExitExc
        });
        let end = self.here();
        self.instrs[skip] = Instr::Jump(end);
        Ok(())
    }

    /// `try`/`except`/`else` (the `finally` part is [`Self::try_stmt`]'s): the clauses are
    /// tried in order at the handler; none matching re-raises.
    fn try_except(&mut self, t: &'a ast::StmtTry) -> Result<(), Refusal> {
        let clauses = || {
            t.handlers.iter().map(|h| {
                let ast::ExceptHandler::ExceptHandler(h) = h;
                h
            })
        };
        let setup = self.instrs.len();
        self.instrs.push(Instr::SetupFinally { handler: NO_LOOP });
        self.fblocks.push(FBlock::GenGuard);
        let compiled = self.block(&t.body);
        self.fblocks.pop();
        compiled?;
        self.instrs.push(Instr::PopFinally);
        self.block(&t.orelse)?;
        let mut to_end = vec![self.instrs.len()];
        self.instrs.push(Instr::Jump(NO_LOOP));
        let handler = self.here();
        self.instrs[setup] = Instr::SetupFinally { handler };
        for h in clauses() {
            let at = self.instrs.len();
            self.instrs.push(Instr::MatchExcept {
                class: h.type_.as_deref(),
                name: h.name.as_ref(),
                next: NO_LOOP,
            });
            self.fblocks.push(FBlock::GenHandling(h.name.as_ref()));
            let compiled = self.block(&h.body);
            self.fblocks.pop();
            compiled?;
            self.instrs.push(Instr::EndExcept {
                name: h.name.as_ref(),
            });
            to_end.push(self.instrs.len());
            self.instrs.push(Instr::Jump(NO_LOOP));
            let next = self.here();
            if let Instr::MatchExcept { next: n, .. } = &mut self.instrs[at] {
                *n = next;
            }
        }
        // No clause matched: the exception goes on.
        self.instrs.push(Instr::EndFinally);
        let end = self.here();
        for j in to_end {
            self.instrs[j] = Instr::Jump(end);
        }
        Ok(())
    }

    /// `await x` (`x` may hold suspension points of its own: split first).
    pub(super) fn await_(&mut self, e: &'a Expr, target: Dest<'a>) -> Result<(), Refusal> {
        let Expr::Await(a) = e else {
            unreachable!("checked by the caller")
        };
        if self.suspends_expr(&a.value) {
            self.split_bind(&a.value)?;
        }
        self.instrs.push(Instr::GetAwaitable(&a.value));
        self.instrs.push(Instr::YieldFromStep {
            target,
            at: offset(a),
        });
        Ok(())
    }

    pub(super) fn yield_from(
        &mut self,
        y: &'a ast::ExprYieldFrom,
        target: Dest<'a>,
    ) -> Result<(), Refusal> {
        if self.suspends_expr(&y.value) {
            self.split_bind(&y.value)?;
        }
        self.instrs.push(Instr::YieldFromStart(&y.value));
        self.instrs.push(Instr::YieldFromStep {
            target,
            at: offset(y),
        });
        Ok(())
    }

    pub(super) fn if_stmt(&mut self, i: &'a ast::StmtIf) -> Result<(), Refusal> {
        if self.suspends_expr(&i.test) {
            self.split_bind(&i.test)?;
        }
        let mut to_end = Vec::new();
        let mut test_at = self.instrs.len();
        self.instrs.push(Instr::JumpIfFalse(&i.test, NO_LOOP));
        self.block(&i.body)?;
        for clause in &i.elif_else_clauses {
            to_end.push(self.instrs.len());
            self.instrs.push(Instr::Jump(NO_LOOP));
            let next = self.here();
            self.set_false_target(test_at, next);
            match &clause.test {
                Some(test) => {
                    if self.suspends_expr(test) {
                        self.split_bind(test)?;
                    }
                    test_at = self.instrs.len();
                    self.instrs.push(Instr::JumpIfFalse(test, NO_LOOP));
                }
                None => test_at = usize::MAX,
            }
            self.block(&clause.body)?;
        }
        let end = self.here();
        if test_at != usize::MAX {
            self.set_false_target(test_at, end);
        }
        self.patch(&to_end, end);
        Ok(())
    }

    fn set_false_target(&mut self, at: usize, target: u32) {
        if let Instr::JumpIfFalse(test, _) = self.instrs[at] {
            self.instrs[at] = Instr::JumpIfFalse(test, target);
        }
    }

    pub(super) fn patch(&mut self, jumps: &[usize], target: u32) {
        for &j in jumps {
            match &mut self.instrs[j] {
                Instr::Exec { exit, .. } => *exit = target,
                other => *other = Instr::Jump(target),
            }
        }
    }

    /// A statement without a suspension point. A bare `break`/`continue` of a compiled
    /// loop becomes a jump; any other statement is run by the evaluator.
    pub(super) fn leaf(&mut self, s: &'a Stmt) -> Result<(), Refusal> {
        let Some(l) = self.loops.last() else {
            self.instrs.push(Instr::Exec {
                stmt: s,
                exit: NO_LOOP,
                head: NO_LOOP,
            });
            return Ok(());
        };
        let head = l.head;
        match s {
            // In a plain body they stay statements (each counts a step, as the evaluator's).
            Stmt::Break(_) if !self.plain => self.emit_break(),
            Stmt::Continue(_) if !self.plain => self.instrs.push(Instr::Jump(head)),
            _ => {
                // A `break` inside the statement (in an `if`) is reported as a flow and
                // taken by the VM: the exit is patched with the loop's other breaks.
                let at = self.instrs.len();
                self.instrs.push(Instr::Exec {
                    stmt: s,
                    exit: NO_LOOP,
                    head,
                });
                self.loops
                    .last_mut()
                    .expect("checked above")
                    .breaks
                    .push(at);
            }
        }
        Ok(())
    }
}

/// The offset of the first suspension point in `e` (`e`'s own when none is found).
pub(super) fn first_suspension(e: &Expr) -> u32 {
    let mut finder = FirstYield { offset: None };
    finder.visit_expr(e);
    finder.offset.unwrap_or_else(|| offset(e))
}

struct FirstYield {
    offset: Option<u32>,
}

impl<'b> Visitor<'b> for FirstYield {
    fn visit_expr(&mut self, expr: &'b Expr) {
        if self.offset.is_some() {
            return;
        }
        match expr {
            Expr::Yield(_) | Expr::YieldFrom(_) | Expr::Await(_) => {
                self.offset = Some(offset(expr))
            }
            Expr::Lambda(_)
            | Expr::Generator(_)
            | Expr::ListComp(_)
            | Expr::SetComp(_)
            | Expr::DictComp(_) => {}
            _ => walk_expr(self, expr),
        }
    }
}
