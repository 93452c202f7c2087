//! `type(t.grad_fn)` (one class per node kind), `Function.apply` through an instance or as
//! a value, the legacy `MyFn()(x)` error, and `torch.as_tensor`'s sharing.
//!
//! No PyTorch is installed here: the figures are worked out by hand. `X` is one
//! `[256, 256]` float32 tensor, 256 KiB; its float16 copy is `X / 2`; a tensor of two
//! floats takes one 512-byte block.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "X = 256 * 256 * 4
x = torch.empty(256, 256, device='cuda', requires_grad=True)
class Double(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        return a * 2
    @staticmethod
    def backward(ctx, g):
        return g * 2
base = torch.cuda.memory_allocated()
";

#[test]
fn nodes_of_one_kind_share_one_class_named_after_it() {
    ok(&format!(
        "{PRELUDE}y = x * 2
z = x * 3
s = y.sum()
assert type(y.grad_fn).__name__ == 'MulBackward0'
assert type(y.grad_fn) is type(z.grad_fn)
assert type(s.grad_fn).__name__ == 'SumBackward0'
assert type(s.grad_fn) is not type(y.grad_fn)
"
    ));
}

#[test]
fn apply_works_as_a_value_and_through_an_instance() {
    ok(&format!(
        "{PRELUDE}double = Double.apply
a = double(x)
inst = Double()
b = inst.apply(x)
f = inst.apply
c = f(x)
# Three outputs, each X, each with the Function's node.
assert torch.cuda.memory_allocated() == base + 3 * X
assert type(a.grad_fn) is type(b.grad_fn) is type(c.grad_fn)
(a + b + c).sum().backward()
assert x.grad is not None
"
    ));
}

#[test]
fn calling_a_function_instance_is_the_legacy_error() {
    let e = fails(&format!("{PRELUDE}y = Double()(x)\n"));
    assert!(
        e.contains("Legacy autograd function with non-static forward method is deprecated"),
        "{e}"
    );
}

#[test]
fn as_tensor_returns_a_matching_tensor_itself_and_copies_otherwise() {
    ok(&format!(
        "{PRELUDE}t = x.detach()
base = torch.cuda.memory_allocated()
assert torch.as_tensor(t) is t
assert torch.as_tensor(t, dtype=torch.float32, device='cuda') is t
assert torch.cuda.memory_allocated() == base
h = torch.as_tensor(x, dtype=torch.float16)
# A float16 copy (X / 2) that keeps x's graph, as `x.to(torch.float16)` does.
assert torch.cuda.memory_allocated() == base + X // 2
assert h.grad_fn.name() == 'ToCopyBackward0'
c = torch.as_tensor([1.0, 2.0], device='cuda')
assert torch.cuda.memory_allocated() == base + X // 2 + 512
on_host = torch.as_tensor(t, device='cpu')
assert on_host is not t and on_host.device.type == 'cpu'
a = torch.empty(4, 4)
n = torch.as_tensor(a.numpy())
assert n.shape == a.shape and n.dtype == a.dtype
"
    ));
}
