//! Lazy iterators: `zip`, `map`, `filter`, `enumerate`, `reversed`, `iter()` / `next()` are
//! objects that produce items on demand and hold references to their sources (a stored
//! `zip` keeps its inputs alive), counted as CPython counts them: the iterator object plus,
//! for a list, tuple or dict source, the hidden GC-allocated iterator over it.

mod probes;

use probes::ok;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, run by `~/.pyenv/versions/3.X*/bin/python`).
const PROBES: &[probes::Probe] = &[
    (
        "zip of two tuples kept",
        "def probe():\n    keep.append(zip((1,), (2,)))\n",
        3,
        3,
    ),
    (
        "map over a tuple kept",
        "def probe():\n    keep.append(map(abs, (1,)))\n",
        2,
        2,
    ),
    (
        "filter over a list kept",
        "def probe():\n    keep.append(filter(None, [1]))\n",
        2,
        2,
    ),
    (
        "enumerate over a tuple kept",
        "def probe():\n    keep.append(enumerate((1,)))\n",
        2,
        2,
    ),
    (
        "enumerate over a range kept",
        "def probe():\n    keep.append(enumerate(range(2)))\n",
        1,
        1,
    ),
    (
        "reversed tuple kept",
        "def probe():\n    keep.append(reversed((1,)))\n",
        1,
        1,
    ),
    (
        "iter of a list kept",
        "def probe():\n    keep.append(iter([1]))\n",
        1,
        1,
    ),
    (
        "list of a zip kept",
        "def probe():\n    keep.append(list(zip((1, 2), (3, 4))))\n",
        1,
        1,
    ),
    // `range_iterator` is not a GC object.
    (
        "iter of a range kept",
        "def probe():\n    keep.append(iter(range(3)))\n",
        0,
        0,
    ),
];

#[test]
fn lazy_iterators_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn lazy_iterators_produce_what_python_produces() {
    ok("
z = zip([1, 2, 3], (4, 5), 'ab' if False else [7, 8, 9])
assert next(z) == (1, 4, 7)
assert list(z) == [(2, 5, 8)]
assert list(z) == [], 'an exhausted zip stays exhausted'
assert list(zip()) == []
it = iter([1, 2])
assert next(it) == 1 and next(it) == 2 and next(it, 'end') == 'end'
pairs = dict(zip(['a', 'b'], [1, 2]))
assert pairs == {'a': 1, 'b': 2}
assert [i * v for i, v in enumerate(map(abs, [-1, -2]), 1)] == [1, 4]
try:
    len(zip([1]))
except TypeError:
    pass
else:
    assert False, 'a zip has no len()'
");
}

/// A stored `zip` keeps its inputs alive: the tensors in the lists stay allocated until the
/// zip is dropped, then go with the lists.
#[test]
fn a_stored_zip_keeps_its_sources_alive() {
    let t = ok("
import torch
a = [torch.zeros(1024, 1024, device='cuda') for _ in range(2)]
b = [torch.zeros(1024, 1024, device='cuda') for _ in range(2)]
z = zip(a, b)
del a, b
assert torch.cuda.memory_allocated() == 4 * 4 * 1024 * 1024, torch.cuda.memory_allocated()
first = next(z)
del z
assert torch.cuda.memory_allocated() == 2 * 4 * 1024 * 1024, torch.cuda.memory_allocated()
del first
assert torch.cuda.memory_allocated() == 0
");
    drop(t);
}

/// The objects counted while a loop runs, before its first item's body is done
/// (`gc.get_count()` inside the body minus before the loop): (loop, count on 3.8 – 3.11,
/// on 3.12 – 3.13, on 3.14 – 3.15), measured with the installed interpreters. A `for` over a
/// list, tuple or dict has a GC iterator (3.14 iterates lists and tuples without one); a
/// comprehension adds its function object up to 3.11.
const LOOPS: &[(&str, [i64; 3])] = &[
    (
        "for x in L:\n        d = gc.get_count()[0] - b\n        break",
        [1, 1, 0],
    ),
    (
        "for x in T:\n        d = gc.get_count()[0] - b\n        break",
        [1, 1, 0],
    ),
    (
        "for x in D:\n        d = gc.get_count()[0] - b\n        break",
        [1, 1, 1],
    ),
    (
        "for x in range(3):\n        d = gc.get_count()[0] - b\n        break",
        [0, 0, 0],
    ),
    ("d = [gc.get_count()[0] - b for x in L][0]", [2, 1, 0]),
    ("d = [gc.get_count()[0] - b for x in T][0]", [2, 1, 0]),
    ("d = [gc.get_count()[0] - b for x in D][0]", [2, 1, 1]),
    (
        "d = [gc.get_count()[0] - b for x in range(2)][0]",
        [1, 0, 0],
    ),
    ("d = {x: gc.get_count()[0] - b for x in L}[1]", [2, 1, 0]),
];

fn loop_probe(body: &str) -> String {
    format!(
        "{}L = [1, 2]\nT = (1, 2)\nD = {{1: 2}}\ndef probe():\n    b = gc.get_count()[0]\n    {body}\n    return d\nprobe()\nprobe()\nd = probe()\n",
        probes::PRELUDE
    )
}

fn loop_expected(counts: [i64; 3], minor: u8) -> i64 {
    match minor {
        ..=11 => counts[0],
        12 | 13 => counts[1],
        _ => counts[2],
    }
}

#[test]
fn loops_count_their_hidden_iterator_as_cpython_does() {
    for &(body, counts) in LOOPS {
        for minor in [10u8, 11, 12, 13, 14, 15] {
            let expected = loop_expected(counts, minor);
            let workload = format!("{}assert d == {expected}, d\n", loop_probe(body));
            if let Err(e) = probes::run(&format!("3.{minor}"), &workload) {
                panic!("{body:?} on 3.{minor}: {e}");
            }
        }
    }
    for minor in 8..=15u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        for &(body, counts) in LOOPS {
            let script = format!("{}print(d)\n", loop_probe(body));
            let out = std::process::Command::new(&python)
                .args(["-c", &script])
                .output()
                .expect("runs python");
            let real: i64 = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("a count");
            assert_eq!(
                real,
                loop_expected(counts, minor),
                "{body:?} on CPython 3.{minor}"
            );
        }
    }
}

/// `iter(range(...))` yields the range's items and resumes where `next` left it.
#[test]
fn a_range_iterator_resumes_where_next_left_it() {
    probes::ok(
        "
it = iter(range(2, 8, 2))
assert next(it) == 2
assert list(it) == [4, 6]
assert next(iter(range(0)), 'done') == 'done'
total = 0
for i in iter(range(4)):
    total += i
assert total == 6
",
    );
}
