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

/// A bias-free 1024x1024 layer (4 MiB weight) and a 256x1024 input (1 MiB).
const LAYER: &str = "M = 1024 * 1024
lin = torch.nn.Linear(1024, 1024, bias=False, device='cuda')
x = torch.zeros(256, 1024, device='cuda')
";

#[test]
fn full_backward_hooks_run_pre_then_full_with_none_for_inputs_without_grad() {
    ok(&format!(
        "{LAYER}seen = []
def pre(m, go):
    seen.append(('pre', m is lin, len(go), go[0].shape[0]))
def full(m, gi, go):
    seen.append(('full', len(gi), gi[0] is None, go[0].shape[0]))
h1 = lin.register_full_backward_hook(full)
h2 = lin.register_full_backward_pre_hook(pre)
y = lin(x)
assert y.grad_fn.name() == 'BackwardHookFunctionBackward'
y.pow(2).sum().backward()
assert seen == [('pre', True, 1, 256), ('full', 1, True, 256)], seen
xg = torch.zeros(256, 1024, device='cuda', requires_grad=True)
seen.clear()
lin(xg).pow(2).sum().backward()
assert seen == [('pre', True, 1, 256), ('full', 1, False, 256)], seen
assert xg.grad is not None
h1.remove()
h2.remove()
seen.clear()
y = lin(xg)
assert y.grad_fn.name() != 'BackwardHookFunctionBackward'
y.pow(2).sum().backward()
assert seen == []
"
    ));
}

#[test]
fn a_full_backward_hook_keeping_grad_output_on_its_module_leaks_one_gradient_per_step() {
    // The classic leak: each backward's `grad_output` (the 1 MiB gradient of the layer's
    // output) stays in a list on the module. `grad_outputs` itself is dropped by the
    // `BackwardHook` once the full hooks ran.
    ok(&format!(
        "{LAYER}lin.kept = []
h = lin.register_full_backward_hook(lambda m, gi, go: m.kept.append(go))
base = torch.cuda.memory_allocated()
for i in range(3):
    lin(x).pow(2).sum().backward()
    lin.weight.grad = None
assert torch.cuda.memory_allocated() - base == 3 * M
lin.kept.clear()
assert torch.cuda.memory_allocated() == base
h.remove()
for i in range(3):
    lin(x).pow(2).sum().backward()
    lin.weight.grad = None
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn the_graph_keeps_the_backward_hook_and_so_its_module_alive() {
    // The hook closures on the `BackwardHookFunctionBackward` nodes hold the call's
    // `BackwardHook`, which holds the module: a 4 MiB buffer the forward never reads
    // lives as long as the output's graph does, and dies with it.
    ok(&format!(
        "{LAYER}def make(hooked):
    m = torch.nn.Linear(1024, 1024, bias=False, device='cuda')
    m.extra = torch.zeros(M, device='cuda')
    if hooked:
        m.register_full_backward_hook(lambda mod, gi, go: None)
    return m(x)
base = torch.cuda.memory_allocated()
y = make(False)
gc.collect()
# The graph holds the weight (saved, and the leaf of AccumulateGrad), not the module.
assert torch.cuda.memory_allocated() - base == 4 * M + M
del y
y = make(True)
gc.collect()
assert torch.cuda.memory_allocated() - base == 4 * M + 4 * M + M
y.pow(2).sum().backward()
gc.collect()
# After backward the nodes live on with `y`: so does the module.
assert torch.cuda.memory_allocated() - base >= 4 * M + 4 * M + M
del y
gc.collect()
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn a_full_backward_hook_returning_grad_input_replaces_it() {
    // Returning `(None,)` drops the input's gradient: the leaf gets no `.grad`.
    ok(&format!(
        "{LAYER}xg = torch.zeros(256, 1024, device='cuda', requires_grad=True)
h = lin.register_full_backward_hook(lambda m, gi, go: (None,))
lin(xg).pow(2).sum().backward()
assert xg.grad is None
assert lin.weight.grad is not None
h.remove()
lin(xg).pow(2).sum().backward()
assert xg.grad is not None
"
    ));
}

#[test]
fn backward_hooks_run_in_registration_order_unless_prepended() {
    ok(&format!(
        "{LAYER}order = []
lin.register_full_backward_hook(lambda m, gi, go: order.append('a'))
lin.register_full_backward_hook(lambda m, gi, go: order.append('b'))
lin.register_full_backward_hook(lambda m, gi, go: order.append('c'), prepend=True)
lin.register_full_backward_pre_hook(lambda m, go: order.append('p'))
lin.register_full_backward_pre_hook(lambda m, go: order.append('q'), prepend=True)
lin(x).pow(2).sum().backward()
assert order == ['q', 'p', 'c', 'a', 'b'], order
"
    ));
}

#[test]
fn backward_hook_errors_follow_pytorch() {
    let e = fails(&format!(
        "{LAYER}xg = torch.zeros(256, 1024, device='cuda', requires_grad=True)
lin.register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
lin(xg).pow(2).sum().backward()
"
    ));
    assert!(
        e.contains("Backward hook returned an invalid number of grad_input, got 2, but expected 1"),
        "{e}"
    );
    let e = fails(&format!(
        "{LAYER}lin.register_full_backward_pre_hook(lambda m, go: ())
lin(x).pow(2).sum().backward()
"
    ));
    assert!(
        e.contains(
            "Backward pre hook returned an invalid number of grad_output, got 0, but expected 1"
        ),
        "{e}"
    );
    let e = fails(&format!(
        "{LAYER}lin.register_full_backward_hook(lambda m, gi, go: go)
lin(x).pow(2).sum().backward()
"
    ));
    assert!(
        e.contains("no input requires gradient should always return None"),
        "{e}"
    );
    let e = fails(&format!(
        "{LAYER}lin.register_backward_hook(lambda m, gi, go: None)\n"
    ));
    assert!(e.contains("register_backward_hook"), "{e}");
}

#[test]
fn an_in_place_op_on_a_hooked_modules_output_is_refused_as_pytorch_does() {
    // The output is a view made by `BackwardHookFunction` (an input returned as-is), so
    // an in-place op on it (as the next layer's `ReLU(inplace=True)` would be) is refused.
    let e = fails(&format!(
        "{LAYER}lin.register_full_backward_hook(lambda m, gi, go: None)
y = lin(x)
y.relu_()
"
    ));
    assert!(
        e.contains(
            "Output 0 of BackwardHookFunctionBackward is a view and is being modified inplace"
        ),
        "{e}"
    );
    ok(&format!(
        "{LAYER}lin.register_full_backward_hook(lambda m, gi, go: None)
y = lin(x).clone()
y.relu_()
y.sum().backward()
"
    ));
}

#[test]
fn a_hook_handle_outliving_its_module_keeps_neither_the_hook_dict_nor_what_hooks_close_over() {
    // `RemovableHandle.hooks_dict_ref` is a `weakref.ref`: when the module dies its hook
    // dict goes, and with it the hook's closure over a 4 MiB tensor, though the handle
    // lives on; `remove()` is then a no-op.
    ok("M = 1024 * 1024
base = torch.cuda.memory_allocated()
def make():
    m = torch.nn.Linear(1024, 1024, bias=False, device='cuda')
    big = torch.zeros(M, device='cuda')
    return m.register_forward_hook(lambda mod, i, o: big.shape)
h = make()
assert torch.cuda.memory_allocated() == base
assert h.hooks_dict_ref() is None
h.remove()
# While the module lives, its dict (and the closure) do, and `remove()` drops the hook.
def hook_on(m):
    big = torch.zeros(M, device='cuda')
    return m.register_full_backward_hook(lambda mod, gi, go: big.shape)
m = torch.nn.Linear(1024, 1024, bias=False, device='cuda')
h = hook_on(m)
assert torch.cuda.memory_allocated() - base == 4 * M + 4 * M, torch.cuda.memory_allocated() - base
assert len(h.hooks_dict_ref()) == 1
h.remove()
assert torch.cuda.memory_allocated() - base == 4 * M
assert len(h.hooks_dict_ref()) == 0
");
}

#[test]
fn a_tensor_hook_handle_does_not_keep_a_dead_tensors_hooks() {
    ok("M = 1024 * 1024
base = torch.cuda.memory_allocated()
def make():
    t = torch.zeros(16, device='cuda', requires_grad=True)
    big = torch.zeros(M, device='cuda')
    return t.register_hook(lambda g: big.shape)
h = make()
assert torch.cuda.memory_allocated() == base
h.remove()
");
}
