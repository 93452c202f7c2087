//! `t[mask] = v` / `t[idx] = v`: `index_put_` on the tensor itself, recording
//! `IndexPutBackward0`, which keeps the index tensors until backward frees them. Bytes are
//! asserted inside the workloads with `torch.cuda.memory_allocated()`.

mod inline_workload;
use inline_workload::peak_allocated as run;

/// A `[1024, 1024]` bool mask is 1 MiB. Written through with grad, the node keeps it: the
/// mask's 1 MiB stays after `del mask` until backward releases the node's saved tensors;
/// without grad nothing keeps it.
#[test]
fn mask_assignment_records_index_put_and_keeps_the_mask() {
    run(r#"import torch
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
y = x * 2
mask = y > 0
y[mask] = 0.0
assert y.grad_fn.name() == "IndexPutBackward0"
with_mask = torch.cuda.memory_allocated()
del mask
assert torch.cuda.memory_allocated() == with_mask
y.sum().backward()
assert x.grad.shape == (1024, 1024)
# backward released the node's saved mask: y's 4 MiB, x and its gradient remain
assert torch.cuda.memory_allocated() == with_mask - 1048576 + 4194304
with torch.no_grad():
    z = torch.zeros(1024, 1024, device="cuda")
    m = z > 0
    z[m] = 1.0
    before = torch.cuda.memory_allocated()
    del m
    assert torch.cuda.memory_allocated() == before - 1048576
    assert z.grad_fn is None
"#)
    .unwrap();
}

/// An index tensor (100 int64 = 800 B, one 1024 B block) is kept the same way, and a
/// values tensor that requires grad gets its gradient through the node's edge.
#[test]
fn index_tensor_assignment_reaches_the_values() {
    run(r#"import torch
x = torch.randn(1024, 256, device="cuda", requires_grad=True)
y = x + 1
idx = torch.arange(0, 100, device="cuda")
v = torch.ones(100, 256, device="cuda", requires_grad=True)
y[idx] = v
assert y.grad_fn.name() == "IndexPutBackward0"
before = torch.cuda.memory_allocated()
del idx
assert torch.cuda.memory_allocated() == before
y.sum().backward()
assert v.grad.shape == (100, 256) and x.grad.shape == (1024, 256)
"#)
    .unwrap();
}

/// Whole-dimension slices keep the write on the tensor itself (`IndexPutBackward0`); a basic
/// index before the index tensor makes a view, whose base is rebased onto `CopySlices`.
#[test]
fn slicing_decides_between_index_put_and_copy_slices() {
    run(r#"import torch
x = torch.randn(8, 16, device="cuda", requires_grad=True)
idx = torch.tensor([1, 3], device="cuda")
y = x * 1
y[:, idx] = 0.0
assert y.grad_fn.name() == "IndexPutBackward0"
w = x * 1
w[0, idx] = 0.0
assert w.grad_fn.name() == "CopySlices"
"#)
    .unwrap();
}

/// The version counter moves (a saved result overwritten through a mask is PyTorch's error
/// at backward) and a leaf that requires grad refuses the write.
#[test]
fn mask_assignment_follows_the_in_place_rules() {
    let e = run(r#"import torch
a = torch.randn(16, device="cuda", requires_grad=True)
b = a.exp()
b[b > 1] = 0.0
b.sum().backward()
"#)
    .unwrap_err();
    assert!(e.contains("modified by an inplace operation"), "{e}");
    let e = run(r#"import torch
a = torch.randn(16, device="cuda", requires_grad=True)
a[a > 0] = 0.0
"#)
    .unwrap_err();
    assert!(e.contains("a leaf Variable that requires grad"), "{e}");
}
