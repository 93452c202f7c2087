//! `nn.Linear`/`F.linear` without a bias: `at::linear` (`aten/src/ATen/native/Linear.cpp`)
//! takes the fused `addmm` only with a bias; without one it runs `matmul(input,
//! weight.t())`, which is `mm` for a 2-d input and, for a 3-d input, `mm` on the input folded
//! to 2-d followed by `_unsafe_view`. `derivatives.yaml`'s `mm` entry: `self`'s gradient
//! reads `mat2`, `mat2`'s reads `self`, so `MmBackward0` saves the input only when the weight
//! needs a gradient and the transposed weight (a view: no bytes) only when the input does.
//!
//! No PyTorch is installed here: the figures are derived by hand from those sources and
//! the caching allocator's 512-byte rounding.

mod workload_runner;
use workload_runner::ok;

/// `X` is one `[64, 256]` float32 input (64 KiB), `Y` one `[64, 1024]` output (256 KiB).
const PRELUDE: &str = "K = 1024
nn = torch.nn
F = torch.nn.functional
X = 64 * 256 * 4
Y = 64 * 1024 * 4
lin = nn.Linear(256, 1024, bias=False, device='cuda')
";

#[test]
fn a_bias_free_linear_on_a_2d_input_records_mm_backward_saving_the_input() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(64, 256, device='cuda')
base = torch.cuda.memory_allocated()
y = lin(x)
assert y.grad_fn.name() == 'MmBackward0'
assert torch.cuda.memory_allocated() == base + Y
# The weight needs a gradient: the input is saved, its bytes outlive the name.
del x
assert torch.cuda.memory_allocated() == base + Y
y.sum().backward()
# Saved input released (the loss died with the statement); the weight's gradient (1 MiB)
# remains.
assert torch.cuda.memory_allocated() == base - X + Y + 1024 * K
assert F.linear(torch.empty(64, 256, device='cuda'), lin.weight).grad_fn.name() == 'MmBackward0'
"
    ));
}

#[test]
fn a_frozen_bias_free_linear_saves_only_the_transposed_weight() {
    ok(&format!(
        "{PRELUDE}lin.weight.requires_grad_(False)
x = torch.empty(64, 256, device='cuda', requires_grad=True)
h = x * 1.0
base = torch.cuda.memory_allocated()
y = lin(h)
assert y.grad_fn.name() == 'MmBackward0'
# mat2 (weight.t(), a view of the weight) is saved, not the input: h dies with its name.
del h
assert torch.cuda.memory_allocated() == base - X + Y
"
    ));
}

#[test]
fn a_bias_free_linear_on_a_3d_input_folds_to_mm_and_unsafe_views_back() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(8, 8, 256, device='cuda')
base = torch.cuda.memory_allocated()
y = lin(x)
assert y.grad_fn.name() == 'UnsafeViewBackward0'
assert y._base is None
assert y.shape[0] == 8 and y.shape[1] == 8 and y.shape[2] == 1024
# The folded input is a view: only the product is allocated.
assert torch.cuda.memory_allocated() == base + Y
del x
assert torch.cuda.memory_allocated() == base + Y
"
    ));
}

#[test]
fn a_bias_free_linear_copies_a_non_contiguous_3d_input_and_saves_the_copy() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(8, 8, 256, device='cuda')
xt = x.transpose(0, 1)
base = torch.cuda.memory_allocated()
y = lin(xt)
# reshape cannot view it: a contiguous copy (64 KiB), saved by MmBackward0, then the product.
assert torch.cuda.memory_allocated() == base + X + Y
del x, xt
assert torch.cuda.memory_allocated() == base + Y
with torch.no_grad():
    z = lin(torch.empty(8, 8, 256, device='cuda').transpose(0, 1))
# Without a graph the copy is a temporary, freed with the call.
assert torch.cuda.memory_allocated() == base + 2 * Y
"
    ));
}

#[test]
fn a_linear_with_a_bias_still_records_addmm_backward() {
    ok("lin = torch.nn.Linear(256, 1024, device='cuda')
assert lin(torch.empty(64, 256, device='cuda')).grad_fn.name() == 'AddmmBackward0'
");
}
