//! The result tuples `enumerate` and `zip` keep, `zip`'s tuple of iterators
//! (`heap/iterator_results.rs`), the keyword dict of a builtin type call that goes through
//! `tp_call` (`heap/builtin_type_calls.rs`), and the hidden iterator of a loop inside a
//! generator on 3.14 (`heap/seq_iter_free.rs`). Each figure was measured on 3.8.18 – 3.15.2
//! and is checked against the model on every release and against each installed
//! interpreter now (skipped, with the reason, where absent).

mod common;
#[allow(dead_code)]
mod probes;

fn check(script: &str, expected: impl Fn(u8) -> Vec<u64>) {
    common::gc_counts::check_against_measured_and_installed(script, expected, probes::interpreter);
}

/// Right after a full collection (free lists empty), a kept call counts: `enumerate(xs)` 3
/// (itself, the list iterator, its result tuple), `zip(a, b)` 5 and `zip(a)` 4 (itself, the
/// tuple of iterators, the iterators, the result tuple), plus the argument tuple where the
/// call packs one (`enumerate` up to 3.10, `zip` always). With keywords, `enumerate` up to
/// 3.10 and `int` on every release go through `tp_call`: an argument tuple and a keyword dict.
#[test]
fn enumerate_and_zip_count_their_result_tuples_and_tp_call_counts_its_keyword_dict() {
    let script = common::gc_counts::kept_after_collection(
        "xs = [1, 2]
ys = (3, 4)
",
        "(lambda: enumerate(xs), lambda: zip(xs, ys), lambda: zip(xs), lambda: enumerate(ys), lambda: enumerate(xs, start=1), lambda: int('3', base=10))",
        true,
    );
    check(&script, |minor| {
        let packs = u64::from(minor <= 10);
        vec![3 + packs, 6, 5, 3 + packs, 3 + 2 * packs, 2]
    });
}

/// A `for` loop that unpacks each item gets the same result tuple back every time: a loop over
/// 40 items counts nothing once the iterator exists. `list(enumerate(xs))` keeps every item, so
/// each after the first needs a new tuple (39, and the list). The kept tuple holds the last
/// item until the iterator dies. Each function runs once before the collection, so that
/// 3.14+'s unpacking sites are specialized (their first run unpacks through a tuple iterator
/// left on 3.14's free list, `heap/unpack_sites.rs`).
#[test]
fn unpacking_loops_reuse_the_result_tuple_which_keeps_the_last_item_alive() {
    let script = "import weakref
xs = list(range(40))
out = []
def loop_enumerate():
    e = enumerate(xs)
    b = gc.get_count()[0]
    for i, x in e:
        c = gc.get_count()[0] - b
    return c
def loop_zip():
    z = zip(xs, xs)
    b = gc.get_count()[0]
    for p, q in z:
        c = gc.get_count()[0] - b
    return c
def keep_all():
    e = enumerate(xs)
    b = gc.get_count()[0]
    pairs = list(e)
    return gc.get_count()[0] - b
for f in (loop_enumerate, loop_zip, keep_all):
    f()
    gc.collect()
    gc.get_count()
    out.append(f())
class T:
    pass
t = T()
r = weakref.ref(t)
items = [t]
del t
e = enumerate(items)
for i, x in e:
    pass
del x
items.clear()
out.append(int(r() is not None))
del e
out.append(int(r() is not None))
";
    check(script, |_| vec![0, 0, 40, 1, 0]);
}

/// Generators drained right after a full collection: one looping over a list leaves its
/// list iterator on 3.14's free list (2: the list and it), none on 3.15 (virtual iterators)
/// or up to 3.13 (freed); 3.8's `list()` call also packs its argument tuple.
#[test]
fn a_generators_loop_iterator_stays_on_the_free_list_on_3_14() {
    let script = common::gc_counts::kept_after_collection(
        "xs = [1, 2]
def g():
    for x in xs:
        yield x
def h():
    yield 1
",
        "(lambda: list(g()), lambda: list(h()), lambda: [x for x in g()])",
        true,
    );
    check(&script, |minor| {
        let kept = u64::from(minor == 14);
        let packs = u64::from(minor == 8);
        vec![1 + packs + kept, 1 + packs, 1 + kept]
    });
}
