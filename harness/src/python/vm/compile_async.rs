//! Compiling `async for` and `async with`: their protocol methods (`__aiter__`/`__anext__`,
//! `__aenter__`/`__aexit__`) return awaitables that the coroutine awaits, so each is a
//! suspension point, delegated as `await` delegates.

use super::compile::{Compiler, Dest, Instr, LoopCtx, NO_LOOP, Refusal, offset};
use ruff_python_ast as ast;

impl<'a> Compiler<'a> {
    /// `async for target in iterable: body else: orelse`: `GET_AITER`, then per item
    /// `GET_ANEXT` and an await whose `StopAsyncIteration` ends the loop.
    pub(super) fn async_for(&mut self, f: &'a ast::StmtFor) -> Result<(), Refusal> {
        if self.suspends_expr(&f.iter) {
            self.split_bind(&f.iter)?;
        }
        self.instrs.push(Instr::GetAIter(&f.iter));
        let head = self.here();
        self.instrs.push(Instr::GetANext);
        let step_at = self.instrs.len();
        self.instrs.push(Instr::AnextStep {
            target: &f.target,
            exit: NO_LOOP,
            at: offset(f),
        });
        self.loops.push(LoopCtx {
            head,
            breaks: Vec::new(),
        });
        self.gen_loop_body(&f.body)?;
        self.instrs.push(Instr::Jump(head));
        let ctx = self.loops.pop().expect("pushed above");
        let exhausted = self.here();
        self.instrs[step_at] = Instr::AnextStep {
            target: &f.target,
            exit: exhausted,
            at: offset(f),
        };
        self.instrs.push(Instr::PopTop);
        self.block(&f.orelse)?;
        // `break` pops the iterator and skips the `else` block.
        let skip_at = self.instrs.len();
        self.instrs.push(Instr::Jump(NO_LOOP));
        let broke = self.here();
        self.instrs.push(Instr::PopTop);
        let end = self.here();
        self.instrs[skip_at] = Instr::Jump(end);
        self.patch(&ctx.breaks, broke);
        Ok(())
    }

    /// Enters an `async with` item: `__aenter__()` awaited, its result stored to the target.
    pub(super) fn async_with_enter(&mut self, item: &'a ast::WithItem) {
        self.instrs.push(Instr::AsyncWithEnter(item));
        self.instrs.push(Instr::YieldFromStep {
            target: item
                .optional_vars
                .as_deref()
                .map_or(Dest::Drop, Dest::Store),
            at: offset(item),
        });
    }

    /// The normal end of an `async with` item's body: `__aexit__(None, None, None)` awaited.
    pub(super) fn async_with_exit(&mut self, item: &'a ast::WithItem) {
        self.instrs.push(Instr::AsyncWithExit);
        self.instrs.push(Instr::YieldFromStep {
            target: Dest::Drop,
            at: offset(item),
        });
    }
}
