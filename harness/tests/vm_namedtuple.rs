//! `collections.namedtuple` and `typing.NamedTuple` (`python/namedtuples.rs`): instances are
//! tuples (indexing, unpacking, iteration, `len`, equality, hashing) with named fields,
//! `_replace`, `_asdict`, `_make`, `_fields`, defaults; they are GC-tracked tuples that keep
//! their fields alive; the objects they count, against real CPython 3.8 – 3.15.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the table helpers
mod probes;

#[test]
fn a_namedtuple_behaves_as_a_tuple_with_named_fields() {
    probes::agrees_with_cpython(
        "",
        15,
        "
from collections import namedtuple
import collections
P = namedtuple('P', 'x y')
Q = collections.namedtuple('Q', ['a', 'b', 'c'], defaults=[0, 1])
p = P(1, y=2)
assert p.x == 1 and p.y == 2 and p[0] == 1 and p[-1] == 2 and p[:1] == (1,)
x, y = p
assert (x, y) == (1, 2) and len(p) == 2 and list(p) == [1, 2]
assert p == (1, 2) and (1, 2) == p and p != (2, 1) and p < (1, 3)
assert hash(p) == hash((1, 2))
assert isinstance(p, tuple) and isinstance(p, P) and not isinstance(p, Q)
assert type(p) is P and P.__name__ == 'P'
assert repr(p) == 'P(x=1, y=2)' and str(p) == 'P(x=1, y=2)'
assert P._fields == ('x', 'y') and p._fields == ('x', 'y')
assert Q._field_defaults == {'b': 0, 'c': 1}
q = Q(5)
assert q == (5, 0, 1) and Q(5, c=7) == (5, 0, 7)
r = p._replace(y=9)
assert r == (1, 9) and type(r) is P and p == (1, 2)
assert p._asdict() == {'x': 1, 'y': 2}
assert P._make([3, 4]) == P(3, 4) and p._make((5, 6)).x == 5
total = 0
for v in p:
    total += v
assert total == 3
try:
    P(1)
    raise AssertionError('a missing field was accepted')
except TypeError as e:
    assert 'missing 1 required positional argument' in str(e), e
try:
    P(1, 2, 3)
    raise AssertionError('an extra field was accepted')
except TypeError:
    pass
try:
    p.z
    raise AssertionError('an unknown attribute was found')
except AttributeError:
    pass
try:
    p._replace(z=1)
    raise AssertionError('an unknown field was replaced')
except (ValueError, TypeError) as e:
    assert 'unexpected field names' in str(e), e
try:
    p.x = 3
    raise AssertionError('a field was assigned')
except AttributeError:
    pass
try:
    namedtuple('Bad', ['_x'])
    raise AssertionError('an underscore field was accepted')
except ValueError:
    pass
",
    );
}

#[test]
fn typing_named_tuple_class_syntax_has_fields_defaults_and_methods() {
    probes::agrees_with_cpython(
        "",
        15,
        "
from typing import NamedTuple
import typing
class Batch(NamedTuple):
    inputs: list
    labels: list
    weight: float = 1.0
    def size(self):
        return len(self.inputs)
    @property
    def first(self):
        return self.inputs[0]
b = Batch([1, 2], [0, 1])
assert b.weight == 1.0 and b.size() == 2 and b.first == 1
assert b == ([1, 2], [0, 1], 1.0) and Batch._fields == ('inputs', 'labels', 'weight')
inputs, labels, weight = b
assert inputs is b.inputs and b._replace(weight=2.0).weight == 2.0
assert isinstance(b, tuple) and repr(b) == 'Batch(inputs=[1, 2], labels=[0, 1], weight=1.0)'
Pair = typing.NamedTuple('Pair', [('left', int), ('right', int)])
assert Pair(1, 2).right == 2
class Point(NamedTuple):
    x: int
    y: int
class Labelled(Point):
    def norm1(self):
        return abs(self.x) + abs(self.y)
assert Labelled(3, -4).norm1() == 7 and Labelled(1, 2) == (1, 2)
try:
    class Wrong(NamedTuple):
        a: int = 0
        b: int
    raise AssertionError('a field without a default after one with one was accepted')
except TypeError:
    pass
",
    );
}

/// A namedtuple holding a tensor keeps it allocated until the namedtuple goes; one in a
/// reference cycle (through a list it holds) waits for the collector, as a tuple subclass
/// is never untracked.
#[test]
fn a_namedtuple_keeps_its_fields_alive_and_a_cycle_through_it_is_collected() {
    for python in ["3.10", "3.11", "3.12", "3.14"] {
        let workload = "
import gc
from collections import namedtuple
gc.disable()
Out = namedtuple('Out', 'loss extras')
o = Out(torch.zeros(1024, device='cuda'), [])
assert gc.is_tracked(o)
loss = o.loss
del loss
assert torch.cuda.memory_allocated() == 4096
del o
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
c = Out(torch.zeros(1024, device='cuda'), [])
c.extras.append(c)
del c
assert torch.cuda.memory_allocated() == 4096
assert gc.collect() >= 2
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

/// (name, probe, count on ≤ 3.10, on ≥ 3.11), measured on 3.8 – 3.15 with `probes::PRELUDE`
/// and `probes::MEASURE` (`/tmp`-free: the helpers rerun them on installed interpreters).
/// A kept instance counts one (the `__new__` argument tuples come and go through their free
/// lists); `_make` of a list makes its tuple and frees it; `_asdict` keeps one dict.
const PROBES: &[probes::Probe] = &[
    (
        "namedtuple instance kept",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef probe():\n    keep.append(P(1, 2))\n",
        1,
        1,
    ),
    (
        "namedtuple instance with a default, by keyword",
        "from collections import namedtuple\nP = namedtuple('P', 'x y', defaults=[0])\ndef probe():\n    keep.append(P(x=1))\n",
        1,
        1,
    ),
    (
        "namedtuple unpacked, indexed and dropped",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef probe():\n    p = P(1, 2)\n    x, y = p\n    keep.append(p.x + p[1] + len(p))\n",
        0,
        0,
    ),
    (
        "namedtuple _make of a list",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef probe():\n    keep.append(P._make([1, 2]))\n",
        1,
        1,
    ),
    (
        "namedtuple _asdict",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\np = P(1, 2)\ndef probe():\n    keep.append(p._asdict())\n",
        1,
        1,
    ),
    (
        "typing.NamedTuple instance with a default",
        "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n    y: int = 0\ndef probe():\n    keep.append(P(1))\n",
        1,
        1,
    ),
    (
        "100 namedtuples holding a list each",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\ndef probe():\n    keep.append([P(i, [i]) for i in range(100)])\n",
        201,
        201,
    ),
    (
        "loop over a namedtuple",
        "from collections import namedtuple\nP = namedtuple('P', 'x y')\np = P(1, 2)\ndef probe():\n    for v in p:\n        keep.append(v)\n",
        0,
        0,
    ),
];

#[test]
fn the_model_counts_namedtuples_as_the_table_says() {
    probes::model_matches_table(PROBES);
}

#[test]
fn the_table_agrees_with_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

/// What the model does not make is refused where it is used, located, never a wrong result.
#[test]
fn unmodelled_parts_are_refused_located() {
    for (workload, words) in [
        (
            "from collections import namedtuple\nP = namedtuple('P', 'x y', rename=True)\n",
            "unsupported: `namedtuple(..., rename=...)`",
        ),
        (
            "from collections import namedtuple\nP = namedtuple('P', 'x y')\nn = P(1, 1).count(1)\n",
            "unsupported: `count` of a namedtuple",
        ),
        (
            "from collections import namedtuple\nclass Q(namedtuple('P', 'x y')):\n    pass\nq = Q(1, 2)\nq.z = 3\n",
            "unsupported: attribute stores on instances of a namedtuple subclass",
        ),
    ] {
        let err = probes::run("3.11", workload)
            .map(|_| ())
            .expect_err("refused")
            .to_string();
        assert!(err.contains(words) && err.contains("t.yaml:"), "{err}");
    }
}
