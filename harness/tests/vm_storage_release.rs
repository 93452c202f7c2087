//! A storage whose last tensor died earlier in the statement under way (a `del` or a
//! handler's unwinding inside a `try` that the workload VM runs as one compound statement)
//! is not counted by `torch.cuda.memory_allocated()`: CPython frees it at once.

#[allow(dead_code)] // this file uses `ok`
mod probes;

use probes::ok;

#[test]
fn memory_allocated_does_not_count_a_temporary_freed_earlier_in_the_statement() {
    ok("
MB = 1024 * 1024
holder = [torch.zeros(1024, 256, device='cuda'), torch.zeros(1024, 256, device='cuda')]
pair = (holder.pop() is None, torch.cuda.memory_allocated())
assert pair == (False, MB), pair
");
}

#[test]
fn memory_allocated_after_a_coroutine_handler_does_not_count_what_its_exception_held() {
    ok("
import asyncio
MB = 1024 * 1024
async def main():
    try:
        await asyncio.sleep(0)
        raise ValueError(torch.zeros(1024, 256, device='cuda'))
    except ValueError as e:
        assert torch.cuda.memory_allocated() == MB
    assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
asyncio.run(main())
");
}
