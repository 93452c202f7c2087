//! `*` in assignment targets (`a, *b = xs`, `for a, *rest in rows:`) and in displays
//! (`(x, *y)`, `[*a, *b]`, `{*a, *b}`): the values and errors CPython gives, and the objects
//! it counts (the starred target's new list, the list a starred tuple display is built in),
//! measured with `gc.get_count()` and checked against every installed CPython.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, the probe tables and `run`
mod probes;

use probes::Probe;

#[test]
fn starred_targets_and_displays_run_as_cpython_runs_them() {
    probes::agrees_with_cpython(
        "",
        15,
        "
xs = [1, 2, 3, 4]
a, *b = xs
assert a == 1 and b == [2, 3, 4]
*a, b = tuple(xs)
assert a == [1, 2, 3] and b == 4
a, *b, c = (1, 2, 3, 4)
assert (a, b, c) == (1, [2, 3], 4)
a, *b = [1]
assert a == 1 and b == []
first, *rest = range(3)
assert rest == [1, 2]
[p, *q] = ['a', 'b', 'c']
assert p == 'a' and q == ['b', 'c']
(h, *(m, n)), tail = (1, 2, 3), 4
assert (h, m, n, tail) == (1, 2, 3, 4)
seen = []
for k, *vals in [(1, 2, 3), (4,)]:
    seen.append((k, vals))
assert seen == [(1, [2, 3]), (4, [])], seen
def inside(rows):
    out = []
    for *init, last in rows:
        out.append(init)
    return out
assert inside([(1, 2, 3), [4]]) == [[1, 2], []]
ys = (5, 6)
assert (0, *xs) == (0, 1, 2, 3, 4)
assert (*ys,) == (5, 6)
assert [*xs, *ys] == [1, 2, 3, 4, 5, 6]
assert [*range(2), 9, *{'a': 1}] == [0, 1, 9, 'a']
assert {*xs, *ys, 1} == {1, 2, 3, 4, 5, 6}
def g(*args):
    return args
assert g(*xs, *ys) == (1, 2, 3, 4, 5, 6)
try:
    a, *b, c = [1]
    assert False
except ValueError as e:
    assert str(e) == 'not enough values to unpack (expected at least 2, got 1)', str(e)
try:
    for a, b, *c in [(1, 2), (1,)]:
        pass
    assert False
except ValueError as e:
    assert str(e) == 'not enough values to unpack (expected at least 2, got 1)', str(e)
",
    );
}

#[test]
fn a_short_starred_unpack_is_a_located_value_error() {
    let e = probes::run("3.12", "xs = [1]\na, *b, c = xs\n")
        .expect_err("one value does not fill three targets")
        .to_string();
    assert!(
        e.contains("t.yaml:6:")
            && e.contains("ValueError: not enough values to unpack (expected at least 2, got 1)"),
        "{e}"
    );
}

#[test]
fn a_starred_target_holds_its_items_until_the_list_goes() {
    // The new list keeps the tensors it took; dropping it frees them.
    let t = probes::ok(
        "import torch
xs = [torch.zeros(256, device='cuda') for _ in range(3)]
head, *rest = xs
del xs
assert torch.cuda.memory_allocated() == 3 * 1024
del head
assert torch.cuda.memory_allocated() == 2 * 1024
del rest
assert torch.cuda.memory_allocated() == 0
",
    );
    let _ = t;
}

/// Objects counted by `gc.get_count()` (≤ 3.10, ≥ 3.11), measured on CPython 3.8 – 3.15 with
/// the prelude of `probes`. The kept starred lists come from the list free list until it is
/// empty (the probes that keep 100 lists empty it).
const PROBES: &[Probe] = &[
    (
        "starred target kept",
        "xs = [1, 2, 3, 4]\ndef probe():\n    a, *b = xs\n    keep.append(b)\n",
        0,
        0,
    ),
    (
        "starred middle target dropped",
        "ts = (1, 2, 3, 4)\ndef probe():\n    a, *b, c = ts\n",
        0,
        0,
    ),
    (
        "starred target, 100 lists kept",
        "ts = (1, 2, 3)\ndef probe():\n    for i in range(100):\n        a, *r = ts\n        keep.append(r)\n",
        100,
        100,
    ),
    (
        "list display spreading, 100 kept",
        "xs = [1, 2]\ndef probe():\n    for i in range(100):\n        keep.append([*xs, i])\n",
        100,
        100,
    ),
    (
        "set display spreading two iterables kept",
        "xs = [1, 2, 3, 4]\nts = (1, 2, 3, 4)\ndef probe():\n    keep.append({*xs, *ts})\n",
        1,
        1,
    ),
];

#[test]
fn starred_probes_count_on_the_model_as_the_table_says() {
    probes::model_matches_table(PROBES);
}

#[test]
fn the_starred_table_matches_installed_cpython() {
    probes::table_matches_installed_interpreters(PROBES);
}
