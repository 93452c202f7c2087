//! `yield` inside `finally` in a generator: the `finally` body suspends on the normal way
//! out and on the exception's (which it keeps while suspended: `sys.exc_info()` inside it
//! sees it again on resumption, the caller does not, and the body's end re-raises it);
//! `close()` at a `yield` inside `finally` ends the body, and a `yield` reached from the
//! `GeneratorExit` is "generator ignored GeneratorExit". Checked on the model and on every
//! installed CPython 3.8 – 3.13; the memory consequences on the model.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

/// Passes on `~/.pyenv/versions/3.X*/bin/python vm_generator_finally.py`, 3.8 – 3.13.
const FINALLY: &str = include_str!("vm_generator_finally.py");

#[test]
fn yield_inside_finally_suspends_on_both_ways_out() {
    probes::agrees_with_cpython("", 13, FINALLY);
}

/// Suspended inside the `finally` of an exception, the generator keeps the exception, its
/// traceback and through it the frame's tensor after the frame's own local is gone; the
/// body's end re-raises it, and catching it there frees everything; so does `close()` (also
/// of one suspended in an `except` clause, which dropped the exception only when the
/// generator itself was freed). Measured with a `__del__` stand-in for the tensor on
/// CPython 3.8 – 3.13: freed at the `close()`.
#[test]
fn a_generator_suspended_in_finally_keeps_the_exception_and_its_frame() {
    probes::ok(
        "
import torch
MiB = 1024 * 1024
def step():
    batch = torch.zeros(1024, 256, device='cuda')
    raise KeyError('oom')
def worker():
    try:
        yield 1
        step()
    finally:
        yield 2
it = worker()
assert next(it) == 1
assert next(it) == 2
assert torch.cuda.memory_allocated() == MiB, torch.cuda.memory_allocated()
try:
    next(it)
except KeyError as e:
    assert e.args == ('oom',)
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
it = worker()
next(it)
next(it)
it.close()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
def handler():
    try:
        step()
    except KeyError:
        yield 3
it = handler()
assert next(it) == 3
assert torch.cuda.memory_allocated() == MiB, torch.cuda.memory_allocated()
it.close()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
",
    );
}
