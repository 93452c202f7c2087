//! Masks of `nn.MultiheadAttention` and `nn.TransformerEncoder(Layer)`, stated as
//! `memory_allocated()` / `max_memory_allocated()` assertions inside workloads.
//!
//! No PyTorch is installed here: the figures are derived by hand from
//! `torch/nn/modules/activation.py` (`MultiheadAttention.forward` canonicalises both masks,
//! so a boolean mask's float copy lives for the module call), `torch/nn/functional.py`
//! (`_canonical_mask`: `zeros_like(mask, dtype=query.dtype).masked_fill_(...)`;
//! `multi_head_attention_forward`: the `is_causal` rules, a 2-d `attn_mask` unsqueezed, the
//! key padding mask `view(N, 1, 1, S).expand(-1, h, -1, -1).reshape(N·h, 1, S)` (a copy) and
//! merged with `attn_mask + key_padding_mask`, `baddbmm` with a mask) and
//! `aten/src/ATen/native/transformers/attention.cpp` (the math path's causal mask). The
//! caching allocator rounds every block up to 512 bytes.

mod workload_runner;
use workload_runner::{fails, ok};

/// `L = S = 128`, `N = 2`, `E = 256`, 4 heads: `X` is one `[L, N, E]` float32 tensor
/// (256 KiB), `W` one `[N·h, L, S]` weight matrix (512 KiB), `LS` one float `[L, S]` mask
/// (64 KiB), `KP` the float `[N, S]` key padding mask (1 KiB), `KH` its per-head copy
/// `[N·h, 1, S]` (4 KiB).
const MHA: &str = "K = 1024
nn = torch.nn
X = 128 * 2 * 256 * 4
W = 2 * 4 * 128 * 128 * 4
LS = 128 * 128 * 4
KP = 2 * 128 * 4
KH = 8 * 128 * 4
";

#[test]
fn boolean_masks_with_weights_are_converted_merged_and_freed_with_the_call() {
    // Without masks (see torch_attention.rs) the peak is the end: 6X + W + W/4. With a bool
    // attn_mask [L, S] and a bool key_padding_mask [N, S]: their float copies (LS + KP) from
    // the start, the per-head copy (KH) and the merged [N·h, L, S] mask (W) from after the
    // in-projection, all held to the end of the call; the scores come from baddbmm.
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
am = torch.zeros(128, 128, dtype=torch.bool, device='cuda')
kpm = torch.zeros(2, 128, dtype=torch.bool, device='cuda')
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, weights = mha(x, x, x, key_padding_mask=kpm, attn_mask=am)
assert torch.cuda.memory_allocated() == before + 6 * X + W + W // 4
assert torch.cuda.max_memory_allocated() == before + 6 * X + W + W // 4 + LS + KP + KH + W
out.sum().backward()
assert mha.in_proj_weight.grad is not None
"
    ));
}

#[test]
fn a_float_attn_mask_alone_is_used_as_given() {
    // No conversion and nothing merged: the peak is the unmasked one.
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
am = torch.zeros(8, 128, 128, device='cuda')
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, weights = mha(x, x, x, attn_mask=am)
assert torch.cuda.max_memory_allocated() == before + 6 * X + W + W // 4
"
    ));
}

#[test]
fn a_key_padding_mask_alone_goes_to_sdpa_as_a_per_head_view() {
    // need_weights=False (the torch_attention.rs case: peak X + 5X + 2W, end 8X + W): the
    // bool [N, S] mask's float copy (KP) and its per-head copy (KH), viewed [N, h, 1, S] for
    // SDPA, which adds it in place.
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, batch_first=True, device='cuda')
x = torch.empty(2, 128, 256, device='cuda', requires_grad=True)
kpm = torch.zeros(2, 128, dtype=torch.bool, device='cuda')
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, weights = mha(x, x, x, key_padding_mask=kpm, need_weights=False)
assert weights is None
assert torch.cuda.memory_allocated() == before + 8 * X + W
assert torch.cuda.max_memory_allocated() == before + 6 * X + 2 * W + KP + KH
"
    ));
}

#[test]
fn is_causal_without_a_key_padding_mask_drops_the_mask_for_sdpas_causal_path() {
    // is_causal with a float [L, S] mask and need_weights=False: the mask is dropped and the
    // math path builds its own float [L, S] causal mask (LS) for the call.
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, batch_first=True, device='cuda')
x = torch.empty(2, 128, 256, device='cuda', requires_grad=True)
am = torch.zeros(128, 128, device='cuda')
before = torch.cuda.memory_allocated()
peaks = []
for causal in (False, True):
    torch.cuda.reset_peak_memory_stats()
    out, _ = mha(x, x, x, attn_mask=am, need_weights=False, is_causal=causal)
    peaks.append(torch.cuda.max_memory_allocated() - before)
    del out
assert peaks[0] == 6 * X + 2 * W, peaks
assert peaks[1] == 6 * X + 2 * W + LS, peaks
"
    ));
}

#[test]
fn mask_errors_are_pytorchs() {
    let setup = "mha = torch.nn.MultiheadAttention(16, 2)\nx = torch.empty(5, 3, 16)\n";
    let e = fails(&format!("{setup}mha(x, x, x, is_causal=True)\n"));
    assert!(
        e.contains("Need attn_mask if specifying the is_causal hint"),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}mha(x, x, x, attn_mask=torch.zeros(4, 5))\n"
    ));
    assert!(
        e.contains("The shape of the 2D attn_mask is torch.Size([4, 5]), but should be (5, 5)."),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}mha(x, x, x, attn_mask=torch.zeros(5, 5, dtype=torch.long))\n"
    ));
    assert!(
        e.contains("only bool and floating types of attn_mask are supported"),
        "{e}"
    );
    let e = fails(&format!(
        "{setup}mha(x, x, x, key_padding_mask=torch.zeros(5, 3, dtype=torch.bool))\n"
    ));
    assert!(
        e.contains("expecting key_padding_mask shape of (3, 5)"),
        "{e}"
    );
}

#[test]
fn encoder_layer_masks_live_for_the_forward_only() {
    ok("nn = torch.nn
layer = nn.TransformerEncoderLayer(256, 4, 512, 0.0, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
kpm = torch.zeros(2, 128, dtype=torch.bool, device='cuda')
causal = torch.zeros(128, 128, device='cuda')
before = torch.cuda.memory_allocated()
y = layer(x)
plain = torch.cuda.memory_allocated() - before
del y
y = layer(x, src_mask=causal, src_key_padding_mask=kpm)
# The masks (converted, per head, merged) are gone once the forward returns.
assert torch.cuda.memory_allocated() - before == plain
del y
y = layer(x, causal, is_causal=True)
assert torch.cuda.memory_allocated() - before == plain
");
}

#[test]
fn encoder_passes_its_mask_to_every_layer_and_needs_one_for_is_causal() {
    ok("nn = torch.nn
layer = nn.TransformerEncoderLayer(64, 4, 128, 0.0, batch_first=True, device='cuda')
enc = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
x = torch.empty(2, 32, 64, device='cuda', requires_grad=True)
mask = torch.zeros(32, 32, device='cuda')
before = torch.cuda.memory_allocated()
y = enc(x)
plain = torch.cuda.memory_allocated() - before
del y
y = enc(x, mask=mask, src_key_padding_mask=torch.zeros(2, 32, dtype=torch.bool, device='cuda'))
assert torch.cuda.memory_allocated() - before == plain
");
    let e = fails(
        "layer = torch.nn.TransformerEncoderLayer(16, 2, 32, 0.0)
enc = torch.nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
enc(torch.empty(5, 3, 16), is_causal=True)
",
    );
    assert!(
        e.contains("Need attn_mask if specifying the is_causal hint"),
        "{e}"
    );
}
