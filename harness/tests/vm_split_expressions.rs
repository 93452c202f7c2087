//! `yield` and `await` inside larger expressions: the workload VM splits the expression at
//! its suspension points, keeping the operands evaluated before a suspension on the frame's
//! value stack (held references: what they hold stays alive across the suspension, as on
//! CPython), and refuses, located, suspension points behind a short circuit.
//!
//! The pure-Python scripts also run on every installed CPython 3.8 – 3.15 (they assert their
//! own results); the object counts are measured with CPython 3.10 – 3.15 and re-measured on
//! the interpreters present.

mod probes;

use probes::{agrees_with_cpython, ok};

#[test]
fn await_inside_expressions_and_conditions_agrees_with_cpython() {
    agrees_with_cpython(
        "import asyncio\nimport weakref\n",
        15,
        "
import asyncio
import weakref
alive = []
class Big:
    pass
def pair(a, b):
    return b
async def check():
    await asyncio.sleep(0)
    return alive[0]() is not None
async def main():
    def make():
        b = Big()
        alive.append(weakref.ref(b))
        return b
    # The temporary `make()` is held by the frame across the await, then dropped.
    held = pair(make(), await check())
    assert held is True, held
    assert alive[0]() is None
    total = 0
    async def one(v):
        await asyncio.sleep(0)
        return v
    total += await one(3)
    total += 2 * (await one(4))
    assert total == 11, total
    if await one(True):
        total += 1
    n = 0
    while await one(n < 3):
        n += 1
    assert n == 3
    items = []
    for x in await one([1, 2]):
        items.append(x)
    assert items == [1, 2]
    assert [await one(1), await one(2)] == [1, 2]
    assert {'k': await one(5)}['k'] == 5
    assert (await one(1)) + (await one(2)) == 3
    assert await one(await one(7)) == 7
    assert str(await one(8)) == '8'
    assert items.index(await one(2)) == 1
    assert (await one(1)) < (await one(2))
    assert [10, 20][await one(1)] == 20
    assert (await one(0)) or True
    return await one(total) + 1
assert asyncio.run(main()) == 13
",
    );
}

#[test]
fn yield_inside_expressions_agrees_with_cpython() {
    agrees_with_cpython(
        "import asyncio\nimport weakref\n",
        15,
        "
def f(a, b):
    return (a, b)
def g():
    x = f(1, (yield 'first'))
    y = 1 + (yield x)
    z = [(yield y), (yield (yield 'nested'))]
    if (yield 'test'):
        z.append('then')
    return (yield z) or 'done'
it = g()
assert next(it) == 'first'
assert it.send(2) == (1, 2)
assert it.send(10) == 11
assert it.send('a') == 'nested'
assert it.send('inner') == 'inner'
assert it.send('b') == 'test'
assert it.send(True) == ['a', 'b', 'then']
try:
    it.send(None)
    raise AssertionError('not finished')
except StopIteration as stop:
    assert stop.value == 'done'
def totals():
    total = 0
    while True:
        total += (yield total)
acc = totals()
next(acc)
acc.send(3)
assert acc.send(4) == 7
",
    );
}

#[test]
fn a_suspension_behind_a_short_circuit_is_refused_located() {
    let err =
        probes::run("3.11", "def g():\n    x = 1 and (yield 2)\nlist(g())\n").expect_err("refused");
    let text = err.to_string();
    // Workload line 2 is line 6 of the scenario file; the `yield` is at column 18.
    assert!(text.contains("t.yaml:6:18"), "{text}");
    assert!(text.contains("evaluated only sometimes"), "{text}");
    let err = probes::run(
        "3.11",
        "async def c():\n    return f'{await c()}'\nimport asyncio\nasyncio.run(c())\n",
    )
    .expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("t.yaml:6:17"), "{text}");
    assert!(text.contains("inside this kind of expression"), "{text}");
}

/// A tensor computed before an `await` in the same expression stays allocated while the
/// coroutine is suspended and is freed when the statement ends (model only: no torch on the
/// interpreters here; the weakref script above checks the same holding on CPython).
#[test]
fn a_tensor_evaluated_before_an_await_is_held_across_it() {
    ok("
import asyncio
def pick(a, b):
    return b
async def during():
    await asyncio.sleep(0)
    return torch.cuda.memory_allocated()
async def main():
    seen = pick(torch.zeros(1024, 256, device='cuda'), await during())
    assert seen == 1024 * 1024, seen
    assert torch.cuda.memory_allocated() == 0
    seen = pick(0, await during())
    assert seen == 0, seen
asyncio.run(main())
");
}

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.10 – 3.15
/// (`PRELUDE + probe + MEASURE + print(d)`): the operand evaluated before the suspension
/// point (an instance; a list would come from the free list, uncounted) is held by the suspended frame.
const PROBES: &[probes::Probe] = &[
    (
        "generator suspended in a call's arguments, kept",
        "class Box:\n    pass\ndef f(a, b):\n    return a\ndef g():\n    x = f(Box(), (yield))\n    yield x\ndef probe():\n    it = g()\n    next(it)\n    keep.append(it)\n",
        2,
        2,
    ),
    (
        "generator resumed past the split expression, kept",
        "class Box:\n    pass\ndef f(a, b):\n    return a\ndef g():\n    x = f(Box(), (yield))\n    del x\n    yield\ndef probe():\n    it = g()\n    next(it)\n    it.send(2)\n    keep.append(it)\n",
        1,
        1,
    ),
    (
        "coroutine suspended after an instance operand, kept",
        "class Box:\n    def __add__(self, other):\n        return other\nclass Suspend:\n    def __await__(self):\n        yield\nasync def c():\n    return Box() + (await Suspend())\ndef probe():\n    co = c()\n    co.send(None)\n    keep.append(co)\n",
        4,
        4,
    ),
];

#[test]
fn split_expression_objects_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
