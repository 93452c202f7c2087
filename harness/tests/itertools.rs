//! `itertools.chain` / `chain.from_iterable`, `islice`, `count`, `repeat`, `cycle`: lazy
//! iterators holding their sources (a stored `cycle` keeps every item it has seen), their
//! values, and their generation-0 counts against real CPython.

mod probes;

use probes::ok;

const H: &str = "import itertools\nxs = [1, 2, 3]\nys = [4]\n";

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.15:
/// the iterator object plus the source iterator it takes at once (`chain` one over its
/// argument tuple, whose size-1 and size-3 free lists are full here).
const PROBES: &[probes::Probe] = &[
    (
        "chain of one list",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    keep.append(itertools.chain(xs))\n",
        2,
        2,
    ),
    (
        "chain of three lists",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    keep.append(itertools.chain(xs, xs, xs))\n",
        2,
        2,
    ),
    (
        "chain.from_iterable of a list",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    keep.append(itertools.chain.from_iterable([xs, xs]))\n",
        2,
        2,
    ),
    (
        "islice of a list",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    keep.append(itertools.islice(xs, 2))\n",
        2,
        2,
    ),
    (
        "islice of a range",
        "import itertools\ndef probe():\n    keep.append(itertools.islice(range(5), 2))\n",
        1,
        1,
    ),
    (
        "itertools.count",
        "import itertools\ndef probe():\n    keep.append(itertools.count())\n",
        1,
        1,
    ),
    (
        "itertools.repeat",
        "import itertools\nxs = [1]\ndef probe():\n    keep.append(itertools.repeat(xs, 3))\n",
        1,
        1,
    ),
    (
        "cycle of a list",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    keep.append(itertools.cycle(xs))\n",
        2,
        2,
    ),
    (
        "started cycle",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    c = itertools.cycle(xs)\n    next(c)\n    keep.append(c)\n",
        2,
        2,
    ),
    (
        "list of islice of count",
        "import itertools\ndef probe():\n    keep.append(list(itertools.islice(itertools.count(), 3)))\n",
        1,
        1,
    ),
    (
        "for over a chain",
        "import itertools\nxs = [1, 2, 3]\ndef probe():\n    for x in itertools.chain(xs, xs, xs):\n        pass\n",
        0,
        0,
    ),
    (
        "starmap of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.starmap(max, xs))\n",
        2,
        2,
    ),
    (
        "takewhile of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.takewhile(bool, xs))\n",
        2,
        2,
    ),
    (
        "dropwhile of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.dropwhile(bool, xs))\n",
        2,
        2,
    ),
    (
        "accumulate of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.accumulate(xs))\n",
        2,
        2,
    ),
    (
        "zip_longest of two tuples kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.zip_longest(xs, xs))\n",
        3,
        3,
    ),
    (
        "product of two tuples kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.product(xs, xs))\n",
        1,
        1,
    ),
    (
        "combinations of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.combinations(xs, 2))\n",
        1,
        1,
    ),
    (
        "permutations of a tuple kept",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(itertools.permutations(xs, 2))\n",
        1,
        1,
    ),
    (
        "list of starmap",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(list(itertools.starmap(max, xs)))\n",
        1,
        1,
    ),
    (
        "list of takewhile",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(list(itertools.takewhile(bool, xs)))\n",
        1,
        1,
    ),
    (
        "list of dropwhile",
        "import itertools\nxs = ((1, 2), (3, 4), (5, 6))\ndef probe():\n    keep.append(list(itertools.dropwhile(bool, xs)))\n",
        1,
        1,
    ),
];

#[test]
fn itertools_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_itertools_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn itertools_produce_cpythons_values() {
    ok(&format!(
        "{H}assert list(itertools.chain(xs, ys, (5, 6))) == [1, 2, 3, 4, 5, 6]
assert list(itertools.chain.from_iterable([xs, ys])) == [1, 2, 3, 4]
assert list(itertools.chain()) == []
assert list(itertools.islice(xs, 2)) == [1, 2]
assert list(itertools.islice(range(10), 2, 8, 3)) == [2, 5]
assert list(itertools.islice(range(10), 7, None)) == [7, 8, 9]
assert list(itertools.islice(xs, 5, 9)) == []
assert list(itertools.islice(itertools.count(10, 5), 3)) == [10, 15, 20]
assert list(itertools.repeat('a', 3)) == ['a', 'a', 'a']
assert list(itertools.repeat(1, times=0)) == []
c = itertools.cycle(xs)
assert [next(c) for _ in range(7)] == [1, 2, 3, 1, 2, 3, 1]
assert list(itertools.cycle([])) == []
pairs = [(i, x) for i, x in zip(itertools.count(), ['a', 'b'])]
assert pairs == [(0, 'a'), (1, 'b')], pairs
"
    ));
}

#[test]
fn a_stored_cycle_keeps_the_tensors_it_has_seen() {
    ok("
import itertools
import torch
def batches():
    for _ in range(3):
        yield torch.zeros(256, device='cuda')
c = itertools.cycle(batches())
first = next(c)
del first
assert torch.cuda.memory_allocated() == 1024, 'the cycle saved the first batch'
for _ in range(5):
    next(c)
assert torch.cuda.memory_allocated() == 3 * 1024, 'all three batches saved'
del c
assert torch.cuda.memory_allocated() == 0
r = itertools.repeat(torch.zeros(256, device='cuda'), 2)
assert torch.cuda.memory_allocated() == 1024
assert len(list(r)) == 2
assert torch.cuda.memory_allocated() == 1024, 'an exhausted repeat still holds its object'
del r
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn a_chain_holds_its_sources_until_dropped() {
    ok("
import itertools
import torch
ts = [torch.zeros(256, device='cuda') for _ in range(2)]
c = itertools.chain(ts, [torch.zeros(256, device='cuda')])
del ts
assert torch.cuda.memory_allocated() == 3 * 1024
assert sum(1 for _ in c) == 3
del c
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn the_rest_of_itertools_is_refused_with_its_location() {
    for (workload, at, name) in [
        (
            "import itertools\nt = itertools.tee([1])\n",
            "t.yaml:6:",
            "tee",
        ),
        ("from itertools import groupby\n", "t.yaml:5:", "groupby"),
        (
            "import itertools\nc = itertools.cycle({1, 2})\n",
            "t.yaml:6:",
            "itertools over this iterable",
        ),
    ] {
        let err = probes::run("3.11", workload)
            .expect_err("an unmodelled itertools name is refused")
            .to_string();
        assert!(
            err.contains(at) && err.contains(name) && err.contains("unsupported"),
            "{err}"
        );
    }
}

#[test]
fn more_itertools_yield_what_cpython_yields() {
    ok("import itertools
assert list(itertools.starmap(lambda a, b: a * b, [(2, 3), (3, 2)])) == [6, 6]
assert list(itertools.takewhile(lambda x: x < 3, [1, 2, 3, 1])) == [1, 2]
assert list(itertools.dropwhile(lambda x: x < 3, [1, 2, 3, 1])) == [3, 1]
assert list(itertools.accumulate([1, 2, 3])) == [1, 3, 6]
assert list(itertools.accumulate([1, 2, 3], initial=10)) == [10, 11, 13, 16]
assert list(itertools.accumulate([3, 1, 4], max)) == [3, 3, 4]
assert list(itertools.zip_longest([1, 2], [3])) == [(1, 3), (2, None)]
assert list(itertools.zip_longest([1], [2, 3], fillvalue=0)) == [(1, 2), (0, 3)]
assert list(itertools.product([1, 2], [3, 4])) == [(1, 3), (1, 4), (2, 3), (2, 4)]
assert list(itertools.product([0, 1], repeat=2)) == [(0, 0), (0, 1), (1, 0), (1, 1)]
assert list(itertools.product()) == [()]
assert list(itertools.combinations([1, 2, 3], 2)) == [(1, 2), (1, 3), (2, 3)]
assert list(itertools.combinations([1, 2], 3)) == []
assert list(itertools.permutations([1, 2, 3], 2)) == [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
assert len(list(itertools.permutations(range(4)))) == 24
");
    let t = probes::run(
        "3.10",
        "import itertools\nassert list(itertools.pairwise([1, 2, 3])) == [(1, 2), (2, 3)]\n",
    );
    assert!(t.is_ok(), "{:?}", t.err());
    let e = probes::run("3.9", "import itertools\np = itertools.pairwise([1, 2])\n")
        .expect_err("pairwise is new in 3.10");
    let text = e.to_string();
    assert!(
        text.contains("AttributeError: module 'itertools' has no attribute 'pairwise'")
            && text.contains("t.yaml:"),
        "{text}"
    );
}

#[test]
fn a_stored_product_keeps_its_pools_and_their_tensors() {
    ok("import torch, itertools
def batches():
    for _ in range(2):
        yield torch.empty(1024, device='cuda')
p = itertools.product(batches(), [1, 2])
assert torch.cuda.memory_allocated() == 8192, 'the pools hold both tensors'
first = next(p)
del first
assert torch.cuda.memory_allocated() == 8192
del p
assert torch.cuda.memory_allocated() == 0
");
}
