//! `asyncio.wait_for`: the awaitable's result and exceptions pass through; at the deadline
//! it is cancelled (its `finally` runs, its frame lets go of what it held) and the caller
//! gets `TimeoutError` (`asyncio.TimeoutError`, a distinct class before 3.11), whose
//! `__cause__` is the inner `CancelledError` from 3.9 (keeping the cancelled frame, so its
//! locals, while the error is held). The scripts run on the model (3.10, 3.11, 3.12 and the
//! versions named) and on every installed CPython 3.8 – 3.15, version-dependent figures
//! substituted per version.

#[allow(dead_code)] // this file uses `run`, `ok` and `interpreter`
mod probes;

use probes::{interpreter, ok};
use std::process::Command;

/// Runs `script` (with `{NAME}` placeholders filled by `fill(minor)`) on the model for
/// 3.8 – 3.13 and on each installed CPython 3.8 – `3.newest`; every run must pass its asserts.
fn agrees_per_version(script: &str, newest: u8, fill: impl Fn(u8) -> Vec<(&'static str, String)>) {
    let filled = |minor: u8| {
        fill(minor)
            .into_iter()
            .fold(script.to_string(), |s, (k, v)| {
                s.replace(&format!("{{{k}}}"), &v)
            })
    };
    for minor in 8..=13u8 {
        if let Err(e) = probes::run(&format!("3.{minor}"), &filled(minor)) {
            panic!("model on 3.{minor}: {e}");
        }
    }
    for minor in 8..=newest {
        let Some(python) = interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let out = Command::new(&python)
            .args(["-c", &filled(minor)])
            .output()
            .expect("runs python");
        assert!(
            out.status.success(),
            "CPython 3.{minor} disagrees: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

fn py_bool(b: bool) -> String {
    if b { "True" } else { "False" }.to_string()
}

#[test]
fn results_exceptions_and_the_timeout_pass_through_as_on_cpython() {
    agrees_per_version(
        "
import asyncio
log = []
async def fast(x):
    await asyncio.sleep(0.1)
    log.append(('fast done', x))
    return x * 2
async def failing():
    await asyncio.sleep(0)
    raise KeyError('k')
async def slow(name):
    try:
        log.append((name, 'start'))
        await asyncio.sleep(10)
        log.append((name, 'never'))
    except asyncio.CancelledError:
        log.append((name, 'cancelled'))
        raise
    finally:
        log.append((name, 'finally'))
async def main():
    assert await asyncio.wait_for(fast(1), 5) == 2
    assert await asyncio.wait_for(fast(2), timeout=5) == 4
    assert await asyncio.wait_for(fast(3), None) == 6
    try:
        await asyncio.wait_for(failing(), 1)
    except KeyError as e:
        log.append(('KeyError', e.args[0]))
    try:
        await asyncio.wait_for(slow('a'), 0.5)
    except asyncio.TimeoutError as e:
        log.append(('timeout', type(e).__name__, isinstance(e, Exception)))
        assert isinstance(e.__cause__, asyncio.CancelledError) == {CAUSE}
        assert isinstance(e.__context__, asyncio.CancelledError) == {CAUSE}
    assert (asyncio.TimeoutError is TimeoutError) == {ALIAS}
    fut = asyncio.ensure_future(asyncio.wait_for(fast(4), 5))
    r = await asyncio.gather(fut, asyncio.wait_for(fast(5), 5))
    assert r == [8, 10], r
    try:
        await asyncio.gather(asyncio.wait_for(slow('b'), 1), asyncio.sleep(0.5))
    except asyncio.TimeoutError:
        log.append('gather timeout')
    return log
got = asyncio.run(main())
assert got == [('fast done', 1), ('fast done', 2), ('fast done', 3), ('KeyError', 'k'), ('a', 'start'), ('a', 'cancelled'), ('a', 'finally'), ('timeout', 'TimeoutError', True), ('fast done', 4), ('fast done', 5), ('b', 'start'), ('b', 'cancelled'), ('b', 'finally'), 'gather timeout'], got
",
        15,
        |minor| vec![("CAUSE", py_bool(minor >= 9)), ("ALIAS", py_bool(minor >= 11))],
    );
}

/// A task awaiting `wait_for` that is cancelled cancels the inner awaitable too.
#[test]
fn cancelling_the_waiting_task_cancels_the_inner_coroutine() {
    agrees_per_version(
        "
import asyncio
log = []
async def slow():
    try:
        await asyncio.sleep(10)
    finally:
        log.append('inner finally')
async def waiter():
    try:
        await asyncio.wait_for(slow(), 5)
    except asyncio.CancelledError:
        log.append('waiter cancelled')
        raise
async def main():
    t = asyncio.ensure_future(waiter())
    await asyncio.sleep(1)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        log.append('main saw it')
    await asyncio.sleep(0)
    assert sorted(log) == ['inner finally', 'main saw it', 'waiter cancelled'], log
asyncio.run(main())
",
        15,
        |_| Vec::new(),
    );
}

/// Gen-0 objects while the inner coroutine runs its first step (the `wait_for` coroutine,
/// the inner task, the waiter, timer handle, partial...), and none left once it returned.
const COUNTS: &str = "
import asyncio, gc
gc.disable()
seen = []
async def inner(x):
    seen.append(gc.get_count()[0])
    await asyncio.sleep(0)
    return x
async def main():
    for _ in range(3):
        seen.clear()
        c = inner(1)
        before = gc.get_count()[0]
        r = await asyncio.wait_for(c, 5)
        after = gc.get_count()[0] - before
    assert seen[0] - before == {WHILE}, seen[0] - before
    assert after == 0, after
asyncio.run(main())
";

#[test]
fn wait_for_counts_its_objects_as_cpython_does() {
    agrees_per_version(COUNTS, 15, |minor| {
        vec![("WHILE", if minor <= 13 { "5" } else { "3" }.to_string())]
    });
}

/// The timed-out coroutine's tensor: freed by the cancellation on 3.8; from 3.9 the caught
/// `TimeoutError` keeps it through `__cause__.__traceback__` (the cancelled frame) until
/// the handler ends. Model only (no torch on the interpreters here); the same lifetimes
/// are checked on CPython with a weak reference in the next test.
#[test]
fn a_caught_timeout_keeps_the_cancelled_frame_and_its_tensor_from_3_9() {
    let script = "
import asyncio
MB = 1024 * 1024
async def slow():
    x = torch.zeros(1024, 256, device='cuda')
    await asyncio.sleep(10)
async def main():
    try:
        await asyncio.wait_for(slow(), 1)
    except asyncio.TimeoutError as e:
        assert torch.cuda.memory_allocated() == KEPT * MB, torch.cuda.memory_allocated()
    assert torch.cuda.memory_allocated() == 0
asyncio.run(main())
";
    for (python, kept) in [("3.8", 0), ("3.9", 1), ("3.10", 1), ("3.11", 1)] {
        if let Err(e) = probes::run(python, &script.replace("KEPT", &kept.to_string())) {
            panic!("on {python}: {e}");
        }
    }
    ok(&script
        .replace("KEPT", "1")
        .replace("    assert torch.cuda.memory_allocated() == 0\n", ""));
}

#[test]
fn a_caught_timeout_keeps_the_cancelled_frame_as_on_cpython() {
    agrees_per_version(
        "
import asyncio, weakref, gc
class Big:
    pass
log = []
async def slow(ref):
    big = Big()
    ref.append(weakref.ref(big))
    try:
        await asyncio.sleep(10)
    finally:
        log.append(('finally', ref[0]() is not None))
async def main():
    ref = []
    try:
        await asyncio.wait_for(slow(ref), 0.5)
    except asyncio.TimeoutError as e:
        log.append(('caught', ref[0]() is not None))
    gc.collect()
    log.append(('after', ref[0]() is not None))
    return log
got = asyncio.run(main())
assert got == [('finally', True), ('caught', {KEPT}), ('after', False)], got
",
        // From 3.12 CPython keeps the `CancelledError` (and so the frame) until
        // `asyncio.run` ends (held by a list of the loop's; the model frees it with the
        // handler): compared up to 3.11, whose mechanism the model follows.
        11,
        |minor| vec![("KEPT", py_bool(minor >= 9))],
    );
}
