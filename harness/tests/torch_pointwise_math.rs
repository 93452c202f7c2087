//! The pointwise math, flips and interleaving of `python/pointwise_math.rs`: what each
//! node keeps, result dtypes, and `repeat_interleave`'s temporaries and saved index. No
//! PyTorch is installed here: every figure is worked out by hand from
//! `tools/autograd/derivatives.yaml` (what each node saves) and `aten/src/ATen/native/
//! Repeat.cpp`/`Repeat.h` (what `repeat_interleave` allocates); the allocator rounds blocks
//! up to 512 bytes, and a `[1024, 1024]` float32 is 4 MiB.

mod workload_runner;
use workload_runner::{fails, ok};

/// `K`, `M`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

/// Each unary op keeps what its formula reads: with `h = x * 2` (its `MulBackward0` keeps
/// only the number) and the op's result both dropped while `z = y.sum()` keeps the graph,
/// 4 MiB (`x`) + 4 MiB per kept tensor + 512 bytes (`z`) stay allocated.
#[test]
fn unary_ops_keep_their_input_their_result_or_nothing() {
    // (call, node, MiB kept beside x: the input h and/or the result y).
    let cases: &[(&str, &str, u32)] = &[
        ("h.log10()", "Log10Backward0", 4),
        ("torch.log2(h)", "Log2Backward0", 4),
        ("h.log1p()", "Log1PBackward0", 4),
        ("torch.expm1(h)", "Expm1Backward0", 4),
        ("h.exp2()", "Exp2Backward0", 4),
        ("torch.rsqrt(h)", "RsqrtBackward0", 4),
        ("h.reciprocal()", "ReciprocalBackward0", 4),
        ("h.sign()", "SignBackward0", 0),
        ("torch.floor(h)", "FloorBackward0", 0),
        ("h.ceil()", "CeilBackward0", 0),
        ("h.round()", "RoundBackward0", 0),
        ("torch.round(h, decimals=2)", "RoundBackward1", 0),
        ("h.trunc()", "TruncBackward0", 0),
        ("h.clamp_min(0.5)", "ClampMinBackward0", 4),
        ("torch.clamp_max(h, max=0.5)", "ClampMaxBackward0", 4),
        ("h.flip(0)", "FlipBackward0", 0),
        ("torch.flip(h, dims=(0, 1))", "FlipBackward0", 0),
        ("h.roll(1, 0)", "RollBackward0", 0),
        (
            "torch.roll(h, shifts=(1, 2), dims=(0, 1))",
            "RollBackward0",
            0,
        ),
        ("h.tril()", "TrilBackward0", 0),
        ("torch.triu(h, diagonal=1)", "TriuBackward0", 0),
        // cumprod_backward reads self and the result.
        ("h.cumprod(1)", "CumprodBackward0", 8),
    ];
    for (call, node, kept) in cases {
        ok(&format!(
            "{PRELUDE}h = x * 2.0
y = {call}
assert y.grad_fn.name() == '{node}', y.grad_fn.name()
assert tuple(y.shape) == (1024, 1024)
z = y.sum()
del h
del y
assert torch.cuda.memory_allocated() == 4 * M + {kept} * M + 512, '{call}'
z.backward()
# The graph is released: x and x.grad stay, with z.
assert torch.cuda.memory_allocated() == 8 * M + 512, '{call}'
"
        ));
    }
}

#[test]
fn integer_inputs_give_float_results_and_cumprod_accumulates_in_int64() {
    ok("i = torch.zeros(1024, dtype=torch.int32, device='cuda')
assert i.log10().dtype == torch.float32
assert torch.rsqrt(i).dtype == torch.float32
assert i.floor().dtype == torch.int32
assert i.cumprod(0).dtype == torch.int64
assert i.cumprod(0, dtype=torch.float16).dtype == torch.float16
assert i.flip(0).dtype == torch.int32
# No operand requires grad: no node.
assert i.log10().grad_fn is None
");
}

#[test]
fn binary_ops_keep_the_operands_their_formulas_read() {
    // a requires grad, b does not; ha = a * 2 and hb = b * 2 are dropped after the op. The
    // total is a, b, y (a saved result is y's own storage), w where there is one, and
    // whichever of ha, hb the node keeps.
    let w = "w = torch.empty(1024, 1024, device='cuda')\n";
    let cases: &[(&str, &str, &str, u32)] = &[
        // hypot: self (it requires grad) and the result; other only if it required grad.
        ("torch.hypot(ha, hb)", "HypotBackward0", "", 16),
        // atan2, logaddexp: both operands.
        ("torch.atan2(ha, hb)", "Atan2Backward0", "", 20),
        ("ha.logaddexp(hb)", "LogaddexpBackward0", "", 20),
        // lerp with a number weight: nothing.
        ("torch.lerp(ha, hb, 0.25)", "LerpBackward0", "", 12),
        // lerp with a tensor weight w (no grad): w is kept (self requires grad); ha and hb
        // only for w's gradient, which nobody needs. a, b, w, y.
        ("ha.lerp(hb, w)", "LerpBackward1", w, 16),
    ];
    for (call, node, setup, total) in cases {
        ok(&format!(
            "M = 1024 * 1024
a = torch.empty(1024, 1024, device='cuda', requires_grad=True)
b = torch.empty(1024, 1024, device='cuda')
{setup}ha = a * 2.0
hb = b * 2.0
y = {call}
assert y.grad_fn.name() == '{node}', y.grad_fn.name()
assert tuple(y.shape) == (1024, 1024)
del ha
del hb
assert torch.cuda.memory_allocated() == {total} * M, '{call}'
"
        ));
    }
}

#[test]
fn hypot_keeps_only_the_operand_that_requires_grad() {
    // HypotBackward0 keeps self if self requires grad, other if other does, and the result
    // (y's storage): a, b, y and ha = 16 MiB; hb goes with its name.
    ok("M = 1024 * 1024
a = torch.empty(1024, 1024, device='cuda', requires_grad=True)
b = torch.empty(1024, 1024, device='cuda')
ha = a * 2.0
hb = b * 2.0
y = torch.hypot(ha, hb)
del ha
del hb
assert torch.cuda.memory_allocated() == 16 * M
# Both require grad: both kept.
c = torch.empty(1024, 1024, device='cuda', requires_grad=True)
hc = c * 2.0
ha = a * 2.0
y2 = torch.hypot(ha, hc)
del ha
del hc
assert torch.cuda.memory_allocated() == 16 * M + 4 * M + 4 * M + 4 * M + 4 * M
");
}

#[test]
fn outer_is_a_reshape_times_the_other_vector() {
    // `a.reshape(n, 1) * b`: MulBackward0 keeps the view of a (a's storage) and b; the
    // result is [1024, 1024] float32.
    ok("K = 1024
M = 1024 * 1024
a = torch.empty(1024, device='cuda', requires_grad=True)
b = torch.empty(1024, device='cuda', requires_grad=True)
y = torch.outer(a * 2.0, b * 2.0)
assert tuple(y.shape) == (1024, 1024)
assert y.grad_fn.name() == 'MulBackward0'
# a, b (4 KiB each), both doubled vectors (kept by the node), y.
assert torch.cuda.memory_allocated() == 16 * K + 4 * M
y.sum().backward()
assert torch.cuda.memory_allocated() == 16 * K + 4 * M
");
    let e = fails("a = torch.empty(4, 4, device='cuda')\ntorch.outer(a, a)\n");
    assert!(e.contains("outer: Expected 1-D argument"), "{e}");
}

#[test]
fn repeat_interleave_along_a_dim_keeps_its_int64_index() {
    // x.repeat_interleave(2, dim=0): repeats_ (one int64, a 512-byte block), the expanded
    // repeats made contiguous (1024 int64 = 8 KiB) and their cumsum (8 KiB), freed when
    // repeat_interleave_common returns the index (2048 int64 = 16 KiB); then index_select's
    // [2048, 1024] result (8 MiB). Peak: x + repeats_ + index + result.
    ok(&format!(
        "{PRELUDE}torch.cuda.reset_peak_memory_stats()
y = x.repeat_interleave(2, dim=0)
assert tuple(y.shape) == (2048, 1024)
assert y.grad_fn.name() == 'IndexSelectBackward0'
assert torch.cuda.max_memory_allocated() == 12 * M + 16 * K + 512
# The node keeps the index.
assert torch.cuda.memory_allocated() == 12 * M + 16 * K
y.sum().backward()
# index_select_backward: x.grad of x's size; the index goes with the graph.
assert torch.cuda.memory_allocated() == 16 * M
with torch.no_grad():
    w = x.repeat_interleave(3, dim=1)
assert tuple(w.shape) == (1024, 3072)
assert w.grad_fn is None
# No node: the index is freed with the call.
assert torch.cuda.memory_allocated() == 16 * M + 12 * M
"
    ));
}

#[test]
fn repeat_interleave_without_dim_flattens_and_its_index_is_the_peak() {
    // Flattened: n = 1M elements, so the contiguous repeats (8 MiB) and their cumsum
    // (8 MiB) live with the index (2M int64 = 16 MiB): x + 512 + 32 MiB at the peak, more
    // than index_select's moment (x + 512 + index + the 8 MiB result).
    ok(&format!(
        "{PRELUDE}torch.cuda.reset_peak_memory_stats()
y = torch.repeat_interleave(x, repeats=2)
assert tuple(y.shape) == (2 * M,)
assert torch.cuda.max_memory_allocated() == 4 * M + 32 * M + 512
assert torch.cuda.memory_allocated() == 4 * M + 16 * M + 8 * M
"
    ));
}

#[test]
fn repeat_interleave_with_a_tensor_of_repeats_needs_its_output_size() {
    // A length-n tensor of repeats is contiguous already: only its cumsum (8 KiB) and the
    // index (output_size int64s) are made.
    ok(&format!(
        "{PRELUDE}r = torch.ones(1024, dtype=torch.int64, device='cuda')
torch.cuda.reset_peak_memory_stats()
y = x.repeat_interleave(r, dim=0, output_size=3000)
assert tuple(y.shape) == (3000, 1024)
# x, r (8 KiB), index (3000 int64 = 24000 bytes, a 24064-byte block), y.
assert torch.cuda.memory_allocated() == 4 * M + 8 * K + 24064 + 3000 * 4 * K
"
    ));
    let e = fails(&format!(
        "{PRELUDE}r = torch.ones(1024, dtype=torch.int64, device='cuda')\nx.repeat_interleave(r, dim=0)\n"
    ));
    assert!(
        e.contains("unsupported") && e.contains("output_size"),
        "{e}"
    );
    let e = fails(&format!(
        "{PRELUDE}r = torch.ones(7, dtype=torch.int64, device='cuda')\nx.repeat_interleave(r, dim=0, output_size=7)\n"
    ));
    assert!(
        e.contains("repeats must have the same size as input along dim"),
        "{e}"
    );
}

#[test]
fn bad_arguments_are_pytorchs_errors() {
    let e = fails("v = torch.empty(4, device='cuda')\nv.tril()\n");
    assert!(
        e.contains("tril: input tensor must have at least 2 dimensions"),
        "{e}"
    );
    let e = fails("v = torch.empty(4, device='cuda')\nv.flip(1)\n");
    assert!(e.contains("Dimension out of range"), "{e}");
    let e = fails("v = torch.empty(4, device='cuda')\nv.clamp_min(v)\n");
    assert!(e.contains("unsupported") && e.contains("clamp_min"), "{e}");
    let e = fails("torch.log10(3)\n");
    assert!(e.contains("must be Tensor"), "{e}");
    let e = fails("v = torch.empty(4, device='cuda')\nv.repeat_interleave(-1)\n");
    assert!(e.contains("repeats can not be negative"), "{e}");
}
