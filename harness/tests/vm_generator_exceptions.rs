//! Two bugs of the workload VM and the call path, each against CPython 3.8 – 3.15:
//! a generator suspended inside an `except` block keeps handling its exception (after
//! resumption a bare `raise` and `sys.exc_info()` see it, and while it is suspended the
//! generator holds the exception, its traceback and what they hold, while the caller sees
//! its own exception state); and a call whose later argument raises drops the callee and
//! the arguments evaluated before it.
//!
//! Object counts measured with CPython 3.8 – 3.15 (`PRELUDE + probe + MEASURE + print(d)`):
//! re-measured by `measured_counts_match_installed_interpreters` on those present.

mod probes;

use probes::{agrees_with_cpython, ok};

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11). Suspended in the handler: the
/// exception and its traceback (3.11+: and the frame object the traceback takes) stay,
/// with one more object each (measured: 3 and 4). Resumed past the handler: the exception
/// and traceback go, the ≤ 3.10 frame object and the 3.11+ frame object the traceback
/// made stay with the generator (1 and 2).
const PROBES: &[probes::Probe] = &[
    (
        "generator suspended in an except block, kept",
        "def g():\n    try:\n        raise ValueError()\n    except ValueError:\n        yield 1\n        yield 2\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        3,
        4,
    ),
    (
        "generator resumed past its except block, kept",
        "def g():\n    try:\n        raise ValueError()\n    except ValueError:\n        yield 1\n    yield 2\ndef probe():\n    it = g()\n    next(it)\n    next(it)\n    keep.append(it)\n",
        1,
        2,
    ),
    (
        "call whose second argument raises, caught",
        "def bad():\n    raise ValueError()\ndef f(a, b):\n    return a\ndef probe():\n    try:\n        f([1], bad())\n    except ValueError:\n        pass\n",
        0,
        0,
    ),
];

#[test]
fn model_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn a_generator_suspended_in_an_except_block_keeps_handling_its_exception() {
    agrees_with_cpython(
        "",
        15,
        "
import sys, gc, weakref
class Payload:
    pass
refs = {}
def payload(name):
    p = Payload()
    refs[name] = weakref.ref(p)
    return p
def alive(name):
    return refs[name]() is not None
def gen():
    try:
        raise ValueError(payload('p'))
    except ValueError:
        yield 1
        assert sys.exc_info()[0] is ValueError
        assert sys.exc_info()[1].args[0] is refs['p']()
        yield 2
        try:
            raise
        except ValueError as e:
            assert e.args[0] is refs['p']()
            del e
    assert sys.exc_info() == (None, None, None)
    yield 3
g = gen()
assert next(g) == 1
assert sys.exc_info() == (None, None, None)
assert alive('p')
gc.collect()
assert alive('p')
try:
    raise KeyError('outer')
except KeyError:
    assert next(g) == 2
    assert sys.exc_info()[0] is KeyError
assert next(g) == 3
assert not alive('p')
def closed_in_handler():
    try:
        raise ValueError(payload('q'))
    except ValueError:
        yield 1
g2 = closed_in_handler()
next(g2)
assert alive('q')
del g2
assert not alive('q')
def reraised_after_resume():
    try:
        raise ValueError(payload('r'))
    except ValueError:
        yield 1
        raise
g3 = reraised_after_resume()
next(g3)
try:
    next(g3)
except ValueError as e:
    assert e.args[0] is refs['r']()
    del e
assert not alive('r')
def raises_in_handler():
    try:
        raise ValueError(payload('s'))
    except ValueError:
        yield 1
        raise KeyError('other')
g4 = raises_in_handler()
next(g4)
try:
    next(g4)
except KeyError as e:
    assert e.__context__.args[0] is refs['s']()
    del e
assert not alive('s')
assert sys.exc_info() == (None, None, None)
",
    );
}

#[test]
fn arguments_evaluated_before_a_raising_argument_are_freed() {
    agrees_with_cpython(
        "",
        15,
        "
import weakref
class Payload:
    pass
refs = []
def payload():
    p = Payload()
    refs.append(weakref.ref(p))
    return p
def bad():
    raise ValueError('a later argument')
def f(*args, **kwargs):
    return args
class C:
    def m(self, a, b):
        return a
try:
    f(payload(), bad())
except ValueError:
    assert refs[-1]() is None
try:
    f(payload(), b=bad())
except ValueError:
    pass
assert refs[-1]() is None
try:
    f(payload(), *[payload()], k=payload(), j=bad())
except ValueError:
    pass
assert [r() for r in refs] == [None] * 5
try:
    C().m(payload(), bad())
except ValueError:
    pass
assert refs[-1]() is None
try:
    print(payload(), bad())
except ValueError:
    pass
assert [r() for r in refs] == [None] * 7
",
    );
}

/// The same for a coroutine suspended at an `await` in its handler: the other tasks that
/// run meanwhile see their own (empty) exception state.
#[test]
fn a_coroutine_awaiting_in_an_except_block_keeps_handling_its_exception() {
    agrees_with_cpython(
        "",
        15,
        "
import asyncio, sys, weakref
class Payload:
    pass
seen = []
async def handler(name):
    p = Payload()
    ref = weakref.ref(p)
    try:
        raise ValueError(p)
    except ValueError:
        del p
        await asyncio.sleep(0)
        seen.append((name, sys.exc_info()[0] is ValueError, ref() is not None))
        try:
            raise
        except ValueError as e:
            assert e.args[0] is ref()
            del e
    seen.append((name, sys.exc_info()[0] is None, ref() is None))
async def observer():
    seen.append(('observer', sys.exc_info()[0] is None, True))
async def main():
    await asyncio.gather(handler('a'), observer(), handler('b'))
asyncio.run(main())
assert seen == [('observer', True, True), ('a', True, True), ('a', True, True), ('b', True, True), ('b', True, True)], seen
",
    );
}

/// The memory the bugs kept or lost: a tensor held only by the exception stays allocated
/// while the generator is suspended in the handler and goes with the handler's end or with
/// the generator; a tensor passed before a raising argument is freed.
#[test]
fn tensors_held_by_a_suspended_handler_or_a_failed_call() {
    ok("
import sys
import torch
MiB = 1024 * 1024
def batches():
    try:
        raise RuntimeError(torch.zeros(1024, 1024, device='cuda'))
    except RuntimeError:
        yield 1
        assert sys.exc_info()[1].args[0].numel() == 1024 * 1024
        yield 2
    yield 3
g = batches()
next(g)
assert torch.cuda.memory_allocated() == 4 * MiB
assert sys.exc_info()[0] is None
next(g)
assert torch.cuda.memory_allocated() == 4 * MiB
next(g)
assert torch.cuda.memory_allocated() == 0
g = batches()
next(g)
assert torch.cuda.memory_allocated() == 4 * MiB
del g
assert torch.cuda.memory_allocated() == 0
def bad():
    raise ValueError('later argument')
def consume(a, b):
    return a
try:
    consume(torch.zeros(2 * 1024, 1024, device='cuda'), bad())
except ValueError:
    pass
assert torch.cuda.memory_allocated() == 0
x = torch.zeros(1024, 1024, device='cuda')
try:
    torch.add(x * 2, bad())
except ValueError:
    pass
assert torch.cuda.memory_allocated() == 4 * MiB
");
}
