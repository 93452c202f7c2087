//! `torch.cumsum` (a row of the autograd table, `CumsumBackward0`, saving nothing) and
//! `torch.diff` (a composite: per round two `narrow` views and a `sub`, `diff_helper` in
//! `aten/src/ATen/native/ReduceOps.cpp`). No PyTorch is installed here: every figure is
//! worked out by hand; the allocator rounds blocks up to 512 bytes, a `[1024, 1024]`
//! float32 is 4 MiB, a `[1024, 1023]` one 4,190,208 bytes and a `[1024, 1022]` one
//! 4,186,112 bytes (both multiples of 512).

mod workload_runner;
use workload_runner::{fails, ok};

/// `cumsum_backward` reads only `self`'s dtype: with `h = x * 2` and the result dropped
/// while `z` keeps the graph, only `x` (4 MiB) and `z` (512 B) stay.
#[test]
fn cumsum_saves_nothing_and_accumulates_integers_in_int64() {
    ok("import torch
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
h = x * 2.0
y = h.cumsum(1)
assert y.grad_fn.name() == 'CumsumBackward0', y.grad_fn.name()
y2 = torch.cumsum(h, dim=0)
assert y2.grad_fn.name() == 'CumsumBackward0'
z = y.sum() + y2.sum()
del h
del y
del y2
assert torch.cuda.memory_allocated() == 4 * M + 512, torch.cuda.memory_allocated()
z.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512, torch.cuda.memory_allocated()
i = torch.zeros(1024, dtype=torch.int32, device='cuda')
assert i.cumsum(0).dtype == torch.int64
assert i.cumsum(0, dtype=torch.float16).dtype == torch.float16
assert i.cumsum(0).grad_fn is None
");
    let e = fails("import torch\nx = torch.ones(4, device='cuda')\ny = x.cumsum()\n");
    assert!(
        e.contains("cumsum() missing 1 required positional argument: 'dim'"),
        "{e}"
    );
}

/// One round: the result is `SubBackward0` over two `SliceBackward0` views of the input,
/// none of which saves a tensor: dropping `h` frees it although the graph lives.
#[test]
fn diff_is_a_sub_of_two_slices_that_keeps_nothing() {
    ok("import torch
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
h = x * 2.0
y = h.diff(dim=1)
assert tuple(y.shape) == (1024, 1023)
assert y.grad_fn.name() == 'SubBackward0', y.grad_fn.name()
assert torch.cuda.memory_allocated() == 8 * M + 4190208, torch.cuda.memory_allocated()
del h
assert torch.cuda.memory_allocated() == 4 * M + 4190208, torch.cuda.memory_allocated()
y0 = torch.diff(x, dim=0)
assert tuple(y0.shape) == (1023, 1024)
# y0 reuses h's freed 4 MiB block unsplit (the 4 KiB left over is below the large
# pool's 1 MiB split threshold), so it counts 4 MiB.
assert torch.cuda.memory_allocated() == 8 * M + 4190208, torch.cuda.memory_allocated()
z = y.sum()
del y
assert torch.cuda.memory_allocated() == 8 * M + 512, torch.cuda.memory_allocated()
before = torch.cuda.memory_allocated()
z.backward()
# x.grad (4 MiB) is added, nothing was saved to release. (Its block comes from the
# allocator model's cache, so the exact count is left to the allocator tests.)
assert tuple(x.grad.shape) == (1024, 1024)
assert torch.cuda.memory_allocated() >= before + 4 * M, torch.cuda.memory_allocated()
");
}

/// `n=2`: the first round's result (`[1024, 1023]`) is live while the second is made, then
/// dies (nothing saves it): the peak holds both, the end only the second.
#[test]
fn diff_rounds_hold_two_results_at_the_peak() {
    ok("import torch
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
torch.cuda.reset_peak_memory_stats()
y = torch.diff(x, n=2)
assert tuple(y.shape) == (1024, 1022)
assert torch.cuda.max_memory_allocated() == 4 * M + 4190208 + 4186112, torch.cuda.max_memory_allocated()
assert torch.cuda.memory_allocated() == 4 * M + 4186112, torch.cuda.memory_allocated()
# n beyond the dim's size stops at an empty result.
assert tuple(torch.diff(torch.empty(3, device='cuda'), n=5).shape) == (0,)
# bool inputs take logical_xor: a bool result, no gradient.
b = torch.zeros(16, dtype=torch.bool, device='cuda')
assert b.diff().dtype == torch.bool
");
}

#[test]
fn diff_errors_and_refusals() {
    for (call, expected) in [
        (
            "torch.diff(torch.tensor(1.0))",
            "RuntimeError: diff expects input to be at least one-dimensional",
        ),
        (
            "torch.diff(x, n=-1)",
            "RuntimeError: order must be non-negative but got -1",
        ),
        (
            "torch.diff(x, prepend=x)",
            "unsupported: the keyword argument `prepend=`",
        ),
        (
            "torch.diff(x, 1, 0, x)",
            "unsupported: torch.diff with prepend/append",
        ),
    ] {
        let e = fails(&format!(
            "import torch\nx = torch.ones(4, 4, device='cuda')\ny = {call}\n"
        ));
        assert!(e.contains(expected), "{call}: {e}");
        assert!(e.contains("t.yaml:7:"), "{call}: located: {e}");
    }
}
