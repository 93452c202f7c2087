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

/// `L = S = 128`, `N = 2`, `E = 256`, 4 heads: `X` is one `[L, N, E]` float32 tensor
/// (256 KiB), `W` one `[N·h, L, S]` weight matrix (512 KiB).
const MHA: &str = "K = 1024
nn = torch.nn
X = 128 * 2 * 256 * 4
W = 2 * 4 * 128 * 128 * 4
";

#[test]
fn multihead_attention_registers_pytorchs_parameters() {
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
names = [n for n, _ in mha.named_parameters()]
assert names == ['in_proj_weight', 'in_proj_bias', 'out_proj.weight', 'out_proj.bias'], names
assert torch.cuda.memory_allocated() == 768 * K + 3 * K + 256 * K + K
cross = nn.MultiheadAttention(256, 4, kdim=64, vdim=32, bias=False)
names = [n for n, _ in cross.named_parameters()]
assert names == ['q_proj_weight', 'k_proj_weight', 'v_proj_weight', 'out_proj.weight'], names
assert tuple(cross.k_proj_weight.shape) == (256, 64) and cross.in_proj_weight is None
"
    ));
    let e = run("m = torch.nn.MultiheadAttention(10, 3)\n").unwrap_err();
    assert!(
        e.contains("embed_dim must be divisible by num_heads"),
        "{e}"
    );
    let e = run("m = torch.nn.MultiheadAttention(8, 2, dropout_p=0.1)\n").unwrap_err();
    assert!(e.contains("unexpected keyword argument 'dropout_p'"), "{e}");
}

#[test]
fn multihead_self_attention_with_weights_keeps_the_packed_projection_and_the_softmax() {
    // in-projection [L N, 3E] (3X) copied by `.contiguous()` (3X kept: q, k, v are its
    // views, saved by the bmms), the first freed; q scaled (X, saved); scores (W) replaced
    // by the softmax (W, saved); bmm output copied by `transpose(0, 1).contiguous()` (X,
    // saved by out_proj) and freed; the output (X); the head-averaged weights (W / 4).
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, weights = mha(x, x, x)
assert tuple(out.shape) == (128, 2, 256) and tuple(weights.shape) == (2, 128, 128)
assert torch.cuda.memory_allocated() == before + 6 * X + W + W // 4
assert torch.cuda.max_memory_allocated() == before + 6 * X + W + W // 4
del weights
out, weights = mha(x, x, x, average_attn_weights=False)
assert tuple(weights.shape) == (2, 4, 128, 128)
del out, weights
assert torch.cuda.memory_allocated() == before
out, _ = mha(x, x, x)
out.sum().backward()
assert mha.in_proj_weight.grad is not None and mha.out_proj.weight.grad is not None
"
    ));
}

#[test]
fn multihead_attention_without_weights_runs_sdpa_and_returns_none() {
    // The packed copy (3X), then SDPA's math path: scaled q and k (X each, saved), scores
    // and softmax (W saved), its output (X) copied by permute().contiguous() (X, saved)
    // and freed; the output (X). The peak is SDPA's, before the scores are freed.
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, batch_first=True, device='cuda')
x = torch.empty(2, 128, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, weights = mha(x, x, x, need_weights=False)
assert weights is None and tuple(out.shape) == (2, 128, 256)
# batch_first: the projection's reshape copies the transposed input (X, saved).
assert torch.cuda.memory_allocated() == before + X + 7 * X + W
assert torch.cuda.max_memory_allocated() == before + X + 5 * X + 2 * W
"
    ));
}

#[test]
fn multihead_attention_dropout_follows_the_training_mode() {
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, dropout=0.1, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
out, weights = mha(x, x, x)
assert torch.cuda.memory_allocated() == before + 6 * X + 2 * W + W // 4 + W // 4
del out, weights
mha.eval()
out, weights = mha(x, x, x)
assert torch.cuda.memory_allocated() == before + 6 * X + W + W // 4
del out, weights
with torch.no_grad():
    out, weights = mha(x, x, x)
assert torch.cuda.memory_allocated() == before + X + W // 4
"
    ));
}

#[test]
fn multihead_cross_attention_projects_query_and_packed_key_value_separately() {
    // query [L=64, N, E] and key is value [S=128, N, E]: q projected alone ([L N, E]: a
    // local until the call returns, saved by nothing), k and v packed ([S N, 2E], copied
    // by `.contiguous()`, the copy kept by the bmms).
    ok(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
q = torch.empty(64, 2, 256, device='cuda', requires_grad=True)
kv = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
out, weights = mha(q, kv, kv)
assert tuple(out.shape) == (64, 2, 256) and tuple(weights.shape) == (2, 64, 128)
# Kept: scaled q X/2, kv copy 2X, softmax W/2, transpose copy X/2, output X/2,
# averaged weights W/8 (the q projection, X/2, is freed at return).
assert torch.cuda.memory_allocated() == before + X // 2 + 2 * X + W // 2 + X // 2 + X // 2 + W // 8
"
    ));
    // Masks are modelled (see torch_attention_masks.rs).
    ok(
        "m = torch.nn.MultiheadAttention(8, 2)\nx = torch.zeros(3, 1, 8)\nmask = torch.zeros(3, 3)\no = m(x, x, x, attn_mask=mask)\n",
    );
}

#[test]
fn transformer_encoder_layer_registers_its_submodules_and_the_encoder_copies_them() {
    // d_model 256, 4 heads, feed-forward 1024: attention 1028 KiB, linear1 1028 KiB,
    // linear2 1025 KiB, two LayerNorms 4 KiB.
    ok(&format!(
        "{MHA}layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, device='cuda')
names = [n for n, _ in layer.named_parameters()]
assert names == ['self_attn.in_proj_weight', 'self_attn.in_proj_bias', 'self_attn.out_proj.weight', 'self_attn.out_proj.bias', 'linear1.weight', 'linear1.bias', 'linear2.weight', 'linear2.bias', 'norm1.weight', 'norm1.bias', 'norm2.weight', 'norm2.bias'], names
one = torch.cuda.memory_allocated()
assert one == 3085 * K
encoder = nn.TransformerEncoder(layer, 3)
assert torch.cuda.memory_allocated() == 4 * one
assert len(list(encoder.parameters())) == 36
assert encoder.layers[0].linear1.weight is not layer.linear1.weight
"
    ));
    let e = run("l = torch.nn.TransformerEncoderLayer(8, 2, activation='tanh')\n").unwrap_err();
    assert!(
        e.contains("activation should be relu/gelu, not tanh"),
        "{e}"
    );
}

#[test]
fn transformer_encoder_layer_keeps_what_its_submodules_save() {
    // Post-norm, dropout 0, L = 128, N = 2, E = 256, feed-forward 1024 (4X). Kept: the
    // attention's packed copy, scaled q and k, softmax and transpose copy (6X + W); the
    // residual sum (X, saved by norm1); norm1's output (X) and its mean and rstd (1 KiB
    // each); linear1's output replaced by relu's (4X, saved); the second residual sum (X)
    // and norm2's output (X) with its statistics. The attention output and linear2's
    // output are freed after the additions (AddBackward0 saves nothing).
    ok(&format!(
        "{MHA}layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0, device='cuda')
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
y = layer(x)
assert tuple(y.shape) == (128, 2, 256)
assert torch.cuda.memory_allocated() == before + 14 * X + W + 4 * K
y.sum().backward()
assert layer.linear1.weight.grad is not None and layer.self_attn.in_proj_weight.grad is not None
"
    ));
}

#[test]
fn transformer_encoder_layer_matches_its_python_forward_in_every_arrangement() {
    // PyTorch's forward, written out with the layer's own submodules, keeps the same bytes.
    for (norm_first, activation) in [("False", "relu"), ("True", "gelu")] {
        ok(&format!(
            "{MHA}layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=512, dropout=0.1, activation='{activation}', norm_first={norm_first}, batch_first=True, device='cuda')
act = torch.relu if '{activation}' == 'relu' else torch.nn.functional.gelu
def sa(x):
    return layer.dropout1(layer.self_attn(x, x, x, need_weights=False)[0])
def ff(x):
    return layer.dropout2(layer.linear2(layer.dropout(act(layer.linear1(x)))))
def manual(x):
    if layer.norm_first:
        x = x + sa(layer.norm1(x))
        x = x + ff(layer.norm2(x))
    else:
        x = layer.norm1(x + sa(x))
        x = layer.norm2(x + ff(x))
    return x
x = torch.empty(2, 128, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
y = manual(x)
expected = torch.cuda.memory_allocated() - before
del y
assert torch.cuda.memory_allocated() == before
y = layer(x)
assert torch.cuda.memory_allocated() - before == expected
del y
with torch.no_grad():
    y = layer(x)
assert torch.cuda.memory_allocated() - before == X
"
        ));
    }
}

#[test]
fn transformer_encoder_runs_its_layers_in_order_then_the_norm() {
    ok(&format!(
        "{MHA}layer = nn.TransformerEncoderLayer(256, 4, dim_feedforward=1024, dropout=0.0, device='cuda')
encoder = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(256, device='cuda'))
x = torch.empty(128, 2, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
y = layer(x)
one = torch.cuda.memory_allocated() - before
del y
y = encoder(x)
# Each layer keeps what one layer keeps; the final norm keeps its output and statistics
# and saves the last layer's output (already counted).
assert torch.cuda.memory_allocated() - before == 2 * one + X + 2 * K
"
    ));
    // Masks are modelled (see torch_attention_masks.rs).
    ok(
        "l = torch.nn.TransformerEncoderLayer(8, 2)\nx = torch.zeros(3, 1, 8)\ny = l(x, src_key_padding_mask=torch.zeros(1, 3))\n",
    );
}

#[test]
fn multihead_attention_takes_unbatched_inputs_as_a_batch_of_one() {
    // multi_head_attention_forward on 2-D inputs: query/key/value `unsqueeze(1)` (views),
    // the batched path with N = 1 (`batch_first` ignored, as PyTorch's module does for
    // unbatched input), then `attn_output.squeeze(1)` and `attn_output_weights.squeeze(0)`
    // (views): the bytes are those of the batched case with N = 1.
    ok(&format!(
        "{MHA}X1 = X // 2
W1 = W // 2
for batch_first in (False, True):
    mha = nn.MultiheadAttention(256, 4, device='cuda', batch_first=batch_first)
    x = torch.empty(128, 256, device='cuda', requires_grad=True)
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    out, weights = mha(x, x, x)
    assert tuple(out.shape) == (128, 256) and tuple(weights.shape) == (128, 128)
    assert torch.cuda.memory_allocated() == before + 6 * X1 + W1 + W1 // 4
    del weights
    out2, weights = mha(x, x, x, average_attn_weights=False)
    assert tuple(weights.shape) == (4, 128, 128)
    del out2, weights
    out.sum().backward()
    assert tuple(x.grad.shape) == (128, 256)
    assert mha.in_proj_weight.grad is not None
    del out, x, mha
"
    ));
    let e = run(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
q = torch.empty(128, 256, device='cuda')
k = torch.empty(128, 1, 256, device='cuda')
mha(q, k, k)
"
    ))
    .expect_err("a 3-D key with a 2-D query is refused");
    assert!(
        e.contains("For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found 3-D and 3-D tensors respectively"),
        "{e}"
    );
    let e = run(&format!(
        "{MHA}mha = nn.MultiheadAttention(256, 4, device='cuda')
q = torch.empty(2, 128, 1, 256, device='cuda')
mha(q, q, q)
"
    ))
    .expect_err("a 4-D query is refused");
    assert!(
        e.contains(
            "query should be unbatched 2D or batched 3D tensor but received 4-D query tensor"
        ),
        "{e}"
    );
}
