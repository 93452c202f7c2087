//! Coroutines run by the workload VM and the modelled asyncio loop: `await` suspends and
//! delegates as `yield from` does, tasks run round-robin in creation order, `sleep` orders by
//! a virtual clock, gather collects results in argument order, exceptions travel from a task
//! to the one awaiting it; a suspended coroutine keeps its tensors alive, a coroutine in a
//! cycle is collected, and the objects a coroutine counts for the collector match CPython.
//!
//! The pure-Python scripts here are also run on every installed CPython 3.8+ (they assert
//! their own results), so the order of events is checked against the real event loop.

mod probes;

use probes::{agrees_with_cpython, ok};

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, as `generators.rs` does). A coroutine counts
/// as a generator: its ≤ 3.10 frame comes from the warm frame free list here; the last
/// probe exhausts that free list and shows the frame objects.
const PROBES: &[probes::Probe] = &[
    (
        "coroutine created, kept",
        "async def c():\n    return 1\ndef probe():\n    co = c()\n    keep.append(co)\n    co.close()\n",
        1,
        1,
    ),
    (
        "coroutine suspended in a user awaitable, kept",
        "class Suspend:\n    def __await__(self):\n        yield\nasync def c():\n    await Suspend()\n    return 1\ndef probe():\n    co = c()\n    co.send(None)\n    keep.append(co)\n",
        3,
        3,
    ),
    (
        "coroutine awaiting a coroutine, suspended, kept",
        "class Suspend:\n    def __await__(self):\n        yield\nasync def inner():\n    await Suspend()\nasync def outer():\n    await inner()\ndef probe():\n    co = outer()\n    co.send(None)\n    keep.append(co)\n",
        4,
        4,
    ),
    (
        "coroutine created and closed",
        "async def c():\n    return 1\ndef probe():\n    c().close()\n",
        0,
        0,
    ),
    (
        "300 coroutines closed, kept (closing returns each frame to the free list)",
        "async def c():\n    return 1\ndef probe():\n    for i in range(300):\n        co = c()\n        keep.append(co)\n        co.close()\n",
        300,
        300,
    ),
    (
        "300 coroutines kept (≤ 3.10: the frame free list runs out)",
        "async def c():\n    return 1\ndef probe():\n    for i in range(300):\n        keep.append(c())\n",
        600,
        300,
    ),
];

#[test]
fn coroutine_objects_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn gather_runs_tasks_round_robin_in_creation_order() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
order = []
async def worker(name, n):
    for i in range(n):
        order.append(name + str(i))
        await asyncio.sleep(0)
    return name
async def main():
    r = await asyncio.gather(worker('a', 2), worker('b', 3))
    order.append('gathered')
    return r
assert asyncio.run(main()) == ['a', 'b']
assert order == ['a0', 'b0', 'a1', 'b1', 'b2', 'gathered'], order
",
    );
}

#[test]
fn sleep_orders_by_deadline_then_creation_on_a_virtual_clock() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
timeline = []
async def sleeper(name, d):
    await asyncio.sleep(d)
    timeline.append(name)
    return d
async def main():
    t = asyncio.create_task(sleeper('late', 0.3))
    r = await asyncio.gather(sleeper('mid', 0.2), sleeper('early', 0.1), sleeper('early2', 0.1))
    timeline.append('gathered')
    assert not t.done()
    x = await t
    assert t.done() and t.result() == 0.3
    return r, x
r, x = asyncio.run(main())
assert r == [0.2, 0.1, 0.1] and x == 0.3
assert timeline == ['early', 'early2', 'mid', 'gathered', 'late'], timeline
",
    );
}

#[test]
fn await_delegates_to_coroutines_and_user_awaitables() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
class Ready:
    def __await__(self):
        yield
        return 42
async def inner():
    v = await Ready()
    return v + 1
async def outer():
    return await inner()
assert asyncio.run(outer()) == 43
async def plain():
    return 2
async def nested():
    # An await inside a larger expression whose awaitable does not suspend.
    return (await plain()) * (await plain())
assert asyncio.run(nested()) == 4
",
    );
}

#[test]
fn an_exception_in_a_gathered_task_reaches_the_awaiting_task() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
async def bad():
    await asyncio.sleep(0)
    raise ValueError('boom')
async def good():
    await asyncio.sleep(0)
    return 1
async def main():
    caught = None
    try:
        await asyncio.gather(bad(), good())
    except ValueError as e:
        caught = str(e)
    else:
        caught = 'none'
    return caught
assert asyncio.run(main()) == 'boom'
",
    );
}

#[test]
fn a_suspended_coroutine_keeps_its_tensors_alive() {
    ok("
MiB = 1024 * 1024
async def holder():
    x = torch.zeros(MiB, device='cuda')
    await asyncio.sleep(1)
    return 0
async def main():
    t = asyncio.create_task(holder())
    await asyncio.sleep(0)
    assert torch.cuda.memory_allocated() == 4 * MiB
    await t
    assert torch.cuda.memory_allocated() == 0
asyncio.run(main())
");
}

#[test]
fn a_finished_task_keeps_its_result_while_the_task_is_kept() {
    ok("
MiB = 1024 * 1024
async def make():
    return torch.zeros(MiB, device='cuda')
async def main():
    t = asyncio.create_task(make())
    await t
    assert torch.cuda.memory_allocated() == 4 * MiB
    return t
t = asyncio.run(main())
assert torch.cuda.memory_allocated() == 4 * MiB
del t
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn a_coroutine_in_a_cycle_is_collected() {
    ok("
import gc
MiB = 1024 * 1024
class Suspend:
    def __await__(self):
        yield
class Box:
    pass
async def c(box):
    x = torch.zeros(MiB, device='cuda')
    await Suspend()
box = Box()
box.co = c(box)
box.co.send(None)
del box
gc.collect()
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn awaiting_errors_follow_python() {
    ok("
async def f():
    return 1
async def main():
    co = f()
    await co
    try:
        await co
        assert False
    except RuntimeError:
        pass
    try:
        await 3
        assert False
    except TypeError:
        pass
    return 'ok'
assert asyncio.run(main()) == 'ok'
");
    let err = probes::run(
        "3.11",
        "async def main():\n    return 1 and (await asyncio.sleep(0))\nasyncio.run(main())\n",
    )
    .expect_err("refused");
    let text = err.to_string();
    // An `await` inside a larger expression is split (`tests/vm_split_expressions.rs`),
    // except behind a short circuit.
    assert!(text.contains("evaluated only sometimes"), "{text}");
    // Workload line 2 is line 6 of the scenario file; the `await` is at column 19 + 2.
    assert!(text.contains("t.yaml:6:21"), "located at the await: {text}");
    // `asend` of an async generator is an awaitable (`tests/vm_gen_asyncgen_methods.rs`).
    probes::run(
        "3.11",
        "async def agen():\n    yield 1\nasync def main():\n    return await agen().asend(None)\nassert asyncio.run(main()) == 1\n",
    )
    .expect("asend runs");
}

#[test]
fn cancelling_a_sleeping_task_raises_cancelled_error_at_its_await() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
log = []
async def worker():
    try:
        await asyncio.sleep(10)
        log.append('not reached')
    except asyncio.CancelledError:
        log.append('cancelled')
        raise
    finally:
        log.append('finally')
async def main():
    t = asyncio.create_task(worker())
    await asyncio.sleep(0)
    assert t.cancel() is True
    assert not t.cancelled()
    try:
        await t
    except asyncio.CancelledError:
        log.append('main saw')
    assert t.cancelled() and t.done()
    assert t.cancel() is False
    return 'ok'
assert asyncio.run(main()) == 'ok'
assert log == ['cancelled', 'finally', 'main saw'], log
",
    );
}

#[test]
fn a_task_cancelled_before_its_first_step_never_runs() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
log = []
async def worker():
    log.append('ran')
async def main():
    t = asyncio.create_task(worker())
    assert t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append('cancelled before start')
    return t.cancelled()
assert asyncio.run(main()) is True
assert log == ['cancelled before start'], log
",
    );
}

#[test]
fn a_task_that_swallows_cancellation_finishes_with_its_result() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
async def stubborn():
    outcome = 'slept'
    try:
        await asyncio.sleep(5)
    except asyncio.CancelledError:
        outcome = 'kept going'
    return outcome
async def main():
    t = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    t.cancel()
    r = await t
    assert not t.cancelled()
    return r
assert asyncio.run(main()) == 'kept going'
",
    );
}

#[test]
fn cancelling_a_task_awaiting_gather_cancels_the_children() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
log = []
async def child(n):
    try:
        await asyncio.sleep(n)
    except asyncio.CancelledError:
        log.append('child' + str(n))
        raise
async def parent():
    await asyncio.gather(child(1), child(2))
    log.append('not reached')
async def main():
    t = asyncio.create_task(parent())
    # Two hops: the parent starts the children, then they start sleeping.
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append('parent cancelled')
    return t.cancelled()
assert asyncio.run(main()) is True
assert log == ['child1', 'child2', 'parent cancelled'], ' '.join(log)
",
    );
}

#[test]
fn asyncio_run_cancels_the_tasks_still_pending_at_shutdown() {
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
log = []
async def worker():
    try:
        await asyncio.sleep(10)
    except asyncio.CancelledError:
        log.append('worker cancelled')
        raise
    finally:
        log.append('worker finally')
async def main():
    asyncio.create_task(worker())
    await asyncio.sleep(0)
    log.append('main done')
asyncio.run(main())
assert log == ['main done', 'worker cancelled', 'worker finally'], log
",
    );
}

#[test]
fn a_cancelled_task_releases_its_tensors() {
    let after_cancel = "
MiB = 1024 * 1024
async def holder():
    x = torch.zeros(MiB, device='cuda')
    await asyncio.sleep(100)
async def main():
    t = asyncio.create_task(holder())
    await asyncio.sleep(0)
    assert torch.cuda.memory_allocated() == 4 * MiB
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        pass
asyncio.run(main())
# Freed without a collection: from 3.9 the task hands its CancelledError (whose traceback
# holds the frame) to the first `await t`, so no cycle through `t` remains (CPython too).
assert torch.cuda.memory_allocated() == 0
";
    ok(after_cancel);
    // 3.8 drops the task's CancelledError at once (the other path of `task_cancelled`).
    probes::run("3.8", after_cancel).expect("runs on 3.8");
    // A task left pending at shutdown is cancelled, and frees its tensors then.
    ok("
MiB = 1024 * 1024
async def holder():
    x = torch.zeros(MiB, device='cuda')
    await asyncio.sleep(100)
async def main():
    asyncio.create_task(holder())
    await asyncio.sleep(0)
    assert torch.cuda.memory_allocated() == 4 * MiB
asyncio.run(main())
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn asyncio_calls_not_modelled_are_refused_with_a_location() {
    let script =
        "async def main():\n    await asyncio.shield(asyncio.sleep(1))\nasyncio.run(main())\n";
    let err = probes::run("3.11", script).expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("unsupported") && text.contains("shield"),
        "{text}"
    );
    assert!(
        text.contains("t.yaml:6:"),
        "located on the call's line: {text}"
    );
}

#[test]
fn a_task_created_as_main_returns_takes_its_first_step_before_shutdown() {
    // The main task's done callback stops the loop only after the batch under way, so the
    // new task starts, then shutdown cancels it at its `await`.
    agrees_with_cpython(
        "import asyncio\n",
        13,
        "
log = []
async def worker(n):
    log.append('start' + str(n))
    try:
        await asyncio.sleep(1)
    finally:
        log.append('finally' + str(n))
async def main():
    asyncio.create_task(worker(1))
    log.append('main')
asyncio.run(main())
assert log == ['main', 'start1', 'finally1'], ' '.join(log)
",
    );
}
