//! 3.14+'s free lists of list and tuple iterators (`heap/seq_iter_free.rs`) and the hidden
//! iterator of a `for` loop per release: 3.8 – 3.13 count it while the loop runs, 3.14 takes
//! it from its free list and leaves it there, 3.15's virtual iterators make none. Each figure
//! is checked against the model on every release and against each installed interpreter
//! (3.14 / 3.15 from `../shared/tools/fetch-pythons.sh`; skipped, with the reason, if absent).

mod common;
#[allow(dead_code)]
mod probes;

/// [`common::gc_counts::check_against_measured_and_installed`] with the installed interpreters.
fn check_against_measured_and_installed(script: &str, expected: impl Fn(u8) -> Vec<u64>) {
    common::gc_counts::check_against_measured_and_installed(script, expected, probes::interpreter);
}

/// After a full collection (free lists empty): a new `iter(xs)` is counted; dropping it
/// lowers the count up to 3.13 and puts it on the free list from 3.14, so the next one is
/// free there; a tuple iterator has its own list. Twenty dropped iterators lower the count by
/// 20 up to 3.13 and by 10 (the list's capacity) from 3.14; twenty new ones then count 20 / 10.
#[test]
fn list_and_tuple_iterators_have_free_lists_of_ten_from_3_14() {
    let script = "xs = [1, 2, 3]
ts = (1, 2, 3)
its = []
out = []
gc.collect()
gc.get_count()
b = gc.get_count()[0]
a = iter(xs)
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
del a
out.append(b - gc.get_count()[0])
b = gc.get_count()[0]
a = iter(xs)
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
t = iter(ts)
out.append(gc.get_count()[0] - b)
gc.collect()
for _ in range(20):
    its.append(iter(xs))
gc.get_count()
b = gc.get_count()[0]
its.clear()
out.append(b - gc.get_count()[0])
b = gc.get_count()[0]
for _ in range(20):
    its.append(iter(ts))
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
for _ in range(20):
    its.append(iter(xs))
out.append(gc.get_count()[0] - b)
";
    check_against_measured_and_installed(script, |minor| {
        let free_list = minor >= 14;
        let old = u64::from(!free_list);
        // The tuple iterators find their list empty; the list iterators find ten.
        vec![
            1,
            old,
            old,
            1,
            if free_list { 10 } else { 20 },
            20,
            if free_list { 10 } else { 20 },
        ]
    });
}

/// A `for` loop over a list right after a full collection: its iterator is counted inside
/// the body up to 3.14 and not on 3.15 (virtual iterators); after the loop it is gone up to
/// 3.13 and on the free list on 3.14 (the count stays one higher), so a second loop's
/// iterator is free there.
#[test]
fn a_for_loops_iterator_is_counted_to_3_13_recycled_on_3_14_and_virtual_on_3_15() {
    let script = "xs = [1, 2, 3]
ts = (4, 5)
out = []
c = 0
gc.collect()
gc.get_count()
b = gc.get_count()[0]
for x in xs:
    c = gc.get_count()[0] - b
out.append(c)
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
for x in xs:
    c = gc.get_count()[0] - b
out.append(c)
b = gc.get_count()[0]
for x in ts:
    c = gc.get_count()[0] - b
out.append(c)
out.append(gc.get_count()[0] - b)
";
    check_against_measured_and_installed(script, |minor| {
        let made = u64::from(minor <= 14);
        let recycled = u64::from(minor == 14);
        // On 3.14 the tuple loop finds its own list empty: counted, then kept on it.
        vec![made, recycled, made - recycled, made, recycled]
    });
}

/// `reversed(xs)` of a list binds `list.__reversed__` (a builtin method) for the call: counted
/// and uncounted on 3.9 – 3.13, left on the builtin-method free list of 3.8 and 3.14+ (so the
/// call counts one more right after a full collection, then not once the list holds it; up to
/// 3.9 the call also packs its argument tuple, free the second time). A tuple has no
/// `__reversed__`: its `reversed` object is all that counts.
#[test]
fn reversed_of_a_list_leaves_its_bound_method_on_the_free_list_on_3_8_and_from_3_14() {
    let script = "xs = [1, 2]
ts = (1, 2)
keep = []
out = []
gc.collect()
gc.get_count()
b = gc.get_count()[0]
keep.append(reversed(xs))
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
keep.append(reversed(xs))
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
keep.append(reversed(ts))
out.append(gc.get_count()[0] - b)
";
    check_against_measured_and_installed(script, |minor| {
        let free_list = u64::from(minor == 8 || minor >= 14);
        let argument_tuple = u64::from(minor <= 9);
        vec![1 + free_list + argument_tuple, 1, 1]
    });
}

/// Comprehensions right after a full collection (measured on 3.8.18 – 3.15.2): on 3.14 each
/// loop's iterator stays on its free list after the call, so the count is higher by one per
/// iterator type the call used (the inner loop's second tuple iterator is free); 3.15's
/// virtual iterators and 3.8 – 3.13's freed ones leave none.
#[test]
fn comprehension_iterators_stay_on_their_free_lists_on_3_14() {
    let script = common::gc_counts::kept_after_collection(
        "xs = [1, 2]
ys = (3, 4)
",
        "(lambda: [x for x in xs], lambda: [(x, y) for x in xs for y in ys])",
        true,
    );
    check_against_measured_and_installed(&script, |minor| {
        let kept = u64::from(minor == 14);
        vec![1 + kept, 5 + 2 * kept]
    });
}
