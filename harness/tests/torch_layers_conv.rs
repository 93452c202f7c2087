//! `nn.Conv1d`/`nn.Conv2d`, pooling and `nn.Flatten` in the workload model: output shapes
//! from PyTorch's size arithmetic and what each op saves for backward, stated as
//! `memory_allocated()` assertions inside workloads.

mod workload_runner;
use workload_runner::{ok, run};

/// `K`, `M`, `nn`, `F`.
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
";

#[test]
fn conv2d_saves_input_and_weight_until_backward() {
    // x: [32, 64, 32, 32] float32 (8 MiB); output [32, 128, 32, 32] (16 MiB);
    // weight [128, 64, 3, 3] (288 KiB) and bias (one 512-byte block).
    ok(&format!(
        "{PRELUDE}conv = nn.Conv2d(64, 128, 3, padding=1, device='cuda')
assert tuple(conv.weight.shape) == (128, 64, 3, 3)
params = torch.cuda.memory_allocated()
assert params == 288 * K + 512
x = torch.empty(32, 64, 32, 32, device='cuda')
y = conv(x)
assert tuple(y.shape) == (32, 128, 32, 32)
assert y.grad_fn is not None
del x
# ConvolutionBackward0 holds the input.
assert torch.cuda.memory_allocated() == params + 24 * M
y.sum().backward()
assert torch.cuda.memory_allocated() == 2 * params + 16 * M
del y
assert torch.cuda.memory_allocated() == 2 * params
with torch.no_grad():
    x = torch.empty(32, 64, 32, 32, device='cuda')
    y = conv(x)
    del x
assert torch.cuda.memory_allocated() == 2 * params + 16 * M
"
    ));
}

#[test]
fn conv_output_shapes_follow_stride_padding_dilation_and_groups() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(2, 8, 33, 20)
assert tuple(nn.Conv2d(8, 4, 3, stride=2)(x).shape) == (2, 4, 16, 9)
assert tuple(nn.Conv2d(8, 4, (3, 5), padding=(1, 2), dilation=2)(x).shape) == (2, 4, 31, 16)
assert tuple(nn.Conv2d(8, 4, 3, padding='same')(x).shape) == (2, 4, 33, 20)
g = nn.Conv2d(8, 16, 3, groups=4)
assert tuple(g.weight.shape) == (16, 2, 3, 3)
assert tuple(F.conv2d(x, g.weight, stride=1, groups=4).shape) == (2, 16, 31, 18)
c1 = nn.Conv1d(8, 4, 5, stride=2)
assert tuple(c1(torch.empty(3, 8, 100)).shape) == (3, 4, 48)
assert tuple(c1(torch.empty(8, 100)).shape) == (4, 48)
"
    ));
}

#[test]
fn conv_refuses_a_too_small_input_and_wrong_channels_with_pytorchs_errors() {
    let e = run("c = torch.nn.Conv2d(1, 10, 5)\ny = c(torch.zeros(1, 1, 2, 2))\n").unwrap_err();
    assert!(
        e.contains("Calculated padded input size per channel: (2 x 2). Kernel size: (5 x 5). Kernel size can't be greater than actual input size"),
        "{e}"
    );
    let e = run("c = torch.nn.Conv2d(3, 8, 3)\ny = c(torch.zeros(1, 4, 32, 32))\n").unwrap_err();
    assert!(
        e.contains("Given groups=1, weight of size [8, 3, 3, 3], expected input[1, 4, 32, 32] to have 3 channels, but got 4 channels instead"),
        "{e}"
    );
}

#[test]
fn max_pool_keeps_int64_indices_for_backward() {
    // x: [32, 64, 32, 32] float32 (8 MiB); output [32, 64, 16, 16] (2 MiB); indices int64 (4 MiB).
    ok(&format!(
        "{PRELUDE}pool = nn.MaxPool2d(2)
x = torch.empty(32, 64, 32, 32, device='cuda', requires_grad=True)
h = x * 2
y = pool(h)
assert tuple(y.shape) == (32, 64, 16, 16)
del h
# MaxPool2DWithIndicesBackward0 holds the input and the indices.
assert torch.cuda.memory_allocated() == 8 * M + 8 * M + 2 * M + 4 * M
y.sum().backward()
del y
# x and its gradient remain.
assert torch.cuda.memory_allocated() == 16 * M
with torch.no_grad():
    z = F.max_pool2d(x, kernel_size=2)
# Without a graph the indices are freed at once.
assert torch.cuda.memory_allocated() == 18 * M
out, idx = F.max_pool2d(x, 2, return_indices=True)
assert idx.dtype == torch.int64 and tuple(idx.shape) == (32, 64, 16, 16)
assert tuple(F.max_pool2d(torch.empty(1, 3, 7, 7), 2, ceil_mode=True).shape) == (1, 3, 4, 4)
"
    ));
}

#[test]
fn adaptive_avg_pool_to_one_by_one_is_a_mean_that_saves_nothing() {
    // h: [32, 512, 16, 16] float32 (16 MiB), a non-leaf.
    ok(&format!(
        "{PRELUDE}x = torch.empty(32, 512, 16, 16, device='cuda', requires_grad=True)
h = x * 2
y = nn.AdaptiveAvgPool2d((1, 1))(h)
assert tuple(y.shape) == (32, 512, 1, 1)
del h
assert torch.cuda.memory_allocated() == 16 * M + 64 * K
h = x * 2
z = F.adaptive_avg_pool2d(h, 2)
assert tuple(z.shape) == (32, 512, 2, 2)
del h
# AdaptiveAvgPool2DBackward0 holds its input.
assert torch.cuda.memory_allocated() == 32 * M + 64 * K + 256 * K
"
    ));
}

#[test]
fn flatten_is_a_view() {
    ok(&format!(
        "{PRELUDE}x = torch.empty(32, 512, 1, 1, device='cuda')
y = nn.Flatten()(x)
assert tuple(y.shape) == (32, 512)
z = torch.flatten(x)
assert tuple(z.shape) == (32 * 512,)
w = torch.flatten(x, start_dim=1)
assert tuple(w.shape) == (32, 512)
assert torch.cuda.memory_allocated() == 64 * K
"
    ));
}
