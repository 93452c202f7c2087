//! `asyncio.run` ends with `loop.shutdown_asyncgens()`: an async generator that was iterated
//! while the loop ran and is still unfinished (kept alive by a list after an `async for`
//! left it with `break`) gets `aclose()`, so its `finally` runs after the main coroutine
//! returned and before `asyncio.run` returns, and its frame releases what it held. Measured
//! with `python vm_gen_asyncgen_shutdown.py` on pyenv 3.8.18 – 3.13.0 and fetched 3.14/3.15;
//! checked here on the model (3.10, 3.11, 3.12) and every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython`
mod probes;

const SHUTDOWN: &str = include_str!("vm_gen_asyncgen_shutdown.py");

#[test]
fn asyncio_run_closes_unfinished_async_generators_at_shutdown() {
    probes::agrees_with_cpython("", 13, SHUTDOWN);
}
