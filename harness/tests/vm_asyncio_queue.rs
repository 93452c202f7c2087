//! `asyncio.Queue`: a bounded producer/consumer pipeline (ordering of puts and gets,
//! blocking while full or empty), `get_nowait`/`put_nowait` raising `QueueEmpty`/
//! `QueueFull`, `task_done`/`join`, a cancelled getter, and the bytes a queue of tensors
//! holds. The pure-Python scripts also run on every installed CPython 3.8 – 3.15 (their
//! expected logs are CPython's, asserted inside the script); the tensor test runs on the
//! model only (no torch on the interpreters here).

#[allow(dead_code)] // this file uses `ok`, `run` and `interpreter`
mod probes;

use probes::{agrees_with_cpython, interpreter, ok};
use std::process::Command;

#[test]
fn a_bounded_producer_consumer_pipeline_agrees_with_cpython() {
    agrees_with_cpython(
        "",
        15,
        "
import asyncio
log = []
async def producer(q, n):
    for i in range(n):
        await q.put(i)
        log.append(('put', i, q.qsize()))
    await q.put(None)
    log.append('producer done')
async def consumer(q):
    while True:
        item = await q.get()
        log.append(('got', item))
        q.task_done()
        if item is None:
            break
        await asyncio.sleep(0)
async def main():
    q = asyncio.Queue(maxsize=2)
    assert q.empty() and not q.full() and q.qsize() == 0
    await asyncio.gather(producer(q, 5), consumer(q))
    await q.join()
    try:
        q.get_nowait()
    except asyncio.QueueEmpty:
        log.append('empty')
    q.put_nowait('a'); q.put_nowait('b')
    assert q.full()
    try:
        q.put_nowait('c')
    except asyncio.QueueFull:
        log.append('full')
    assert q.get_nowait() == 'a' and q.qsize() == 1
    return log
got = asyncio.run(main())
assert got == [('put', 0, 1), ('put', 1, 2), ('got', 0), ('put', 2, 2), ('got', 1), ('put', 3, 2), ('got', 2), ('put', 4, 2), ('got', 3), 'producer done', ('got', 4), ('got', None), 'empty', 'full'], str(got)

",
    );
}

#[test]
fn a_cancelled_getter_join_and_the_queue_errors_agree_with_cpython() {
    agrees_with_cpython(
        "",
        15,
        "
import asyncio
log = []
async def main():
    q = asyncio.Queue()
    async def getter(name):
        try:
            item = await q.get()
            log.append((name, item))
        except asyncio.CancelledError:
            log.append((name, 'cancelled'))
            raise
    a = asyncio.ensure_future(getter('a'))
    b = asyncio.ensure_future(getter('b'))
    await asyncio.sleep(0)
    a.cancel()
    await asyncio.sleep(0)
    q.put_nowait(1)
    await b
    assert a.cancelled()
    log.append(('left', q.qsize()))
    full = asyncio.Queue(maxsize=1)
    full.put_nowait('x')
    async def putter(item):
        try:
            await full.put(item)
            log.append(('put', item))
        except asyncio.CancelledError:
            log.append(('put cancelled', item))
            raise
    p1 = asyncio.ensure_future(putter('y'))
    p2 = asyncio.ensure_future(putter('z'))
    await asyncio.sleep(0)
    p1.cancel()
    await asyncio.sleep(0)
    log.append(full.get_nowait())
    await p2
    log.append(full.get_nowait())
    work = asyncio.Queue(maxsize=0)
    for i in range(3):
        work.put_nowait(i)
    async def worker():
        while not work.empty():
            item = work.get_nowait()
            await asyncio.sleep(0)
            log.append(('done', item))
            work.task_done()
    w = asyncio.ensure_future(worker())
    await work.join()
    log.append('joined')
    await work.join()
    try:
        work.task_done()
    except ValueError:
        log.append('too many task_done')
    try:
        work.get_nowait()
    except asyncio.QueueEmpty as e:
        assert isinstance(e, Exception)
        log.append('QueueEmpty')
    await w
    return log
got = asyncio.run(main())
assert got == [('a', 'cancelled'), ('b', 1), ('left', 0), ('put cancelled', 'y'), 'x', ('put', 'z'), 'z', ('done', 0), ('done', 1), ('done', 2), 'joined', 'too many task_done', 'QueueEmpty'], str(got)
",
    );
}

/// `Queue()`'s gen-0 objects per version (measured: 8 on CPython 3.8 – 3.10, 6 on 3.11 –
/// 3.13), and no object kept by `put`/`get` and their `_nowait` forms when none waits.
const QUEUE_COUNTS: &str = "
import asyncio, gc
gc.disable()
async def main():
    warm = asyncio.Queue(maxsize=2)
    before = gc.get_count()[0]
    q = asyncio.Queue(maxsize=2)
    made = gc.get_count()[0] - before
    kept = []
    for _ in range(3):
        before = gc.get_count()[0]
        q.put_nowait(1)
        await q.put(2)
        q.get_nowait()
        await q.get()
        q.task_done()
        kept.append(gc.get_count()[0] - before)
    return made, kept[2]
made, kept = asyncio.run(main())
assert made == EXPECTED, made
assert kept == 0, kept
";

fn queue_objects(minor: u8) -> i64 {
    if minor <= 10 { 8 } else { 6 }
}

#[test]
fn a_queue_counts_its_collector_objects_as_cpython_does() {
    for minor in [10u8, 11, 12] {
        let script = QUEUE_COUNTS.replace("EXPECTED", &queue_objects(minor).to_string());
        if let Err(e) = probes::run(&format!("3.{minor}"), &script) {
            panic!("on 3.{minor}: {e}");
        }
    }
    for minor in 8..=13u8 {
        let Some(python) = interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let script = QUEUE_COUNTS.replace("EXPECTED", &queue_objects(minor).to_string());
        let out = Command::new(&python)
            .args(["-c", &script])
            .output()
            .expect("runs python");
        assert!(
            out.status.success(),
            "CPython 3.{minor} disagrees with the table: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The queue holds the tensors put in it until they are taken; a putter blocked on a full
/// queue holds its tensor too (model only: no torch on the interpreters here).
#[test]
fn a_queue_of_tensors_holds_their_bytes_until_they_are_taken() {
    ok("
import asyncio
MB = 1024 * 1024
async def main():
    q = asyncio.Queue(maxsize=3)
    for i in range(3):
        q.put_nowait(torch.zeros(1024, 256, device='cuda'))
    assert torch.cuda.memory_allocated() == 3 * MB
    async def put_one():
        await q.put(torch.zeros(1024, 256, device='cuda'))
    blocked = asyncio.ensure_future(put_one())
    await asyncio.sleep(0)
    assert q.full() and not blocked.done()
    assert torch.cuda.memory_allocated() == 4 * MB
    x = q.get_nowait()
    assert torch.cuda.memory_allocated() == 4 * MB
    del x
    assert torch.cuda.memory_allocated() == 3 * MB
    await blocked
    assert q.qsize() == 3
    sizes = []
    while not q.empty():
        q.get_nowait()
        sizes.append(torch.cuda.memory_allocated())
    assert sizes == [2 * MB, 1 * MB, 0], sizes
    async def consume():
        t = await q.get()
        return t.numel()
    waiting = asyncio.ensure_future(consume())
    await asyncio.sleep(0)
    q.put_nowait(torch.zeros(1024, 256, device='cuda'))
    assert await waiting == 1024 * 256
    assert torch.cuda.memory_allocated() == 0
asyncio.run(main())
");
}
