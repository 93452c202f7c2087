//! Tensor backward hooks (`register_hook`): when they run, what they hold, and what a hook
//! that keeps its gradient costs. Each workload's `assert`s state PyTorch's bytes
//! (`torch.cuda.memory_allocated()`), so a wrong model fails the run.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

fn run(workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    for v in s.variants() {
        run_variant(&s, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn ok(workload: &str) {
    if let Err(e) = run(workload) {
        panic!("{e}");
    }
}

fn fails(workload: &str) -> String {
    match run(workload) {
        Ok(()) => panic!("the workload ran, but an error was expected"),
        Err(e) => e,
    }
}

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
