//! `F.kl_div` and `nn.KLDivLoss`: the composite of `aten/src/ATen/native/Loss.cpp` (each of
//! its ops records its own node) and `torch/nn/functional.py`'s `'batchmean'` division.
//! No PyTorch is installed here: every figure below is derived by hand from those sources
//! (the allocator rounds each block up to 512 bytes; a `[1024, 1024]` float32 is 4 MiB).

mod workload_runner;
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use workload_runner::{fails, ok};

/// `K`, `M`, `nn`, `F`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn kl_div_keeps_the_target_through_mul_backward_and_divides_batchmean() {
    // xlogy(target, target) and target * input (4 MiB each) live until their difference
    // (4 MiB) is taken: peak = x, target, lp + those three = 24 MiB. The sum is divided by
    // input.size(0) (DivBackward0 of a number, saving nothing). MulBackward0 keeps the
    // target (the input's gradient reads it); xlogy records nothing (the target needs no
    // gradient).
    ok(&format!(
        "{PRELUDE}target = torch.empty(1024, 1024, device='cuda')
lp = x * 2
torch.cuda.reset_peak_memory_stats()
loss = F.kl_div(lp, target, reduction='batchmean')
assert loss.grad_fn.name() == 'DivBackward0', loss.grad_fn.name()
assert len(loss.shape) == 0
assert torch.cuda.max_memory_allocated() == 24 * M, torch.cuda.max_memory_allocated()
assert torch.cuda.memory_allocated() == 12 * M + 512
del lp, target
# lp is freed (no node saved it); the target stays, saved by MulBackward0.
assert torch.cuda.memory_allocated() == 8 * M + 512, torch.cuda.memory_allocated()
loss.backward()
# x.grad appears; the target goes with the released graph.
assert torch.cuda.memory_allocated() == 8 * M + 512
assert x.grad is not None
"
    ));
}

#[test]
fn kl_div_with_log_target_keeps_exp_of_the_target() {
    // exp(target) (4 MiB) is kept by MulBackward0 (the difference's gradient reads it);
    // target - input is freed once the product is taken; 'sum' reduces.
    ok(&format!(
        "{PRELUDE}t = torch.empty(1024, 1024, device='cuda')
torch.cuda.reset_peak_memory_stats()
loss = F.kl_div(x, t, reduction='sum', log_target=True)
assert loss.grad_fn.name() == 'SumBackward0'
# x, t, exp(t), t - x, their product.
assert torch.cuda.max_memory_allocated() == 20 * M
assert torch.cuda.memory_allocated() == 12 * M + 512
del t
assert torch.cuda.memory_allocated() == 8 * M + 512
loss.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
"
    ));
}

#[test]
fn kl_div_reductions_shape_the_result() {
    ok(&format!(
        "{PRELUDE}t = torch.empty(1024, 1024, device='cuda')
per = F.kl_div(x, t, reduction='none')
assert tuple(per.shape) == (1024, 1024)
assert per.grad_fn.name() == 'SubBackward0'
# x, t, per and the target saved by MulBackward0 (t itself): 12 MiB.
assert torch.cuda.memory_allocated() == 12 * M
m = F.kl_div(x, t)
assert m.grad_fn.name() == 'MeanBackward0'
with torch.no_grad():
    q = F.kl_div(x, t, reduction='batchmean')
assert q.grad_fn is None
"
    ));
}

#[test]
fn kl_div_loss_module_holds_its_settings_and_runs_the_function() {
    ok(&format!(
        "{PRELUDE}crit = nn.KLDivLoss(reduction='batchmean', log_target=True)
assert crit.reduction == 'batchmean' and crit.log_target is True
t = torch.empty(1024, 1024, device='cuda')
loss = crit(x, t)
assert loss.grad_fn.name() == 'DivBackward0'
del t
# exp(t) saved, t freed: x, exp(t), the loss.
assert torch.cuda.memory_allocated() == 8 * M + 512
loss.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
plain = nn.KLDivLoss()
assert plain.reduction == 'mean' and plain.log_target is False
"
    ));
}

#[test]
fn kl_div_rejects_integral_inputs_bad_reductions_and_unknown_keywords() {
    let e = fails(
        "x = torch.zeros(4, dtype=torch.long, device='cuda')
torch.nn.functional.kl_div(x, x)
",
    );
    assert!(e.contains("kl_div: Integral inputs not supported."), "{e}");
    let e = fails(
        "torch.nn.KLDivLoss(reduction='average')
",
    );
    assert!(
        e.contains("average is not a valid value for reduction"),
        "{e}"
    );
    let e = fails(
        "x = torch.zeros(4, device='cuda')
torch.nn.functional.kl_div(x, x, bogus=5)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:6:"),
        "{e}"
    );
    let e = fails(
        "torch.nn.KLDivLoss(bogus=5)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:5:"),
        "{e}"
    );
}

#[test]
fn kl_div_mean_reduction_carries_pytorchs_warning() {
    let run = |workload: &str| {
        let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
        let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
        let s = scenario::parse(&text, "t.yaml").expect("parses");
        let v = s.variants().into_iter().next().expect("one variant");
        run_variant(&s, &v).expect("runs").approximations
    };
    let warned = run("x = torch.zeros(4, 4, device='cuda')
torch.nn.functional.kl_div(x, x)
");
    assert!(
        warned.iter().any(|a| a.contains("'batchmean'")),
        "{warned:?}"
    );
    let quiet = run("x = torch.zeros(4, 4, device='cuda')
torch.nn.functional.kl_div(x, x, reduction='batchmean')
");
    assert!(
        !quiet.iter().any(|a| a.contains("'batchmean'")),
        "{quiet:?}"
    );
}
