//! In-place writes through a view of a base that has history, as PyTorch's
//! `rebase_history` handles them (torch/csrc/autograd/variable.cpp) and `CopySlices`
//! runs them (torch/csrc/autograd/functions/tensor.cpp): the base is rebased onto a
//! `CopySlices` node that owns the in-place op's node (`fn`) and calls it itself; its edges
//! are the base's old gradient edge and `fn`'s edges past the first. The view's `grad_fn`
//! is regenerated over the base as `AsStridedBackward0` (`VariableHooks::grad_fn`; strided
//! CUDA tensors keep no `view_fn`). So the base's old history receives one gradient, and
//! the view's regenerated node is not on the base's backward path. No PyTorch is installed:
//! the figures below are derived by hand from those sources, per test.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "import torch
K = 1024
N = 256 * K
def mem():
    return torch.cuda.memory_allocated()
";

#[test]
fn the_written_view_is_regenerated_as_as_strided_backward_and_the_base_gets_copy_slices() {
    ok(&format!(
        "{PRELUDE}x = torch.zeros(N, device='cuda', requires_grad=True)
h = x * 2
v = h[:K]
v.mul_(3.0)
assert v.grad_fn.name() == 'AsStridedBackward0', v.grad_fn.name()
assert h.grad_fn.name() == 'CopySlices', h.grad_fn.name()
"
    ));
}

#[test]
fn a_hook_on_the_written_view_is_not_on_the_bases_backward_path() {
    // `v.register_hook` after the write goes on v's regenerated AsStridedBackward0, which
    // only a backward from `v` (or something computed from it) reaches; CopySlices calls
    // `fn` directly, not through the engine, so `fn` runs no hooks either.
    ok(&format!(
        "{PRELUDE}x = torch.zeros(N, device='cuda', requires_grad=True)
h = x * 2
v = h[:K]
v.mul_(3.0)
calls = []
v.register_hook(lambda g: calls.append(tuple(g.shape)))
h.sum().backward()
assert calls == [], calls
assert x.grad is not None
"
    ));
}

#[test]
fn the_bases_old_history_gets_one_gradient_and_copy_slices_adds_only_two_slices() {
    // Peak during backward, with the write through a view (A) and on the whole base (B).
    // B: the MulBackward0 of `h.mul_(3.0)` holds the incoming gradient (N floats) and makes h's
    // old gradient (N): 2 buffers of 4N bytes. A: CopySlices holds the incoming gradient,
    // its `result` (a base-sized copy, the old history's only gradient), the contiguous
    // clone of the slice `fn` is called on and `fn`'s gradient for the view (K floats
    // each). Everything else is the same, so A's peak is B's plus 2 * 4K bytes.
    let peak = |write: &str| {
        format!(
            "{PRELUDE}x = torch.zeros(N, device='cuda', requires_grad=True)
h = x * 2
{write}
loss = h.sum()
before = mem()
torch.cuda.reset_peak_memory_stats()
loss.backward()
peaks.append(torch.cuda.max_memory_allocated() - before)
"
        )
    };
    let a = peak("v = h[:K]\nv.mul_(3.0)");
    let b = peak("h.mul_(3.0)");
    let body = |src: &str| src.replace(PRELUDE, "");
    ok(&format!(
        "{PRELUDE}peaks = []
def a():
{}
def b():
{}
a()
b()
assert peaks[0] - peaks[1] == 2 * 4 * K, (peaks, (peaks[0] - peaks[1]) / K)
",
        indent(&body(&a)),
        indent(&body(&b))
    ));
}

fn indent(s: &str) -> String {
    s.lines().map(|l| format!("    {l}\n")).collect()
}

#[test]
fn what_fn_saved_lives_until_backward_releases_copy_slices() {
    // `v.mul_(w)` with w requiring grad saves `original_self` (a clone of v before the
    // write, K floats) in `fn`; CopySlices owns `fn`, so the clone lives with h's graph and
    // is freed when backward releases CopySlices (`release_variables` drops `fn`).
    ok(&format!(
        "{PRELUDE}x = torch.zeros(N, device='cuda', requires_grad=True)
w = torch.zeros(K, device='cuda', requires_grad=True)
h = x * 2
v = h[:K]
m0 = mem()
v.mul_(w)
assert mem() - m0 == 4 * K, (mem() - m0) / K
loss = h.sum()
del v
loss.backward()
after = mem()
assert x.grad is not None and w.grad is not None
# Left: x, w, h, loss (one float, 512 bytes) and the two gradients; the clone is gone.
assert after == 4 * N + 4 * K + 4 * N + 512 + 4 * N + 4 * K, (after - m0) / K
"
    ));
}

#[test]
fn copy_slices_cannot_run_twice_without_retain_graph() {
    let e = fails(&format!(
        "{PRELUDE}x = torch.zeros(N, device='cuda', requires_grad=True)
h = x * 2
h[:K] = 0.0
h.sum().backward(retain_graph=False)
h.sum().backward()
"
    ));
    assert!(
        e.contains("Trying to backward through the graph a second time"),
        "{e}"
    );
}

#[test]
fn writing_into_an_index_of_a_view_rebases_the_root_base_once() {
    // `v[0] = 0.0` with v a view of h: the slice's base is h (views of views share the
    // root base), so h gets CopySlices and v a regenerated AsStridedBackward0.
    ok(&format!(
        "{PRELUDE}x = torch.zeros(4, N, device='cuda', requires_grad=True)
h = x * 2
v = h[1]
v[0] = 0.0
assert h.grad_fn.name() == 'CopySlices', h.grad_fn.name()
assert v.grad_fn.name() == 'AsStridedBackward0', v.grad_fn.name()
h.sum().backward()
assert x.grad is not None
"
    ));
}
