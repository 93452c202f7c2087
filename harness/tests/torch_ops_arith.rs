//! `%` and `//` on tensors, `torch.addcdiv` and the deprecated positional order of
//! `addcmul`/`addcdiv`. No PyTorch is installed here: each figure is derived by hand from
//! `tools/autograd/derivatives.yaml` (ROCm/pytorch at 10b22ea5: `remainder.Scalar` reads
//! nothing; `remainder.Tensor`'s `other: -grad * self.div(other, rounding_mode="floor")`
//! reads `self` and `other`; `floor_divide` has no entry, so the generated code gives its
//! result a `NotImplemented` node, pytorch/pytorch#43327; `addcdiv`: tensor1's formula
//! reads tensor2, tensor2's reads both) and `python_arg_parser.cpp`'s
//! `should_allow_numbers_as_tensors` (which lists `floor_divide` but not `remainder`, so
//! `t % 2` is `remainder.Scalar`). A `[1024, 1024]` float32 is 4 MiB.

mod workload_runner;
use workload_runner::{fails, ok};

/// `M`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn remainder_by_a_number_saves_nothing() {
    ok(&format!(
        "{PRELUDE}h = x * 2
r = h % 3
assert r.grad_fn.name() == 'RemainderBackward0'
del h
# h is not kept: x and r.
assert torch.cuda.memory_allocated() == 8 * M
s = torch.remainder(x, 2)
assert s.grad_fn.name() == 'RemainderBackward0'
"
    ));
}

#[test]
fn remainder_of_tensors_saves_both_when_the_divisor_requires_grad() {
    ok(&format!(
        "{PRELUDE}a = x * 2
b = x * 3
r = a % b
assert r.grad_fn.name() == 'RemainderBackward1'
del a, b
# RemainderBackward1 keeps self and other: x, a, b, r.
assert torch.cuda.memory_allocated() == 16 * M
c = torch.empty(1024, 1024, device='cuda')
h = x * 2
q = h.remainder(c)
del h
# The divisor needs no grad: nothing saved (x, a, b, r, c, q).
assert torch.cuda.memory_allocated() == 24 * M
q.sum().backward()
"
    ));
}

#[test]
fn floor_division_has_a_not_implemented_node_whose_backward_raises() {
    ok(&format!(
        "{PRELUDE}h = x * 2
q = h // 2
assert q.requires_grad
assert q.grad_fn.name() == 'NotImplemented'
del h
# NotImplemented keeps nothing: x and q.
assert torch.cuda.memory_allocated() == 8 * M
i = torch.arange(10, device='cuda') // 3
assert i.dtype == torch.int64 and i.grad_fn is None
f = torch.floor_divide(x, 2)
assert f.grad_fn.name() == 'NotImplemented'
"
    ));
    let e = fails(&format!("{PRELUDE}q = x // 2\nq.sum().backward()\n"));
    assert!(
        e.contains("RuntimeError: derivative for floor_divide is not implemented"),
        "{e}"
    );
    let e = fails(&format!("{PRELUDE}q = 2 % x\n"));
    assert!(e.contains("unsupported: `number % tensor`"), "{e}");
}

#[test]
fn addcdiv_keeps_the_factors_its_formulas_read() {
    ok(&format!(
        "{PRELUDE}acc = torch.zeros(1024, 1024, device='cuda')
t1 = x * 2
t2 = x * 3
r = torch.addcdiv(acc, t1, t2, value=0.5)
assert r.grad_fn.name() == 'AddcdivBackward0'
del t1, t2
# t2 requires grad: tensor1 and tensor2 are both kept (x, acc, t1, t2, r).
assert torch.cuda.memory_allocated() == 20 * M
m = acc.addcdiv(torch.empty(1024, 1024, device='cuda'), x * 3)
assert m.grad_fn.name() == 'AddcdivBackward0'
assert torch.cuda.memory_allocated() == 20 * M + 12 * M
del m
w = torch.zeros(1024, 1024, device='cuda')
w.addcdiv_(x * 2, torch.ones(1024, 1024, device='cuda'))
# In place: w's history is the node; tensor1 requires grad, so it keeps tensor2 (which
# tensor1's formula reads), not tensor1 (tensor2 needs no grad): w and the ones.
assert w.grad_fn.name() == 'AddcdivBackward0'
assert torch.cuda.memory_allocated() == 20 * M + 4 * M + 4 * M
"
    ));
    let e = fails(
        "a = torch.zeros(4, device='cuda')
i = torch.zeros(4, dtype=torch.long, device='cuda')
torch.addcdiv(a, i, i)
",
    );
    assert!(
        e.contains("RuntimeError: Integer division with addcdiv is no longer supported"),
        "{e}"
    );
}

#[test]
fn the_deprecated_value_first_order_runs_as_pytorch_still_accepts_it() {
    ok(&format!(
        "{PRELUDE}acc = torch.zeros(1024, 1024, device='cuda')
t = torch.empty(1024, 1024, device='cuda')
r = torch.addcmul(acc, 0.5, x, t)
assert r.grad_fn.name() == 'AddcmulBackward0'
s = acc.addcmul(0.5, x, t)
d = torch.addcdiv(acc, 2, t, x)
assert d.grad_fn.name() == 'AddcdivBackward0'
assert tuple(d.shape) == (1024, 1024)
"
    ));
}
