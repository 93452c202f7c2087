//! `return`, `break` and `continue` inside a `with` block that contains `yield` (and
//! `break`/`continue` inside an `async with` that awaits): the way out calls the exit with
//! `None` x3 (awaited for `async with`), innermost first, after leaving an `except` clause
//! inside it; a `return` keeps its value (released with the generator) across the exits.
//! Checked on the model (3.10, 3.11, 3.12) and on every installed CPython 3.8 – 3.13 (the
//! script asserts the order of enters and exits, the objects released and
//! `gc.collect() == 0`). A `return` through an `async with` is tested in
//! `vm_gen_async_with_return.rs`.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_gen_with_exits.py`, 3.8 – 3.13 (and
/// the fetched 3.14, 3.15): passes.
const WITH_EXITS: &str = include_str!("vm_gen_with_exits.py");

#[test]
fn ways_out_of_with_blocks_in_suspending_bodies() {
    probes::agrees_with_cpython("", 13, WITH_EXITS);
}
