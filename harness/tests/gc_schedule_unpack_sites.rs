//! `a, b = xs` of a list or tuple: the iterator of `UNPACK_SEQUENCE`'s generic path, run by a
//! site's first execution from 3.12 (`heap/unpack_sites.rs`). Each figure is checked against
//! the model on every release and against each installed interpreter (3.14 / 3.15 from
//! `../shared/tools/fetch-pythons.sh`; skipped, with the reason, if absent).

mod common;
#[allow(dead_code)]
mod probes;

/// Each function called twice right after `gc.collect()`. Measured on 3.8.18 – 3.15.2: up to
/// 3.10 a first call counts its frame object (then parked as the code's zombie frame) and
/// unpacking makes no iterator; 3.11 – 3.13 free the generic path's iterator (0); on 3.14 and
/// 3.15 the first run's iterator stays on the free list of list (tuple) iterators (1) and the
/// specialized second run makes none (0); a loop unpacking twice in one call counts only its
/// first pass (3.8 also counts `range`'s argument tuple).
#[test]
fn a_sites_first_unpacking_leaves_an_iterator_on_3_14_free_lists() {
    let setup = "xs = [1, 2]
t = (3, 4)
def f():
    a, b = xs
    return a
def g():
    a, b = t
    return a
def h():
    for i in range(2):
        a, b = xs
    return a
";
    let script = common::gc_counts::kept_after_collection(setup, "(f, f, g, g, h, h)", false);
    let expected = |minor| {
        let first = u64::from(minor <= 10 || minor >= 14);
        // 3.8's `range(2)` packs an argument tuple, left on the tuple free list.
        let range = u64::from(minor == 8);
        vec![first, 0, first, 0, first + range, range]
    };
    common::gc_counts::check_against_measured_and_installed(&script, expected, probes::interpreter);
}
