//! Unpacking a string into targets (`python/str_unpacking.rs`), with and without a starred
//! target, and the objects it counts, against real CPython 3.8 – 3.15.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the table helpers
mod probes;

#[test]
fn a_string_unpacks_into_its_characters() {
    probes::agrees_with_cpython(
        "",
        15,
        "
a, b = 'xy'
assert (a, b) == ('x', 'y')
first, *rest = 'xyz'
assert first == 'x' and rest == ['y', 'z']
*init, last = 'héllo'
assert init == ['h', 'é', 'l', 'l'] and last == 'o'
head, *empty = 'q'
assert empty == []
for k, v in ['ab', 'cd']:
    assert k + v in ('ab', 'cd')
try:
    a, b = 'xyz'
    raise AssertionError('three characters unpacked into two names')
except ValueError:
    pass
try:
    a, *b = ''
    raise AssertionError('an empty string unpacked')
except ValueError:
    pass
",
    );
}

/// (name, probe, count on ≤ 3.10, on ≥ 3.11), measured on 3.8 – 3.15 with `probes::PRELUDE`
/// and `probes::MEASURE`: the `str_iterator` comes and goes; the starred target's list is
/// served by the list free list.
const PROBES: &[probes::Probe] = &[
    (
        "string unpacked into two names",
        "def probe():\n    a, b = 'xy'\n    keep.append(a)\n",
        0,
        0,
    ),
    (
        "string unpacked with a starred target, list kept",
        "def probe():\n    a, *b = 'xyz'\n    keep.append(b)\n",
        0,
        0,
    ),
];

#[test]
fn the_model_counts_string_unpacking_as_the_table_says() {
    probes::model_matches_table(PROBES);
}

#[test]
fn the_table_agrees_with_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
