//! The workload VM. Every function body and the module body are compiled to instructions
//! (`compile.rs`, `compile_plain.rs`; the instruction set: `instructions.rs`), once per code
//! object. Bodies that suspend (`yield`, `yield from`, `await`) run on a VM loop whose frame
//! is data that a generator object owns while it is suspended (`generators.rs`); plain
//! function bodies and the module body run on a VM loop whose frame lives for the call
//! (`plain.rs`).
//!
//! Stage reached: in plain bodies and class bodies (`run_class_body`: the class namespace
//! is where the body's names bind) `if`, `while` and `for` (with `else`, `break`,
//! `continue`, `return` out of loops), `try`/`except`/`else`/`finally`, `raise` and `with`
//! are instructions (`compile_try.rs`, run by `plain_try.rs`; `with` is compiled by the
//! generator compiler's `with_items` and run by `with_blocks.rs`): `return`, `break` and
//! `continue` leave `finally` bodies, `except` clauses and `with` blocks as CPython's
//! compiler makes them, and the exceptions being handled and the `with` exits sit on the
//! frame's value stack, so a `try` inside an `except` clause keeps the outer one.
//! Generator and coroutine bodies compile with the same compiler: each run of statements
//! without a suspension point is a plain region ([`compile::Instr::PlainRegion`]) run by
//! the plain loop (`plain.rs`), which hands back where control leaves it (a `break` or
//! `continue` of a suspending loop around it first unwinds the region's blocks,
//! `compile_try.rs`'s `FBlock::GenLoop`).
//!
//! Expressions of plain instructions (expression statements, assignment values, `return`
//! values, `if`/`while` tests, `for` iterables; in plain bodies and in the plain regions of
//! suspending bodies) are compiled to ops on a value stack (`compile_expr.rs`, run by
//! `eval_expr.rs`): names, constants, attribute loads, calls without `*`/`**` (positional,
//! keyword, method calls), binary and unary operators, comparisons (chained too),
//! `and`/`or`, conditional expressions, subscripts (the index's operands too:
//! `compile_subscript.rs`, run by `eval_subscript.rs`; the natives receive an evaluated
//! `natives::Index`), tuple and list displays, constant
//! tuples, dict displays of up to 15 pairs without `**`, set displays, f-strings (`=` and
//! nested fields in a spec too), `:=` to a name (`compile_expr_more.rs`, run by
//! `eval_expr_more.rs`); `*` items in tuple, list and set displays and the constant set
//! displays 3.9+ fold (`compile_expr_starred.rs`); calls with `*`/`**` arguments, CPython's
//! argument tuple, keyword dicts and names tuple counted per version (`compile_call_ex.rs`,
//! run by `eval_call_ex.rs`); a chained comparison's value is its
//! deciding link's result (a tensor for tensors). What still falls back to the
//! tree walker, through `Op::EvalTree` (grep it; counted per thread by
//! `expressions_evaluated_by_tree`) or inside a compiled op: dict displays with `**` or
//! more than 15 pairs, generator expressions, comprehensions with an `async for` or a
//! target other than names, `await` outside a suspension point, the items of a
//! constant tuple and of a folded constant set (evaluated by the display routine),
//! expressions nested deeper than 200 levels, and every operand of the instructions not
//! listed above (`Exec` leaves, generator instructions, `with` items, `raise`, `except`
//! classes).
//!
//! List, set and dict comprehensions are compiled inline (`compile_comp.rs`, run by
//! `eval_comp.rs`): their loops, `if` clauses and elements are ops, the loop variables
//! shadow the enclosing scope's names (a captured one gets a fresh cell), and ≤ 3.11 the
//! comprehension's function object, closure tuple and (≤ 3.10) frame are counted and
//! freed around it, as CPython makes them.
//!
//! Simple statements compiled (`compile_stmt.rs`, run by `eval_stmt.rs`): augmented
//! assignment to a name or an attribute, annotated assignment to a name or an attribute,
//! `del` of names or of one attribute, `assert`, `pass`, `global`, `nonlocal`; with a
//! subscript target (`compile_subscript.rs`): `x[i] = v` (one target), `x[i] op= v`
//! (container and index once), `x[i]: T = v` and `x[i]: T`, and `del` of any mix of names,
//! attributes and subscripts (slices too).
//! `import`, `from ... import`, `def`, `async def` and `class` statements and lambdas
//! (`compile_defs.rs`, run by `eval_defs.rs`): decorators, defaults, the class's base are
//! compiled expressions; making the function or class and binding the name are ops
//! (annotations are not evaluated, as before; keywords and several bases are refused).
//!
//! What the tree walker still does: it evaluates the expressions listed above, the container
//! and index of a subscript target of a `for` loop, of unpacking and of a chained
//! assignment (`natives::eval_index`, the same index interface; not counted), and runs the
//! simple statements that stay [`compile::Instr::Exec`] leaves (counted per thread by
//! `statements_run_by_tree`): `del` of a parenthesized tuple of targets, a `break`
//! or `continue` that leaves no block. It runs no compound statement: `try`/`except*` and
//! `async for`/`async with` outside a coroutine reach it as leaves and are refused there,
//! located (`handlers.rs`, `interp/statements.rs`).
//! Generator frames keep the exception handled before an `except` clause
//! on their value stack while the clause runs (`generator_run.rs`), as CPython does.
//! A `return`, `break` or `continue` in a plain region that leaves a suspending body's
//! `try` body, `except` clause or `try`/`finally` jumps out to code after the region that
//! leaves those blocks on the generator frame (`compile_try.rs`); so does one out of a
//! `finally` body of a suspending `try` (the exception it handles, or the value of the
//! `return` it runs for, is discarded) and one out of a suspending `with` block (the exit
//! is called with `None` x3; a `return` through an `async with` awaits each `__aexit__`
//! with its value kept under the awaitable).
//!
//! In generator and coroutine bodies, control flow around a suspension point (`if`,
//! `while`, `for`, `try`, `with`, `break`, `continue`, `return`) is instructions with
//! resolved jump targets; statements without a suspension point are leaves.
//! Coroutines (`async def`) are compiled the same way: `await` is a suspension point that
//! delegates as `yield from` does (`coroutines.rs`), and the asyncio
//! event loop that drives them is `event_loop.rs` (cancellation: `cancellation.rs`;
//! `asyncio.Queue`: `queues.rs`; an async generator's `asend`/`athrow`/`aclose`
//! awaitables and `anext`: `asyncgen_methods.rs`).
//! `with` around a suspension point enters its manager and keeps what its exit needs on
//! the frame's value stack (`with_blocks.rs`). A suspension point inside a larger
//! expression splits it (`split.rs`): the operands before it are pushed and bound back to
//! their nodes for the evaluator (`substitutes.rs`). A `yield` inside `finally` suspends
//! in either copy of the body (the handler's keeps its exception in the generator). Not
//! compiled yet (refused, located): a suspension point behind a short circuit; an `await`
//! in a nested scope runs its awaitable to the end, refused if it would suspend.

mod async_blocks;
mod asyncgen_hooks;
mod asyncgen_methods;
mod cancellation;
mod compile;
mod compile_async;
mod compile_call_ex;
mod compile_comp;
mod compile_defs;
mod compile_expr;
mod compile_expr_more;
mod compile_expr_starred;
mod compile_plain;
mod compile_stmt;
mod compile_subscript;
mod compile_try;
mod contextlib;
mod coroutines;
mod eval_call_ex;
mod eval_comp;
mod eval_defs;
mod eval_expr;
mod eval_expr_more;
mod eval_expr_starred;
mod eval_stmt;
mod eval_subscript;
mod event_loop;
mod generator_methods;
mod generator_run;
mod generators;
mod instructions;
mod lambda_body;
mod pep442;
mod plain;
mod plain_try;
mod queues;
mod split;
mod store_fast;
mod substitutes;
mod wait_for;
mod with_blocks;

pub(super) use compile::{VmCode, compile, is_generator_body};
pub use eval_expr::expressions_run_compiled;
pub use eval_expr_more::expressions_evaluated_by_tree;
pub use eval_stmt::statements_run_by_tree;
pub(super) use event_loop::EventLoop;
pub(super) use plain::PlainLoop;
pub use plain_try::exceptions_caught_by_vm;
pub(super) use plain_try::{PlainBlock, PlainSlot};
pub(super) use queues::QUEUE_TYPE;
pub use store_fast::stores_resolved_to_slots;
pub(super) use substitutes::Substitute;
pub use with_blocks::with_blocks_entered_by_vm;
