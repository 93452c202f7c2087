//! `Tensor.type()`: the legacy type name, or a conversion to a dtype or a legacy type name
//! (`THPVariable_type`: a dtype keeps the device, a name picks it; the copy is `_to_copy`,
//! `ToCopyBackward0`; no change returns the tensor itself).
//!
//! Figures by hand: `[256, 256]` float32 is 256 KiB, float16 128 KiB (both multiples of the
//! allocator's 512-byte rounding); a CPU tensor has no device bytes.

mod workload_runner;
use workload_runner::ok;

#[test]
fn type_names_and_converts_by_dtype_or_legacy_name() {
    ok("K = 1024
x = torch.empty(256, 256, device='cuda')
base = torch.cuda.memory_allocated()
assert x.type() == 'torch.cuda.FloatTensor'
# Nothing changes: the same tensor, no bytes.
assert x.type(torch.float32) is x
assert x.type('torch.cuda.FloatTensor') is x
h = x.type(torch.float16)
assert h.type() == 'torch.cuda.HalfTensor'
assert torch.cuda.memory_allocated() == base + 128 * K
# A CPU name moves the tensor off the device: no device bytes.
c = x.type('torch.FloatTensor')
assert c.type() == 'torch.FloatTensor' and c.device.type == 'cpu'
assert torch.cuda.memory_allocated() == base + 128 * K
d = x.type(dtype=torch.float64)
assert d.type() == 'torch.cuda.DoubleTensor'
assert torch.cuda.memory_allocated() == base + 128 * K + 512 * K
del h, d
assert torch.cuda.memory_allocated() == base
try:
    x.type('torch.cuda.NoSuchTensor')
    assert False
except ValueError:
    pass
");
}

#[test]
fn a_converting_type_records_to_copy_backward() {
    ok(
        "x = torch.empty(256, 256, device='cuda', requires_grad=True)
h = x.type(torch.float16)
assert h.grad_fn.name() == 'ToCopyBackward0'
assert h.grad_fn.next_functions[0][0].variable is x
assert x.type(torch.float32) is x and x.grad_fn is None
",
    );
}
