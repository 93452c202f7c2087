//! Attention in the workload model: `F.scaled_dot_product_attention`'s math path, op by op,
//! stated as `memory_allocated()` / `max_memory_allocated()` assertions inside workloads.

mod workload_runner;
use workload_runner::{ok, run};

/// `q`, `k`, `v`: `[B=2, h=4, L=S=128, E=64]` float32 on the GPU; `Q` is one of them
/// (256 KiB), `A` one `[2, 4, 128, 128]` score matrix (512 KiB), `LS` one float `[128, 128]`
/// mask (64 KiB).
const PRELUDE: &str = "K = 1024
F = torch.nn.functional
Q = 2 * 4 * 128 * 64 * 4
A = 2 * 4 * 128 * 128 * 4
LS = 128 * 128 * 4
q = torch.empty(2, 4, 128, 64, device='cuda', requires_grad=True)
k = torch.empty(2, 4, 128, 64, device='cuda', requires_grad=True)
v = torch.empty(2, 4, 128, 64, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
";

#[test]
fn sdpa_saves_both_scaled_operands_and_the_softmax_and_frees_the_scores() {
    // Saved: q * sqrt(scale) (Q), k^T * sqrt(scale) (Q), the softmax (A); returned: the
    // output (Q). Peak: both scaled operands, the scores and the softmax, just before the
    // scores are freed.
    ok(&format!(
        "{PRELUDE}out = F.scaled_dot_product_attention(q, k, v)
assert tuple(out.shape) == (2, 4, 128, 64)
assert out.grad_fn is not None
assert torch.cuda.memory_allocated() == before + 3 * Q + A
assert torch.cuda.max_memory_allocated() == before + 2 * Q + 2 * A
out.sum().backward()
assert torch.cuda.memory_allocated() == before + Q + 3 * Q
assert q.grad is not None and k.grad is not None and v.grad is not None
"
    ));
}

#[test]
fn sdpa_dropout_keeps_its_output_and_a_one_byte_mask() {
    // dropout_p > 0 always drops (SDPA has no training flag): a new [L, S] output (saved by
    // the second matmul) and a bool mask (A / 4), the softmax still saved.
    ok(&format!(
        "{PRELUDE}out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.1)
assert torch.cuda.memory_allocated() == before + 3 * Q + 2 * A + A // 4
assert torch.cuda.max_memory_allocated() == before + 3 * Q + 2 * A + A // 4
"
    ));
}

#[test]
fn sdpa_without_grad_frees_each_intermediate_when_cpp_drops_it() {
    // The scaled key is a temporary of the first matmul's expression; the scores go when
    // the softmax replaces them; the scaled query lives until the call returns. Peak: the
    // scaled query, the scores and the softmax.
    ok(&format!(
        "{PRELUDE}with torch.no_grad():
    out = F.scaled_dot_product_attention(q, k, v)
assert out.grad_fn is None
assert torch.cuda.memory_allocated() == before + Q
assert torch.cuda.max_memory_allocated() == before + Q + 2 * A
"
    ));
}

#[test]
fn sdpa_causal_and_boolean_masks_are_float_masks_for_the_call() {
    // is_causal builds ones(L, S).tril() (bool) and converts it to a float [L, S] mask
    // that lives for the call; a boolean attn_mask is converted the same way; a float
    // mask is added as it is. None of them is saved.
    ok(&format!(
        "{PRELUDE}out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
assert torch.cuda.memory_allocated() == before + 3 * Q + A
assert torch.cuda.max_memory_allocated() == before + 2 * Q + 2 * A + LS
del out
keep = torch.ones(128, 128, dtype=torch.bool, device='cuda')
additive = torch.zeros(128, 128, device='cuda')
base = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out = F.scaled_dot_product_attention(q, k, v, attn_mask=keep)
assert torch.cuda.memory_allocated() == base + 3 * Q + A
assert torch.cuda.max_memory_allocated() == base + 2 * Q + 2 * A + LS
del out
torch.cuda.reset_peak_memory_stats()
out = F.scaled_dot_product_attention(q, k, v, additive, 0.0, False, scale=0.5)
assert torch.cuda.max_memory_allocated() == base + 2 * Q + 2 * A
"
    ));
}

#[test]
fn sdpa_checks_its_arguments_as_pytorch_does() {
    let e = run("q = torch.empty(2, 8, 4)\nm = torch.zeros(8, 8)\nF = torch.nn.functional\no = F.scaled_dot_product_attention(q, q, q, attn_mask=m, is_causal=True)\n").unwrap_err();
    assert!(
        e.contains("Explicit attn_mask should not be set when is_causal=True"),
        "{e}"
    );
    let e = run("q = torch.empty(2, 8, 4)\nF = torch.nn.functional\no = F.scaled_dot_product_attention(q, q, q, dropout_p=1.5)\n").unwrap_err();
    assert!(
        e.contains("dropout probability has to be between 0 and 1"),
        "{e}"
    );
    let e = run("q = torch.empty(2, 8, 4)\nF = torch.nn.functional\no = F.scaled_dot_product_attention(q, q, q, enable_gqa=True)\n").unwrap_err();
    assert!(e.contains("`enable_gqa=`"), "{e}");
    let e = run("q = torch.empty(2, 8, 4)\nF = torch.nn.functional\no = F.scaled_dot_product_attention(q, q, q, window=3)\n").unwrap_err();
    assert!(e.contains("unexpected keyword argument 'window'"), "{e}");
    let e = run("q = torch.empty(2, 8, 4)\nk = torch.empty(2, 8, 5)\nF = torch.nn.functional\no = F.scaled_dot_product_attention(q, k, k)\n").unwrap_err();
    assert!(e.contains("do not match"), "{e}");
}
