//! Generators run by the workload VM: `yield`, `yield from`, `send`/`throw`/`close`,
//! `StopIteration.value`, generators consumed by `for`, `next()` and builtins, a suspended
//! generator keeping its locals (and their tensors) alive, a generator in a reference
//! cycle collected, and the objects a generator counts for the collector, against CPython.

mod probes;

use probes::ok;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, run by `~/.pyenv/versions/3.X*/bin/python`):
/// ≤ 3.10 a generator owns a separate frame object (counted at the call unless the frame
/// free list serves it, released when the generator finishes); from 3.11 the frame is
/// embedded in the generator object. With the free lists warm (the prelude), only the last
/// probe exhausts the frame free list and shows the frame objects.
const PROBES: &[probes::Probe] = &[
    (
        "generator created, kept",
        "def g():\n    yield 1\ndef probe():\n    keep.append(g())\n",
        1,
        1,
    ),
    (
        "generator started, kept",
        "def g():\n    yield 1\n    yield 2\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "generator exhausted by for, kept",
        "def g():\n    yield 1\n    yield 2\ndef probe():\n    it = g()\n    for x in it:\n        pass\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "generator exhausted by list(), both kept",
        "def g(n):\n    i = 0\n    while i < n:\n        yield i\n        i += 1\ndef probe():\n    it = g(3)\n    keep.append(list(it))\n    keep.append(it)\n",
        2,
        2,
    ),
    (
        "list() of a list (always counted: not from the list free list)",
        "items = [1, 2]\ndef probe():\n    keep.append(list(items))\n",
        1,
        1,
    ),
    (
        "generator created and dropped",
        "def g():\n    yield 1\ndef probe():\n    g()\n",
        0,
        0,
    ),
    (
        "suspended generator holding a list",
        "def g():\n    x = [1]\n    yield x\n    yield 2\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "300 generators kept (≤ 3.10: the frame free list runs out)",
        "def g():\n    yield 1\ndef probe():\n    for i in range(300):\n        keep.append(g())\n",
        600,
        300,
    ),
];

#[test]
fn generator_objects_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn next_send_and_return_values_follow_python() {
    ok("
def counter(n):
    i = 0
    while i < n:
        got = yield i
        if got is not None:
            i = got
        else:
            i += 1
    return 'done'
g = counter(5)
assert next(g) == 0
assert next(g) == 1
assert g.send(3) == 3
assert next(g) == 4
try:
    next(g)
    assert False, 'StopIteration expected'
except StopIteration as e:
    assert e.value == 'done', e.value
assert next(g, 'default') == 'default'
assert list(counter(3)) == [0, 1, 2]
assert sum(counter(4)) == 6
total = 0
for v in counter(3):
    total += v
assert total == 3
def fresh():
    yield 1
try:
    fresh().send(5)
    assert False
except TypeError:
    pass
");
}

#[test]
fn control_flow_around_yield_compiles_to_jumps() {
    ok("
def pick(xs):
    for x in xs:
        if x < 0:
            continue
        if x > 100:
            break
        elif x % 2 == 0:
            yield x * 10
        else:
            yield x
    else:
        yield 'no break'
    yield 'end'
assert list(pick([1, 2, -1, 3])) == [1, 20, 3, 'no break', 'end'], list(pick([1, 2, -1, 3]))
assert list(pick([4, 200, 5])) == [40, 'end']
def nested():
    for i in range(3):
        for j in range(3):
            if j > i:
                break
            yield (i, j)
assert list(nested()) == [(0, 0), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]
def early(n):
    for i in range(10):
        if i == n:
            return i * 100
        yield i
g = early(2)
assert list(g) == [0, 1]
");
}

#[test]
fn yield_from_delegates_and_returns_the_sub_generators_value() {
    ok("
def inner():
    a = yield 1
    b = yield 2
    return (a, b)
def outer():
    r = yield from inner()
    yield r
    yield from [7, 8]
g = outer()
assert next(g) == 1
assert g.send('x') == 2
assert g.send('y') == ('x', 'y')
assert list(g) == [7, 8]
");
}

#[test]
fn throw_and_close_end_the_generator() {
    ok("
def g():
    yield 1
    yield 2
it = g()
assert next(it) == 1
try:
    it.throw(ValueError('boom'))
    assert False
except ValueError as e:
    assert str(e) == 'boom'
assert list(it) == []
it = g()
next(it)
it.close()
assert next(it, 'closed') == 'closed'
it.close()
");
}

#[test]
fn a_suspended_generator_keeps_its_tensors_alive() {
    ok("
import torch
def batches(n):
    for i in range(n):
        x = torch.zeros(1024, 1024, device='cuda')
        yield i
g = batches(3)
assert torch.cuda.memory_allocated() == 0
next(g)
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
next(g)
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
del g
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn a_generator_in_a_cycle_is_collected() {
    ok("
import gc
import torch
def holder(box):
    x = torch.zeros(1024, 1024, device='cuda')
    yield box
box = []
g = holder(box)
box.append(g)
next(g)
del g
del box
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
gc.collect()
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn yield_behind_a_short_circuit_is_refused_located() {
    // `yield` inside a larger expression is split (`tests/vm_split_expressions.rs`); one
    // that the expression evaluates only sometimes is refused.
    let err =
        probes::run("3.11", "def g():\n    x = 1 or (yield 2)\nlist(g())\n").expect_err("refused");
    let text = err.to_string();
    // Workload line 2 is line 6 of the scenario file; the `yield` is at column 17.
    assert!(text.contains("t.yaml:6:17"), "{text}");
    assert!(text.contains("evaluated only sometimes"), "{text}");
}

#[test]
fn yield_inside_try_except_catches_thrown_and_raised_exceptions() {
    let script = "
log = []
def g():
    for i in range(3):
        try:
            got = yield i
            if got == 'bad':
                raise KeyError('k')
        except ValueError as e:
            log.append('value ' + str(e))
        except KeyError:
            log.append('key')
        else:
            log.append('fine')
    try:
        yield 'last'
    except GeneratorExit:
        log.append('closed')
        raise
it = g()
assert next(it) == 0
assert it.throw(ValueError('v')) == 1
assert it.send('bad') == 2
assert next(it) == 'last'
it.close()
assert log == ['value v', 'key', 'fine', 'closed'], log
try:
    e
    assert False, 'the `as` name is deleted'
except NameError:
    pass
";
    ok(script);
    for minor in [8u8, 11, 13] {
        if let Some(python) = probes::interpreter(minor) {
            let out = std::process::Command::new(python)
                .args(["-c", script])
                .output()
                .expect("runs python");
            assert!(out.status.success(), "CPython 3.{minor}: {out:?}");
        }
    }
}

#[test]
fn finally_runs_on_exhaustion_exception_and_close() {
    ok("
log = []
def g(tag):
    try:
        log.append(tag + ' start')
        yield 1
        for i in range(2):
            yield 2 + i
    finally:
        log.append(tag + ' finally')
    yield 'after'
assert list(g('a')) == [1, 2, 3, 'after']
assert log == ['a start', 'a finally'], log
it = g('b')
next(it)
next(it)
it.close()
assert log[-1] == 'b finally', log
assert next(it, 'closed') == 'closed'
it = g('c')
next(it)
try:
    it.throw(KeyError('k'))
    assert False
except KeyError:
    pass
assert log[-1] == 'c finally', log
def fails():
    try:
        yield 1
        x = {}['missing']
    finally:
        log.append('fails finally')
try:
    list(fails())
    assert False
except KeyError:
    pass
assert log[-1] == 'fails finally', log
def never_started():
    try:
        yield 1
    finally:
        log.append('not run')
n = len(log)
never_started().close()
assert len(log) == n
");
}

#[test]
fn closing_a_suspended_loader_frees_its_batch() {
    ok("
import torch
def batches():
    try:
        while True:
            batch = torch.zeros(1024, 1024, device='cuda')
            yield batch
    finally:
        pass
it = batches()
b = next(it)
del b
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
it.close()
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn recursive_generators_hit_the_recursion_limit_not_the_stack() {
    ok("
def walk(n):
    if n:
        yield from walk(n - 1)
    else:
        yield 'leaf'
assert list(walk(50)) == ['leaf']
try:
    list(walk(5000))
    assert False, 'RecursionError expected'
except RecursionError:
    pass
");
}

#[test]
fn stop_iteration_inside_a_generator_becomes_runtime_error() {
    // PEP 479; the script asserts CPython's behaviour and runs on installed CPythons too.
    let script = "
def inner():
    yield 1
def g():
    it = inner()
    yield next(it)
    yield next(it)
out = []
try:
    for v in g():
        out.append(v)
    assert False, 'RuntimeError expected'
except RuntimeError as e:
    assert str(e) == 'generator raised StopIteration', str(e)
    assert isinstance(e.__cause__, StopIteration)
assert out == [1]
def h():
    yield 1
it = h()
next(it)
try:
    it.throw(StopIteration())
    assert False
except RuntimeError:
    pass
";
    ok(script);
    for minor in [8u8, 11, 13] {
        if let Some(python) = probes::interpreter(minor) {
            let out = std::process::Command::new(python)
                .args(["-c", script])
                .output()
                .expect("runs python");
            assert!(out.status.success(), "CPython 3.{minor}: {out:?}");
        }
    }
}

/// PEP 442: a generator dropped while suspended in a `try` or `with` runs `close()` first
/// (`finally`, `except GeneratorExit`, `__exit__`), once; its `finally` may resurrect
/// objects; one never started or already finished runs nothing.
const FINALISATION: &str = "
log = []
def g(tag):
    try:
        yield 1
    finally:
        log.append('finally ' + tag)
it = g('a')
next(it)
del it
assert log == ['finally a'], log
it = g('b')
next(it)
it = None
assert log == ['finally a', 'finally b'], log
g('never started')
it = g('exhausted')
for x in it:
    pass
del it
assert log == ['finally a', 'finally b', 'finally exhausted'], log
def stubborn():
    try:
        yield 1
    except GeneratorExit:
        log.append('GeneratorExit caught')
    yield 2
it = stubborn()
next(it)
del it
assert log[-1] == 'GeneratorExit caught', log
class Tag:
    def __enter__(self):
        log.append('enter')
    def __exit__(self, t, v, tb):
        log.append('exit ' + ('clean' if t is None else 'GeneratorExit' if t is GeneratorExit else 'other'))
def in_with():
    with Tag():
        yield 1
it = in_with()
next(it)
del it
assert log[-2:] == ['enter', 'exit GeneratorExit'], log
saved = []
def resurrects():
    x = [1, 2, 3]
    try:
        yield
    finally:
        saved.append(x)
it = resurrects()
next(it)
del it
assert saved == [[1, 2, 3]], saved
";

#[test]
fn a_dropped_suspended_generator_is_finalised_as_python() {
    ok(FINALISATION);
    for minor in 8..=15u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let out = std::process::Command::new(python)
            .args(["-c", FINALISATION])
            .output()
            .expect("runs python");
        assert!(out.status.success(), "CPython 3.{minor}: {out:?}");
    }
}

#[test]
fn finalising_a_dropped_generator_frees_or_keeps_tensors_and_restores_grad_mode() {
    ok("
import torch
MiB = 1024 * 1024
w = torch.zeros(1024, 1024, device='cuda', requires_grad=True)
def inference():
    with torch.no_grad():
        yield
it = inference()
next(it)
assert not (w * 2).requires_grad
del it
assert (w * 2).requires_grad
saved = []
def loader():
    batch = torch.zeros(1024, 1024, device='cuda')
    try:
        yield 1
    finally:
        saved.append(batch)
it = loader()
next(it)
assert torch.cuda.memory_allocated() == 8 * MiB
del it
# Resurrected by the `finally` block.
assert torch.cuda.memory_allocated() == 8 * MiB
saved.clear()
assert torch.cuda.memory_allocated() == 4 * MiB
");
}
