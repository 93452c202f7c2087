//! `ctx.mark_dirty(t)` in a custom `autograd.Function` (an in-place custom op): the
//! output is the input itself, its version is bumped and its history rebased onto the
//! Function's node (`_mark_dirty` and `_wrap_outputs` in
//! `torch/csrc/autograd/custom_function.cpp`).
//!
//! No PyTorch is installed here: the figures are worked out by hand. `X` is one
//! `[256, 256]` float32 tensor, 256 KiB.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "X = 256 * 256 * 4
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.mark_dirty(a)
        return a
    @staticmethod
    def backward(ctx, g):
        return g * 2
x = torch.empty(256, 256, device='cuda', requires_grad=True)
w = torch.empty(256, 256, device='cuda', requires_grad=True)
base = torch.cuda.memory_allocated()
";

#[test]
fn the_dirty_input_is_the_output_and_its_history_is_rebased() {
    // y = x * 2.0 (X; MulBackward0 keeps only the number). The Function returns y
    // itself: no alias tensor, no bytes; y's grad_fn becomes the Function's node, whose
    // edge keeps MulBackward0. Backward: Double's gradient (X) then MulBackward0's for x
    // (X, stolen by AccumulateGrad); afterwards y and x.grad.
    ok(&format!(
        "{PRELUDE}y = x * 2.0
old = y.grad_fn
out = Double.apply(y)
assert out is y
assert y.grad_fn is not old
assert y.grad_fn.__class__.__name__ != 'MulBackward0'
assert torch.cuda.memory_allocated() - base == X
y.sum().backward()
assert x.grad is not None
assert torch.cuda.memory_allocated() - base == 2 * X
"
    ));
}

#[test]
fn the_version_bump_trips_a_node_that_saved_the_input_before() {
    // z = y * w saved y (w requires grad) at version 0; mark_dirty bumps it to 1.
    let e = fails(&format!(
        "{PRELUDE}y = x * 2.0
z = y * w
Double.apply(y)
z.sum().backward()
"
    ));
    assert!(e.contains("modified by an inplace operation"), "{e}");
}

#[test]
fn without_mark_dirty_the_returned_input_is_a_new_alias() {
    ok(&format!(
        "{PRELUDE}class Same(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a
    @staticmethod
    def backward(ctx, g):
        return g
y = x * 2.0
z = y * w
out = Same.apply(y)
assert out is not y
z.sum().backward()
"
    ));
}

#[test]
fn a_leaf_that_requires_grad_cannot_be_dirty() {
    let e = fails(&format!("{PRELUDE}Double.apply(x)\n"));
    assert!(
        e.contains("a leaf Variable that requires grad has been used in an in-place operation"),
        "{e}"
    );
}

#[test]
fn a_dirty_tensor_must_be_returned() {
    let e = fails(&format!(
        "{PRELUDE}class Bad(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.mark_dirty(a)
        return a * 1.0
    @staticmethod
    def backward(ctx, g):
        return g
Bad.apply(x * 2.0)
"
    ));
    assert!(
        e.contains(
            "Some elements marked as dirty during the forward method were not returned as output"
        ),
        "{e}"
    );
}

#[test]
fn tensors_and_parameters_report_their_class() {
    ok("p = torch.nn.Parameter(torch.empty(4))
t = torch.empty(4)
assert t.__class__ is torch.Tensor
assert p.__class__ is torch.nn.Parameter
assert p.__class__.__name__ == 'Parameter'
assert (p * 2).__class__ is torch.Tensor
");
}
