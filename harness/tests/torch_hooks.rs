//! Tensor backward hooks (`register_hook`): when they run, what they hold, and what a hook
//! that keeps its gradient costs. Each workload's `assert`s state PyTorch's bytes
//! (`torch.cuda.memory_allocated()`), so a wrong model fails the run.

mod workload_runner;
use workload_runner::{fails, ok};

const MIB: &str = "M = 1024 * 1024\n";

#[test]
fn leaf_and_non_leaf_hooks_run_once_per_backward_and_stop_after_remove() {
    ok(&format!(
        "{MIB}w = torch.zeros(M, device='cuda', requires_grad=True)
seen = []
h1 = w.register_hook(lambda g: seen.append('leaf'))
for i in range(2):
    y = w * 2.0
    h2 = y.register_hook(lambda g: seen.append('mid'))
    y.sum().backward()
assert len(seen) == 4
assert seen[0] == 'mid'
assert seen[1] == 'leaf'
h1.remove()
y = w * 2.0
y.sum().backward()
assert len(seen) == 4
"
    ));
}

#[test]
fn a_hook_keeping_its_gradient_keeps_the_buffer_and_makes_accumulate_grad_copy() {
    // Without the hook the engine's gradient buffer is stolen as `.grad`: parameter +
    // grad. With a hook that keeps the gradient, `AccumulateGrad` cannot steal it and
    // copies: parameter + kept gradient + `.grad`.
    ok(&format!(
        "{MIB}w = torch.zeros(M, device='cuda', requires_grad=True)
(w * 2.0).sum().backward()
assert torch.cuda.memory_allocated() == 8 * M
w.grad = None
kept = []
h = w.register_hook(lambda g: kept.append(g))
(w * 2.0).sum().backward()
assert torch.cuda.memory_allocated() == 12 * M
w.grad = None
(w * 2.0).sum().backward()
assert len(kept) == 2
assert torch.cuda.memory_allocated() == 16 * M
kept.clear()
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn a_returned_tensor_replaces_the_gradient() {
    // The hook returns a new (float64) tensor: `.grad` is made from it, so the buffer the
    // engine computed is freed and `.grad` has the returned tensor's bytes.
    ok(&format!(
        "{MIB}w = torch.zeros(M, device='cuda', requires_grad=True)
h = w.register_hook(lambda g: torch.zeros(M, device='cuda', dtype=torch.float64))
(w * 2.0).sum().backward()
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn a_hook_closing_over_its_own_tensor_is_never_collected_until_removed() {
    // The C++ pre-hook owns the hook dict, a reference the collector cannot see: the
    // cycle tensor -> dict -> closure -> tensor survives `gc.collect()`.
    ok(&format!(
        "{MIB}def leaky():
    t = torch.zeros(M, device='cuda', requires_grad=True)
    t.register_hook(lambda g: t.shape)
def removed():
    t = torch.zeros(M, device='cuda', requires_grad=True)
    h = t.register_hook(lambda g: t.shape)
    h.remove()
for i in range(3):
    leaky()
gc.collect()
assert torch.cuda.memory_allocated() == 12 * M
for i in range(3):
    removed()
gc.collect()
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn a_non_leaf_hook_lives_with_the_graph_that_holds_its_node() {
    // `grad_fn._register_hook_dict(y)`: the node owns the dict too, so the closure's
    // 4 MiB tensor lives as long as the graph does, even after `y` itself is gone.
    ok(&format!(
        "{MIB}w = torch.zeros(M, device='cuda', requires_grad=True)
def step():
    big = torch.zeros(M, device='cuda')
    y = w * 2.0
    y.register_hook(lambda g: big.shape)
    return y.sum()
loss = step()
assert torch.cuda.memory_allocated() - 8 * M == 512
del loss
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
}

#[test]
fn hooks_need_a_tensor_that_requires_grad_and_must_return_a_tensor_or_none() {
    let e = fails("x = torch.zeros(4, device='cuda')\nx.register_hook(lambda g: None)\n");
    assert!(
        e.contains("cannot register a hook on a tensor that doesn't require gradient"),
        "{e}"
    );
    let e = fails(
        "x = torch.zeros(4, device='cuda', requires_grad=True)
x.register_hook(lambda g: 3)
x.sum().backward()
",
    );
    assert!(
        e.contains("expected Variable, but hook returned 'int'"),
        "{e}"
    );
}

/// Four bias-free 1024x1024 layers (4 MiB weights each).
const FOUR_LAYERS: &str = "M = 1024 * 1024
model = torch.nn.Sequential(*[torch.nn.Linear(1024, 1024, bias=False, device='cuda') for i in range(4)])
x = torch.zeros(8, 1024, device='cuda')
";

#[test]
fn an_optimizer_step_in_a_post_accumulate_grad_hook_frees_each_gradient_during_backward() {
    ok(&format!(
        "{FOUR_LAYERS}ran = []
def make_hook(opt):
    def hook(p):
        assert p.grad is not None
        opt.step()
        opt.zero_grad()
        ran.append(1)
    return hook
handles = []
for p in model.parameters():
    handles.append(p.register_post_accumulate_grad_hook(make_hook(torch.optim.SGD([p], lr=0.1))))
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
model(x).sum().backward()
assert len(ran) == 4
assert all(p.grad is None for p in model.parameters())
assert torch.cuda.memory_allocated() == base
# At most one 4 MiB gradient (and small activations) lives at a time.
hooked_peak = torch.cuda.max_memory_allocated() - base
assert hooked_peak < 8 * M, hooked_peak
for h in handles:
    h.remove()
torch.cuda.reset_peak_memory_stats()
model(x).sum().backward()
assert len(ran) == 4
assert torch.cuda.memory_allocated() - base == 16 * M
assert torch.cuda.max_memory_allocated() - base >= 16 * M
"
    ));
}

#[test]
fn post_accumulate_grad_hooks_need_a_leaf_and_must_return_none() {
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
y = w * 2.0
y.register_post_accumulate_grad_hook(lambda p: None)
",
    );
    assert!(
        e.contains("cannot be registered on non-leaf tensors"),
        "{e}"
    );
    let e = fails(
        "w = torch.zeros(4, device='cuda', requires_grad=True)
w.register_post_accumulate_grad_hook(lambda p: p)
(w * 2.0).sum().backward()
",
    );
    assert!(e.contains("should return None"), "{e}");
}

#[test]
fn a_post_accumulate_grad_hook_closing_over_its_tensor_is_held_until_removed() {
    ok("M = 1024 * 1024
base = torch.cuda.memory_allocated()
def build():
    w = torch.zeros(M, device='cuda', requires_grad=True)
    return w.register_post_accumulate_grad_hook(lambda p: w.grad)
handle = build()
gc.collect()
# The C++ hook's reference to the dict is invisible to the collector: a root.
assert torch.cuda.memory_allocated() - base == 4 * M
handle.remove()
gc.collect()
assert torch.cuda.memory_allocated() == base
# Without its handle the cycle tensor -> dict -> hook -> tensor is never collected.
build()
gc.collect()
assert torch.cuda.memory_allocated() - base == 4 * M
");
}
