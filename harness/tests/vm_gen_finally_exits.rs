//! `return`, `break` and `continue` inside a `finally` body of a `try` that contains
//! `yield`: entered by an exception, the way out discards it (released then, not when the
//! frame ends; `sys.exc_info()` is clear again); entered by a `return` of the body, a
//! `return` there replaces the kept value and a `break` drops it; `close()` of a generator
//! whose `finally` returns ends quietly. Checked on the model (3.10, 3.11, 3.12) and on
//! every installed CPython 3.8 – 3.13 (the script asserts, `gc.collect()` finds nothing).

#[allow(dead_code)] // this file uses `agrees_with_cpython` only
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_gen_finally_exits.py`, 3.8 – 3.13:
/// passes.
const EXITS: &str = include_str!("vm_gen_finally_exits.py");

#[test]
fn ways_out_of_finally_bodies_in_suspending_bodies() {
    probes::agrees_with_cpython("", 13, EXITS);
}
