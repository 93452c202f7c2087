//! `set` and `frozenset`: behaviour, iteration order (CPython's table layout), the
//! references they hold, and their generation-0 counts against real CPython.

mod probes;

use probes::ok;
use std::process::Command;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.15
/// (`PRELUDE + probe + MEASURE + print(d)`).
const PROBES: &[probes::Probe] = &[
    (
        "set display kept",
        "def probe():\n    a = 1\n    keep.append({a, 2})\n",
        1,
        1,
    ),
    (
        "constant set display kept",
        "def probe():\n    keep.append({1, 2, 3})\n",
        1,
        1,
    ),
    (
        "set comprehension kept",
        "def probe():\n    keep.append({x for x in (1, 2)})\n",
        1,
        1,
    ),
    (
        "set of a tuple kept",
        "def probe():\n    keep.append(set((1, 2)))\n",
        1,
        1,
    ),
    (
        "set of a list kept",
        "def probe():\n    keep.append(set([1, 2]))\n",
        1,
        1,
    ),
    (
        "empty set kept",
        "def probe():\n    keep.append(set())\n",
        1,
        1,
    ),
    (
        "frozenset of a tuple kept",
        "def probe():\n    keep.append(frozenset((1, 2)))\n",
        1,
        1,
    ),
    (
        "union kept",
        "s = {1, 2}\ndef probe():\n    keep.append(s | {3})\n",
        1,
        1,
    ),
    (
        "intersection kept",
        "s = {1, 2}\nt = {2, 3}\ndef probe():\n    keep.append(s & t)\n",
        1,
        1,
    ),
    (
        "difference kept",
        "s = {1, 2}\nt = {2, 3}\ndef probe():\n    keep.append(s - t)\n",
        1,
        1,
    ),
    (
        "set methods",
        "s = set()\ndef probe():\n    s.add(1)\n    s.add(2)\n    s.discard(1)\n    s.remove(2)\n    s.update((3, 4))\n    s.pop()\n    s.clear()\n    1 in s\n",
        0,
        0,
    ),
    (
        "set built and dropped",
        "def probe():\n    x = {1, 2}\n    del x\n",
        0,
        0,
    ),
    (
        "loop over a set",
        "s = {1, 2}\ndef probe():\n    for x in s:\n        keep.append(x)\n",
        0,
        0,
    ),
    (
        "frozenset of a frozenset",
        "f = frozenset((1, 2))\ndef probe():\n    keep.append(frozenset(f))\n",
        0,
        0,
    ),
    (
        "set of a set kept",
        "f = {1, 2}\ndef probe():\n    keep.append(set(f))\n",
        1,
        1,
    ),
    (
        "set copy kept",
        "f = {1, 2}\ndef probe():\n    keep.append(f.copy())\n",
        1,
        1,
    ),
];

#[test]
fn set_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_set_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

/// `frozenset()` is a shared singleton up to 3.9 and a new object from 3.10 (measured on
/// 3.8 – 3.15: 0 on 3.8 – 3.9, 1 from 3.10); so is a frozenset left empty by its source.
#[test]
fn an_empty_frozenset_is_a_singleton_up_to_3_9() {
    for (python, expected) in [("3.8", 0), ("3.9", 0), ("3.10", 1), ("3.13", 1)] {
        for probe in [
            "def probe():\n    keep.append(frozenset())\n",
            "def probe():\n    keep.append(frozenset([]))\n",
        ] {
            let workload = format!(
                "{}{probe}{}assert d == {expected}, d\n",
                probes::PRELUDE,
                probes::MEASURE
            );
            if let Err(e) = probes::run(python, &workload) {
                panic!("{probe:?} on {python}: {e}");
            }
        }
    }
}

/// Iteration order of ints follows CPython's table: added one by one,
/// `[1, 33, 3, 5, 9, 17]` everywhere; a display of three or more constants is, from 3.9,
/// a merge of a constant frozenset into an empty set, which re-lays it out as
/// `[1, 33, 3, 17, 5, 9]` (3.8 adds the items one by one).
const ORDER_PROGRAM: &str = "s = set()
for x in (5, 1, 9, 17, 3, 33):
    s.add(x)
a = 5
shown = [list(s), list({x for x in (5, 1, 9, 17, 3, 33)}), list({5, 1, 9, 17, 3, 33}),
         list({a, 1, 9, 17, 3, 33}), list(set((5, 1, 9, 17, 3, 33))), list(s | {2}),
         list({(1, 2), (3, 4), (5, 6)}), [s.pop(), s.pop()]]
";

fn expected_order(minor: u8) -> &'static str {
    if minor >= 9 {
        "[[1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 17, 5, 9], [1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 17, 5, 2, 9], [(1, 2), (3, 4), (5, 6)], [1, 33]]"
    } else {
        "[[1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 5, 9, 17], [1, 33, 3, 17, 5, 2, 9], [(1, 2), (3, 4), (5, 6)], [1, 33]]"
    }
}

#[test]
fn iteration_order_is_cpython_s_table_order() {
    for minor in [8u8, 9, 10, 11, 12, 13, 14] {
        let expected = expected_order(minor);
        let workload = format!("{ORDER_PROGRAM}assert shown == {expected}, shown\n");
        if let Err(e) = probes::run(&format!("3.{minor}"), &workload) {
            panic!("on 3.{minor}: {e}");
        }
    }
}

#[test]
fn iteration_order_matches_installed_interpreters() {
    let mut compared = 0;
    for minor in 8..=15u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let out = Command::new(&python)
            .args(["-c", &format!("{ORDER_PROGRAM}print(shown)")])
            .output()
            .expect("runs python");
        let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(real, expected_order(minor), "CPython 3.{minor}");
        compared += 1;
    }
    if compared == 0 {
        eprintln!("skipped: no CPython found; the order was not re-measured");
    }
}

#[test]
fn sets_behave_as_python_s() {
    ok("
s = {1, 2, 3}
s.add(4)
s.add(2)
assert len(s) == 4 and 4 in s and 7 not in s
s.discard(7)
s.discard(1)
assert s == {2, 3, 4}
try:
    s.remove(9)
except KeyError:
    pass
else:
    assert False, 'remove of a missing key'
assert s | {9} == {2, 3, 4, 9}
assert s & {3, 4, 5} == {3, 4}
assert s - {2} == {3, 4}
assert s ^ {4, 5} == {2, 3, 5}
assert s.union([7], (8,)) == {2, 3, 4, 7, 8}
assert s.intersection([3]) == {3}
assert s.difference({2, 3}) == {4}
assert {2}.issubset(s) and s.issuperset({3}) and s.isdisjoint({10})
s.update([5, 6], (7,))
assert len(s) == 6
t = s.copy()
t.clear()
assert not t and len(s) == 6 and s
assert {1, True, 1.0} == {1}
assert {(1, 2), (1, 2)} == {(1, 2)}
f = frozenset([1, 2])
assert f == {1, 2} and frozenset(f) is f
assert (f | {3}) == frozenset({1, 2, 3})
e = set()
try:
    e.pop()
except KeyError:
    pass
else:
    assert False, 'pop of an empty set'
total = 0
for x in {10, 20}:
    total += x
assert total == 30
assert sorted({3, 1, 2}) == [1, 2, 3]
assert {x % 3 for x in range(10)} == {0, 1, 2}
");
}

#[test]
fn unhashable_keys_and_frozenset_mutation_are_python_s_errors() {
    for (workload, message) in [
        ("s = {[1]}\n", "TypeError: unhashable type: 'list'"),
        (
            "s = set()\ns.add({})\n",
            "TypeError: unhashable type: 'dict'",
        ),
        (
            "f = frozenset()\nf.add(1)\n",
            "AttributeError: 'frozenset' object has no attribute 'add'",
        ),
        (
            "s = {1} | [2]\n",
            "TypeError: unsupported operand type(s) for |: 'set' and 'list'",
        ),
    ] {
        let e = probes::run("3.11", workload)
            .expect_err("refused")
            .to_string();
        assert!(e.contains(message), "{workload:?}: {e}");
    }
}

/// A set holds its tensors: discarding one frees it, dropping the set frees the rest, and
/// a set in a reference cycle stays tracked and is collected with what it holds.
#[test]
fn a_set_holds_its_tensors_and_is_collected_in_a_cycle() {
    ok("
import gc
import torch
gc.disable()
a = torch.zeros(256, device='cuda')
b = torch.zeros(256, device='cuda')
s = {a, b}
del a
assert torch.cuda.memory_allocated() == 2048
s.discard(b)
del b
assert torch.cuda.memory_allocated() == 1024, torch.cuda.memory_allocated()
del s
assert torch.cuda.memory_allocated() == 0
class Holder:
    pass
h = Holder()
h.seen = {torch.zeros(256, device='cuda'), h}
del h
assert torch.cuda.memory_allocated() == 1024
gc.collect()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
");
}
