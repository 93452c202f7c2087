//! PEP 442 in one collection: a cycle holding a generator suspended in a `try` (its
//! `close()` runs a `finally`) is finalized, checked again for reachability and cleared in
//! the same `gc.collect()`, which counts what finalization left (3: the generator, the list,
//! a box) whether or not the cycle passes through the generator's frame; a cycle through
//! the frame is freed by the finalizer's release of the frame (0). Measured with
//! `python vm_gen_cycle_collect.py` on pyenv 3.8.18 – 3.13.0 and fetched 3.14/3.15; checked
//! here on the model (3.10, 3.11, 3.12) and every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython`
mod probes;

const CYCLES: &str = include_str!("vm_gen_cycle_collect.py");

#[test]
fn generator_cycles_are_finalized_and_freed_in_one_collection() {
    probes::agrees_with_cpython("", 13, CYCLES);
}
