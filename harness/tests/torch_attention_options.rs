//! `nn.MultiheadAttention(add_bias_kv=True, add_zero_attn=True, kdim=, vdim=)`: the
//! parameters `MultiheadAttention.__init__` (torch/nn/modules/activation.py) creates and the
//! tensors `F.multi_head_attention_forward` (torch/nn/functional.py) allocates for them. No
//! PyTorch is installed; the figures are derived by hand from those sources:
//!
//! - `add_bias_kv`: `bias_k`, `bias_v` = `Parameter(empty(1, 1, E))`; in the forward
//!   `k = cat([k, bias_k.repeat(1, bsz, 1)])` and the same for `v`: one more key.
//! - `add_zero_attn`: after `k`/`v` are split into heads `[N·h, S, hd]`,
//!   `k = cat([k, zeros(N·h, 1, hd)], dim=1)` and the same for `v`: one more key again.
//! - `kdim`/`vdim` ≠ `embed_dim`: `_qkv_same_embed_dim` is False and `q_proj_weight` `[E, E]`,
//!   `k_proj_weight` `[E, kdim]`, `v_proj_weight` `[E, vdim]` replace `in_proj_weight`.
//!
//! Sizes: E = 128 (one float row is 512 bytes, the allocator's smallest block), 2 heads
//! (hd = 64), L = S = 4, N = 1; float32 on the GPU.

mod workload_runner;
use workload_runner::{ok, run};

const PRELUDE: &str = "import torch
from torch import nn
x = torch.zeros(4, 1, 128, device='cuda')
def mem():
    return torch.cuda.memory_allocated()
";

#[test]
fn add_bias_kv_creates_two_one_by_one_by_e_parameters() {
    ok(&format!(
        "{PRELUDE}before = mem()
plain = nn.MultiheadAttention(128, 2, device='cuda')
mid = mem()
biased = nn.MultiheadAttention(128, 2, add_bias_kv=True, device='cuda')
assert plain.bias_k is None and plain.bias_v is None
assert tuple(biased.bias_k.shape) == (1, 1, 128) and biased.bias_v.requires_grad
# Two more parameters of 128 floats: 512 bytes each.
assert (mem() - mid) - (mid - before) == 1024, ((mem() - mid), (mid - before))
assert biased._qkv_same_embed_dim
"
    ));
}

#[test]
fn kdim_and_vdim_give_separate_projection_weights() {
    ok(&format!(
        "{PRELUDE}m = nn.MultiheadAttention(128, 2, kdim=64, vdim=32, device='cuda')
assert not m._qkv_same_embed_dim
assert m.in_proj_weight is None
assert tuple(m.q_proj_weight.shape) == (128, 128)
assert tuple(m.k_proj_weight.shape) == (128, 64)
assert tuple(m.v_proj_weight.shape) == (128, 32)
k = torch.zeros(6, 1, 64, device='cuda')
v = torch.zeros(6, 1, 32, device='cuda')
out, w = m(x, k, v)
assert tuple(out.shape) == (4, 1, 128) and tuple(w.shape) == (1, 4, 6)
"
    ));
}

/// What a forward keeps while its graph lives (the module's parameters require grad),
/// without either option: `q * scale` `[2, 4, 64]` (2048 bytes, saved by the first `bmm`),
/// the packed projection's contiguous copy `[3, 4, 1, 128]` (6144, held through `k` and `v`,
/// views of it saved by the two `bmm`s), the softmax `[2, 4, 4]` (one 512 block), the
/// `transpose(0, 1).contiguous()` copy `[4, 128]` (2048, saved by `out_proj`), and the
/// results: the output (2048) and the averaged weights `[1, 4, 4]` (512): 13312 bytes.
///
/// With one option, `k` and `v` are `cat` results `[2, 5, 64]` (2560 each) saved by the
/// `bmm`s, and nothing saves the projection's copy any more (`q` is only read by `q *
/// scale`): 2048 + 2 * 2560 + 512 + 2048 + 2048 + 512 = 12288. With both, `[2, 6, 64]`
/// (3072 each): 13312. The weights have one key more per option.
#[test]
fn each_option_adds_a_key_and_changes_what_the_graph_keeps() {
    ok(&format!(
        "{PRELUDE}got = []
for bias_kv, zero_attn in [(False, False), (True, False), (False, True), (True, True)]:
    m = nn.MultiheadAttention(128, 2, add_bias_kv=bias_kv, add_zero_attn=zero_attn, device='cuda')
    before = mem()
    out, w = m(x, x, x)
    got.append((tuple(w.shape), mem() - before))
    out.sum().backward()
    del out, w
want = [((1, 4, 4), 13312), ((1, 4, 5), 12288), ((1, 4, 5), 12288), ((1, 4, 6), 13312)]
for g, w in zip(got, want):
    assert g[0] == w[0], f'{{g[0][2]}} keys, expected {{w[0][2]}}'
    assert g[1] == w[1], f'{{g[1]}} bytes kept, expected {{w[1]}}'
"
    ));
}

#[test]
fn the_options_work_on_the_sdpa_path_and_reach_bias_k_in_backward() {
    ok(&format!(
        "{PRELUDE}m = nn.MultiheadAttention(128, 2, add_bias_kv=True, add_zero_attn=True, device='cuda')
out, w = m(x, x, x, need_weights=False)
assert w is None and tuple(out.shape) == (4, 1, 128)
out.sum().backward()
assert m.bias_k.grad is not None and tuple(m.bias_k.grad.shape) == (1, 1, 128)
assert m.bias_v.grad is not None
"
    ));
}

#[test]
fn the_options_with_a_mask_are_refused_as_unsupported() {
    let e = run(&format!(
        "{PRELUDE}m = nn.MultiheadAttention(128, 2, add_zero_attn=True, device='cuda')
mask = torch.zeros(4, 4, device='cuda')
out, w = m(x, x, x, attn_mask=mask)
"
    ))
    .unwrap_err();
    assert!(e.contains("unsupported: nn.MultiheadAttention(add_bias_kv=True / add_zero_attn=True) with attn_mask or key_padding_mask"), "{e}");
}
