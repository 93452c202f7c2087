//! PEP 442 for generators found by the collector: a generator that is cyclic garbage while
//! suspended inside a `try`/`finally` or a `with` block has its finalizer (`close()`) run by
//! `gc.collect()`, so its `finally` blocks and `__exit__` run; what they drop is freed by
//! reference counting and not counted as collected; a `finally` that stores an object
//! resurrects it. Checked on the model and on every installed CPython 3.8 – 3.13 (the
//! script asserts `gc.collect()`'s return value and `gc.get_count()` right after it).

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

/// Measured with `~/.pyenv/versions/3.X*/bin/python vm_generator_finalizers.py`, 3.8 – 3.13.
const CYCLES: &str = include_str!("vm_generator_finalizers.py");

#[test]
fn collector_runs_finally_and_exit_of_cyclic_suspended_generators() {
    probes::agrees_with_cpython("", 13, CYCLES);
}

/// The tensor a cyclic suspended generator holds is alive while its `finally` runs and freed
/// by the collection that found it. A cycle that does not pass through the generator's
/// frame outlives its `finally` and is freed by the same explicit collection once the
/// finalizer ran (`heap/finalized_garbage.rs`), as CPython frees it.
#[test]
fn finalizing_cyclic_generators_frees_their_tensors() {
    probes::ok(
        "
import gc
import torch
MiB = 1024 * 1024
seen = []
class Box:
    pass
def loader(box):
    batch = torch.zeros(1024, 256, device='cuda')
    try:
        yield 1
    finally:
        seen.append(torch.cuda.memory_allocated())
box = Box()
it = loader(box)
next(it)
box.it = it
del box, it
assert torch.cuda.memory_allocated() == MiB
gc.collect()
assert seen == [MiB], seen
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
def plain(n):
    batch = torch.zeros(1024, 256, device='cuda')
    try:
        yield n
    finally:
        seen.append(torch.cuda.memory_allocated())
it = plain(1)
next(it)
ring = [it]
ring.append(ring)
del it, ring
gc.collect()
assert seen == [MiB, MiB], seen
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
",
    );
}

/// Without the finalizer the `finally` of a cyclic generator never runs: checked so that a
/// collector that clears such garbage without finalizing it fails here.
#[test]
fn finally_of_cyclic_generator_runs_once() {
    probes::agrees_with_cpython(
        "",
        13,
        "
import gc
gc.disable()
log = []
def worker(me):
    try:
        yield 1
    finally:
        log.append('finally')
holder = []
it = worker(holder)
next(it)
holder.append(it)
del it, holder
gc.collect()
gc.collect()
assert log == ['finally'], log
",
    );
}
