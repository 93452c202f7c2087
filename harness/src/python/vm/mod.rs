//! The workload VM, first stage: function bodies that suspend (`yield`, `yield from`) are
//! compiled to instructions (`compile.rs`) and run by a VM loop whose frame is data that a
//! generator object owns while it is suspended (`generators.rs`).
//!
//! A tree walker cannot suspend in the middle of a body, so suspension is where the VM
//! starts. For now statements without a suspension point are leaf instructions run by the
//! tree-walking evaluator, and expressions are evaluated by it; control flow around a
//! suspension point (`if`, `while`, `for`, `break`, `continue`, `return`) is real
//! instructions with resolved jump targets. Later stages move expressions and every
//! function body onto instructions, so that the evaluator's statement walker goes away.
//! Coroutines (`async def`) are compiled the same way: `await` is a suspension point that
//! delegates as `yield from` does (`coroutines.rs`), and the asyncio
//! event loop that drives them is `event_loop.rs` (cancellation: `cancellation.rs`;
//! `asyncio.Queue`: `queues.rs`).
//! `with` around a suspension point enters its manager and keeps what its exit needs on
//! the frame's value stack (`with_blocks.rs`). A suspension point inside a larger
//! expression splits it (`split.rs`): the operands before it are pushed and bound back to
//! their nodes for the evaluator (`substitutes.rs`). Not compiled yet (refused, located):
//! `yield` inside `finally`, a suspension point behind a short circuit; an `await` in a
//! nested scope runs its awaitable to the end, refused if it would suspend.

mod async_blocks;
mod cancellation;
mod compile;
mod compile_async;
mod contextlib;
mod coroutines;
mod event_loop;
mod generator_methods;
mod generators;
mod queues;
mod split;
mod substitutes;
mod wait_for;
mod with_blocks;

pub(super) use compile::{VmCode, compile, is_generator_body};
pub(super) use event_loop::EventLoop;
pub(super) use queues::QUEUE_TYPE;
pub(super) use substitutes::Substitute;
