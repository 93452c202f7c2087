//! Each view op records the node class PyTorch generates for it, not one generic
//! `ViewBackward0`. The expectations come from PyTorch's sources (no PyTorch is installed):
//! the node names are the `derivatives.yaml` entries' generated classes (`permute` →
//! `PermuteBackward0`, `transpose.int` → `TransposeBackward0`, `expand` → `ExpandBackward0`,
//! `squeeze` → `SqueezeBackward0`, `squeeze.dim` → `SqueezeBackward1`, `unsqueeze` →
//! `UnsqueezeBackward0`, `slice.Tensor` → `SliceBackward0`, `select.int` →
//! `SelectBackward0`, `t` → `TBackward0`, `alias` → `AliasBackward0`, `view` →
//! `ViewBackward0`); which op runs comes from ATen: `Tensor.T` is `numpy_T` (a permute),
//! `x[i]`/`x[a:b]`/`x[None]`/`x[...]` are `get_item` in TensorIndexing.h (select, slice even
//! for `[:]`, unsqueeze, alias; several indices apply one op each and skip whole-dimension
//! slices), and `reshape` (TensorShape.cpp) views a contiguous tensor and otherwise is
//! `_unsafe_view(clone)`. Views save sizes and dims only: no bytes.

mod workload_runner;
use workload_runner::ok;

#[test]
fn each_view_op_records_its_own_node() {
    ok("import torch
x = torch.zeros(2, 3, 4, device='cuda', requires_grad=True)
h = x * 1
before = torch.cuda.memory_allocated()
names = {
    'permute': h.permute(2, 0, 1).grad_fn.name(),
    'transpose': h.transpose(0, 1).grad_fn.name(),
    'T': h.T.grad_fn.name(),
    't': h[0].t().grad_fn.name(),
    'expand': h[:, :1].expand(2, 5, 4).grad_fn.name(),
    'squeeze': h[:, :1].squeeze().grad_fn.name(),
    'squeeze_dim': h[:, :1].squeeze(1).grad_fn.name(),
    'unsqueeze': h.unsqueeze(0).grad_fn.name(),
    'view': h.view(6, 4).grad_fn.name(),
    'reshape': h.reshape(24).grad_fn.name(),
    'flatten': h.flatten().grad_fn.name(),
}
want = {
    'permute': 'PermuteBackward0',
    'transpose': 'TransposeBackward0',
    'T': 'PermuteBackward0',
    't': 'TBackward0',
    'expand': 'ExpandBackward0',
    'squeeze': 'SqueezeBackward0',
    'squeeze_dim': 'SqueezeBackward1',
    'unsqueeze': 'UnsqueezeBackward0',
    'view': 'ViewBackward0',
    'reshape': 'ViewBackward0',
    'flatten': 'ViewBackward0',
}
assert names == want, names
assert torch.cuda.memory_allocated() == before
");
}

#[test]
fn basic_indexing_records_select_slice_unsqueeze_or_alias() {
    ok("import torch
x = torch.zeros(2, 3, 4, device='cuda', requires_grad=True)
h = x * 1
got = [
    h[0].grad_fn.name(),
    h[0:1].grad_fn.name(),
    h[:].grad_fn.name(),
    h[None].grad_fn.name(),
    h[...].grad_fn.name(),
    h[:, 1].grad_fn.name(),
    h[0, 1:2].grad_fn.name(),
    h[:, :].grad_fn.name(),
    h[1, :].grad_fn.name(),
]
want = [
    'SelectBackward0',
    'SliceBackward0',
    'SliceBackward0',
    'UnsqueezeBackward0',
    'AliasBackward0',
    'SelectBackward0',
    'SliceBackward0',
    'AliasBackward0',
    'SelectBackward0',
]
assert got == want, got
");
}

#[test]
fn reshape_that_no_view_can_express_is_a_clone_under_an_unsafe_view() {
    // The copy is one tensor's bytes (24 floats, one 512-byte block); the result aliases
    // it without a base, so it is not a view of `h`.
    ok("import torch
x = torch.zeros(2, 3, 4, device='cuda', requires_grad=True)
h = x * 1
p = h.permute(2, 0, 1)
before = torch.cuda.memory_allocated()
r = p.reshape(24)
assert r.grad_fn.name() == 'UnsafeViewBackward0', r.grad_fn.name()
assert r._base is None
assert torch.cuda.memory_allocated() - before == 512
r.sum().backward()
assert x.grad is not None
");
}
