//! Compiling bodies that never suspend (plain functions and methods, the module body):
//! `if`, `while` and `for` become instructions whether or not they hold a suspension point,
//! each bracketed by [`Instr::StmtStart`]/[`Instr::StmtEnd`] so that the per-statement
//! work (line, step budget, finalizers, storage release) happens where the tree walker
//! did it. `try`, `with` and `raise` are compiled by `compile_try.rs`, simple statements by
//! `compile_stmt.rs`, `import`, `def` and `class` by `compile_defs.rs`; the rest stay
//! [`Instr::Exec`] leaves for now.

use super::compile::{Compiler, Instr, LoopCtx, NO_LOOP, Refusal, VmCode};
use super::compile_try::FBlock;
use ruff_python_ast::{self as ast, Stmt};

/// Compiles a body that does not suspend (a plain function's, the module's).
pub(in crate::python) fn compile_plain(body: &[Stmt]) -> Result<VmCode<'_>, Refusal> {
    let mut c = Compiler {
        instrs: Vec::new(),
        bound: Vec::new(),
        loops: Vec::new(),
        coroutine: false,
        plain: true,
        plain_depth: 0,
        fblocks: Vec::new(),
        exprs: Vec::new(),
        expr_depth: 0,
        deferred_exits: Vec::new(),
    };
    c.block(body)?;
    c.instrs.push(Instr::Return(None));
    c.compile_operands(0);
    Ok(VmCode {
        instrs: c.instrs,
        bound: c.bound,
        async_generator: false,
        exprs: c.exprs,
    })
}

impl<'a> Compiler<'a> {
    /// A statement of a plain body.
    pub(super) fn plain_stmt(&mut self, s: &'a Stmt) -> Result<(), Refusal> {
        match s {
            Stmt::If(i) => {
                self.instrs.push(Instr::StmtStart(s));
                self.if_stmt(i)?;
                self.instrs.push(Instr::StmtEnd);
                Ok(())
            }
            Stmt::While(w) => self.plain_while(s, w),
            Stmt::For(f) if !f.is_async => self.plain_for(s, f),
            Stmt::Expr(e) => {
                self.instrs.push(Instr::ExprStmt(s, &e.value));
                Ok(())
            }
            _ if self.subscript_stmt(s) => Ok(()),
            Stmt::Assign(a) => {
                self.instrs.push(Instr::AssignStmt(s, a));
                Ok(())
            }
            Stmt::Return(r) if self.unwinds() => self.plain_return(s, r.value.as_deref()),
            Stmt::Return(r) => {
                self.instrs.push(Instr::ReturnStmt(s, r.value.as_deref()));
                Ok(())
            }
            Stmt::Break(_) | Stmt::Continue(_) if self.unwinds() => self.plain_jump(s),
            Stmt::Try(t) if !t.is_star => self.plain_try(s, t),
            Stmt::With(w) if !w.is_async => self.plain_with(s, w),
            Stmt::Raise(r) => {
                self.instrs.push(Instr::RaiseStmt(s, r));
                Ok(())
            }
            _ if self.simple_stmt(s) => Ok(()),
            _ if self.def_stmt(s) => Ok(()),
            _ => self.leaf(s),
        }
    }

    /// `for`.
    fn plain_for(&mut self, s: &'a Stmt, f: &'a ast::StmtFor) -> Result<(), Refusal> {
        let depth = self.plain_depth;
        self.instrs.push(Instr::StmtStart(s));
        self.instrs.push(Instr::LoopIter {
            iter: &f.iter,
            depth,
        });
        let head = self.here();
        self.instrs.push(Instr::LoopNext {
            target: &f.target,
            exit: NO_LOOP,
            depth,
        });
        let ctx = self.plain_loop_body(head, &f.body)?;
        let else_start = self.here();
        self.instrs[head as usize] = Instr::LoopNext {
            target: &f.target,
            exit: else_start,
            depth,
        };
        self.plain_loop_end(ctx, &f.orelse, depth)
    }

    fn plain_while(&mut self, s: &'a Stmt, w: &'a ast::StmtWhile) -> Result<(), Refusal> {
        let depth = self.plain_depth;
        self.instrs.push(Instr::StmtStart(s));
        self.instrs.push(Instr::LoopStart {
            test: &w.test,
            depth,
        });
        let head = self.here();
        self.instrs.push(Instr::WhileTest {
            test: &w.test,
            exit: NO_LOOP,
            depth,
        });
        let ctx = self.plain_loop_body(head, &w.body)?;
        let else_start = self.here();
        self.instrs[head as usize] = Instr::WhileTest {
            test: &w.test,
            exit: else_start,
            depth,
        };
        self.plain_loop_end(ctx, &w.orelse, depth)
    }

    /// The body of a loop whose head is at `head`, ending with the back edge.
    fn plain_loop_body(&mut self, head: u32, body: &'a [Stmt]) -> Result<LoopCtx, Refusal> {
        self.loops.push(LoopCtx {
            head,
            breaks: Vec::new(),
        });
        self.fblocks.push(FBlock::Loop {
            index: self.loops.len() - 1,
            depth: self.plain_depth,
        });
        self.plain_depth += 1;
        let compiled = self.block(body);
        self.plain_depth -= 1;
        self.fblocks.pop();
        let ctx = self.loops.pop().expect("pushed above");
        compiled?;
        self.instrs.push(Instr::Jump(head));
        Ok(ctx)
    }

    /// The loop's end: exhausted, it ends (releasing its iterator, as CPython's
    /// `FOR_ITER` does) before its `else` block, where a `break` or `continue` is the
    /// enclosing loop's; `break` ends it and skips the `else` block.
    fn plain_loop_end(
        &mut self,
        ctx: LoopCtx,
        orelse: &'a [Stmt],
        depth: u32,
    ) -> Result<(), Refusal> {
        if orelse.is_empty() {
            let end = self.here();
            self.instrs.push(Instr::LoopEnd { depth });
            self.patch(&ctx.breaks, end);
            self.instrs.push(Instr::StmtEnd);
            return Ok(());
        }
        self.instrs.push(Instr::LoopEnd { depth });
        self.block(orelse)?;
        let skip = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        let broke = self.here();
        self.instrs.push(Instr::LoopEnd { depth });
        let end = self.here();
        self.instrs[skip] = Instr::Jump(end);
        self.patch(&ctx.breaks, broke);
        self.instrs.push(Instr::StmtEnd);
        Ok(())
    }
}
