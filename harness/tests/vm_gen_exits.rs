//! `return`, `break` and `continue` inside an `except` clause (and `break`/`continue` inside
//! the body) of a `try` that contains `yield` or `await`, and through a `finally` around it:
//! the clause's exception is handled no more and released at the way out (not when the
//! frame ends), its `as` name is deleted, the exception handled before it is handled again,
//! `finally` bodies run (and may suspend), and `gc.collect()` finds nothing. Checked on the
//! model (3.10, 3.11, 3.12) and on every installed CPython 3.8 – 3.13 (the script asserts).

#[allow(dead_code)] // this file uses `agrees_with_cpython` only
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_gen_exits.py`, 3.8 – 3.13: passes.
const EXITS: &str = include_str!("vm_gen_exits.py");

#[test]
fn ways_out_of_except_clauses_in_suspending_bodies() {
    probes::agrees_with_cpython("", 13, EXITS);
}
