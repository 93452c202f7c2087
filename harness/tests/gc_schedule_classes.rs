//! A class made by a `class` statement sits in reference cycles of its own (its MRO tuple and
//! descriptors point back at it), so dropping it frees nothing until a collection, which then
//! finds the type with its dict, tuples and descriptors (`heap/class_cycles.rs`). Measured on
//! 3.8.18 – 3.15.2 and compared with each installed interpreter now.

mod common;
#[allow(dead_code)]
mod probes;

use common::gc_counts::real_out;

/// Five shapes of class, three definitions of each bound to one name, then dropped: what
/// `gc.collect()` returns afterwards, and whether a weak reference to the last one still
/// lives after `del` (1) before the collection.
const REDEFINED_CLASSES: &str = "import gc
import weakref
gc.disable()
class B:
    pass
out = []
for kind in range(5):
    gc.collect()
    for i in range(3):
        if kind == 0:
            class D:
                pass
        elif kind == 1:
            class D:
                def m(self):
                    pass
        elif kind == 2:
            class D(B):
                pass
        elif kind == 3:
            class D:
                __slots__ = ('a', 'b')
        else:
            class D:
                __slots__ = ()
    r = weakref.ref(D)
    del D
    out.append(1 if r() is not None else 0)
    out.append(gc.collect())
";

/// Objects per dropped class that `gc.collect()` finds, measured: the type, its MRO and bases
/// tuples, the `__dict__`/`__weakref__` getset descriptors of a class without base or slots
/// (none on 3.15), a member descriptor per slot name, the type's dict where it is tracked (it
/// holds a descriptor or a function, or always from 3.14), and the method.
fn measured_per_class(minor: u8) -> [u64; 5] {
    let getsets = if minor >= 15 { 0 } else { 2 };
    let atomic_dict = u64::from(minor >= 14);
    let plain = 3 + getsets + u64::from(getsets > 0 || minor >= 14);
    [plain, plain + 1, 3 + atomic_dict, 6, 3 + atomic_dict]
}

fn measured_redefinitions(minor: u8) -> Vec<u64> {
    measured_per_class(minor)
        .iter()
        .flat_map(|per_class| [1, 3 * per_class])
        .collect()
}

#[test]
fn a_dropped_class_lives_until_a_collection_which_finds_its_cycle() {
    for minor in 8..=15u8 {
        let measured = measured_redefinitions(minor);
        match probes::interpreter(minor) {
            Some(python) => assert_eq!(
                real_out(&python, REDEFINED_CLASSES),
                measured,
                "CPython 3.{minor}"
            ),
            None => eprintln!(
                "skipped: no CPython 3.{minor} installed; compared with the recorded measurement only"
            ),
        }
        let workload = format!(
            "{REDEFINED_CLASSES}assert out == {measured:?}, ' '.join([str(x) for x in out])\n"
        );
        common::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
    }
}

/// A loop redefining a class: the gen-0 count after each statement, with the collector off.
/// The old classes are not freed, so every statement adds its full cost.
const CLASS_IN_A_LOOP: &str = "import gc
gc.disable()
gc.collect()
out = []
for i in range(6):
    class D:
        def m(self):
            pass
    out.append(gc.get_count()[0])
";

#[test]
fn a_loop_redefining_a_class_counts_every_statement_in_full() {
    let mut compared = 0;
    for minor in 8..=15u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: no CPython 3.{minor} installed");
            continue;
        };
        let real = real_out(&python, CLASS_IN_A_LOOP);
        let workload =
            format!("{CLASS_IN_A_LOOP}assert out == {real:?}, ' '.join([str(x) for x in out])\n");
        common::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
        compared += 1;
    }
    if compared == 0 {
        eprintln!("skipped: no CPython installed to compare the loop with");
    }
}
