//! In-place activations and dropout (`F.relu(x, inplace=True)`, `torch.relu_`, `x.relu_()`,
//! `nn.ReLU(inplace=True)`, `F.leaky_relu`/`F.silu`/`F.dropout` with `inplace=True`,
//! `nn.Dropout(inplace=True)`), stated as `memory_allocated()` / `max_memory_allocated()`
//! assertions inside workloads.
//!
//! No PyTorch is installed here: the expected figures are derived by hand from PyTorch's
//! sources. `derivatives.yaml`: `relu_` (as `relu`) and `leaky_relu_` read the result
//! (`ReluBackward0`, `LeakyReluBackward1`), `silu_` takes `silu`'s formula, which reads
//! `self`, so the generated code saves a clone taken before the write. `Dropout.cpp`:
//! `dropout_` is `_dropout_impl<inplace=true>`: a noise tensor like the input, then
//! `input.mul_(noise)` (`MulBackward0` saves the noise). The caching allocator rounds every
//! block up to 512 bytes.

mod workload_runner;
use workload_runner::{fails, ok};

/// `A` is one `[64, 1024]` float32 activation (256 KiB); `x` a `[64, 256]` input.
const PRELUDE: &str = "K = 1024
nn = torch.nn
F = torch.nn.functional
A = 64 * 1024 * 4
lin = nn.Linear(256, 1024, device='cuda')
x = torch.empty(64, 256, device='cuda')
";

#[test]
fn functional_relu_in_place_writes_into_its_input_and_saves_it_as_the_result() {
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
r = F.relu(h, inplace=True)
assert r is h
# Nothing is allocated: the result is the input.
assert torch.cuda.memory_allocated() == base
assert h.grad_fn.name() == 'ReluBackward0'
loss = r.sum()
del h, r
# ReluBackward0 saves the written tensor's data: its bytes outlive the names.
assert torch.cuda.memory_allocated() == base + 512
loss.backward()
# Saved tensors released; the weight (1 MiB) and bias (4 KiB) gradients appear.
assert torch.cuda.memory_allocated() == base - A + 512 + 1024 * K + 4 * K
"
    ));
}

#[test]
fn out_of_place_relu_leaves_its_input_to_die() {
    // The contrast of the test above: `relu` allocates its result, and `h` (saved by nobody,
    // AddmmBackward0 saves x and the weight) dies with its name.
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
r = F.relu(h)
assert torch.cuda.memory_allocated() == base + A
del h
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn every_spelling_of_in_place_relu_records_relu_backward_without_allocating() {
    ok(&format!(
        "{PRELUDE}relu = nn.ReLU(inplace=True)
for f in (lambda t: torch.relu_(t), lambda t: F.relu_(t), lambda t: t.relu_(), lambda t: relu(t), lambda t: F.relu(t, True)):
    h = lin(x)
    base = torch.cuda.memory_allocated()
    r = f(h)
    assert r is h
    assert torch.cuda.memory_allocated() == base
    assert r.grad_fn.name() == 'ReluBackward0'
    del h, r
"
    ));
}

#[test]
fn sequential_with_in_place_relu_peaks_lower_by_the_activation_less_the_next_output() {
    // Sequential(Linear(256, 1024), ReLU, Linear(1024, 1)) on a [64, 256] input.
    // inplace=False: while relu runs, its input h and its result r are both alive: the peak
    // is base + 2A; then h dies and the last layer adds its [64, 1] output (512 bytes).
    // inplace=True: no second activation; the peak is base + A + 512. Same bytes after the
    // forward (r, saved by ReluBackward0 and by the last AddmmBackward0, plus the output).
    ok(&format!(
        "{PRELUDE}peaks = []
ends = []
for inplace in (False, True):
    model = nn.Sequential(nn.Linear(256, 1024, device='cuda'), nn.ReLU(inplace=inplace), nn.Linear(1024, 1, device='cuda'))
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    y = model(x)
    peaks.append(torch.cuda.max_memory_allocated() - base)
    ends.append(torch.cuda.memory_allocated() - base)
    y.sum().backward()
    del model, y
assert peaks[0] == 2 * A, peaks
assert peaks[1] == A + 512, peaks
assert peaks[0] - peaks[1] == A - 512
assert ends[0] == ends[1] == A + 512, ends
"
    ));
}

#[test]
fn in_place_relu_over_a_saved_result_fails_at_backward() {
    // SigmoidBackward0 saves its result; relu_ bumps that tensor's version.
    let e = fails(&format!(
        "{PRELUDE}s = torch.sigmoid(lin(x))
F.relu(s, inplace=True).sum().backward()
"
    ));
    assert!(
        e.contains("modified by an inplace operation") && e.contains("is at version 1"),
        "{e}"
    );
}

#[test]
fn in_place_relu_on_a_leaf_that_requires_grad_is_an_error_but_not_under_no_grad() {
    let e = fails(
        "w = torch.empty(8, device='cuda', requires_grad=True)\ntorch.nn.functional.relu(w, inplace=True)\n",
    );
    assert!(e.contains("a leaf Variable that requires grad"), "{e}");
    ok("w = torch.empty(8, device='cuda', requires_grad=True)
with torch.no_grad():
    r = torch.relu_(w)
assert r is w and w.grad_fn is None
");
}

#[test]
fn leaky_relu_in_place_records_leaky_relu_backward1_and_allocates_nothing() {
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
r = F.leaky_relu(h, 0.2, inplace=True)
assert r is h and torch.cuda.memory_allocated() == base
assert r.grad_fn.name() == 'LeakyReluBackward1'
r2 = F.leaky_relu(lin(x), negative_slope=0.1)
assert r2.grad_fn.name() == 'LeakyReluBackward0'
"
    ));
}

#[test]
fn silu_in_place_saves_a_copy_of_its_input_taken_before_the_write() {
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
r = F.silu(h, inplace=True)
assert r is h
# `original_self`: a clone of h before the write, saved by SiluBackward0.
assert torch.cuda.memory_allocated() == base + A
assert r.grad_fn.name() == 'SiluBackward0'
with torch.no_grad():
    F.silu(h, inplace=True)
assert torch.cuda.memory_allocated() == base + A
"
    ));
}

#[test]
fn dropout_in_place_allocates_a_noise_tensor_that_mul_backward_keeps() {
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
r = F.dropout(h, 0.5, True, True)
assert r is h
# The noise is like the input (float32, not the fused kernel's bool mask).
assert torch.cuda.memory_allocated() == base + A
assert r.grad_fn.name() == 'MulBackward0'
loss = r.sum()
loss.backward()
# Backward released the noise; the loss and the weight and bias gradients remain.
assert torch.cuda.memory_allocated() == base + 512 + 1024 * K + 4 * K
drop = nn.Dropout(p=0.25, inplace=True)
h2 = lin(x)
before = torch.cuda.memory_allocated()
assert drop(h2) is h2
assert torch.cuda.memory_allocated() == before + A
drop.eval()
assert drop(h2) is h2
assert torch.cuda.memory_allocated() == before + A
"
    ));
}

#[test]
fn dropout_in_place_frees_its_noise_at_once_without_a_graph_and_uses_a_scalar_for_p_one() {
    ok(&format!(
        "{PRELUDE}h = lin(x)
base = torch.cuda.memory_allocated()
with torch.no_grad():
    assert F.dropout(h, p=0.5, inplace=True) is h
assert torch.cuda.memory_allocated() == base
# p == 1 multiplies by a 0-dim zero (512 bytes), which MulBackward0 keeps.
F.dropout(h, p=1.0, inplace=True)
assert torch.cuda.memory_allocated() == base + 512
assert h.grad_fn.name() == 'MulBackward0'
"
    ));
}
