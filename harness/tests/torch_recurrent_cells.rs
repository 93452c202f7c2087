//! `nn.LSTMCell`, `nn.GRUCell`, `nn.RNNCell`: parameters as `RNNCellBase` registers them and
//! a forward that saves what one step of the layer's CUDA path saves
//! (`aten/src/ATen/native/RNN.cpp`: two `mm` products and the fused cell, or for the plain
//! RNN `tanh(linear_hh(h).add_(linear_ih(x)))`).
//!
//! Figures by hand, float32, batch 32, input 64, hidden 128 (every size a multiple of the
//! allocator's 512-byte rounding):
//! - LSTM (4 gates): `weight_ih` [512, 64] 128 KiB, `weight_hh` [512, 128] 256 KiB, each
//!   bias [512] 2 KiB. A step: the zeros state [32, 128] 16 KiB (both `h` and `c`), the gate
//!   products [32, 512] 64 KiB each, `h'` and `c'` 16 KiB each, the workspace [32, 4*128]
//!   64 KiB: 240 KiB, all kept by the graph (the mm nodes save `x` and the zeros, the fused
//!   node the products, `c`, `c'` and the workspace).
//! - GRU (3 gates): products [32, 384] 48 KiB each, `h'` 16 KiB, workspace [32, 5*128]
//!   80 KiB: 192 KiB with a given state.
//! - RNN (tanh): the zeros 16 KiB (saved by `linear_hh`'s `AddmmBackward0`), two [32, 128]
//!   products of which only the sum's `tanh` result (16 KiB) is kept: 32 KiB.

mod workload_runner;
use workload_runner::ok;

const PRELUDE: &str = "K = 1024
nn = torch.nn
x = torch.empty(32, 64, device='cuda')
";

#[test]
fn lstm_cell_registers_its_parameters_and_keeps_one_steps_saved_tensors() {
    ok(&format!(
        "{PRELUDE}before = torch.cuda.memory_allocated()
cell = nn.LSTMCell(64, 128).cuda()
assert cell.weight_ih.shape[0] == 512 and cell.weight_ih.shape[1] == 64
assert cell.weight_hh.shape[1] == 128 and cell.bias_hh.shape[0] == 512
assert len(list(cell.parameters())) == 4
assert torch.cuda.memory_allocated() == before + 128 * K + 256 * K + 2 * 2 * K
base = torch.cuda.memory_allocated()
h, c = cell(x)
assert h.shape[0] == 32 and h.shape[1] == 128 and c.shape[1] == 128
assert h.grad_fn.name() == 'ThnnFusedLstmCellBackward0'
assert c.grad_fn is h.grad_fn
edges = h.grad_fn.next_functions
assert edges[0][0].name() == 'MmBackward0' and edges[1][0].name() == 'MmBackward0'
# The zeros state needs no gradient; the biases are leaves.
assert edges[2][0] is None
assert edges[3][0].variable is cell.bias_ih and edges[4][0].variable is cell.bias_hh
assert torch.cuda.memory_allocated() == base + 240 * K
# The fused node saves c' and the workspace, not h': h' goes with its name.
del h
assert torch.cuda.memory_allocated() == base + 224 * K
# c' held the node, and the node everything else; `edges` still holds the two
# MmBackward0 objects, and the one of `h @ w_hh.t()` saved the zeros state (16 KiB).
del c
assert torch.cuda.memory_allocated() == base + 16 * K
del edges
assert torch.cuda.memory_allocated() == base
with torch.no_grad():
    h, c = cell(x)
# Nothing is saved: only h' and c' remain.
assert torch.cuda.memory_allocated() == base + 32 * K
"
    ));
}

#[test]
fn gru_cell_with_a_given_state_and_an_unbatched_input() {
    ok(&format!(
        "{PRELUDE}cell = nn.GRUCell(64, 128, device='cuda')
h0 = torch.empty(32, 128, device='cuda')
base = torch.cuda.memory_allocated()
h = cell(x, h0)
assert h.grad_fn.name() == 'ThnnFusedGruCellBackward0'
assert torch.cuda.memory_allocated() == base + 192 * K
del h
assert torch.cuda.memory_allocated() == base
# An unbatched input runs as a batch of one: the input [64] (a 512-byte block, saved by
# the mm), products [1, 384] (1536 bytes each), h'
# [128] (512), workspace [1, 640] (2560); the zeros state [1, 128] (512).
v = cell(torch.empty(64, device='cuda'))
assert v.dim() == 1 and v.shape[0] == 128
assert torch.cuda.memory_allocated() == base + 512 + 2 * 1536 + 512 + 2560 + 512
"
    ));
}

#[test]
fn rnn_cell_keeps_its_activation_and_the_state_it_read() {
    ok(&format!(
        "{PRELUDE}cell = nn.RNNCell(64, 128, nonlinearity='relu', device='cuda')
assert cell.nonlinearity == 'relu'
base = torch.cuda.memory_allocated()
h = cell(x)
assert h.grad_fn.name() == 'ReluBackward0'
assert torch.cuda.memory_allocated() == base + 32 * K
h.sum().backward()
assert cell.weight_ih.grad.shape[0] == 128
"
    ));
}
