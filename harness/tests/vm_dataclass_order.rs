//! `@dataclass(order=True)`: the generated `__lt__`/`__le__`/`__gt__`/`__ge__` compare the
//! fields as tuples for instances of the same class and fail with CPython's `TypeError`
//! otherwise; `order` without `eq` and over a method the class defines are refused with
//! CPython's messages. User classes' `__lt__` (and the reflected method) decide `<`. Checked
//! against every installed CPython; a comparison creates nothing (measured 0 on 3.8 – 3.13).

#[allow(dead_code)] // this file uses part of the shared probes
mod probes;

use probes::{
    Probe, agrees_with_cpython, model_matches_table, table_matches_installed_interpreters,
};

const SCRIPT: &str = "
import sys
from dataclasses import dataclass
@dataclass(order=True)
class P:
    x: int
    y: int = 0
class Q:
    def __init__(self, v):
        self.v = v
    def __lt__(self, other):
        return self.v < other.v
a, b = P(1, 2), P(1, 3)
assert a < b and a <= b and b > a and b >= a and a <= a and a >= a
assert not (b < a) and not (a > b) and not (a < a)
assert P(2) > P(1, 5) and P(1, 5) < P(2)
assert Q(1) < Q(2) and Q(2) > Q(1) and not (Q(2) < Q(1))
try:
    a < Q(1)
    assert False
except TypeError as e:
    assert str(e) == \"'<' not supported between instances of 'P' and 'Q'\", str(e)
try:
    @dataclass(order=True, eq=False)
    class R:
        x: int
    assert False
except ValueError as e:
    assert str(e) == 'eq must be true if order is true', str(e)
try:
    @dataclass(order=True)
    class S:
        x: int
        def __lt__(self, o):
            return True
    assert False
except TypeError as e:
    stop = '' if sys.version_info >= (3, 13) else '.'
    assert str(e) == 'Cannot overwrite attribute __lt__ in class S' + stop + ' Consider using functools.total_ordering', str(e)
";

#[test]
fn order_agrees_with_cpython() {
    agrees_with_cpython("", 13, SCRIPT);
}

const PROBES: &[Probe] = &[
    (
        "dataclass order comparison",
        "from dataclasses import dataclass\n@dataclass(order=True)\nclass P:\n    x: int\n    y: int = 0\na, b = P(1, 2), P(1, 3)\ndef probe():\n    keep.append(a < b)\n",
        0,
        0,
    ),
    (
        "user __lt__ comparison",
        "class Q:\n    def __init__(self, v):\n        self.v = v\n    def __lt__(self, other):\n        return self.v < other.v\nc, d = Q(1), Q(2)\ndef probe():\n    keep.append(d > c)\n",
        0,
        0,
    ),
];

#[test]
fn comparisons_create_nothing() {
    model_matches_table(PROBES);
}

#[test]
fn counts_agree_with_installed_interpreters() {
    table_matches_installed_interpreters(PROBES);
}
