//! Full backward hooks on modules called with several grad-requiring tensor inputs or
//! returning several tensors. The expected figures follow PyTorch's source:
//! `Module._call_impl` passes all tensor arguments through one `BackwardHookFunction`
//! node and all tensor outputs through another (`torch/utils/hooks.py`, `BackwardHook`);
//! both are identities over views, so they add no bytes. The output node's pre-hook packs
//! one gradient per output (`None` where none arrived) as `grad_output`; the input node's
//! post-hook runs `hook(module, grad_input, grad_output)` once, after every gradient of
//! that node was computed, with one entry per tensor argument (`None` where it does not
//! require grad), and what it returns replaces `grad_input`. Bytes are counted in units
//! of `M` (1 MiB, 262144 float32 elements) and derived by hand per test.

mod workload_runner;
use workload_runner::ok;

const PRELUDE: &str = "import torch
from torch import nn
M = 1024 * 1024
N = 256 * 1024
def mem():
    return torch.cuda.memory_allocated()
";

#[test]
fn a_module_with_two_grad_requiring_inputs_gets_one_hook_call_with_both_gradients() {
    // Live during the hook: a, b, the product `y` (held by the caller), the root gradient
    // `g`, and the two gradients MulBackward0 computed for a and b (held by grad_input,
    // not yet accumulated): 6 M. After backward AccumulateGrad stole both buffers as
    // `.grad`: still 6 M, and the hook's tuples are gone.
    ok(&format!(
        "{PRELUDE}class Mul(nn.Module):
    def forward(self, a, b):
        return a * b
m = Mul()
seen = []
def hook(mod, gi, go):
    seen.append((len(gi), [tuple(t.shape) for t in gi], len(go), tuple(go[0].shape), mem()))
m.register_full_backward_hook(hook)
pre = []
m.register_full_backward_pre_hook(lambda mod, go: pre.append((len(go), mem())))
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda', requires_grad=True)
g = torch.ones(N, device='cuda')
y = m(a, b)
assert y.grad_fn.name() == 'BackwardHookFunctionBackward'
assert mem() == 4 * M
y.backward(g)
assert len(seen) == 1, seen
assert seen[0][:4] == (2, [(N,), (N,)], 1, (N,)), seen
assert seen[0][4] == 6 * M, seen[0][4] / M
# The pre-hook runs before MulBackward0 allocates anything.
assert pre == [(1, 4 * M)], pre
assert a.grad is not None and b.grad is not None
assert mem() == 6 * M
"
    ));
}

#[test]
fn a_module_with_two_outputs_gets_one_gradient_per_output() {
    // `forward` returns (x * 2, x * 3): the output node has two slots. With gradients for
    // both, grad_output holds both (1 M each, kept alive by the call's argument list);
    // the two MulBackward0 gradients for x are summed into the first (the second freed)
    // before the input node runs. During the hook: x, y1, y2, g1, g2, grad of x = 6 M;
    // after backward the root gradients are gone and x.grad was stolen: 4 M.
    // With a gradient for the first output only, grad_output is (g, None).
    ok(&format!(
        "{PRELUDE}class Two(nn.Module):
    def forward(self, x):
        return x * 2, x * 3
m = Two()
seen = []
m.register_full_backward_hook(
    lambda mod, gi, go: seen.append(([t is None for t in gi], [t is None for t in go], mem())))
x = torch.zeros(N, device='cuda', requires_grad=True)
y1, y2 = m(x)
assert y1.grad_fn is y2.grad_fn
torch.autograd.backward([y1, y2], [torch.ones(N, device='cuda'), torch.ones(N, device='cuda')])
assert seen == [([False], [False, False], 6 * M)], str(seen)
assert mem() == 4 * M, mem() / M
x.grad = None
seen.clear()
y1, y2 = m(x)
g = torch.ones(N, device='cuda')
y1.backward(g)
# x, y1, y2, g and the gradient for x.
assert seen == [([False], [False, True], 5 * M)], seen
assert x.grad is not None
"
    ));
}

#[test]
fn an_input_that_does_not_require_grad_is_none_in_grad_input() {
    // Three tensor arguments, the middle one without grad: grad_input is (ga, None, gc).
    // `a * c + b` saves a and c (views) for MulBackward0; AddBackward0 passes its gradient
    // on without a copy, so during the hook: a, b, c, y, g plus the gradients of a and c
    // (2 M) = 7 M.
    ok(&format!(
        "{PRELUDE}class Three(nn.Module):
    def forward(self, a, b, c):
        return a * c + b
m = Three()
seen = []
m.register_full_backward_hook(
    lambda mod, gi, go: seen.append(([t is None for t in gi], len(go), mem())))
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda')
c = torch.zeros(N, device='cuda', requires_grad=True)
g = torch.ones(N, device='cuda')
y = m(a, b, c)
y.backward(g)
assert seen == [([False, True, False], 1, 7 * M)], seen
assert a.grad is not None and c.grad is not None and b.grad is None
assert mem() == 7 * M
"
    ));
}

#[test]
fn a_hook_returning_grad_input_replaces_the_gradients() {
    // The hook drops a's gradient and doubles b's: `gi[1] * 2` allocates 1 M inside the
    // hook (7 M live then: a, b, y, g, both computed gradients, the new one). After it the
    // computed gradients are freed, a gets no `.grad` and b's is the hook's tensor
    // (stolen): a, b, y, g, b.grad = 5 M.
    ok(&format!(
        "{PRELUDE}class Mul(nn.Module):
    def forward(self, a, b):
        return a * b
m = Mul()
inside = []
def hook(mod, gi, go):
    r = (None, gi[1] * 2)
    inside.append(mem())
    return r
m.register_full_backward_hook(hook)
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda', requires_grad=True)
g = torch.ones(N, device='cuda')
m(a, b).backward(g)
assert inside == [7 * M], inside
assert a.grad is None
assert b.grad is not None
assert mem() == 4 * M, mem() / M
y = m(a, b)
y.backward(g)
assert mem() == 5 * M, mem() / M
"
    ));
}

#[test]
fn a_hook_keeping_grad_input_keeps_both_gradients() {
    // A hook storing grad_input keeps both computed gradients alive, so AccumulateGrad
    // cannot steal them and copies: after backward a, b, y, g, the 2 kept gradients and
    // 2 `.grad` copies = 8 M; dropping the kept tuple frees 2 M.
    ok(&format!(
        "{PRELUDE}class Mul(nn.Module):
    def forward(self, a, b):
        return a * b
m = Mul()
kept = []
m.register_full_backward_hook(lambda mod, gi, go: kept.append(gi))
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda', requires_grad=True)
g = torch.ones(N, device='cuda')
y = m(a, b)
y.backward(g)
assert mem() == 8 * M, mem() / M
kept.clear()
assert mem() == 6 * M, mem() / M
"
    ));
}

#[test]
fn multihead_attention_with_a_full_backward_hook_over_query_key_and_value() {
    // `mha(q, k, v)` has three tensor arguments requiring grad and returns
    // (attn_output, attn_weights). The loss reads only attn_output, so grad_output is
    // (g, None). The hook nodes are identities over views: the bytes after backward are
    // those of the same call without the hook. The hook runs before q, k and v get their
    // `.grad` (the input node's post-hook precedes their AccumulateGrad), while the three
    // gradients it receives are already allocated: it sees at least the after-backward
    // bytes (the exact figure also counts `out`, the loss and the engine's pending
    // buffers, which this test does not pin).
    ok(&format!(
        "{PRELUDE}mha = nn.MultiheadAttention(256, 4, device='cuda')
def run(hooked):
    seen = []
    h = None
    if hooked:
        h = mha.register_full_backward_hook(lambda mod, gi, go: seen.append(
            ([tuple(t.shape) for t in gi], [t is None for t in go], mem(), q.grad)))
    q = torch.zeros(32, 8, 256, device='cuda', requires_grad=True)
    k = torch.zeros(32, 8, 256, device='cuda', requires_grad=True)
    v = torch.zeros(32, 8, 256, device='cuda', requires_grad=True)
    out, weights = mha(q, k, v)
    del weights
    out.sum().backward()
    del out
    after = mem()
    assert q.grad is not None and k.grad is not None and v.grad is not None
    if h is not None:
        h.remove()
    mha.zero_grad(set_to_none=True)
    return seen, after
plain_seen, plain_after = run(False)
seen, after = run(True)
assert plain_seen == []
assert after == plain_after, (after, plain_after)
assert len(seen) == 1, seen
assert seen[0][0] == [(32, 8, 256)] * 3, seen
assert seen[0][1] == [False, True], seen
assert seen[0][2] >= after, seen[0][2] - after
assert seen[0][3] is None
"
    ));
}

#[test]
fn an_input_the_loss_does_not_reach_gets_zeros_not_none() {
    // Expected from PyTorch's source, not measured (no PyTorch here): the input node is a
    // Python Function (`BackwardHookFunction`, torch/utils/hooks.py) that does not call
    // `ctx.set_materialize_grads(False)`, so `PyNode::apply` (python_function.cpp) hands
    // its `backward` zeros of the output's shape for a differentiable output whose gradient
    // did not arrive; the identity returns them, the hook sees them, and they flow on to
    // `b`'s AccumulateGrad (`b.grad` becomes zeros, not None: pytorch/pytorch#58511 shows
    // the same for any pass-through Function). During the hook: a, b, y, g, a's gradient
    // and b's zeros = 6 M; after backward both were stolen as `.grad`: still 6 M.
    ok(&format!(
        "{PRELUDE}class First(nn.Module):
    def forward(self, a, b):
        return a * 2
m = First()
seen = []
m.register_full_backward_hook(
    lambda mod, gi, go: seen.append(([t is None for t in gi], [tuple(t.shape) for t in gi if t is not None], mem())))
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda', requires_grad=True)
g = torch.ones(N, device='cuda')
y = m(a, b)
y.backward(g)
assert seen == [([False, False], [(N,), (N,)], 6 * M)], seen
assert b.grad is not None and tuple(b.grad.shape) == (N,)
assert mem() == 6 * M, mem() / M
"
    ));
}

#[test]
fn an_output_the_loss_does_not_reach_gets_zeros_after_the_pre_hook() {
    // The output node's pre-hook sees `None` for the second output (the engine's input
    // buffer, before `apply`), then `apply` materializes zeros for it (1 M) and they flow
    // into `x * 3`'s MulBackward0, which computes a gradient for x (1 M) summed into the
    // first one. The input node's hook runs with x, y1, y2, g and x's gradient = 5 M live
    // (the zeros and the summed buffer already freed). Expected from PyTorch's source
    // (engine.cpp's ready queue, python_function.cpp's materialization), not measured.
    ok(&format!(
        "{PRELUDE}class Two(nn.Module):
    def forward(self, x):
        return x * 2, x * 3
m = Two()
pre = []
m.register_full_backward_pre_hook(lambda mod, go: pre.append([t is None for t in go]))
seen = []
m.register_full_backward_hook(lambda mod, gi, go: seen.append(mem()))
x = torch.zeros(N, device='cuda', requires_grad=True)
y1, y2 = m(x)
g = torch.ones(N, device='cuda')
torch.cuda.reset_peak_memory_stats()
y1.backward(g)
assert pre == [[False, True]], pre
assert seen == [5 * M], seen
# Peak: x, y1, y2, g, the zeros and one gradient for x = 6 M. The engine runs the later
# node (`x * 3`'s, higher sequence number) first and frees the zeros after it; `x * 2`'s
# gradient is then summed into the first and freed. Without the zeros: 5 M.
assert torch.cuda.max_memory_allocated() == 6 * M, torch.cuda.max_memory_allocated() / M
"
    ));
}
