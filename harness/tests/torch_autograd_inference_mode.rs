//! `torch.inference_mode(False)`: c10's `InferenceMode(enabled)` guard sets grad mode to
//! `!enabled` (c10/core/InferenceMode.h), so `inference_mode(False)` re-enables autograd
//! inside an `inference_mode()` (or `no_grad()`) block, and ops there record graphs that
//! keep what they save. No PyTorch is installed; derived from that source.

mod workload_runner;
use workload_runner::ok;

#[test]
fn inference_mode_false_inside_inference_mode_records_a_graph() {
    // Inside: `w * x` records MulBackward0, which saves `x` (w requires grad): the product
    // (1 MiB) is the only new allocation, and backward reaches `w`.
    ok("import torch
w = torch.zeros(256 * 1024, device='cuda', requires_grad=True)
x = torch.zeros(256 * 1024, device='cuda')
with torch.inference_mode():
    before = w * 2
    with torch.inference_mode(False):
        y = w * x
    after = w * 2
assert not before.requires_grad and not after.requires_grad
assert y.requires_grad and y.grad_fn.name() == 'MulBackward0'
y.sum().backward()
assert w.grad is not None
with torch.no_grad():
    with torch.inference_mode(False):
        z = w * 2
assert z.requires_grad
with torch.inference_mode(True):
    u = w * 2
assert not u.requires_grad
");
}
