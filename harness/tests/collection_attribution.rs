//! Which iteration a collection is attributed to: an explicit `gc.collect()` ahead of the
//! loop is "before the first iteration", and on 3.12+ a collection run at a loop's back
//! edge belongs to the iteration that is ending (CPython checks its eval breaker at
//! `JUMP_BACKWARD`, while the loop variable still holds that iteration's item).

#[allow(dead_code)] // this test uses only `run_model`
mod common;

use gpumem_harness::check::locate::gc_event_label;

#[test]
fn explicit_collect_before_the_loop_is_labelled_before_the_first_iteration() {
    let workload = "gc.collect()\nfor i in range(3):\n    x = [i]\ngc.collect()\n";
    let timeline = common::run_model(workload, "3.11", [0, 0, 0], 0, 0);
    let labels: Vec<String> = timeline
        .gc_events
        .iter()
        .filter(|e| !e.automatic)
        .map(|e| gc_event_label(&timeline, e))
        .collect();
    assert_eq!(
        labels,
        ["before the first iteration", "after the last iteration"]
    );
}

#[test]
fn back_edge_collections_belong_to_the_ending_iteration_on_3_12_and_3_13() {
    // No call in the body: the first eval-breaker check after the count crosses the
    // threshold is the loop's back edge.
    let workload = "node = None\nfor i in range(3000):\n    node = [node, {}]\n";
    for python in ["3.12", "3.13"] {
        let timeline = common::run_model(workload, python, [0, 0, 0], 0, 0);
        let automatic: Vec<_> = timeline.gc_events.iter().filter(|e| e.automatic).collect();
        assert!(!automatic.is_empty(), "{python}: no automatic collection");
        for e in automatic {
            assert!(
                e.iteration.is_some(),
                "{python}: collection at line {:?} attributed to no iteration",
                e.line
            );
        }
    }
}
