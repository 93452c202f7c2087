//! When finalizers run: CPython calls `__del__` and weakref callbacks inside the decref that
//! drops the last reference, so a finalizer's log lands between the operations of one
//! expression (an argument dying inside the callee before the next argument is evaluated,
//! a walrus rebinding, a popped list item, a temporary between two calls, a short circuit).
//! A finalizer that raises is reported and ignored; the expression goes on. And PEP 442's
//! resurrection in a collection: on 3.8 a finalizer that resurrects anything keeps the whole
//! unreachable set for a later collection; from 3.9 (bpo-38379) what is still unreachable is
//! freed in the same collection. Each script asserts its own log, on the model under every
//! release 3.8 – 3.15 and on every installed CPython.

#[allow(dead_code)] // this file uses `run` and `interpreter`
mod probes;

use std::process::Command;

const CALLS: &str = include_str!("heap_finalizer_timing_calls.py");
const NESTED: &str = include_str!("heap_finalizer_timing_nested.py");
const RESURRECTION: &str = include_str!("heap_finalizer_timing_resurrection.py");

/// Runs `script` on the model under each release and on each installed CPython; every run
/// must pass the script's own asserts.
fn agrees_everywhere(script: &str) {
    for minor in 8..=15u8 {
        let python = format!("3.{minor}");
        if let Err(e) = probes::run(&python, script) {
            panic!("model on {python}: {e}");
        }
    }
    let mut compared = 0;
    for minor in 8..=15u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let out = Command::new(&python)
            .args(["-c", script])
            .output()
            .expect("runs python");
        assert!(
            out.status.success(),
            "CPython 3.{minor} disagrees with the script: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        compared += 1;
    }
    if compared == 0 {
        eprintln!("skipped: no CPython installed; the script was checked on the model only");
    }
}

#[test]
fn finalizers_run_inside_the_expression_where_the_last_reference_goes() {
    agrees_everywhere(CALLS);
}

#[test]
fn finalizers_queued_together_run_each_whole_and_nested_ones_inside() {
    agrees_everywhere(NESTED);
}

#[test]
fn a_resurrecting_finalizer_keeps_the_whole_set_on_3_8_only() {
    agrees_everywhere(RESURRECTION);
}
