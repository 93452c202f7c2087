//! Embedding, recurrent layers and cross-entropy in the workload model: what each saves for
//! backward and when backward frees it, stated as `memory_allocated()` assertions inside
//! workloads (so a wrong save or a late free fails the run).

mod workload_runner;
use workload_runner::{ok, run};

/// `K`, `M`, `nn`, `F` and `BH`: one `[64, 256]` float32 state (64 KiB).
const PRELUDE: &str = "K = 1024
M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
BH = 64 * 256 * 4
";

#[test]
fn embedding_saves_the_indices_and_backward_allocates_a_weight_sized_gradient() {
    ok(&format!(
        "{PRELUDE}emb = nn.Embedding(1024, 256, device='cuda')
idx = torch.zeros(64, 128, dtype=torch.long, device='cuda')
assert torch.cuda.memory_allocated() == M + 64 * K
y = emb(idx)
assert len(y.shape) == 3 and y.shape[0] == 64 and y.shape[1] == 128 and y.shape[2] == 256
assert torch.cuda.memory_allocated() == 9 * M + 64 * K
del idx
# EmbeddingBackward0 holds the indices.
assert torch.cuda.memory_allocated() == 9 * M + 64 * K
loss = y.sum()
del y
assert torch.cuda.memory_allocated() == M + 64 * K + 512
loss.backward()
# The indices are released; the weight's gradient is dense (1 MiB).
assert torch.cuda.memory_allocated() == 2 * M + 512
assert emb.weight.grad is not None
"
    ));
}

#[test]
fn embedding_under_no_grad_saves_nothing() {
    ok(&format!(
        "{PRELUDE}emb = nn.Embedding(1024, 256, device='cuda')
idx = torch.zeros(64, 128, dtype=torch.long, device='cuda')
with torch.no_grad():
    y = emb(idx)
del idx
assert torch.cuda.memory_allocated() == 9 * M
assert y.grad_fn is None
"
    ));
}

#[test]
fn embedding_rejects_float_indices() {
    let e = run("emb = torch.nn.Embedding(10, 4)\ny = emb(torch.zeros(3))\n").unwrap_err();
    assert!(e.contains("'indices'"), "{e}");
}

#[test]
fn cross_entropy_saves_log_probabilities_target_and_total_weight() {
    ok(&format!(
        "{PRELUDE}logits = torch.empty(1024, 256, device='cuda', requires_grad=True)
target = torch.zeros(1024, dtype=torch.long, device='cuda')
loss = F.cross_entropy(logits, target)
# log-softmax output (1 MiB), the loss and total_weight (512 bytes each).
assert torch.cuda.memory_allocated() == 2 * M + 8 * K + 1024
del target
assert torch.cuda.memory_allocated() == 2 * M + 8 * K + 1024
loss.backward()
# Saved tensors released; logits.grad (1 MiB) appears.
assert torch.cuda.memory_allocated() == 2 * M + 512
"
    ));
}

#[test]
fn cross_entropy_module_without_grad_keeps_only_the_loss() {
    ok(&format!(
        "{PRELUDE}criterion = nn.CrossEntropyLoss()
logits = torch.empty(1024, 256, device='cuda')
target = torch.zeros(1024, dtype=torch.long, device='cuda')
loss = criterion(logits, target)
assert torch.cuda.memory_allocated() == M + 8 * K + 512
per_sample = nn.CrossEntropyLoss(reduction='none')(logits, target)
assert len(per_sample.shape) == 1 and per_sample.shape[0] == 1024
"
    ));
}

#[test]
fn cross_entropy_checks_batch_sizes() {
    let e = run(
        "loss = torch.nn.functional.cross_entropy(torch.zeros(4, 3), torch.zeros(5, dtype=torch.long))\n",
    )
    .unwrap_err();
    assert!(e.contains("Expected input batch_size (4)"), "{e}");
}

#[test]
fn lstm_saves_fourteen_states_per_step_and_frees_them_at_backward() {
    // T = 8 steps, B = 64, H = I = 256. Per step: two gate products and the workspace
    // (4 BH each), c' (BH) and h' (BH, saved by the next step's product); h0 and c0 are
    // saved by the first step. Outputs: output (T BH), h_n and c_n.
    ok(&format!(
        "{PRELUDE}lstm = nn.LSTM(256, 256, device='cuda')
params = torch.cuda.memory_allocated()
assert params == 2 * M + 8 * K
x = torch.empty(8, 64, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
out, (h, c) = lstm(x)
assert len(out.shape) == 3 and out.shape[0] == 8 and out.shape[1] == 64 and out.shape[2] == 256
assert len(h.shape) == 3 and h.shape[0] == 1 and h.shape[1] == 64 and h.shape[2] == 256
assert torch.cuda.memory_allocated() == before + (14 * 8 + 1 + 8 + 2) * BH
del h, c
assert torch.cuda.memory_allocated() == before + (14 * 8 + 1 + 8) * BH
out.sum().backward()
# Saved states released; gradients of the parameters and of x remain.
assert torch.cuda.memory_allocated() == before + 8 * BH + params + 512 * K
del out
assert torch.cuda.memory_allocated() == before + params + 512 * K
"
    ));
}

#[test]
fn gru_saves_twelve_states_per_step() {
    ok(&format!(
        "{PRELUDE}gru = nn.GRU(256, 256, batch_first=True, device='cuda')
x = torch.empty(64, 8, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
out, h = gru(x)
assert len(out.shape) == 3 and out.shape[0] == 64 and out.shape[1] == 8 and out.shape[2] == 256
assert torch.cuda.memory_allocated() == before + (12 * 8 + 8 + 1) * BH
del out, h
assert torch.cuda.memory_allocated() == before
"
    ));
}

#[test]
fn lstm_under_no_grad_keeps_only_its_outputs() {
    ok(&format!(
        "{PRELUDE}lstm = nn.LSTM(256, 256, num_layers=2, device='cuda')
x = torch.empty(8, 64, 256, device='cuda')
before = torch.cuda.memory_allocated()
with torch.no_grad():
    out, (h, c) = lstm(x)
assert len(h.shape) == 3 and h.shape[0] == 2 and h.shape[1] == 64 and h.shape[2] == 256
assert torch.cuda.memory_allocated() == before + (8 + 2 + 2) * BH
"
    ));
}

#[test]
fn hidden_state_carried_without_detach_links_batches() {
    // The second backward reaches the first batch's released graph: PyTorch's error.
    let carried = format!(
        "{PRELUDE}lstm = nn.LSTM(256, 256, device='cuda')
state = None
for i in range(2):
    x = torch.empty(8, 64, 256, device='cuda')
    out, state = lstm(x, state)
    out.sum().backward()
"
    );
    let e = run(&carried).unwrap_err();
    assert!(
        e.contains("backward through the graph a second time"),
        "{e}"
    );
    ok(&format!(
        "{PRELUDE}lstm = nn.LSTM(256, 256, device='cuda')
state = None
for i in range(3):
    x = torch.empty(8, 64, 256, device='cuda')
    out, state = lstm(x, state)
    out.sum().backward()
    state = (state[0].detach(), state[1].detach())
"
    ));
}

#[test]
fn lstm_checks_the_hidden_state_shape() {
    let e = run(
        "lstm = torch.nn.LSTM(4, 8)\nx = torch.zeros(3, 2, 4)\nh = torch.zeros(1, 5, 8)\nout = lstm(x, (h, h))\n",
    )
    .unwrap_err();
    assert!(e.contains("Expected hidden[0] size (1, 2, 8)"), "{e}");
}

#[test]
fn shape_errors_use_pytorchs_wording() {
    // `nn.Linear(1024, 10)` on a `[4, 512]` input: the input times the weight transposed.
    let e = run("x = torch.zeros(4, 512, device='cuda')\nlayer = torch.nn.Linear(1024, 10).cuda()\ny = layer(x)")
        .unwrap_err();
    assert!(
        e.contains("RuntimeError: mat1 and mat2 shapes cannot be multiplied (4x512 and 1024x10)"),
        "{e}"
    );
    // A 3-d input is flattened to 2-d first, as `at::linear` does.
    let e = run("x = torch.zeros(2, 3, 512, device='cuda')\nlayer = torch.nn.Linear(1024, 10).cuda()\ny = layer(x)")
        .unwrap_err();
    assert!(e.contains("(6x512 and 1024x10)"), "{e}");
    let e = run("a = torch.zeros(4, 512)\nb = torch.zeros(1024, 10)\nc = a @ b").unwrap_err();
    assert!(
        e.contains("mat1 and mat2 shapes cannot be multiplied (4x512 and 1024x10)"),
        "{e}"
    );
}

#[test]
fn dropout_keeps_a_one_byte_mask_while_the_graph_lives_and_is_the_input_in_eval() {
    // Training: output (4 MiB) + a bool mask (1 MiB) that `NativeDropoutBackward0` keeps;
    // backward frees the mask. Without a graph the mask is freed at once. In eval mode,
    // `training=False` or `p=0` the input itself comes back: no bytes.
    ok(&format!(
        "{PRELUDE}x = torch.zeros(M, device='cuda', requires_grad=True)
base = torch.cuda.memory_allocated()
drop = nn.Dropout(0.1)
y = drop(x)
assert torch.cuda.memory_allocated() - base == 5 * M
assert y.grad_fn is not None
y.sum().backward()
assert torch.cuda.memory_allocated() - base == 8 * M
x.grad = None
del y
with torch.no_grad():
    z = F.dropout(x, p=0.5)
assert torch.cuda.memory_allocated() - base == 4 * M
del z
drop.eval()
assert drop(x) is x
assert F.dropout(x, 0.5, training=False) is x
assert torch.dropout(x, 0.0, True) is x
assert nn.Identity(3, unused=1)(x) is x
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn dropout_refuses_a_probability_outside_zero_to_one() {
    let e = run("d = torch.nn.Dropout(1.5)\n").unwrap_err();
    assert!(
        e.contains("dropout probability has to be between 0 and 1, but got 1.5"),
        "{e}"
    );
    let e = run(
        "x = torch.zeros(4, device='cuda')\ny = torch.nn.functional.dropout(x, p=-0.5, inplace=True)\n",
    )
    .unwrap_err();
    assert!(
        e.contains("dropout probability has to be between 0 and 1, but got -0.5"),
        "{e}"
    );
}

#[test]
fn function_forms_record_what_the_tensor_methods_record() {
    // softmax/log_softmax/sqrt/sigmoid/tanh keep their output for backward; log/abs/gelu
    // keep their input, so their output dies with its Python object; neg keeps nothing.
    ok(&format!(
        "{PRELUDE}x = torch.zeros(M, device='cuda', requires_grad=True)
base = torch.cuda.memory_allocated()
for f in [torch.softmax, F.softmax, torch.log_softmax, F.log_softmax]:
    y = f(x, dim=0)
    loss = y.sum()
    del y
    assert torch.cuda.memory_allocated() - base - 4 * M == 512
    del loss
for f in [torch.log, torch.abs, F.gelu, torch.neg]:
    y = f(x)
    loss = y.sum()
    del y
    assert torch.cuda.memory_allocated() - base == 512
    del loss
for f in [torch.sqrt, F.sigmoid, F.tanh]:
    y = f(x)
    loss = y.sum()
    del y
    assert torch.cuda.memory_allocated() - base - 4 * M == 512
    del loss
assert torch.cuda.memory_allocated() == base
"
    ));
}

#[test]
fn bidirectional_lstm_runs_both_directions_and_concatenates_their_outputs() {
    // T = 8, B = 64, H = I = 256.
    ok(&format!(
        "{PRELUDE}uni = nn.LSTM(256, 256, device='cuda')
bi = nn.LSTM(256, 256, bidirectional=True, device='cuda')
names = [n for n, _ in bi.named_parameters()]
assert names[4] == 'weight_ih_l0_reverse' and len(names) == 8, names
x = torch.empty(8, 64, 256, device='cuda', requires_grad=True)
base = torch.cuda.memory_allocated()
out, (h, c) = uni(x)
one = torch.cuda.memory_allocated() - base
del out, h, c
assert torch.cuda.memory_allocated() == base
out, (h, c) = bi(x)
assert tuple(out.shape) == (8, 64, 512) and tuple(h.shape) == (2, 64, 256)
two = torch.cuda.memory_allocated() - base
# Each direction saves what a unidirectional layer saves (14 states per step, plus the
# initial states); the output is both directions' [T, B, 2H] concatenation (the halves are
# freed: CatBackward0 keeps sizes only); h_n and c_n hold one state per direction.
assert one == (14 * 8 + 1 + 8 + 2) * BH
assert two == (2 * (14 * 8 + 1) + 16 + 4) * BH
out.sum().backward()
assert bi.weight_hh_l0_reverse.grad is not None and x.grad is not None
"
    ));
}

#[test]
fn stacked_bidirectional_gru_reads_both_directions_in_the_next_layer() {
    ok(&format!(
        "{PRELUDE}gru = nn.GRU(32, 16, num_layers=2, bidirectional=True, batch_first=True)
assert tuple(gru.weight_ih_l1.shape) == (48, 32) and tuple(gru.weight_ih_l1_reverse.shape) == (48, 32)
out, h = gru(torch.empty(4, 10, 32))
assert tuple(out.shape) == (4, 10, 32) and tuple(h.shape) == (4, 4, 16)
out, h = gru(torch.empty(4, 10, 32), torch.zeros(4, 4, 16))
"
    ));
    let e = run("g = torch.nn.GRU(8, 4, bidirectional=True)\no, h = g(torch.zeros(3, 2, 8), torch.zeros(1, 2, 4))\n").unwrap_err();
    assert!(e.contains("Expected hidden size (2, 2, 4)"), "{e}");
}

#[test]
fn rnn_keeps_one_state_per_step_and_frees_both_products_within_the_step() {
    // T = 8, B = 64, H = I = 256. Per step `linear_hh(h)` and `linear_ih(x_t)` ([B, H]
    // each) live only within the step; the nonlinearity's result h' is saved by
    // `TanhBackward0`/`ReluBackward0` (and by the next step's product). h0 is saved by the
    // first step. Outputs: output (T BH) and h_n (BH). The peak is the final state: the
    // products were freed step by step.
    for nonlinearity in ["tanh", "relu"] {
        ok(&format!(
            "{PRELUDE}rnn = nn.RNN(256, 256, nonlinearity='{nonlinearity}', device='cuda')
params = torch.cuda.memory_allocated()
assert params == 512 * K + 2 * K
assert [n for n, _ in rnn.named_parameters()] == ['weight_ih_l0', 'weight_hh_l0', 'bias_ih_l0', 'bias_hh_l0']
x = torch.empty(8, 64, 256, device='cuda', requires_grad=True)
before = torch.cuda.memory_allocated()
torch.cuda.reset_peak_memory_stats()
out, h = rnn(x)
assert tuple(out.shape) == (8, 64, 256) and tuple(h.shape) == (1, 64, 256)
assert torch.cuda.memory_allocated() == before + (1 + 8 + 8 + 1) * BH
assert torch.cuda.max_memory_allocated() == before + (1 + 8 + 8 + 1) * BH
del h
out.sum().backward()
assert torch.cuda.memory_allocated() == before + 8 * BH + params + 512 * K
"
        ));
    }
}

#[test]
fn rnn_positional_nonlinearity_bias_and_batch_first_follow_pytorchs_signature() {
    // `RNN(input_size, hidden_size, num_layers, nonlinearity, bias, batch_first)`.
    ok(&format!(
        "{PRELUDE}rnn = nn.RNN(32, 16, 2, 'relu', False, True)
assert rnn.nonlinearity == 'relu'
assert [n for n, _ in rnn.named_parameters()] == ['weight_ih_l0', 'weight_hh_l0', 'weight_ih_l1', 'weight_hh_l1']
out, h = rnn(torch.empty(4, 10, 32))
assert tuple(out.shape) == (4, 10, 16) and tuple(h.shape) == (2, 4, 16)
bi = nn.RNN(32, 16, bidirectional=True)
out, h = bi(torch.empty(10, 4, 32), torch.zeros(2, 4, 16))
assert tuple(out.shape) == (10, 4, 32) and tuple(h.shape) == (2, 4, 16)
"
    ));
    let e = run("r = torch.nn.RNN(4, 8, nonlinearity='sigmoid')\n").unwrap_err();
    assert!(e.contains("Unknown nonlinearity 'sigmoid'"), "{e}");
    let e = run("r = torch.nn.RNN(4, 8, proj_size=2)\n").unwrap_err();
    assert!(
        e.contains("unexpected keyword argument 'proj_size'") || e.contains("`proj_size=`"),
        "{e}"
    );
    let e = run("r = torch.nn.RNN(4, 8)\no, h = r(torch.zeros(3, 2, 4), torch.zeros(1, 5, 8))\n")
        .unwrap_err();
    assert!(e.contains("Expected hidden size (1, 2, 8)"), "{e}");
}

#[test]
fn dropout_between_recurrent_layers_keeps_a_mask_per_dropped_layer_only_in_training() {
    // Two layers, T = 8, B = 64, H = I = 256; h0 is [2, B, H]. Layer 0 saves 8 states,
    // its stacked output (8 BH) is read (and saved) by layer 1, which saves 8 states and
    // stacks 8 BH; h_n is 2 BH: 36 BH. In training, dropout replaces layer 0's output by
    // a new one of the same size plus a bool mask (T B H bytes = 2 BH), the undropped
    // output being freed; the last layer's output is not dropped.
    ok(&format!(
        "{PRELUDE}x = torch.empty(8, 64, 256, device='cuda', requires_grad=True)
for cls in [nn.RNN, nn.GRU, nn.LSTM]:
    plain = cls(256, 256, num_layers=2, device='cuda')
    dropped = cls(256, 256, num_layers=2, dropout=0.5, device='cuda')
    before = torch.cuda.memory_allocated()
    y = plain(x)
    without = torch.cuda.memory_allocated() - before
    del y
    y = dropped(x)
    assert torch.cuda.memory_allocated() - before == without + 2 * BH, cls
    del y
    dropped.eval()
    y = dropped(x)
    assert torch.cuda.memory_allocated() - before == without, cls
    del y
    dropped.train()
    with torch.no_grad():
        y = dropped(x)
    assert y[0].grad_fn is None
    del y
    assert torch.cuda.memory_allocated() == before
rnn = nn.RNN(256, 256, num_layers=2, dropout=0.5, device='cuda')
before = torch.cuda.memory_allocated()
out, h = rnn(x)
assert torch.cuda.memory_allocated() == before + (2 + 8 + 2 + 8 + 8 + 8 + 2) * BH
out.sum().backward()
assert rnn.weight_ih_l0.grad is not None
"
    ));
    let e = run("r = torch.nn.LSTM(4, 8, num_layers=2, dropout=1.5)\n").unwrap_err();
    assert!(
        e.contains("dropout should be a number in range [0, 1]"),
        "{e}"
    );
}

#[test]
fn dropout_with_a_single_recurrent_layer_is_pytorchs_warning_and_changes_nothing() {
    use gpumem_harness::run::run_variant;
    use gpumem_harness::scenario;
    let text = "name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |
  a = torch.nn.GRU(64, 64, device='cuda')
  b = torch.nn.GRU(64, 64, dropout=0.3, device='cuda')
  x = torch.empty(5, 3, 64, device='cuda', requires_grad=True)
  base = torch.cuda.memory_allocated()
  y = a(x)
  one = torch.cuda.memory_allocated() - base
  del y
  y = b(x)
  assert torch.cuda.memory_allocated() - base == one
";
    let s = scenario::parse(text, "t.yaml").expect("parses");
    let v = s.variants().remove(0);
    let notes = run_variant(&s, &v).expect("runs").approximations.join("\n");
    assert!(
        notes.contains("non-zero dropout expects num_layers greater than 1, but got dropout=0.3 and num_layers=1"),
        "{notes}"
    );
}

#[test]
fn lstm_and_gru_free_each_steps_temporaries_within_the_step() {
    // Under no_grad nothing is saved, so a step's gate products ([B, 4H] / [B, 3H] each),
    // the fused cell's workspace and the previous cell state go when the step ends (RNN.cpp
    // frees them with the cell call). The peak is at the last step; from 4 to 8 steps it
    // grows only by the 4 more step outputs the layer keeps for the final stack (B·H·4
    // bytes each). Figures derived by hand; no PyTorch here. (The model releases a cell's
    // dropped temporaries before its next allocation, so this holds without an explicit
    // release per step; the test guards it.)
    ok(&format!(
        "{PRELUDE}BH16 = 16 * 256 * 4
for make in (lambda: nn.LSTM(256, 256, device='cuda'), lambda: nn.GRU(256, 256, device='cuda')):
    layer = make()
    peaks = []
    for steps in (4, 8):
        x = torch.empty(steps, 16, 256, device='cuda')
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with torch.no_grad():
            out, _ = layer(x)
        peaks.append(torch.cuda.max_memory_allocated() - base)
        del out, x
    assert peaks[1] - peaks[0] == 4 * BH16, peaks
"
    ));
}
