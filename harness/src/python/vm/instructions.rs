//! The VM's instruction set. Expressions are still borrowed from the workload's AST and
//! evaluated by the evaluator; statement-level control flow is resolved to instruction
//! indices.

use ruff_python_ast::{self as ast, Expr, Stmt};

/// Jump targets of the loop around an instruction; `NO_LOOP` outside any loop.
pub(in crate::python) const NO_LOOP: u32 = u32::MAX;

/// One instruction. Expressions are borrowed from the workload's AST and evaluated by the
/// evaluator; control flow is resolved to instruction indices.
pub(in crate::python) enum Instr<'a> {
    /// A statement with no suspension point, run by the evaluator. A `break`/`continue`
    /// it ends with jumps to the enclosing compiled loop's `exit`/`head`.
    Exec {
        stmt: &'a Stmt,
        exit: u32,
        head: u32,
    },
    /// Suspends with the value (`None` when absent); on resumption the sent value is
    /// stored to `target`, dropped or pushed (`Dest::Push`; never `Dest::Return`).
    Yield {
        value: Option<&'a Expr>,
        target: Dest<'a>,
        at: u32,
    },
    /// Evaluates an operand that comes before a suspension point of its expression and
    /// pushes it: the frame holds it across the suspension, as CPython's value stack does.
    Push(&'a Expr),
    /// Pops the `len` values pushed for an expression split at its suspension points
    /// (nodes `start..start + len` of [`super::compile::VmCode::bound`]) and lets the next instruction's
    /// evaluation take them in place of evaluating those nodes again.
    Bind {
        start: u32,
        len: u32,
    },
    /// `yield from`: pushes the sub-iterator and its position.
    YieldFromStart(&'a Expr),
    /// `await`: pushes the awaitable's iterator (a coroutine, a future, or what a user
    /// `__await__` returns) and its position; `YieldFromStep` then delegates to it.
    GetAwaitable(&'a Expr),
    /// Takes the next item of the sub-iterator on the stack (a sub-generator receives the
    /// sent value) and suspends with it, staying on this instruction; when it is exhausted,
    /// pops it and stores its return value to `target`.
    YieldFromStep {
        target: Dest<'a>,
        at: u32,
    },
    /// Evaluates the test and jumps when it is false.
    JumpIfFalse(&'a Expr, u32),
    Jump(u32),
    /// Pushes the iterable of a `for` loop and its position.
    GetIter(&'a Expr),
    /// Stores the loop's next item to `target`, or jumps to `exit` when it is exhausted.
    ForIter {
        target: &'a Expr,
        exit: u32,
    },
    /// Pops a finished `for` loop's iterable and position.
    PopIter,
    /// Finishes the generator with the value (`StopIteration.value`).
    Return(Option<&'a Expr>),
    /// Enters a `try` whose `finally` starts at `handler` when an exception is raised.
    SetupFinally {
        handler: u32,
    },
    /// Leaves the `try` body normally.
    PopFinally,
    /// Ends a `finally` block entered by an exception: re-raises it.
    EndFinally,
    /// An `except` clause: when the exception being handled matches `class` (any when
    /// absent) it is bound to `name` and the clause runs; otherwise jumps to `next`.
    MatchExcept {
        class: Option<&'a Expr>,
        name: Option<&'a ast::Identifier>,
        next: u32,
    },
    /// Ends an `except` clause: the exception is handled (`name = None; del name`).
    EndExcept {
        name: Option<&'a ast::Identifier>,
    },
    /// `with` around a suspension point (`BEFORE_WITH`): evaluates the manager, enters it,
    /// pushes what its exit needs and stores the entered value to the item's target.
    WithEnter(&'a ast::WithItem),
    /// The `with` body ended normally, or a `return`/`break`/`continue` leaves it: the
    /// exit `under` slots below the top (a kept return value may be above it) is taken and
    /// called with no exception (`None` x3).
    WithExit {
        under: u32,
    },
    /// The handler of a `with` body (`WITH_EXCEPT_START`): pops the exit and calls it with
    /// the exception; a true result suppresses it, otherwise it is re-raised.
    WithExitExc,
    /// `async with` (`BEFORE_ASYNC_WITH`): evaluates the manager, pushes its bound
    /// `__aexit__`, then the awaitable iterator of `__aenter__()` and its position for the
    /// `YieldFromStep` that follows.
    AsyncWithEnter(&'a ast::WithItem),
    /// The `async with` body ended normally: pops the exit, calls it with no exception and
    /// pushes its awaitable iterator and position (awaited by the next `YieldFromStep`).
    AsyncWithExit,
    /// The handler of an `async with` body: pops the exit, calls it with the exception and
    /// awaits the result to its end; a true result suppresses the exception.
    AsyncWithExitExc,
    /// `async for` (`GET_AITER`): pushes the iterable's `__aiter__()`.
    GetAIter(&'a Expr),
    /// `GET_ANEXT`: pushes the awaitable iterator of `__anext__()` of the async iterator on
    /// the stack, and its position.
    GetANext,
    /// Awaits `__anext__()`'s awaitable (as `YieldFromStep`); its result goes to `target`,
    /// and `StopAsyncIteration` ends the loop at `exit`.
    AnextStep {
        target: &'a Expr,
        exit: u32,
        at: u32,
    },
    /// Pops and drops the top of the stack (a finished `async for`'s iterator).
    PopTop,
    // ----- plain bodies (functions that do not suspend, the module body) ------------------
    /// A compound statement begins: its offset and line become current and it counts one
    /// step of the budget, as every statement does.
    StmtStart(&'a Stmt),
    /// A compound statement ends: finalizers, weak callbacks and storage release run, as
    /// after every statement.
    StmtEnd,
    /// `GET_ITER` of a plain `for` loop: the iterable (and the hidden iterator CPython
    /// counts, see `count_loop_iterator`) goes on the
    /// interpreter's loop stack at `depth` (the loop's nesting depth in its body).
    LoopIter {
        iter: &'a Expr,
        depth: u32,
    },
    /// A plain `while` loop begins (it has no iterable): it is entered on the loop stack.
    LoopStart {
        test: &'a Expr,
        depth: u32,
    },
    /// `FOR_ITER` of the loop at `depth`: the previous pass ends; the next item is stored
    /// to `target`, or the loop is exhausted and goes to `exit` (its `else` block).
    LoopNext {
        target: &'a Expr,
        exit: u32,
        depth: u32,
    },
    /// The test of the `while` loop at `depth`: the previous pass ends; a false test goes
    /// to `exit` (its `else` block).
    WhileTest {
        test: &'a Expr,
        exit: u32,
        depth: u32,
    },
    /// The loop at `depth` ends (exhausted, before its `else` block, or left by `break`).
    LoopEnd {
        depth: u32,
    },
    /// The commonest simple statements of a plain body, run without the evaluator's
    /// statement dispatch (each is a whole statement: line, step, and the per-statement
    /// work after it): an expression statement, an assignment, a `return`.
    ExprStmt(&'a Stmt, &'a Expr),
    AssignStmt(&'a Stmt, &'a ast::StmtAssign),
    ReturnStmt(&'a Stmt, Option<&'a Expr>),
    /// `raise` as a whole statement.
    RaiseStmt(&'a Stmt, &'a ast::StmtRaise),
    /// A `return` that leaves `try` blocks: the statement runs and its value is pushed on
    /// the frame's value stack while the blocks are left (`compile_try.rs`).
    ReturnValue(&'a Stmt, Option<&'a Expr>),
    /// `SETUP_FINALLY` guarding a plain `with` body, its handler a [`Instr::WithExitExc`]:
    /// errors inside become exception objects only when the exit takes them (an object's
    /// `__exit__`, a `contextlib` manager), as the tree walker's `with` made them.
    SetupWith {
        handler: u32,
    },
    /// Pops the value that [`Instr::ReturnValue`] pushed and returns it.
    ReturnTop,
    /// `POP_EXCEPT` on a way out of an `except` clause or of a `finally` body entered by
    /// an exception: the handled exception `under` slots below the top of the value stack
    /// is dropped (the clause's `as` name deleted); it is handled no more.
    PopExcept {
        under: u32,
    },
    /// Drops the kept return value `under` slots below the top (a `return` or `break` in a
    /// `finally` body that a `return` runs replaces it).
    DropValue {
        under: u32,
    },
    /// Generator and coroutine bodies: the statements up to `end` hold no suspension point
    /// and are compiled as a plain body's; the plain loop runs them (`plain.rs`) and hands
    /// back where control leaves them (`end`, or a `break`/`continue` target outside).
    PlainRegion {
        end: u32,
    },
    /// A plain instruction whose expression operand is compiled (`compile_expr.rs`).
    Compiled(super::compile_expr::Compiled<'a>),
    /// A plain region's `return` that leaves blocks of the suspending body around it: pops
    /// the kept return value and leaves the region for `to`, where the generator frame
    /// pushes it and leaves those blocks (`compile_try.rs`' deferred ways out).
    ExitRegion {
        to: u32,
    },
    /// `POP_EXCEPT` in a generator frame on a way out of an `except` clause: the clause's
    /// exception is handled no more (the one saved under it is again), the `under` values
    /// on top are kept, and the clause's `as` name is deleted.
    LeaveClause {
        name: Option<&'a ast::Identifier>,
        under: u32,
    },
    /// A `return` leaves an `async with` block: the exit `under` slots below the top (the
    /// kept return value is above it) is taken and called with `None` x3, and its awaitable
    /// iterator and position pushed (awaited by the next `YieldFromStep`; the return value
    /// stays under them, as CPython 3.8 – 3.13 awaits `__aexit__` with the value on the stack).
    AsyncWithExitUnder {
        under: u32,
    },
}

/// Where the result of a `yield from`/`await` goes.
#[derive(Clone, Copy)]
pub(in crate::python) enum Dest<'a> {
    Drop,
    Store(&'a Expr),
    /// `return await x`: the frame returns it.
    Return,
    /// Inside a larger expression: the value goes on the stack for a later [`Instr::Bind`].
    Push,
}
