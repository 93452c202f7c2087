//! Losses and activations in function and module form (`nll_loss`, `l1_loss`,
//! `smooth_l1_loss`, `binary_cross_entropy(_with_logits)`, `leaky_relu`, `silu`): what each
//! saves for backward, stated as `memory_allocated()` assertions inside workloads.

mod workload_runner;
use workload_runner::{ok, run};

/// `K`, `M`, `nn`, `F`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn bce_with_logits_saves_input_and_target_until_backward() {
    ok(&format!(
        "{PRELUDE}target = torch.zeros(1024, 1024, device='cuda')
h = x * 2
loss = nn.BCEWithLogitsLoss()(h, target)
assert loss.grad_fn is not None and len(loss.shape) == 0
del h, target
# BinaryCrossEntropyWithLogitsBackward0 holds the logits and the target.
assert torch.cuda.memory_allocated() == 12 * M + 512
loss.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
per_element = F.binary_cross_entropy_with_logits(x, torch.zeros(1024, 1024, device='cuda'), reduction='none')
assert tuple(per_element.shape) == (1024, 1024)
"
    ));
}

#[test]
fn l1_loss_keeps_the_difference_not_the_target() {
    ok(&format!(
        "{PRELUDE}y = torch.empty(1024, 1024, device='cuda')
loss = F.l1_loss(x, y)
# input - target (kept by AbsBackward0); |diff| was reduced and freed.
assert torch.cuda.memory_allocated() == 12 * M + 512
del y
assert torch.cuda.memory_allocated() == 8 * M + 512
loss.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
"
    ));
}

#[test]
fn nll_loss_keeps_log_probabilities_target_and_total_weight() {
    ok(&format!(
        "{PRELUDE}target = torch.zeros(1024, dtype=torch.long, device='cuda')
lp = F.log_softmax(x, dim=1)
loss = nn.NLLLoss()(lp, target)
del lp, target
# Log-probabilities (4 MiB), target (8 KiB), total_weight and the loss (512 bytes each).
assert torch.cuda.memory_allocated() == 8 * M + 8 * K + 1024
loss.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
with torch.no_grad():
    l2 = F.nll_loss(x, torch.zeros(1024, dtype=torch.long, device='cuda'))
assert l2.grad_fn is None
assert torch.cuda.memory_allocated() == 8 * M + 1024
"
    ));
}

#[test]
fn smooth_l1_and_bce_save_their_operands() {
    ok(&format!(
        "{PRELUDE}p = torch.empty(1024, 1024, device='cuda', requires_grad=True)
y = torch.empty(1024, 1024, device='cuda')
a = F.smooth_l1_loss(p, y)
b = nn.BCELoss()(p, y)
del y
# The target is held by both nodes.
assert torch.cuda.memory_allocated() == 12 * M + 1024
a.backward()
# p's gradient appears; BinaryCrossEntropyBackward0 still holds the target.
assert torch.cuda.memory_allocated() == 16 * M + 1024
b.backward()
assert torch.cuda.memory_allocated() == 12 * M + 1024
"
    ));
}

#[test]
fn leaky_relu_and_silu_save_their_input() {
    ok(&format!(
        "{PRELUDE}h = x * 2
a = F.leaky_relu(h, 0.1)
b = F.silu(h)
del h
assert torch.cuda.memory_allocated() == 16 * M
(a.sum() + b.sum()).backward()
del a, b
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn losses_check_their_targets() {
    let e = run("l = torch.nn.functional.binary_cross_entropy_with_logits(torch.zeros(4, 1), torch.zeros(4))\n").unwrap_err();
    assert!(
        e.contains(
            "Target size (torch.Size([4])) must be the same as input size (torch.Size([4, 1]))"
        ),
        "{e}"
    );
    let e =
        run("l = torch.nn.functional.nll_loss(torch.zeros(4, 3), torch.zeros(4))\n").unwrap_err();
    assert!(
        e.contains("expected scalar type Long but found Float"),
        "{e}"
    );
    let e = run("l = torch.nn.L1Loss(reduction='avg')\n").unwrap_err();
    assert!(e.contains("avg is not a valid value for reduction"), "{e}");
}
