//! `collections.Counter` unary `+c` (positive counts) and `-c` (negative counts negated),
//! each a new Counter in the operand's key order (`python/collections_counter_ops.rs`),
//! checked on the model and on every installed CPython; what the model counts for them.

mod common;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `ok`, `run` and `interpreter`
mod probes;

const SCRIPT: &str = "
from collections import Counter
c = Counter(a=3, b=-1, e=0, f=-2)
p, n = +c, -c
assert p == Counter(a=3) and n == Counter(b=1, f=2), (p, n)
assert list(n.items()) == [('b', 1), ('f', 2)] and isinstance(p, Counter)
assert p is not c and c['b'] == -1 and len(c) == 4
assert +Counter() == Counter() and -Counter(a=1) == Counter()
";

#[test]
fn unary_plus_and_minus_make_new_counters_as_in_cpython() {
    probes::agrees_with_cpython("", 15, SCRIPT);
    for python in ["3.8", "3.13", "3.14", "3.15"] {
        if let Err(e) = probes::run(python, SCRIPT) {
            panic!("model on {python}: {e}");
        }
    }
}

/// The model counts `+c` as it counts `Counter()` (the view, iterator and, up to 3.10, the
/// frame of `Counter.__pos__`'s loop are not made). Measured on CPython 3.8.18 – 3.13.0, 3.14
/// and 3.15 right after `gc.collect()`: `+c` and `-c` count 7, 7, 7, 7, 7, 7, 8, 8 against
/// `Counter()`'s 6, 5, 5, 5, 5, 5, 6, 6 (two more, one on 3.8).
#[test]
fn unary_results_count_as_a_new_counter_in_the_model() {
    let script = common::gc_counts::kept_after_collection(
        "from collections import Counter\nc = Counter(a=3, b=-1)\n",
        "(lambda: +c, lambda: -c, lambda: Counter())",
        true,
    );
    for minor in 8..=15u8 {
        let t = common::run_model(
            &format!("{script}assert out[0] == out[1] == out[2], out\n"),
            &format!("3.{minor}"),
            [0, 0, 0],
            11_000,
            0,
        );
        assert!(t.oom.is_none());
    }
}
