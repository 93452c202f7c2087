//! A `backward` that runs out of memory part-way frees what it had made: the gradients in
//! flight and the node's incoming gradient go as the engine's stack unwinds, as in PyTorch,
//! so a caught out-of-memory error in backward leaves exactly what was live before it.

#[allow(dead_code)] // this file uses one of the helpers
mod reports_judge;

use reports_judge::judge_on;

/// Two Linear layers on a 1 GiB card. Before backward the live bytes are the weights
/// (1024×4096 + 4096 + 4096×1024 + 1024 float32: 33 574 912 B), the input and output
/// (2 × 16384 × 1024 float32: 128 MiB), the ReLU output saved for backward (16384 × 4096
/// float32: 256 MiB), the loss (512 B) and a 200 MiB filler. `MSELoss`'s backward makes the
/// output's gradient (64 MiB); the next node then needs 256 MiB for the ReLU output's gradient
/// and fails. After the caught error the live bytes are those from before backward; after
/// `del` of the graph and the filler, the weights and the input (33 574 912 + 64 MiB). Printed
/// in the first of three steps.
#[test]
fn a_backward_out_of_memory_frees_the_gradients_in_flight() {
    let run = judge_on(
        "backward_oom_frees_gradients",
        "{ capacity: 1 GiB }",
        r#"
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(1024, 4096), nn.ReLU(), nn.Linear(4096, 1024)).cuda()
loss_fn = nn.MSELoss()
for step in range(3):
    inputs = torch.randn(16384, 1024, device="cuda")
    outputs = model(inputs)
    loss = loss_fn(outputs, inputs)
    filler = torch.empty(200 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    before = torch.cuda.memory_allocated()
    try:
        loss.backward()
        print("no error")
    except torch.cuda.OutOfMemoryError:
        if step == 0:
            print("oom", before, torch.cuda.memory_allocated())
    del outputs, loss, filler
    if step == 0:
        print("left", torch.cuda.memory_allocated(), [p.grad is None for p in model.parameters()])
"#,
    );
    // Every step fails the same way: nothing accumulates.
    assert_eq!(run.growth, 0);
    let mib = 1u64 << 20;
    let weights = 33_574_912u64;
    let before = weights + 128 * mib + 256 * mib + 512 + 200 * mib;
    assert_eq!(
        run.printed,
        [
            format!("oom {before} {before}"),
            format!("left {} [True, True, True, True]", weights + 64 * mib),
        ]
    );
}
