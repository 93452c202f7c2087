//! A plain body's `try` and `with` run on the VM (`vm/plain_try.rs`, `vm/with_blocks.rs`),
//! not in the tree walker. The VM's process-wide counts of caught exceptions and entered
//! `with` items are read, so this binary holds this one test.

#[allow(dead_code)] // this file uses `run`
mod probes;

use gpumem_harness::python::{exceptions_caught_by_vm, with_blocks_entered_by_vm};

/// The handlers of a compiled plain body catch the exception (the VM's counter moves); a
/// `with` in a plain body, inside a `try` and `return`ed out of, is entered by the VM and its
/// handler catches the exception on the way to the `except` clause.
#[test]
fn a_plain_try_runs_on_the_vm() {
    let before = exceptions_caught_by_vm();
    probes::run(
        "3.11",
        "
def f():
    try:
        raise ValueError('x')
    except ValueError:
        return 1
assert f() == 1
",
    )
    .expect("runs");
    assert_eq!(exceptions_caught_by_vm() - before, 1);
    let before = exceptions_caught_by_vm();
    let entered = with_blocks_entered_by_vm();
    probes::run(
        "3.11",
        "
class M:
    def __enter__(self):
        return self
    def __exit__(self, *a):
        return False
def f():
    try:
        with M():
            raise ValueError('x')
    except ValueError:
        with M():
            return 1
assert f() == 1
",
    )
    .expect("runs");
    assert_eq!(exceptions_caught_by_vm() - before, 2);
    assert_eq!(with_blocks_entered_by_vm() - entered, 2);
    // A class body runs on the VM too: its `with` is entered there.
    let entered = with_blocks_entered_by_vm();
    probes::run(
        "3.11",
        "
class M:
    def __enter__(self):
        return 1
    def __exit__(self, *a):
        return False
class C:
    with M() as one:
        pass
assert C.one == 1
",
    )
    .expect("runs");
    assert_eq!(with_blocks_entered_by_vm() - entered, 1);
}
