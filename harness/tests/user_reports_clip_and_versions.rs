//! Leak and crash reports around gradient clipping and recurrent state, run through the
//! library: `clip_grad_norm_`'s returned total norm kept per step (a 0-dim tensor without a
//! graph), and the hidden state carried across iterations with `retain_graph=True` whose
//! backward reaches weights that `optimizer.step()` rewrote in place.

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

/// Growth per iteration of an inline workload (3.11, an 80 GiB card), or the run's error.
fn slope_of(workload: &str) -> Result<i64, String> {
    reports_judge::try_judge("t", workload).map(|f| f.growth)
}

fn clip_loop(keep: &str) -> String {
    format!(
        r#"import torch
from torch.nn.utils import clip_grad_norm_
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10)).cuda()
opt = torch.optim.Adam(model.parameters())
norms = []
for step in range(40):
    loss = model(torch.randn(32, 256, device="cuda")).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    total = clip_grad_norm_(model.parameters(), max_norm=1.0)
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.5)
    assert total.dim() == 0 and not total.requires_grad
    norms.append({keep})
    opt.step()
"#
    )
}

/// Logging `clip_grad_norm_(...)`'s result as a tensor keeps one 0-dim float32 per step (a
/// 512-byte block each, no graph: the gradients do not require grad); `.item()` keeps none.
#[test]
fn kept_total_norms_grow_by_one_small_block_per_step() {
    assert_eq!(slope_of(&clip_loop("total")).unwrap(), 512);
    assert_eq!(slope_of(&clip_loop("total.item()")).unwrap(), 0);
}

/// The norm's temporaries (one 0-dim norm per gradient, their stack, the clip coefficient)
/// are freed by the time it returns: a step that only clips is flat, and no gradient at all
/// gives a host tensor.
#[test]
fn clipping_leaves_only_the_total_norm() {
    let slope = slope_of(
        r#"import torch
w = torch.randn(1024, 1024, device="cuda", requires_grad=True)
(w * 2).sum().backward()
for step in range(20):
    torch.nn.utils.clip_grad_norm_([w], 1.0, norm_type=2.0, error_if_nonfinite=True)
assert torch.nn.utils.clip_grad_norm_([], 1.0).device.type == "cpu"
"#,
    )
    .unwrap();
    assert_eq!(slope, 0);
    let e = slope_of("import torch\ntorch.nn.utils.clip_grad_norm_([])\n").unwrap_err();
    assert!(
        e.contains("missing 1 required positional argument: 'max_norm'"),
        "{e}"
    );
}

fn rnn_loop(carry: &str) -> String {
    format!(
        r#"import torch
from torch import nn
wx = nn.Linear(16, 16).cuda()
wh = nn.Linear(16, 16).cuda()
opt = torch.optim.Adam(list(wx.parameters()) + list(wh.parameters()))
h = torch.zeros(4, 16, device="cuda")
for step in range(4):
    h = torch.tanh(wx(torch.randn(4, 16, device="cuda")) + wh({carry}))
    opt.zero_grad()
    h.sum().backward(retain_graph=True)
    opt.step()
"#
    )
}

/// Issue 8 bug 1: a hidden state not detached across iterations, `retain_graph=True` and
/// Adam. Step 1's `wh(h)` saved `wh`'s weight (its input required grad), step 1's
/// `opt.step()` rewrote it in place (version 1 → 2), and step 2's backward reaches step 1's
/// `AddmmBackward0`: PyTorch's version error. Detaching the carried state runs.
#[test]
fn undetached_hidden_state_with_optimizer_steps_raises_the_version_error() {
    let e = slope_of(&rnn_loop("h")).unwrap_err();
    assert!(
        e.contains("one of the variables needed for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor [16, 16]]"),
        "{e}"
    );
    assert!(
        e.contains("is at version 2; expected version 1 instead"),
        "{e}"
    );
    slope_of(&rnn_loop("h.detach()")).unwrap();
}
