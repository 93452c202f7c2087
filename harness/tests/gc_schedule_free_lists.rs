//! Which free list a construct's temporaries end on, per CPython version: it decides which
//! later allocation is counted, so where inside an iteration the count crosses the
//! threshold. Each rule is checked against the figures measured on 3.8.18 – 3.15.2 and, where
//! installed, against each interpreter now (skipped, with the reason, where absent).

mod common;
#[allow(dead_code)]
mod probes;

/// [`common::gc_counts::check_against_measured_and_installed`] with the installed interpreters.
fn check_against_measured_and_installed(script: &str, expected: impl Fn(u8) -> Vec<u64>) {
    common::gc_counts::check_against_measured_and_installed(script, expected, probes::interpreter);
}

/// `GcProfile::init_subclass_super_tuple`: up to 3.10 a class statement's `init_subclass`
/// packs `super(type, type)`'s arguments in a 2-tuple that ends on the free list, so a new
/// `(i, i)` right after the statement is not counted; from 3.11 (`super` has a vectorcall) it
/// is. Either way the statement leaves two dicts on the dict free list: a third new `{}` is
/// counted (the model used to leave three and no tuple).
#[test]
fn a_class_statement_leaves_its_super_call_tuple_on_the_free_list_up_to_3_10() {
    let script = "i = 5
keep = []
out = []
gc.collect()
class A:
    pass
gc.get_count()
b = gc.get_count()[0]
t = (i, i)
out.append(gc.get_count()[0] - b)
b = gc.get_count()[0]
d1 = {}
d2 = {}
d3 = {}
out.append(gc.get_count()[0] - b)
";
    check_against_measured_and_installed(script, |minor| vec![u64::from(minor >= 11), 1]);
}

/// `heap/builtin_type_calls.rs`: `range`, `list` and `tuple` pack their call's arguments in a
/// tuple on 3.8 (their vectorcall came in 3.9), `float` and `bool` up to 3.9. Each call runs
/// right after a full collection (free lists empty), so that tuple is counted.
#[test]
fn builtin_type_calls_pack_an_argument_tuple_before_their_vectorcall() {
    let script = common::gc_counts::kept_after_collection(
        "xs = [1, 2]
",
        "(lambda: range(3), lambda: range(1, 3), lambda: list(xs), lambda: tuple(xs), lambda: float(3), lambda: bool(3))",
        true,
    );
    check_against_measured_and_installed(&script, |minor| {
        let old = |first_vectorcall: u8| u64::from(minor < first_vectorcall);
        // range objects and floats/bools are not GC objects; lists and tuples are.
        vec![old(9), old(9), 1 + old(9), 1 + old(9), old(10), old(10)]
    });
}

/// `heap/builtin_type_calls.rs`: `int` packs its call's arguments in a tuple up to 3.12 and
/// `str` up to 3.11 (their results here are not GC objects, so the tuple is all that counts);
/// `set(xs)` and `frozenset(xs)` up to 3.8. Measured on 3.8.18 – 3.15.2 as above. From 3.14
/// `set(xs)` and `frozenset(xs)` count one more (two in all): their iterator's free list.
#[test]
fn int_str_set_and_frozenset_calls_pack_an_argument_tuple_before_their_vectorcall() {
    let script = common::gc_counts::kept_after_collection(
        "xs = [1, 2]
",
        "(lambda: int('3'), lambda: str(3), lambda: set(xs), lambda: frozenset(xs), lambda: set())",
        true,
    );
    check_against_measured_and_installed(&script, |minor| {
        let old = |first_vectorcall: u8| u64::from(minor < first_vectorcall);
        // From 3.14 the `list_iterator` that fills the set goes onto its free list
        // (`heap/seq_iter_free.rs`): counted, as the collection emptied that list.
        let iterator = u64::from(minor >= 14);
        // `set()` packs nothing: no positional arguments, the empty tuple.
        vec![
            old(13),
            old(12),
            1 + old(9) + iterator,
            1 + old(9) + iterator,
            1,
        ]
    });
}
