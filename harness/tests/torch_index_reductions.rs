//! `argmax`/`argmin` with `dim`, `max`/`min` along a dimension, `isnan`/`isinf`/`isfinite`
//! (torch and `math`), run through the library: result shapes and dtypes checked inside the
//! workload, bytes checked from the run's peak.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// Runs an inline workload; the error text if it failed.
fn run(workload: &str) -> Result<u64, String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&yaml, "t.yaml").map_err(|e| e.to_string())?;
    let v = s.variants().remove(0);
    run_variant(&s, &v)
        .map(|t| t.peak_allocated())
        .map_err(|e| e.to_string())
}

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
