//! Type-call conversions (`list(x)`, `dict(x)`, `tuple(x)`, `sorted(x)`) and constant
//! tuples: which of them allocate a counted object. `list(...)` and `dict(...)` allocate
//! through the type and are always counted; `tuple(...)` and `sorted(...)` take the free
//! list; a constant tuple belongs to the code object and is never allocated nor freed.

mod probes;

use probes::ok;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, run by `~/.pyenv/versions/3.X*/bin/python`).
const PROBES: &[probes::Probe] = &[
    (
        "list of a constant tuple",
        "def probe():\n    keep.append(list((1, 2)))\n",
        1,
        1,
    ),
    (
        "list of a list",
        "def probe():\n    keep.append(list([1, 2]))\n",
        1,
        1,
    ),
    (
        "list of a range",
        "def probe():\n    keep.append(list(range(2)))\n",
        1,
        1,
    ),
    (
        "empty list()",
        "def probe():\n    keep.append(list())\n",
        1,
        1,
    ),
    (
        "list of a generator expression",
        "def probe():\n    keep.append(list(x for x in (1, 2)))\n",
        1,
        1,
    ),
    (
        "tuple of a list",
        "def probe():\n    keep.append(tuple([1, 2]))\n",
        0,
        0,
    ),
    (
        "tuple of a range",
        "def probe():\n    keep.append(tuple(range(2)))\n",
        0,
        0,
    ),
    (
        "sorted list",
        "def probe():\n    keep.append(sorted([2, 1]))\n",
        0,
        0,
    ),
    (
        "empty dict()",
        "def probe():\n    keep.append(dict())\n",
        1,
        1,
    ),
    (
        "dict of keywords",
        "def probe():\n    keep.append(dict(a=1))\n",
        1,
        1,
    ),
    (
        "dict of a dict",
        "def probe():\n    keep.append(dict({1: 2}))\n",
        1,
        1,
    ),
    (
        "dict of pairs",
        "def probe():\n    keep.append(dict([(1, 2)]))\n",
        1,
        1,
    ),
    (
        "constant tuple kept",
        "def probe():\n    keep.append((1, 2))\n",
        0,
        0,
    ),
    (
        "constant tuple dropped",
        "def probe():\n    t = (1, 2)\n    del t\n",
        0,
        0,
    ),
    (
        "empty tuple dropped",
        "def probe():\n    t = ()\n    del t\n",
        0,
        0,
    ),
    // `PySequence_Tuple` starts a generator's tuple at 10 items, from the size-10 free
    // list while it has any: a process's first calls count 0 (how many depends on what
    // startup left there: 1 – 21 calls on 3.8 – 3.15), every later one 1. The probe drains
    // that list first, so the figure is the steady one on every release.
    (
        "tuple of a generator expression, size-10 free list drained",
        "def probe():\n    keep.append(tuple(x for x in (1, 2)))\nfor _ in range(2100):\n    probe()\n",
        1,
        1,
    ),
    (
        "tuple of a map, size-10 free list drained",
        "def probe():\n    keep.append(tuple(map(abs, [1, 2])))\nfor _ in range(2100):\n    probe()\n",
        1,
        1,
    ),
    // A list iterator's length hint is exact: the tuple comes from its own size's list.
    (
        "tuple of a list iterator kept",
        "def probe():\n    keep.append(tuple(iter([1, 2])))\n",
        0,
        0,
    ),
    (
        "list.remove",
        "l = [1, 2, 3]\ndef probe():\n    l.append(5)\n    l.remove(5)\n",
        0,
        0,
    ),
];

/// With the free lists as full as the model starts them, `tuple(<genexpr>)` takes its
/// 10-item tuple from the free list and counts nothing; once 2000 calls have drained that
/// list, each counts 1 (the same mechanism the drained probes above measure).
#[test]
fn a_generator_s_tuple_drains_the_size_10_free_list() {
    let workload = "import gc
gc.disable()
keep = []
def probe():
    keep.append(tuple(x for x in (1, 2)))
probe()
probe()
before = gc.get_count()[0]
probe()
assert gc.get_count()[0] == before, 'from the full size-10 free list'
for _ in range(2100):
    probe()
before = gc.get_count()[0]
probe()
assert gc.get_count()[0] == before + 1, 'the list is empty now'
t = keep.pop()
assert t == (1, 2) and len(t) == 2
";
    for python in ["3.8", "3.10", "3.11", "3.13"] {
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

#[test]
fn conversions_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn dict_conversions_build_what_python_builds() {
    ok("
d = dict([(1, 'a'), (2, 'b'), (1, 'c')], x=3)
assert d == {1: 'c', 2: 'b', 'x': 3}, d
assert dict({5: 6}) == {5: 6} and dict() == {}
assert dict(zip([1, 2], [3, 4])) == {1: 3, 2: 4}
try:
    dict([(1, 2, 3)])
except ValueError:
    pass
else:
    assert False, 'a triple is not a pair'
");
}

/// A constant tuple dropped a million times must leave the counter where it was: the old
/// model freed it each time, moving the counter down (or filling the free list).
#[test]
fn a_constant_tuple_is_never_freed() {
    ok("
import gc
gc.disable()
before = gc.get_count()[0]
for i in range(1000):
    t = (1, 2)
    u = ()
del t, u
assert gc.get_count()[0] == before, (before, gc.get_count())
");
}

/// `list.remove` drops the list's reference (a tensor removed is freed); `index`, `count`
/// and `reverse` behave as Python's.
#[test]
fn list_remove_frees_what_it_removes() {
    probes::ok(
        "
import torch
a = torch.zeros(256, device='cuda')
xs = [1, a, 2, 1]
del a
assert xs.index(2) == 2 and xs.count(1) == 2
xs.remove(xs[1])
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
xs.remove(1)
assert xs == [2, 1]
xs.reverse()
assert xs == [1, 2]
try:
    xs.remove(7)
except ValueError:
    pass
else:
    assert False, 'remove of a missing item'
",
    );
}
