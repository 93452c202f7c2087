//! Calling an instance whose class defines `__call__` (`slot_tp_call`): the packed argument
//! tuple, keyword dict and keyword-names tuple, measured right after `gc.collect()` (free lists
//! empty) on a warm site. Each figure is checked against the model on every release and against
//! each installed interpreter (3.14 / 3.15 from `../shared/tools/fetch-pythons.sh`; skipped, with
//! the reason, if absent).

mod common;
#[allow(dead_code)]
mod probes;

/// Measured on 3.8.18 – 3.15.2: `c(1, y=2)` counts 3 (argument tuple, keyword dict and the
/// keyword names, each left on its free list), `c(1)` 1 (the argument tuple), and the explicit
/// `c.__call__(1, y=2)` 1 on 3.8 (its bound method, left on 3.8's free list of them) and 0
/// later. The model used to call a bound `__call__` like a method: 0 or 1 for the first two.
#[test]
fn an_instance_call_packs_its_arguments_through_slot_tp_call() {
    let script = common::gc_counts::kept_after_collection(
        "class C:\n    def __call__(self, x, y=0):\n        return x\nc = C()\n",
        "(lambda: c(1, y=2), lambda: c(1), lambda: c.__call__(1, y=2))",
        true,
    );
    common::gc_counts::check_against_measured_and_installed(
        &script,
        |minor| vec![3, 1, u64::from(minor == 8)],
        probes::interpreter,
    );
}
