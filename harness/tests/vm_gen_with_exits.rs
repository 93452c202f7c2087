//! `return`, `break` and `continue` inside a `with` block that contains `yield` (and
//! `break`/`continue` inside an `async with` that awaits): the way out calls the exit with
//! `None` x3 (awaited for `async with`), innermost first, after leaving an `except` clause
//! inside it; a `return` keeps its value (released with the generator) across the exits.
//! Checked on the model (3.10, 3.11, 3.12) and on every installed CPython 3.8 – 3.13 (the
//! script asserts the order of enters and exits, the objects released and
//! `gc.collect() == 0`).

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_gen_with_exits.py`, 3.8 – 3.13 (and
/// the fetched 3.14, 3.15): passes.
const WITH_EXITS: &str = include_str!("vm_gen_with_exits.py");

#[test]
fn ways_out_of_with_blocks_in_suspending_bodies() {
    probes::agrees_with_cpython("", 13, WITH_EXITS);
}

/// A `return` through an `async with` is still refused, located.
#[test]
fn return_through_suspending_async_with_is_refused_located() {
    let script = "import asyncio\nclass A:\n    async def __aenter__(self):\n        pass\n    async def __aexit__(self, *a):\n        pass\nasync def main():\n    async with A():\n        await asyncio.sleep(0)\n        return 1\nasyncio.run(main())\n";
    let err = probes::run("3.11", script)
        .expect_err("refused")
        .to_string();
    assert!(err.contains("`return` inside an `async with`"), "{err}");
    assert!(
        err.contains("t.yaml:12:7"),
        "located at the `async with`: {err}"
    );
}
