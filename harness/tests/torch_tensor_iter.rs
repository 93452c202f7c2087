//! Iterating a tensor (`python/tensor_iter.rs`): `Tensor.__iter__` is
//! `iter(self.unbind(0))` (`torch/_tensor.py`): every row view is made when iteration
//! starts, under one `UnbindBackward0` node. No PyTorch is installed here: figures are
//! worked out by hand; a `[4, 1024]` float32 is 16 KiB, a 0-d sum 512 bytes.

mod workload_runner;
use workload_runner::{fails, ok};

/// The rows are views (no bytes) that keep the storage after the tensor's name is gone;
/// the node keeps nothing, so once the rows die only the leaf and the loss stay, and
/// backward adds the leaf's gradient.
#[test]
fn rows_are_unbind_views_under_one_node() {
    ok("import torch
x = torch.empty(4, 1024, device='cuda', requires_grad=True)
h = x * 2.0
rows = []
for row in h:
    assert tuple(row.shape) == (1024,)
    rows.append(row)
assert len(rows) == 4
assert rows[0].grad_fn.name() == 'UnbindBackward0', rows[0].grad_fn.name()
assert rows[3]._base is h
# x and h: the rows are views.
assert torch.cuda.memory_allocated() == 2 * 16384, torch.cuda.memory_allocated()
del h
assert torch.cuda.memory_allocated() == 2 * 16384, torch.cuda.memory_allocated()
loss = rows[0].sum() + rows[3].sum()
del row
del rows
# h's storage dies with its last row: nothing in the graph saved it.
assert torch.cuda.memory_allocated() == 16384 + 512, torch.cuda.memory_allocated()
loss.backward()
assert torch.cuda.memory_allocated() == 2 * 16384 + 512, torch.cuda.memory_allocated()
");
}

/// `enumerate`, `list` and `zip` iterate the same rows; without grad there is no node.
#[test]
fn enumerate_list_and_zip_iterate_rows() {
    ok("import torch
t = torch.empty(3, 5, device='cuda')
u = torch.empty(3, 2, device='cuda')
n = 0
for i, r in enumerate(t):
    assert tuple(r.shape) == (5,)
    assert r.grad_fn is None
    n += 1
assert n == 3
assert len(list(t)) == 3
pairs = list(zip(t, u))
assert len(pairs) == 3
assert tuple(pairs[2][1].shape) == (2,)
# Only the two tensors own bytes: 60 and 24 bytes, one 512-byte block each.
del pairs
assert torch.cuda.memory_allocated() == 1024, torch.cuda.memory_allocated()
");
}

#[test]
fn iterating_a_0d_tensor_is_a_type_error() {
    let e = fails("import torch\ns = torch.ones(4, device='cuda').sum()\nfor v in s:\n    pass\n");
    assert!(e.contains("TypeError: iteration over a 0-d tensor"), "{e}");
    assert!(e.contains("t.yaml:7:"), "located: {e}");
    ok("import torch
s = torch.ones(4, device='cuda').sum()
try:
    for v in s:
        pass
except TypeError as e:
    assert str(e) == 'iteration over a 0-d tensor'
");
}
