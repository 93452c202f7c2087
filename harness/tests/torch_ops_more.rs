//! Ops that leak reports use beyond the core set: dtype promotion between tensors,
//! `F.softplus`/`nn.Softplus`, `torch.norm`/`Tensor.norm`/`torch.linalg.vector_norm`,
//! `torch.addcmul`/`Tensor.addcmul(_)`. No PyTorch is installed here: each figure is derived
//! by hand from `derivatives.yaml` (what each node saves), `c10/core/ScalarType.h` (the
//! promotion table) and `torch/functional.py` (`norm` → `linalg.vector_norm`); the allocator
//! rounds blocks up to 512 bytes, and a `[1024, 1024]` float32 is 4 MiB.

mod workload_runner;
use workload_runner::{fails, ok};

/// `K`, `M`, `nn`, `F`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn half_plus_bfloat16_is_float32_and_uint8_plus_int8_is_int16() {
    ok("K = 1024
a = torch.empty(1024, dtype=torch.float16, device='cuda')
b = torch.empty(1024, dtype=torch.bfloat16, device='cuda')
c = a + b
assert c.dtype == torch.float32, c.dtype
# 2 KiB + 2 KiB + a float32 result of 4 KiB.
assert torch.cuda.memory_allocated() == 8 * K
u = torch.zeros(1024, dtype=torch.uint8, device='cuda')
i = torch.zeros(1024, dtype=torch.int8, device='cuda')
assert (u + i).dtype == torch.int16
assert (u + torch.zeros(1024, dtype=torch.bool, device='cuda')).dtype == torch.uint8
");
}

#[test]
fn softplus_saves_its_input() {
    // SoftplusBackward0 reads `self`: the input outlives its Python name.
    ok(&format!(
        "{PRELUDE}h = x * 2
y = F.softplus(h, beta=2, threshold=10)
assert y.grad_fn.name() == 'SoftplusBackward0'
del h
assert torch.cuda.memory_allocated() == 12 * M
y.sum().backward()
# x.grad appears, h goes with the released graph: x, x.grad, y.
assert torch.cuda.memory_allocated() == 12 * M
m = nn.Softplus(beta=0.5)
assert m.beta == 0.5 and m.threshold == 20.0
z = m(x)
assert z.grad_fn.name() == 'SoftplusBackward0'
"
    ));
}

#[test]
fn norm_saves_its_input_and_result() {
    // `x.norm()` is `linalg.vector_norm(x, 2)`: LinalgVectorNormBackward0 keeps `self` and
    // the (0-dim) result.
    ok(&format!(
        "{PRELUDE}h = x * 2
n = h.norm()
assert n.grad_fn.name() == 'LinalgVectorNormBackward0'
assert len(n.shape) == 0
del h
assert torch.cuda.memory_allocated() == 8 * M + 512
n.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
rows = torch.norm(x, dim=1)
assert tuple(rows.shape) == (1024,)
kept = torch.linalg.vector_norm(x, ord=1, dim=(0, 1), keepdim=True)
assert tuple(kept.shape) == (1, 1)
assert kept.grad_fn.name() == 'LinalgVectorNormBackward0'
p = x.norm(p=2, dim=0, keepdim=True)
assert tuple(p.shape) == (1, 1024)
"
    ));
}

#[test]
fn norm_of_an_integer_tensor_and_nuclear_norm_are_refused() {
    let e = fails(
        "x = torch.zeros(4, dtype=torch.long, device='cuda')
x.norm()
",
    );
    assert!(
        e.contains("Expected a floating point or complex tensor as input. Got Long"),
        "{e}"
    );
    let e = fails(
        "x = torch.zeros(4, 4, device='cuda')
torch.norm(x, p='nuc')
",
    );
    assert!(e.contains("unsupported") && e.contains("nuc"), "{e}");
    let e = fails(
        "x = torch.zeros(4, 4, device='cuda')
torch.norm(x, bogus=1)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:6:"),
        "{e}"
    );
}

#[test]
fn addcmul_saves_the_other_factor_of_the_operand_that_needs_grad() {
    // AddcmulBackward0: tensor1's gradient reads tensor2, tensor2's reads tensor1; `self`'s
    // reads neither. Here only tensor1 (x) requires grad, so only tensor2 is kept.
    ok(&format!(
        "{PRELUDE}b = torch.empty(1024, 1024, device='cuda')
c = torch.empty(1024, 1024, device='cuda')
out = torch.addcmul(b, x, c, value=0.5)
assert out.grad_fn.name() == 'AddcmulBackward0'
del b, c
# x, c (saved), out.
assert torch.cuda.memory_allocated() == 12 * M
out.sum().backward()
# x, x.grad, out (the sum was a temporary); c went with the graph.
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn addcmul_in_place_rebases_history_and_keeps_the_factor() {
    ok(&format!(
        "{PRELUDE}acc = torch.zeros(1024, 1024, device='cuda')
c = torch.empty(1024, 1024, device='cuda')
r = acc.addcmul_(x, c)
assert r is acc
assert acc.grad_fn.name() == 'AddcmulBackward0'
del c
# acc, x and c (saved by the in-place node): nothing new allocated.
assert torch.cuda.memory_allocated() == 12 * M
m = x.addcmul(x, x)
assert m.grad_fn.name() == 'AddcmulBackward0'
"
    ));
    let e = fails(
        "x = torch.zeros(4, device='cuda', requires_grad=True)
x.addcmul_(x, x)
",
    );
    assert!(e.contains("a leaf Variable that requires grad"), "{e}");
}

#[test]
fn group_norm_saves_input_weight_and_per_group_statistics() {
    // native_group_norm: the output like the input, then mean and rstd of [N, groups]
    // (here [8, 4] float32: 128 bytes, one 512-byte block each). NativeGroupNormBackward0
    // keeps the input, the weight and both statistics until backward.
    ok("M = 1024 * 1024
nn = torch.nn
x = torch.empty(8, 32, 64, 64, device='cuda')
m = nn.GroupNorm(4, 32, device='cuda')
assert tuple(m.weight.shape) == (32,) and tuple(m.bias.shape) == (32,)
assert torch.cuda.memory_allocated() == 4 * M + 1024
y = m(x)
assert y.grad_fn.name() == 'NativeGroupNormBackward0'
assert torch.cuda.memory_allocated() == 8 * M + 2048
del x
# The input stays, saved by the node.
assert torch.cuda.memory_allocated() == 8 * M + 2048
y.sum().backward()
# The input and statistics go with the graph; weight.grad and bias.grad appear.
assert torch.cuda.memory_allocated() == 4 * M + 2048
plain = nn.GroupNorm(4, 32, affine=False)
assert plain.weight is None and plain.bias is None
with torch.no_grad():
    z = m(torch.empty(8, 32, 64, 64, device='cuda'))
assert z.grad_fn is None
# No node: the statistics were freed at once.
assert torch.cuda.memory_allocated() == 8 * M + 2048
");
}

#[test]
fn group_norm_statistics_take_the_input_dtype_unless_params_are_wider() {
    // param_scalar_type: a half input with float32 parameters keeps float32 statistics;
    // without parameters they are half. [4096, 64] statistics: 1 MiB float32, 512 KiB half.
    ok("K = 1024
M = 1024 * 1024
F = torch.nn.functional
x = torch.empty(4096, 64, 1, 1, dtype=torch.half, device='cuda', requires_grad=True)
w = torch.ones(64, device='cuda')
b = torch.zeros(64, device='cuda')
y = F.group_norm(x, 64, w, b)
assert y.dtype == torch.half
assert torch.cuda.memory_allocated() == 512 * K + 1024 + 512 * K + 2 * M
del y
y = F.group_norm(x, 64)
assert torch.cuda.memory_allocated() == 512 * K + 1024 + 512 * K + M
");
}

#[test]
fn group_norm_checks_groups_and_keywords() {
    let e = fails(
        "torch.nn.GroupNorm(3, 32)
",
    );
    assert!(
        e.contains("num_channels must be divisible by num_groups"),
        "{e}"
    );
    let e = fails(
        "x = torch.empty(2, 6, 4, device='cuda')
torch.nn.functional.group_norm(x, 4)
",
    );
    assert!(
        e.contains("Expected number of channels in input to be divisible by num_groups, but got input of shape [2, 6, 4] and num_groups=4"),
        "{e}"
    );
    let e = fails(
        "torch.nn.GroupNorm(2, 4, bogus=1)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:5:"),
        "{e}"
    );
}
