//! Tensor comparisons, boolean masks and the idioms leak reports use with them
//! (`(preds == target).sum().item()`, `correct += (out.argmax(1) == y).sum()`,
//! `loss[mask].mean()`). No PyTorch is installed here: each figure is derived by hand. A
//! comparison's result is a bool tensor (`c10/core/ScalarType.h`: one byte an element) of
//! the broadcast shape (`TensorIterator`), with no history (`eq`/`lt`/... have no
//! out-of-place entry in `derivatives.yaml`; a bool output is not differentiable). The
//! caching allocator rounds every block up to 512 bytes; a `[1024, 1024]` float32 is
//! 4 MiB, a bool one 1 MiB.

mod workload_runner;
use workload_runner::{fails, ok};

/// `K`, `M`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad, `y` another
/// `[1024, 1024]` float32 (4 MiB) that does not.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
y = torch.empty(1024, 1024, device='cuda')
";

#[test]
fn every_comparison_operator_gives_a_bool_tensor_without_history() {
    ok(&format!(
        "{PRELUDE}results = [x == y, x != y, x < y, x <= y, x > 0, x >= 0.5, 0 < x, 1 >= x,
           x.eq(y), x.ne(0), x.lt(y), x.le(y), x.gt(y), x.ge(y), torch.eq(x, y), torch.gt(x, 0),
           torch.lt(x, y), torch.le(x, y), torch.ne(x, y), torch.ge(x, y)]
for m in results:
    assert m.dtype == torch.bool
    assert tuple(m.shape) == (1024, 1024)
    assert m.grad_fn is None
    assert not m.requires_grad
# x, y and twenty 1 MiB masks.
assert torch.cuda.memory_allocated() == 8 * M + 20 * M
del results, m
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn comparisons_broadcast_and_refuse_mismatched_shapes_with_pytorchs_message() {
    ok("a = torch.empty(3, 1, device='cuda')
b = torch.empty(4, device='cuda')
m = a < b
assert tuple(m.shape) == (3, 4)
# a and b take one 512-byte block each; the 12-byte mask one more.
assert torch.cuda.memory_allocated() == 3 * 512
");
    let e = fails(
        "a = torch.empty(3, device='cuda')
b = torch.empty(4, device='cuda')
m = a == b
",
    );
    assert!(
        e.contains(
            "RuntimeError: The size of tensor a (3) must match the size of tensor b (4) at non-singleton dimension 0"
        ),
        "{e}"
    );
    // `==` with a non-number falls back to identity (Tensor.__eq__ returns NotImplemented);
    // an ordering is Python's TypeError.
    ok("t = torch.empty(4, device='cuda')
assert (t == None) is False
assert (t != 'a') is True
");
    let e = fails("t = torch.empty(4, device='cuda')\nt < None\n");
    assert!(
        e.contains("TypeError: '<' not supported between instances of 'Tensor' and 'NoneType'"),
        "{e}"
    );
}

#[test]
fn accuracy_idioms_keep_no_graph_and_free_their_temporaries() {
    ok("preds = torch.empty(256, dtype=torch.long, device='cuda')
target = torch.empty(256, dtype=torch.long, device='cuda')
n = (preds == target).sum().item()
assert type(n) is int
# The mask and the int64 sum are gone: only preds and target (2 KiB each).
assert torch.cuda.memory_allocated() == 4096
out = torch.empty(256, 10, device='cuda', requires_grad=True)
correct = 0
for _ in range(3):
    correct += (out.argmax(1) == target).sum()
# `.sum()` of a bool tensor is int64; the running count is one 0-dim CUDA tensor.
assert correct.dtype == torch.int64
assert len(correct.shape) == 0
assert correct.grad_fn is None
assert torch.cuda.memory_allocated() == 4096 + 10240 + 512
acc = (out.argmax(1) == target).float().mean()
assert acc.dtype == torch.float32 and acc.grad_fn is None
assert torch.cuda.memory_allocated() == 4096 + 10240 + 2 * 512
");
}

#[test]
fn a_mask_selects_a_copy_whose_node_keeps_the_mask() {
    // `x[mask]` is `index.Tensor`: a copy of the selected elements; `IndexBackward0` saves
    // the indices as given (the bool mask) and self's sizes. The model holds no values: the
    // copy is the upper bound, every element selected.
    ok(&format!(
        "{PRELUDE}loss = x * 2
mask = loss > 0
sel = loss[mask]
assert tuple(sel.shape) == (1024 * 1024,)
assert sel.grad_fn.name() == 'IndexBackward0'
del mask
# x, y, loss, sel (4 MiB each) and the mask the node keeps.
assert torch.cuda.memory_allocated() == 16 * M + M
m = sel.mean()
del sel
assert torch.cuda.memory_allocated() == 16 * M + M - 4 * M + 512
m.backward()
# The graph is released, and the mask with it; x.grad arrives: x, y, loss, m, x.grad.
assert torch.cuda.memory_allocated() == 12 * M + 512 + 4 * M
rows = x[x.sum(1) > 0]
assert tuple(rows.shape) == (1024, 1024)
"
    ));
    let e = fails(
        "t = torch.empty(3, 5, device='cuda')
m = torch.empty(3, 4, device='cuda') > 0
t[m]
",
    );
    assert!(
        e.contains("IndexError: The shape of the mask [3, 4] at index 1 does not match the shape of the indexed tensor [3, 5] at index 1"),
        "{e}"
    );
}

#[test]
fn masks_combine_with_invert_and_or_xor() {
    ok(&format!(
        "{PRELUDE}a = x > 0
b = y < 1
c = ~a
d = a & b
e = a | b
f = a ^ b
for m in (c, d, e, f):
    assert m.dtype == torch.bool and m.grad_fn is None
assert torch.cuda.memory_allocated() == 8 * M + 6 * M
a &= b
assert torch.cuda.memory_allocated() == 8 * M + 6 * M
n = ~torch.empty(1024, dtype=torch.long, device='cuda')
assert n.dtype == torch.int64
"
    ));
    let e = fails("x = torch.empty(4, device='cuda')\n~x\n");
    assert!(
        e.contains("RuntimeError: \"bitwise_not_cuda\" not implemented for 'Float'"),
        "{e}"
    );
    let e = fails("x = torch.empty(4, device='cuda')\nx & x\n");
    assert!(
        e.contains("RuntimeError: \"bitwise_and_cuda\" not implemented for 'Float'"),
        "{e}"
    );
}

#[test]
fn any_all_and_logical_ops() {
    ok(&format!(
        "{PRELUDE}m = x > 0
a = m.any()
b = torch.all(m, dim=0)
c = m.all(1, keepdim=True)
assert a.dtype == torch.bool and len(a.shape) == 0
assert tuple(b.shape) == (1024,) and tuple(c.shape) == (1024, 1)
u = torch.empty(8, dtype=torch.uint8, device='cuda').all()
assert u.dtype == torch.uint8
n = torch.logical_not(x)
o = torch.logical_and(m, y)
assert n.dtype == torch.bool and o.dtype == torch.bool
# m 1 MiB, a 512, b 1 KiB, c 1 KiB, u 512, n and o 1 MiB each.
assert torch.cuda.memory_allocated() == 8 * M + 3 * M + 512 + 2048 + 512
"
    ));
}

#[test]
fn bool_sums_are_int64_and_bool_means_are_refused() {
    ok("m = torch.empty(1024, device='cuda') > 0
s = m.sum()
assert s.dtype == torch.int64
t = torch.sum(m)
assert t.dtype == torch.int64
assert m.float().mean().dtype == torch.float32
");
    let e = fails("m = torch.empty(4, device='cuda') > 0\nm.mean()\n");
    assert!(
        e.contains("RuntimeError: mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Bool"),
        "{e}"
    );
}

#[test]
fn equal_and_allclose_answer_python_bools_and_free_their_temporaries() {
    // cuda/Equal.cpp: `eq(self, src).all().item()`; allclose is `isclose(...).all().item()`
    // with isclose's error temporaries (TensorCompare.cpp).
    ok(&format!(
        "{PRELUDE}assert torch.equal(x, y) is True
assert torch.equal(x, torch.empty(3, device='cuda')) is False
assert torch.cuda.memory_allocated() == 8 * M
torch.cuda.reset_peak_memory_stats()
torch.equal(x, y)
# The eq mask (1 MiB) and the 0-dim all() were alive together.
assert torch.cuda.max_memory_allocated() == 8 * M + M + 512
assert torch.allclose(x, y) is True
assert x.allclose(y, rtol=0.0, atol=0.0) is True
assert torch.cuda.memory_allocated() == 8 * M
torch.cuda.reset_peak_memory_stats()
c = torch.isclose(x, y)
assert c.dtype == torch.bool and tuple(c.shape) == (1024, 1024)
# close (1 MiB) and allowed_error (4 MiB) with (self - other) and its abs (4 MiB each).
assert torch.cuda.max_memory_allocated() == 8 * M + M + 4 * M + 8 * M
assert torch.cuda.memory_allocated() == 8 * M + M
"
    ));
    let e = fails(
        "a = torch.empty(4, device='cuda')
b = torch.empty(4, dtype=torch.float64, device='cuda')
torch.isclose(a, b)
",
    );
    assert!(
        e.contains("RuntimeError: Float did not match Double"),
        "{e}"
    );
}
