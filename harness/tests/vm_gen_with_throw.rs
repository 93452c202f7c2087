//! `yield` inside `with`: an exception thrown into the generator (`gen.throw`) reaches the
//! manager's `__exit__`, which suppresses it (the generator goes on after the block, no
//! exception handled) or not (it leaves the generator); `gen.close()` and dropping a
//! generator suspended in nested `with` blocks call each exit with `GeneratorExit`,
//! innermost first. Checked on the model (3.10, 3.11, 3.12) and on every installed CPython
//! 3.8 – 3.13 (the script asserts the objects released and `gc.collect() == 0`).

#[allow(dead_code)] // this file uses `agrees_with_cpython` only
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_gen_with_throw.py`, 3.8 – 3.13 (and
/// the fetched 3.14, 3.15): passes.
const WITH_THROW: &str = include_str!("vm_gen_with_throw.py");

#[test]
fn throw_and_close_into_with_blocks_of_generators() {
    probes::agrees_with_cpython("", 13, WITH_THROW);
}
