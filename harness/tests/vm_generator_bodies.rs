//! Generator bodies run on the VM's plain instructions: statements without a suspension
//! point (`if`, `for`, `while`, `try`, `with`, assignments) are plain regions run by the plain
//! loop (`vm/plain.rs`), not by the tree walker. Control flow inside generators (loops with
//! `break`/`continue` through `finally` and `with`, `return` values in
//! `StopIteration.value`, `close`/`throw` running `finally` blocks) is checked against every
//! installed CPython 3.8 – 3.13, and the objects a generator body creates against a table
//! measured with them.

mod probes;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`). A caught exception's traceback takes the
/// generator's frame: from 3.11 that makes the frame an object (counted), kept by the
/// generator; ≤ 3.10 the frame was one from the start.
const PROBES: &[probes::Probe] = &[
    (
        "for over a list before the yield, kept",
        "def g(xs):\n    total = 0\n    for x in xs:\n        total += x\n    yield total\ndef probe():\n    it = g([1, 2])\n    next(it)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "try/except caught before the yield, kept",
        "def g():\n    try:\n        raise KeyError(1)\n    except KeyError:\n        pass\n    yield 1\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        1,
        2,
    ),
    (
        "with before the yield, kept",
        "class M:\n    def __enter__(self):\n        return self\n    def __exit__(self, *a):\n        return False\nm = M()\ndef g():\n    with m:\n        x = 1\n    yield x\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "while building a list, suspended after it",
        "def g(n):\n    out = []\n    i = 0\n    while i < n:\n        out.append(i)\n        i += 1\n    yield out\n    yield 0\ndef probe():\n    it = g(3)\n    next(it)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "for with break inside a yielding loop, exhausted",
        "def g():\n    for i in range(3):\n        for j in range(5):\n            if j == 1:\n                break\n        yield i\ndef probe():\n    keep.append(list(g()))\n",
        1,
        1,
    ),
    (
        "exception caught in a generator, exhausted",
        "def g():\n    for i in range(2):\n        try:\n            raise ValueError(i)\n        except ValueError:\n            pass\n        yield i\ndef probe():\n    for x in g():\n        pass\n",
        0,
        0,
    ),
];

#[test]
fn generator_bodies_count_objects_as_cpython_does() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

/// Loops, `try`/`except`/`finally` and `with` without a suspension point inside a
/// generator, around and between its `yield`s; the return value in `StopIteration.value`.
#[test]
fn control_flow_inside_generators_runs_as_cpython_runs_it() {
    probes::agrees_with_cpython(
        "",
        13,
        "
import sys
log = []
class M:
    def __init__(self, name):
        self.name = name
    def __enter__(self):
        log.append('enter ' + self.name)
        return self
    def __exit__(self, t, v, tb):
        log.append('exit ' + self.name + ' ' + (t.__name__ if t else 'None'))
        return t is KeyError

def g(n):
    total = 0
    for i in range(n):
        for j in range(4):
            if j == 2:
                break
            if j == 0:
                continue
            total += j
        else:
            log.append('never')
        while True:
            total += 1
            if total > 100:
                return 'big'
            break
        try:
            if i == 1:
                raise ValueError(i)
        except ValueError as e:
            log.append('caught ' + str(e.args[0]))
        finally:
            log.append('finally ' + str(i))
        with M('a'):
            raise KeyError(i)
        yield total
    return 'done ' + str(total)

it = g(3)
out = []
while True:
    try:
        out.append(next(it))
    except StopIteration as stop:
        result = stop.value
        break
assert out == [2, 4, 6], out
assert result == 'done 6', result
assert log == ['finally 0', 'enter a', 'exit a KeyError', 'caught 1', 'finally 1', 'enter a',
               'exit a KeyError', 'finally 2', 'enter a', 'exit a KeyError'], log

def early(xs):
    yield 'start'
    for x in xs:
        if x < 0:
            return x
    yield 'end'
assert list(early([1, 2])) == ['start', 'end']
it = early([1, -5])
next(it)
try:
    next(it)
except StopIteration as stop:
    assert stop.value == -5, stop.value

# `break`/`continue` of a loop that suspends, through a `finally` and a `with` that do not.
seen = []
def leave():
    for i in range(5):
        try:
            if i == 2:
                break
            if i == 0:
                continue
        finally:
            seen.append(i)
        yield i
    for i in range(3):
        with M('b'):
            if i == 1:
                break
        yield 'w' + str(i)
    yield 'after'
log.clear()
assert list(leave()) == [1, 'w0', 'after'], list(leave())
assert seen == [0, 1, 2], seen
assert log == ['enter b', 'exit b None', 'enter b', 'exit b None'], log

# A `try` inside an `except` clause of a generator keeps the outer exception.
def nested():
    try:
        raise KeyError('outer')
    except KeyError:
        try:
            raise ValueError('inner')
        except ValueError:
            pass
        yield repr(sys.exc_info()[1])
assert list(nested()) == [repr(KeyError('outer'))], list(nested())
",
    );
}

/// `close()` and `throw()` run the `finally` blocks of a suspended generator, innermost
/// first. (Not here: one collected as cyclic garbage while suspended in `try`/`finally`;
/// CPython 3.8 – 3.13 run its `finally` from the collector, the model's collector does not
/// finalize generators yet.)
#[test]
fn close_throw_and_collection_run_finally_blocks() {
    probes::agrees_with_cpython(
        "",
        13,
        "
log = []
def g(box):
    try:
        for i in range(3):
            try:
                yield i
            finally:
                log.append('inner ' + str(i))
    finally:
        log.append('outer')

it = g(None)
next(it)
it.close()
assert log == ['inner 0', 'outer'], log

log.clear()
it = g(None)
next(it)
next(it)
try:
    it.throw(KeyError('k'))
except KeyError as e:
    log.append('propagated ' + e.args[0])
assert log == ['inner 0', 'inner 1', 'outer', 'propagated k'], log

",
    );
}

/// Proves the VM path: an exhausted `for` releases its iterator before the `else` block, as
/// CPython's `FOR_ITER` does; the tree walker released it after.
#[test]
fn a_generator_body_loop_runs_on_the_vm() {
    probes::agrees_with_cpython(
        "",
        13,
        "
log = []
class It:
    def __init__(self):
        self.n = 0
    def __iter__(self):
        return self
    def __next__(self):
        self.n += 1
        if self.n > 2:
            raise StopIteration
        return self.n
    def __del__(self):
        log.append('del')
def g():
    for x in It():
        log.append(x)
    else:
        log.append('else')
    yield 1
assert list(g()) == [1]
assert log == [1, 2, 'del', 'else'], log
",
    );
}

/// The compound statements the compiler leaves to the walker are refused there with a
/// located `unsupported:` error, inside a generator as in a plain body.
#[test]
fn except_star_and_async_for_outside_a_coroutine_are_refused_located() {
    let err = probes::run(
        "3.11",
        "
def g():
    yield 1
    try:
        pass
    except* ValueError:
        pass
list(g())
",
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("t.yaml:8:") && text.contains("unsupported: `except*`"),
        "{text}"
    );
    let err = probes::run(
        "3.11",
        "
def f():
    async for x in y:
        pass
f()
",
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(
        text.contains("t.yaml:7:") && text.contains("unsupported"),
        "{text}"
    );
}
