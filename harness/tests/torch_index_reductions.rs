//! `argmax`/`argmin` with `dim`, `max`/`min` along a dimension, `isnan`/`isinf`/`isfinite`
//! (torch and `math`), run through the library: result shapes and dtypes checked inside the
//! workload, bytes checked from the run's peak.

mod inline_workload;
use inline_workload::peak_allocated as run;

/// A training loop's NaN guard (`if math.isnan(loss.item())`/`math.isnan(loss)`) and the
/// tensor tests: `math.*` read one element (no device bytes), `torch.isnan` gives a bool
/// tensor of the input's shape with no graph.
#[test]
fn nan_guards_run_on_numbers_and_tensors() {
    run(r#"import torch, math
x = torch.randn(1024, 1024, device="cuda", requires_grad=True)
loss = (x * 2).sum()
assert not math.isnan(loss) and not math.isinf(loss.item()) and math.isfinite(loss)
assert math.isnan(math.nan) and math.isinf(-math.inf) and math.isfinite(3)
m = torch.isnan(x)
assert m.dtype == torch.bool and m.shape == (1024, 1024) and not m.requires_grad
assert x.isinf().dtype == torch.bool and torch.isfinite(x).shape == x.shape
"#)
    .unwrap();
    let e = run("import torch, math\nmath.isnan(torch.zeros(2, device='cuda'))\n").unwrap_err();
    assert!(
        e.contains("a Tensor with 2 elements cannot be converted to Scalar"),
        "{e}"
    );
}

/// `torch.isnan` of a 1 MiB float32 tensor allocates a 256 KiB bool tensor (one byte per
/// element) on top of the input.
#[test]
fn isnan_allocates_one_byte_per_element() {
    let base = run("import torch\nx = torch.randn(512, 512, device='cuda')\n").unwrap();
    let with_mask =
        run("import torch\nx = torch.randn(512, 512, device='cuda')\nm = torch.isnan(x)\n")
            .unwrap();
    assert_eq!(with_mask - base, 512 * 512);
}

/// Accuracy code: `logits.argmax(dim=1)` is int64 of the batch, with no graph; `max(dim)`
/// gives values with `MaxBackward0` and int64 indices.
#[test]
fn argmax_and_max_along_a_dimension() {
    run(r#"import torch
x = torch.randn(64, 10, device="cuda", requires_grad=True)
a = x.argmax(dim=1)
assert a.shape == (64,) and a.dtype == torch.int64 and not a.requires_grad
assert torch.argmin(x, dim=0, keepdim=True).shape == (1, 10)
assert torch.argmax(x).dim() == 0 and x.argmin(1).shape == (64,)
v, i = x.max(dim=1)
assert v.shape == (64,) and v.grad_fn.name() == "MaxBackward0"
assert i.dtype == torch.long and not i.requires_grad
lo, j = x.min(1, keepdim=True)
assert lo.shape == (64, 1) and lo.grad_fn.name() == "MinBackward0"
assert x.max().dim() == 0 and x.max().grad_fn.name() == "MaxBackward1"
v.sum().backward()
assert x.grad.shape == (64, 10)
"#)
    .unwrap();
}

/// Accuracy kept per batch from `argmax` holds 8 bytes per sample and no graph: 1000 batches
/// of 64 predictions keep 1000 int64 blocks of 512 bytes each.
#[test]
fn kept_predictions_hold_their_int64_bytes_only() {
    let peak = run(r#"import torch
w = torch.randn(10, 10, device="cuda", requires_grad=True)
preds = []
for step in range(1000):
    logits = torch.randn(64, 10, device="cuda") @ w
    preds.append(logits.argmax(dim=1))
"#)
    .unwrap();
    // w (512 B block), the kept predictions (1000 × 512 B), and one step's temporaries.
    assert!(peak >= 512 + 1000 * 512, "{peak}");
    assert!(peak < 512 + 1000 * 512 + 16 * 1024, "{peak}");
}

/// `x.max(dim)` is PyTorch's `torch.return_types.max` (a struct sequence made by
/// `PyStructSequence_New` in `wrap_outputs.h`): fields `values`/`indices`, a tuple for
/// `isinstance`, indexing, slicing, `len` and unpacking, and `returned_structseq_repr`'s
/// text. Expected values derived by hand from the PyTorch sources (no PyTorch installed).
#[test]
fn max_along_a_dimension_is_a_named_tuple() {
    run(r#"import torch
x = torch.randn(8, 4, device="cuda", requires_grad=True)
r = x.max(dim=1, keepdim=True)
assert r.values.shape == (8, 1) and r.indices.dtype == torch.int64
assert r[0] is r.values and r[-1] is r.indices and len(r) == 2
assert isinstance(r, tuple) and repr(r).startswith("torch.return_types.max(")
assert r.values.grad_fn.name() == "MaxBackward0" and not r.indices.requires_grad
assert r[:1][0] is r.values
values, idx = torch.min(x, 0)
assert values.shape == (4,) and values.grad_fn.name() == "MinBackward0"
assert repr(x.min(1)).startswith("torch.return_types.min(\nvalues=")
assert repr(torch.max(x, 1)).startswith("torch.return_types.max(\nvalues=")
assert "),\nindices=" in repr(x.max(1))
"#)
    .unwrap();
    let e =
        run("import torch\nr = torch.zeros(2, 3, device='cuda').max(1)\nr.value\n").unwrap_err();
    assert!(
        e.contains("AttributeError: 'torch.return_types.max' object has no attribute 'value'"),
        "{e}"
    );
}

/// `PyStructSequence_New` does not track the object it allocates (measured: CPython 3.8-3.13
/// `gc.is_tracked(time.localtime())` is false), so holding `x.max(1)` adds the two tensor
/// objects to what `gc.freeze()` moves, not the pair itself (a plain tuple holding tensors
/// would be tracked: three).
#[test]
fn the_named_tuple_is_untracked() {
    run(r#"import torch, gc
x = torch.randn(8, 4, device="cuda")
r = None
gc.collect()
gc.freeze()
before = gc.get_freeze_count()
gc.unfreeze()
r = x.max(1)
gc.freeze()
after = gc.get_freeze_count()
gc.unfreeze()
assert after - before == 2, after - before
"#)
    .unwrap();
}

/// The pair keeps both tensors; unpacked, the names do, and `MaxBackward0` keeps the
/// indices (saved by derivatives.yaml's `max.dim` row) after the name is dropped: 64 × 8 B
/// of int64 indices stay with the graph until backward frees it.
#[test]
fn max_backward_keeps_the_indices_after_unpacking() {
    let kept = |tail: &str| {
        run(&format!(
            "import torch\nx = torch.randn(64, 1024, device='cuda', requires_grad=True)\n\
             values, idx = x.max(1)\ndel idx\n{tail}\
             peak0 = torch.cuda.memory_allocated()\nassert peak0 == int(peak0)\n\
             big = torch.empty(4 * 1024 * 1024, device='cuda')\n"
        ))
    };
    let alive = kept("").unwrap();
    let freed = kept("values.sum().backward()\nx.grad = None\n").unwrap();
    // With the graph alive the indices (512 B block) are still held when `big` is made.
    assert_eq!(alive - freed, 512, "{alive} {freed}");
}

/// `torch.max(a, b)` is ATen's `max.other`, an alias of `maximum`: elementwise over the
/// broadcast shape with `MaximumBackward0` saving both operands; `sort` and `topk` return
/// named tuples whose node saves the indices.
#[test]
fn elementwise_max_sort_and_topk() {
    run(r#"import torch
a = torch.randn(8, 1, device="cuda", requires_grad=True)
b = torch.randn(1, 5, device="cuda")
m = torch.max(a, b)
assert m.shape == (8, 5) and m.grad_fn.name() == "MaximumBackward0"
assert torch.minimum(a, b).grad_fn.name() == "MinimumBackward0"
assert a.max(b).shape == (8, 5) and torch.min(a, other=b).grad_fn.name() == "MinimumBackward0"
s = torch.randn(6, 10, device="cuda", requires_grad=True)
r = s.sort(dim=1, descending=True)
assert repr(r).startswith("torch.return_types.sort(") and r.values.shape == (6, 10) and r.indices.dtype == torch.int64
assert r.values.grad_fn.name() == "SortBackward0"
assert torch.sort(s, stable=True).values.grad_fn.name() == "SortBackward1"
v, i = s.topk(3)
assert v.shape == (6, 3) and i.shape == (6, 3) and v.grad_fn.name() == "TopkBackward0"
assert torch.topk(s, 2, dim=0).indices.shape == (2, 10)
v.sum().backward()
assert s.grad.shape == (6, 10)
"#)
    .unwrap();
    let e = run("import torch\nx = torch.zeros(2, 3, device='cuda')\nx.topk(4)\n").unwrap_err();
    assert!(
        e.contains("RuntimeError: selected index k out of range"),
        "{e}"
    );
}

/// PyTorch's errors for reducing nothing: `max(dim)` over an empty dimension is an
/// `IndexError` (ATen's `zero_numel_check_dims`), `max()` of an empty tensor a
/// `RuntimeError`; a non-empty dimension of an empty tensor reduces fine.
#[test]
fn max_of_an_empty_dimension_is_pytorchs_error() {
    let e = run("import torch\ntorch.zeros(0, 3, device='cuda').max(0)\n").unwrap_err();
    assert!(
        e.contains("IndexError: max(): Expected reduction dim 0 to have non-zero size."),
        "{e}"
    );
    let e = run("import torch\ntorch.min(torch.zeros(3, 0, device='cuda'), -1)\n").unwrap_err();
    assert!(
        e.contains("IndexError: min(): Expected reduction dim 1 to have non-zero size."),
        "{e}"
    );
    let e = run("import torch\ntorch.zeros(0, device='cuda').max()\n").unwrap_err();
    assert!(
        e.contains(
            "RuntimeError: max(): Expected reduction dim to be specified for input.numel() == 0."
        ),
        "{e}"
    );
    run("import torch\nr = torch.zeros(0, 3, device='cuda').max(1)\nassert r.values.shape == (0,)\n")
        .unwrap();
}
