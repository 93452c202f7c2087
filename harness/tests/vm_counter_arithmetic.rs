//! `collections.Counter` arithmetic (`python/collections_counter_ops.rs`): `+`, `-`, `|`, `&`
//! make a new Counter of the positive counts; `+=`, `-=`, `|=`, `&=` change the left one in
//! place; the objects counted, against real CPython 3.8 – 3.15.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the table helpers
mod probes;

#[test]
fn counter_arithmetic_keeps_positive_counts() {
    probes::agrees_with_cpython(
        "",
        15,
        "
from collections import Counter
c = Counter(a=3, b=1)
d = Counter(a=1, b=2, e=1)
assert c + d == Counter(a=4, b=3, e=1)
assert c - d == Counter(a=2)
assert d - c == Counter(b=1, e=1)
assert c | d == Counter(a=3, b=2, e=1)
assert c & d == Counter(a=1, b=1)
assert list((c + d).keys()) == ['a', 'b', 'e']
s = c + d
assert isinstance(s, Counter) and s is not c and c == Counter(a=3, b=1)
e = Counter(a=1)
f = Counter(a=2, z=5)
alias = e
e -= f
assert e is alias and e == Counter() and 'z' not in e
g = Counter(a=1)
g += Counter(a=1, b=2)
assert g == Counter(a=2, b=2)
h = Counter(a=5, b=1)
h &= Counter(a=2)
assert h == Counter(a=2)
k = Counter(a=1)
k |= Counter(a=3, b=1)
assert k == Counter(a=3, b=1)
",
    );
}

/// (name, probe, count on ≤ 3.10, on ≥ 3.11), measured on 3.8 – 3.15 with `probes::PRELUDE`
/// and `probes::MEASURE`: a kept result is one Counter; `-=` makes none beyond the copy.
const PROBES: &[probes::Probe] = &[
    (
        "sum of two Counters kept",
        "from collections import Counter\nc = Counter('aab')\nd = Counter('bcc')\ndef probe():\n    keep.append(c + d)\n",
        1,
        1,
    ),
    (
        "Counter copy reduced in place and kept",
        "from collections import Counter\nc = Counter('aab')\nd = Counter('bcc')\ndef probe():\n    e = Counter(c)\n    e -= d\n    keep.append(e)\n",
        1,
        1,
    ),
];

#[test]
fn the_model_counts_counter_arithmetic_as_the_table_says() {
    probes::model_matches_table(PROBES);
}

#[test]
fn the_table_agrees_with_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
