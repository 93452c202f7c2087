//! Hooks on a graph node: `grad_fn.register_hook(fn)` (post-hook, called with
//! `(grad_inputs, grad_outputs)`) and `grad_fn.register_prehook(fn)` (called with
//! `grad_outputs`), their handles' `remove()`, and who holds them
//! (`torch/csrc/autograd/python_cpp_function.cpp`, `registerFunctionHook`: the node's
//! `PyFunctionPostHook` owns the hook dict, a C++ reference the collector cannot see).
//!
//! No PyTorch is installed here: the figures are worked out by hand. `X` is one
//! `[256, 256]` float32 tensor, 256 KiB; `S` a 0-dim float32 tensor, 4 bytes rounded up
//! to the allocator's 512-byte block.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "import gc
import weakref
X = 256 * 256 * 4
S = 512
x = torch.empty(256, 256, device='cuda', requires_grad=True)
w = torch.empty(256, 256, device='cuda')
base = torch.cuda.memory_allocated()
";

#[test]
fn a_post_hook_sees_grad_inputs_and_grad_outputs_and_its_result_flows_on() {
    // At the hook: y (X), the loss (S), MulBackward0's incoming gradient (X, kept by the
    // engine because the node has a post-hook), its computed gradient for x (X) and the
    // hook's doubled one (X): base + 4X + S. The doubled gradient replaces the computed
    // one and AccumulateGrad steals it: afterwards y, the loss and x.grad.
    ok(&format!(
        "{PRELUDE}y = x * w
seen = []
def post(grad_inputs, grad_outputs):
    seen.append((len(grad_inputs), len(grad_outputs), grad_inputs[1] is None))
    seen.append(torch.cuda.memory_allocated() - base)
    return (grad_inputs[0] * 2, None)
h = y.grad_fn.register_hook(post)
loss = y.sum()
torch.cuda.reset_peak_memory_stats()
loss.backward()
assert seen == [(2, 1, True), 3 * X + S]
assert torch.cuda.max_memory_allocated() - base == 4 * X + S
assert x.grad is not None
assert torch.cuda.memory_allocated() - base == 2 * X + S
"
    ));
}

#[test]
fn a_pre_hook_sees_grad_outputs_and_its_replacement_is_what_the_node_gets() {
    // At the pre-hook: y (X), the loss (S) and the incoming gradient (X). Its halved
    // replacement (X) is made while the incoming one lives (base + 3X + S); the incoming one
    // is then freed and MulBackward0 computes x's gradient from the replacement
    // (base + 3X + S again).
    ok(&format!(
        "{PRELUDE}y = x * w
seen = []
def pre(grad_outputs):
    seen.append(len(grad_outputs))
    seen.append(torch.cuda.memory_allocated() - base)
    return (grad_outputs[0] * 0.5,)
h = y.grad_fn.register_prehook(pre)
loss = y.sum()
torch.cuda.reset_peak_memory_stats()
loss.backward()
assert seen == [1, 2 * X + S]
assert torch.cuda.max_memory_allocated() - base == 3 * X + S
assert torch.cuda.memory_allocated() - base == 2 * X + S
"
    ));
}

#[test]
fn a_removed_hook_does_not_run() {
    ok(&format!(
        "{PRELUDE}y = x * w
calls = []
h = y.grad_fn.register_hook(lambda gi, go: calls.append('post'))
p = y.grad_fn.register_prehook(lambda go: calls.append('pre'))
h2 = y.grad_fn.register_hook(lambda gi, go: calls.append('post2'))
h.remove()
y.sum().backward(retain_graph=True)
assert calls == ['pre', 'post2']
p.remove()
h2.remove()
y.sum().backward()
assert calls == ['pre', 'post2']
"
    ));
}

#[test]
fn a_hook_closing_over_a_tensor_keeps_it_while_the_node_lives() {
    // `big` (4 MiB) lives only in the hook's closure cell, which the node's dict holds.
    ok(&format!(
        "{PRELUDE}def attach(y):
    big = torch.empty(1024, 1024, device='cuda')
    def hook(grad_inputs, grad_outputs):
        return None if big.numel() else None
    y.grad_fn.register_hook(hook)
    return weakref.ref(big)
y = x * w
r = attach(y)
assert r() is not None
assert torch.cuda.memory_allocated() - base == X + 4 * 1024 * 1024
del y
# y's node died, and with it the dict, the hook, its cell and `big`.
assert r() is None
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn a_hook_closing_over_the_nodes_own_tensor_is_a_cycle_the_collector_cannot_free() {
    // y -> grad_fn (C++) -> hook dict (C++) -> hook -> cell -> y: only the first link is
    // not a Python reference the collector could follow, so it never frees y; removing
    // the hook breaks the cycle at once.
    ok(&format!(
        "{PRELUDE}def attach():
    y = x * w
    h = y.grad_fn.register_hook(lambda gi, go: None if y is None else None)
    return weakref.ref(y), h
r, h = attach()
gc.collect()
assert r() is not None
assert torch.cuda.memory_allocated() - base == X
h.remove()
assert r() is None
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn a_hook_returning_the_wrong_number_of_gradients_is_an_error() {
    let e = fails(&format!(
        "{PRELUDE}y = x * w
y.grad_fn.register_prehook(lambda go: (go[0], go[0]))
y.sum().backward()
"
    ));
    assert!(
        e.contains(
            "hook '<lambda>' has returned an incorrect number of values (got 2, but expected 1)"
        ),
        "{e}"
    );
}
