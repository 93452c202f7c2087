//! `torch.logsumexp` and `torch.where` (three-argument and one-argument forms), run through
//! the library: shapes, nodes and what they keep are asserted inside the workloads with
//! `torch.cuda.memory_allocated()`, worked out by hand in the comments.

mod inline_workload;
use inline_workload::peak_allocated as run;

/// `logsumexp` over dim 1 of a `[1024, 1024]` float32 input (4 MiB): the result `[1024]`
/// is 4096 B. ATen's kernel holds `maxes` (`[1024, 1]`, 4096 B) and, while the sum runs,
/// `exp(x - maxes)` of the input's size (4 MiB) and the result, so the peak is
/// 2 · 4194304 + 4096 + 4096 = 8396800 B. `LogsumexpBackward0` keeps the input and the
/// result: with `y` deleted and the loss alive, x + the result's 4096 B + the 0-dim loss
/// (512 B) stay allocated; backward frees the result and makes x's 4 MiB gradient.
/// The forward's peak is read with `max_memory_allocated()` before backward runs.
#[test]
fn logsumexp_keeps_its_input_and_result() {
    let peak = run(r#"import torch
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
y = torch.logsumexp(x, dim=1)
assert y.shape == (1024,) and y.grad_fn.name() == "LogsumexpBackward0"
assert torch.cuda.memory_allocated() == 4194304 + 4096
assert torch.cuda.max_memory_allocated() == 2 * 4194304 + 4096 + 4096
loss = y.sum()
del y
assert torch.cuda.memory_allocated() == 4194304 + 4096 + 512
loss.backward()
assert x.grad.shape == (1024, 1024)
assert torch.cuda.memory_allocated() == 2 * 4194304 + 512
assert x.logsumexp(0, keepdim=True).shape == (1, 1024)
assert x.logsumexp((0, 1)).shape == ()
"#)
    .unwrap();
    // Backward's own temporaries come from the engine's generic gradient of the node (one
    // input-sized gradient), not from `logsumexp_backward`'s formula.
    assert!(peak > 2 * 4194304, "{peak}");
}

/// Without a graph the result is all that remains; a missing `dim` is PyTorch's error.
#[test]
fn logsumexp_without_grad_keeps_only_its_result() {
    run(r#"import torch
x = torch.randn(256, 256, device="cuda")
y = x.logsumexp(-1)
assert y.grad_fn is None and y.shape == (256,)
assert torch.cuda.memory_allocated() == 262144 + 1024
"#)
    .unwrap();
    let e = run("import torch\ntorch.logsumexp(torch.zeros(3))\n").unwrap_err();
    assert!(
        e.contains("missing 1 required positional argument: 'dim'"),
        "{e}"
    );
}

/// `torch.where(mask, x, 0.0)` on `[1024, 1024]`: the bool mask is 1 MiB, the float32
/// result 4 MiB; `WhereBackward0` keeps the mask, so deleting the mask frees nothing while
/// the result (its graph's only holder) lives, and deleting the result frees both.
#[test]
fn where_keeps_its_condition() {
    run(r#"import torch
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
mask = x > 0
z = torch.where(mask, x, 0.0)
assert z.shape == (1024, 1024) and z.dtype == torch.float32
assert z.grad_fn.name() == "WhereBackward0"
assert torch.cuda.memory_allocated() == 4194304 + 1048576 + 4194304
del mask
assert torch.cuda.memory_allocated() == 4194304 + 1048576 + 4194304
del z
assert torch.cuda.memory_allocated() == 4194304
w = x.where(x < 1, torch.zeros(1024, 1, device="cuda"))
w.sum().backward()
assert x.grad.shape == (1024, 1024)
"#)
    .unwrap();
}

/// Broadcasting, dtype promotion and PyTorch's error for a non-bool condition.
#[test]
fn where_broadcasts_and_checks_its_condition() {
    run(r#"import torch
c = torch.ones(4, 1, device="cuda") > 0
a = torch.zeros(1, 5, device="cuda", dtype=torch.float16)
b = torch.zeros(5, device="cuda", dtype=torch.float32)
r = torch.where(c, a, b)
assert r.shape == (4, 5) and r.dtype == torch.float32 and r.grad_fn is None
assert torch.where(c, a, 1).dtype == torch.float16
"#)
    .unwrap();
    let e = run("import torch\nx = torch.zeros(3)\ntorch.where(x, x, x)\n").unwrap_err();
    assert!(
        e.contains(
            "where expected condition to be a boolean tensor, but got a tensor with dtype Float"
        ),
        "{e}"
    );
}

/// `torch.where(cond)` is `nonzero(cond).unbind(1)`: for a `[2, 3]` condition, an int64
/// `[6, 2]` tensor (96 B → one 512 B block; every element counted as true) and a tuple of
/// its two column views, which keep it alive together.
#[test]
fn where_with_one_argument_gives_column_views_of_one_nonzero_tensor() {
    run(r#"import torch
c = torch.zeros(2, 3, device="cuda") == 0
assert torch.cuda.memory_allocated() == 512
rows, cols = torch.where(c)
assert rows.shape == (6,) and cols.dtype == torch.int64
assert torch.cuda.memory_allocated() == 1024
del rows
assert torch.cuda.memory_allocated() == 1024
del cols
assert torch.cuda.memory_allocated() == 512
"#)
    .unwrap();
}
