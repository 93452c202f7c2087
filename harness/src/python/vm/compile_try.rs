//! Compiling `try` in plain bodies, and the ways out of blocks (`return`, `break`,
//! `continue`) through `finally` blocks, `except` clauses and loops. As CPython's compiler
//! does (`compiler_unwind_fblock_stack`), each way out first does, innermost block first,
//! what leaving each block needs: a `finally` body is compiled again at each way out
//! through it, a handled exception is popped, a loop ends. A `return` keeps its value on
//! the frame's value stack meanwhile, so a `return` in that `finally` body replaces it and a
//! `break` there drops it.
//! A `with` body is such a block too: leaving it calls the exit with `None` x3.
//!
//! In a suspending body, a way out of a plain region may leave blocks of the suspending
//! body (a `try` body, an `except` clause, a `try` with `finally`) whose state is on the
//! generator frame: the region leaves its own blocks, then jumps out to code placed after
//! it (a deferred way out) that leaves those blocks at the generator's level, the `finally`
//! bodies compiled there (they may suspend).

use super::compile::{Compiler, Dest, Instr, NO_LOOP, Refusal};
use ruff_python_ast::{self as ast, Expr, Stmt};

/// A block around the statement being compiled that a way out leaves.
#[derive(Clone, Copy)]
pub(in crate::python) enum FBlock<'a> {
    /// A compiled loop: its entry in [`Compiler::loops`] and its depth.
    Loop { index: usize, depth: u32 },
    /// A loop of a suspending body around a plain region (its iterable is on the generator
    /// frame's value stack): a `break`/`continue` jumps to it, a `return` leaves it as is.
    GenLoop { index: usize },
    /// A `try` body guarded by its `except` clauses: leaving pops the guard.
    Guard,
    /// A `try` body (with its clauses and `else`) guarded by a `finally`: leaving pops the
    /// guard and runs the `finally` body.
    Finally(&'a [Stmt]),
    /// An `except` clause, or a `finally` body entered by an exception: leaving ends the
    /// handling of the exception (and deletes the clause's `as` name).
    Handling,
    /// The value of a `return` kept while a `finally` body runs for it.
    ReturnValue,
    /// A `with` body: leaving pops its guard and calls the exit with `None` x3.
    With,
    /// A `try` or `with` statement: leaving it ends the statement.
    TryStmt,
    /// A suspending body's `try` body guarded by `except` clauses (its guard is on the
    /// generator frame): a `break`/`continue` pops the guard.
    GenGuard,
    /// A suspending body's `try` body (with its clauses) guarded by a `finally`: leaving
    /// pops the guard and runs the `finally` body.
    GenFinally(&'a [Stmt]),
    /// A suspending body's `except` clause (its `as` name): leaving ends the handling of
    /// its exception.
    GenHandling(Option<&'a ast::Identifier>),
    /// The value of a suspending body's `return` kept on the generator frame while a
    /// `finally` body runs for it: a way out of that body drops it.
    GenReturnValue,
    /// A suspending body's `with` block (its exit on the generator frame; `async` when
    /// set): leaving pops its guard and calls the exit with `None` x3 (awaited).
    GenWith(&'a ast::WithItem, bool),
}

/// Whether a `return` must leave the block on the generator frame before the frame ends
/// (a guard alone goes with the frame).
fn left_by_frame(b: &FBlock) -> bool {
    matches!(
        b,
        FBlock::GenFinally(_)
            | FBlock::GenHandling(_)
            | FBlock::GenReturnValue
            | FBlock::GenWith(..)
    )
}

/// How control leaves blocks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Exit {
    Return,
    Break,
    Continue,
}

/// How far [`Compiler::unwind`] left the blocks.
#[derive(PartialEq, Eq)]
enum Left {
    /// Up to the loop with this index.
    Loop(usize),
    /// All of them (a `return`).
    All,
    /// Up to blocks of the suspending body, left after the region (a deferred way out).
    Deferred,
}

impl<'a> Compiler<'a> {
    /// Whether a way out of the statement being compiled passes a block that needs more
    /// than the loops' own ends.
    pub(super) fn unwinds(&self) -> bool {
        self.fblocks
            .iter()
            .any(|b| !matches!(b, FBlock::Loop { .. } | FBlock::GenLoop { .. }))
    }

    /// `return` through blocks: the value is pushed, the blocks are left, the value is
    /// returned.
    pub(super) fn plain_return(
        &mut self,
        s: &'a Stmt,
        value: Option<&'a Expr>,
    ) -> Result<(), Refusal> {
        self.instrs.push(Instr::ReturnValue(s, value));
        if self.unwind(Exit::Return)? != Left::Deferred {
            self.instrs.push(Instr::ReturnTop);
        }
        Ok(())
    }

    /// `break` or `continue` through blocks. Outside any loop it stays a leaf (the
    /// evaluator reports it).
    pub(super) fn plain_jump(&mut self, s: &'a Stmt) -> Result<(), Refusal> {
        let exit = if matches!(s, Stmt::Break(_)) {
            Exit::Break
        } else {
            Exit::Continue
        };
        if !self
            .fblocks
            .iter()
            .any(|b| matches!(b, FBlock::Loop { .. } | FBlock::GenLoop { .. }))
        {
            return self.leaf(s);
        }
        // It counts as a statement, as the evaluator's `break` does.
        self.instrs.push(Instr::StmtStart(s));
        self.instrs.push(Instr::StmtEnd);
        let index = match self.unwind(exit)? {
            Left::Loop(index) => index,
            Left::Deferred => return Ok(()),
            Left::All => unreachable!("a loop is around"),
        };
        if exit == Exit::Break {
            let at = self.instrs.len();
            self.instrs.push(Instr::Jump(NO_LOOP));
            self.loops[index].breaks.push(at);
        } else {
            self.instrs.push(Instr::Jump(self.loops[index].head));
        }
        Ok(())
    }

    /// Leaves the blocks up to the loop a `break`/`continue` targets (whose index is
    /// returned) or, for `return`, all of them; or up to blocks of the suspending body
    /// that only its frame can leave (a deferred way out).
    fn unwind(&mut self, exit: Exit) -> Result<Left, Refusal> {
        let keeps = u32::from(exit == Exit::Return);
        let mut i = self.fblocks.len();
        while i > 0 {
            i -= 1;
            match self.fblocks[i] {
                FBlock::Loop { index, depth } => {
                    if exit != Exit::Return {
                        return Ok(Left::Loop(index));
                    }
                    self.instrs.push(Instr::LoopEnd { depth });
                }
                FBlock::GenLoop { index } if exit != Exit::Return => return Ok(Left::Loop(index)),
                FBlock::GenLoop { .. } => {}
                // A `return` leaves a guard as the frame ends; the frame's guards go then.
                FBlock::GenGuard
                    if exit == Exit::Return && !self.fblocks[..i].iter().any(left_by_frame) => {}
                FBlock::GenGuard
                | FBlock::GenFinally(_)
                | FBlock::GenHandling(_)
                | FBlock::GenReturnValue
                | FBlock::GenWith(..) => {
                    let at = self.instrs.len();
                    self.instrs.push(if exit == Exit::Return {
                        Instr::ExitRegion { to: NO_LOOP }
                    } else {
                        Instr::Jump(NO_LOOP)
                    });
                    self.deferred_exits.push((at, exit));
                    return Ok(Left::Deferred);
                }
                FBlock::Guard => self.instrs.push(Instr::PopFinally),
                FBlock::Finally(body) => {
                    self.instrs.push(Instr::PopFinally);
                    self.inline_finally(i, body, exit == Exit::Return)?;
                }
                FBlock::Handling => self.instrs.push(Instr::PopExcept { under: keeps }),
                FBlock::ReturnValue => self.instrs.push(Instr::DropValue { under: keeps }),
                FBlock::With => {
                    self.instrs.push(Instr::PopFinally);
                    self.instrs.push(Instr::WithExit { under: keeps });
                }
                FBlock::TryStmt => self.instrs.push(Instr::StmtEnd),
            }
        }
        Ok(Left::All)
    }

    /// Whether a `return` at the suspending body's level leaves blocks its frame must
    /// leave first (an `except` clause, a `finally`).
    pub(super) fn gen_blocks_to_leave(&self) -> bool {
        self.fblocks.iter().any(left_by_frame)
    }

    /// `return v` of a suspending body inside an `except` clause or a `try`/`finally`
    /// (`v` holds a suspension point): the value is pushed, the blocks are left, the value
    /// is returned.
    pub(super) fn gen_return(&mut self, v: &'a Expr) -> Result<(), Refusal> {
        if matches!(v, Expr::Await(_)) {
            self.suspension(v, Dest::Push)?;
        } else {
            self.split_bind(v)?;
            self.instrs.push(Instr::Push(v));
        }
        self.gen_unwind(Exit::Return)
    }

    /// After a plain region: the deferred ways out of it, behind a jump that the region's
    /// normal end takes.
    pub(super) fn deferred_ways_out(&mut self) -> Result<(), Refusal> {
        let exits = std::mem::take(&mut self.deferred_exits);
        if exits.is_empty() {
            return Ok(());
        }
        let skip = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        for (at, exit) in exits {
            let here = self.here();
            match &mut self.instrs[at] {
                Instr::ExitRegion { to } | Instr::Jump(to) => *to = here,
                _ => unreachable!("a deferred way out leaves its region by a jump"),
            }
            self.gen_unwind(exit)?;
        }
        let end = self.here();
        self.instrs[skip] = Instr::Jump(end);
        Ok(())
    }

    /// A way out at the suspending body's level (a `return` has its value on the frame's
    /// value stack): the blocks are left innermost first, as CPython's compiler does.
    fn gen_unwind(&mut self, exit: Exit) -> Result<(), Refusal> {
        let keeps = u32::from(exit == Exit::Return);
        // A `return` leaves the iterators of suspending loops on the stack for the frame's
        // end, above an outer block's `async with` exit.
        let mut passed_loop = false;
        let mut i = self.fblocks.len();
        while i > 0 {
            i -= 1;
            match self.fblocks[i] {
                FBlock::GenLoop { .. } if exit == Exit::Return => passed_loop = true,
                FBlock::GenLoop { index } if exit == Exit::Break => {
                    let at = self.instrs.len();
                    self.instrs.push(Instr::Jump(NO_LOOP));
                    self.loops[index].breaks.push(at);
                    return Ok(());
                }
                FBlock::GenLoop { index } if exit == Exit::Continue => {
                    self.instrs.push(Instr::Jump(self.loops[index].head));
                    return Ok(());
                }
                FBlock::GenLoop { .. } => {}
                FBlock::GenGuard => self.instrs.push(Instr::PopFinally),
                FBlock::GenFinally(body) => {
                    self.instrs.push(Instr::PopFinally);
                    let inner = self.fblocks.split_off(i);
                    if exit == Exit::Return {
                        self.fblocks.push(FBlock::GenReturnValue);
                    }
                    let compiled = self.block(body);
                    if exit == Exit::Return {
                        self.fblocks.pop();
                    }
                    self.fblocks.extend(inner);
                    compiled?;
                }
                FBlock::GenHandling(name) => {
                    self.instrs.push(Instr::LeaveClause { name, under: keeps })
                }
                FBlock::GenReturnValue => self.instrs.push(Instr::DropValue { under: keeps }),
                FBlock::GenWith(item, is_async) => {
                    self.instrs.push(Instr::PopFinally);
                    if is_async && keeps > 0 && passed_loop {
                        return Err(Refusal {
                            offset: super::compile::offset(item),
                            construct: "`return` inside a suspending loop inside an `async with` block (the loop's iterator sits above the exit: not compiled yet)",
                        });
                    } else if is_async && keeps > 0 {
                        // `return`: the exit is under the kept value.
                        self.instrs.push(Instr::AsyncWithExitUnder { under: keeps });
                        self.instrs.push(Instr::YieldFromStep {
                            target: Dest::Drop,
                            at: super::compile::offset(item),
                        });
                    } else if is_async {
                        self.async_with_exit(item);
                    } else {
                        self.instrs.push(Instr::WithExit { under: keeps });
                    }
                }
                _ => unreachable!("a plain region leaves its own blocks"),
            }
        }
        self.instrs.push(Instr::ReturnTop);
        Ok(())
    }

    /// The `finally` body of the block at `at`, compiled for a way out: the blocks inside
    /// it are already left, and a kept return value is a block of its own.
    fn inline_finally(&mut self, at: usize, body: &'a [Stmt], keeps: bool) -> Result<(), Refusal> {
        let inner = self.fblocks.split_off(at);
        let depth = self.plain_depth;
        self.plain_depth = self
            .fblocks
            .iter()
            .rev()
            .find_map(|b| match b {
                FBlock::Loop { depth, .. } => Some(depth + 1),
                _ => None,
            })
            .unwrap_or(0);
        if keeps {
            self.fblocks.push(FBlock::ReturnValue);
        }
        let compiled = self.block(body);
        if keeps {
            self.fblocks.pop();
        }
        self.plain_depth = depth;
        self.fblocks.extend(inner);
        compiled
    }

    /// `with a, b: body` (`async with` is a coroutine's): each item enters its manager
    /// and guards the rest (`Compiler::with_items`, shared with generator bodies).
    pub(super) fn plain_with(&mut self, s: &'a Stmt, w: &'a ast::StmtWith) -> Result<(), Refusal> {
        self.instrs.push(Instr::StmtStart(s));
        self.fblocks.push(FBlock::TryStmt);
        let compiled = self.with_stmt(w);
        self.fblocks.pop();
        compiled?;
        self.instrs.push(Instr::StmtEnd);
        Ok(())
    }

    /// `try` with its `except` clauses, `else` and `finally`. The `finally` body is
    /// compiled after the rest (the normal way out), as the handler that re-raises, and at
    /// each `return`/`break`/`continue` through it.
    pub(super) fn plain_try(&mut self, s: &'a Stmt, t: &'a ast::StmtTry) -> Result<(), Refusal> {
        self.instrs.push(Instr::StmtStart(s));
        self.fblocks.push(FBlock::TryStmt);
        if t.finalbody.is_empty() {
            self.plain_try_except(t)?;
        } else {
            let setup = self.instrs.len();
            self.instrs.push(Instr::SetupFinally { handler: NO_LOOP });
            self.fblocks.push(FBlock::Finally(&t.finalbody));
            self.plain_try_except(t)?;
            self.fblocks.pop();
            self.instrs.push(Instr::PopFinally);
            self.block(&t.finalbody)?;
            let skip = self.instrs.len();
            self.instrs.push(Instr::Jump(NO_LOOP));
            let handler = self.here();
            self.instrs[setup] = Instr::SetupFinally { handler };
            self.fblocks.push(FBlock::Handling);
            self.block(&t.finalbody)?;
            self.fblocks.pop();
            self.instrs.push(Instr::EndFinally);
            let end = self.here();
            self.instrs[skip] = Instr::Jump(end);
        }
        self.fblocks.pop();
        self.instrs.push(Instr::StmtEnd);
        Ok(())
    }

    /// The body guarded by the `except` clauses, then `else`; the clauses are tried in
    /// order at the handler and none matching re-raises.
    fn plain_try_except(&mut self, t: &'a ast::StmtTry) -> Result<(), Refusal> {
        if t.handlers.is_empty() {
            return self.block(&t.body);
        }
        let setup = self.instrs.len();
        self.instrs.push(Instr::SetupFinally { handler: NO_LOOP });
        self.fblocks.push(FBlock::Guard);
        self.block(&t.body)?;
        self.fblocks.pop();
        self.instrs.push(Instr::PopFinally);
        self.block(&t.orelse)?;
        let mut to_end = vec![self.instrs.len()];
        self.instrs.push(Instr::Jump(NO_LOOP));
        let handler = self.here();
        self.instrs[setup] = Instr::SetupFinally { handler };
        self.fblocks.push(FBlock::Handling);
        for h in &t.handlers {
            let ast::ExceptHandler::ExceptHandler(h) = h;
            let at = self.instrs.len();
            self.instrs.push(Instr::MatchExcept {
                class: h.type_.as_deref(),
                name: h.name.as_ref(),
                next: NO_LOOP,
            });
            self.block(&h.body)?;
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
        self.fblocks.pop();
        self.instrs.push(Instr::EndFinally);
        let end = self.here();
        self.patch(&to_end, end);
        Ok(())
    }
}
