//! Issue 8's PyTorch surface added in session 3: each workload's `assert`s state what
//! PyTorch allocates and holds (bytes from `torch.cuda.memory_allocated()`), so a wrong
//! model fails the run.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

/// Runs every variant of a scenario whose top-level keys are `header` and whose workload is
/// `workload` (indented by two spaces).
fn run_with(header: &str, workload: &str) -> Result<Timeline, String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\n{header}workload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    let mut last = None;
    for v in s.variants() {
        last = Some(run_variant(&s, &v).map_err(|e| e.to_string())?);
    }
    last.ok_or_else(|| "no variant".to_string())
}

fn ok(workload: &str) -> Timeline {
    run_with("", workload).unwrap_or_else(|e| panic!("{e}"))
}

fn fails(workload: &str) -> String {
    match run_with("", workload) {
        Ok(_) => panic!("the workload ran, but an error was expected"),
        Err(e) => e,
    }
}

const MIB: &str = "M = 1024 * 1024\n";

// ----- chunk / split / repeat / tolist / float(t) ----------------------------------------------

#[test]
fn chunk_and_split_are_views_sharing_one_node_that_builds_one_input_sized_gradient() {
    ok(&format!(
        "{MIB}x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
h = x * 2.0
before = torch.cuda.memory_allocated()
parts = h.chunk(3)
assert len(parts) == 3
assert [p.shape[0] for p in parts] == [342, 342, 340]
halves = h.split(512, dim=1)
sized = h.split([1000, 24])
assert [p.shape[0] for p in sized] == [1000, 24]
# Views: no bytes.
assert torch.cuda.memory_allocated() == before
assert parts[0].grad_fn is parts[2].grad_fn
loss = parts[0].sum() + parts[2].sum()
del h
del parts
del halves
del sized
# SplitBackward0 keeps sizes only: with h and its pieces gone, only x and loss remain.
assert torch.cuda.memory_allocated() == 4 * M + 512
loss.backward()
assert x.grad.shape == (1024, 1024)
"
    ));
}

#[test]
fn a_piece_keeps_its_whole_base_storage_alive() {
    ok(&format!(
        "{MIB}x = torch.empty(1024, 1024, device='cuda')
first = x.chunk(4)[0]
del x
assert torch.cuda.memory_allocated() == 4 * M
del first
assert torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn split_and_chunk_errors_are_pytorchs() {
    let e = fails("x = torch.empty(10, device='cuda')\nx.split([3, 3])\n");
    assert!(
        e.contains("split_with_sizes expects split_sizes to sum exactly to 10"),
        "{e}"
    );
    let e = fails("x = torch.empty(10, device='cuda')\nx.chunk(0)\n");
    assert!(
        e.contains("chunk expects `chunks` to be greater than 0"),
        "{e}"
    );
    let e = fails("x = torch.empty(10, device='cuda')\nx.chunk(2, dim=1)\n");
    assert!(e.contains("Dimension out of range"), "{e}");
    let e = fails("x = torch.empty(10, device='cuda')\nx.split(2, bogus=1)\n");
    assert!(e.contains("bogus"), "{e}");
}

#[test]
fn repeat_allocates_the_repeated_tensor_and_its_node_keeps_no_tensor() {
    ok(&format!(
        "{MIB}x = torch.empty(1024, 256, device='cuda', requires_grad=True)
y = x.repeat(2, 4)
assert y.shape == (2048, 1024)
assert torch.cuda.memory_allocated() == 1 * M + 8 * M
z = x.repeat(3, 1, 1)
assert z.shape == (3, 1024, 256)
del z
loss = y.sum()
del y
# RepeatBackward0 keeps sizes only: the repeated tensor is freed with y.
assert torch.cuda.memory_allocated() == 1 * M + 512
"
    ));
    let e = fails("x = torch.empty(2, 3, device='cuda')\nx.repeat(2)\n");
    assert!(
        e.contains("Number of dimensions of repeat dims can not be smaller"),
        "{e}"
    );
}

#[test]
fn tolist_and_float_copy_to_the_host_without_device_bytes() {
    ok(&format!(
        "{MIB}x = torch.empty(3, 4, device='cuda')
before = torch.cuda.memory_allocated()
rows = x.tolist()
assert len(rows) == 3 and len(rows[0]) == 4
assert isinstance(rows[0][0], float)
assert isinstance(torch.empty(2, dtype=torch.long).tolist()[0], int)
loss = torch.empty(1, device='cuda')
assert isinstance(float(loss), float)
assert isinstance(int(loss), int)
assert torch.cuda.memory_allocated() == before + 512
"
    ));
    let e = fails("x = torch.empty(3, device='cuda')\nfloat(x)\n");
    assert!(
        e.contains("a Tensor with 3 elements cannot be converted to Scalar"),
        "{e}"
    );
}

/// `tolist()` builds one list per row and one outer list, as CPython does, and those count
/// for the collector: 101 lists, of which the first 80 come from CPython's full list free
/// list (no allocation counted), so gen-0's count grows by 21.
#[test]
fn tolist_builds_the_nested_lists_cpython_builds() {
    ok("import gc
gc.disable()
x = torch.empty(100, 3)
before = gc.get_count()[0]
rows = x.tolist()
after = gc.get_count()[0]
assert after - before == 101 - 80, after - before
del rows
x = torch.empty(100, 3)
before = gc.get_count()[0]
rows = x.tolist()
after = gc.get_count()[0]
assert after - before == 101 - 80, after - before
");
}

// ----- allocator settings in the scenario file -------------------------------------------------

/// A 100 MiB block cached and a 50 MiB request: by default the cached block is split (one
/// 100 MiB segment); with `max_split_size_mb` below 100 an oversize block serves no smaller
/// request, so a second segment is made.
#[test]
fn the_scenario_allocator_key_reaches_the_allocator_and_can_be_varied() {
    let workload = format!(
        "{MIB}a = torch.empty(100 * M, dtype=torch.uint8, device='cuda')
del a
b = torch.empty(50 * M, dtype=torch.uint8, device='cuda')
expected = 100 * M if allocator is None else 150 * M
assert torch.cuda.memory_reserved() == expected, torch.cuda.memory_reserved()
"
    );
    run_with(
        "vary:\n  allocator: [null, \"max_split_size_mb:64\"]\n",
        &workload,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let top_level = format!(
        "{MIB}a = torch.empty(100 * M, dtype=torch.uint8, device='cuda')
del a
b = torch.empty(50 * M, dtype=torch.uint8, device='cuda')
assert torch.cuda.memory_reserved() == 150 * M
"
    );
    run_with("allocator: { max_split_size_mb: 64 }\n", &top_level)
        .unwrap_or_else(|e| panic!("{e}"));
}

// ----- load_state_dict ----------------------------------------------------------------------

#[test]
fn load_state_dict_copies_into_the_parameters_and_keeps_nothing() {
    ok(&format!(
        "{MIB}model = torch.nn.Linear(1024, 1024).cuda()
weights = 4 * M + 4096
assert torch.cuda.memory_allocated() == weights
saved = {{k: v.detach().clone() for k, v in model.state_dict().items()}}
assert torch.cuda.memory_allocated() == 2 * weights
result = model.load_state_dict(saved)
assert len(result[0]) == 0 and len(result[1]) == 0
# The copy allocates nothing and the module does not keep the dict.
assert torch.cuda.memory_allocated() == 2 * weights
del saved
assert torch.cuda.memory_allocated() == weights
# A CPU state dict is copied into the GPU parameters in place.
cpu = {{'weight': torch.empty(1024, 1024), 'bias': torch.empty(1024)}}
model.load_state_dict(cpu)
assert torch.cuda.memory_allocated() == weights
"
    ));
}

#[test]
fn load_state_dict_checks_keys_and_shapes_like_pytorch() {
    let e = fails(
        "model = torch.nn.Linear(4, 4)\nmodel.load_state_dict({'weight': torch.empty(4, 4), 'extra': torch.empty(1)})\n",
    );
    assert!(
        e.contains(
            "Error(s) in loading state_dict for Linear:\n\tMissing key(s) in state_dict: \"bias\". \n\tUnexpected key(s) in state_dict: \"extra\". "
        ),
        "{e}"
    );
    let e = fails(
        "model = torch.nn.Linear(4, 4)\nmodel.load_state_dict({'weight': torch.empty(4, 5), 'bias': torch.empty(4)})\n",
    );
    assert!(
        e.contains("size mismatch for weight: copying a param with shape torch.Size([4, 5]) from checkpoint, the shape in current model is torch.Size([4, 4])."),
        "{e}"
    );
    // strict=False reports instead of raising, but a shape mismatch still raises.
    ok("model = torch.nn.Linear(4, 4)
missing, unexpected = model.load_state_dict({'weight': torch.empty(4, 4), 'extra': torch.empty(1)}, strict=False)
assert missing == ['bias'] and unexpected == ['extra']
");
    let e = fails("model = torch.nn.Linear(4, 4)\nmodel.load_state_dict({}, bogus=1)\n");
    assert!(e.contains("bogus"), "{e}");
}

/// The copy bumps the parameter's version: a graph that saved the old value refuses to run.
#[test]
fn load_state_dict_overwrites_in_place_as_far_as_autograd_is_concerned() {
    let e = fails(
        "model = torch.nn.Linear(4, 4).cuda()
x = torch.empty(2, 4, device='cuda', requires_grad=True)
y = model(x).sum()
model.load_state_dict({k: v.detach().clone() for k, v in model.state_dict().items()})
y.backward()
",
    );
    assert!(e.contains("modified by an inplace operation"), "{e}");
}

// ----- torch.utils.checkpoint ---------------------------------------------------------------

const SEGMENT: &str = "M = 1024 * 1024
layers = [torch.nn.Linear(1024, 1024).cuda() for _ in range(4)]
params = 4 * (4 * M + 4096)
def segment(h):
    for layer in layers:
        h = torch.relu(layer(h))
    return h
";

/// Without checkpointing, every layer's input (saved by `AddmmBackward0`) and ReLU output stay
/// until backward: the input and four 16 MiB activations. With it, only the input and the
/// segment's output are held; backward recomputes the segment and the gradients arrive.
#[test]
fn checkpointing_holds_only_the_inputs_and_recomputes_in_backward() {
    ok(&format!(
        "{SEGMENT}x = torch.empty(4096, 1024, device='cuda', requires_grad=True)
out = segment(x)
assert torch.cuda.memory_allocated() - params == 16 * M + 4 * 16 * M
del out
assert torch.cuda.memory_allocated() - params == 16 * M
out = torch.utils.checkpoint.checkpoint(segment, x, use_reentrant=True)
assert out.requires_grad
assert torch.cuda.memory_allocated() - params == 16 * M + 16 * M
loss = out.sum()
del out
loss.backward()
assert x.grad is not None and x.grad.shape == (4096, 1024)
assert layers[0].weight.grad is not None
# After backward: x, its gradient, the parameters and their gradients, the loss.
assert torch.cuda.memory_allocated() == 2 * params + 2 * 16 * M + 512
"
    ));
}

/// The forward pass's peak: the plain forward holds all four activations at once; the
/// checkpointed one (non-reentrant here) at most the input, the layer's input and output
/// and the result of the activation being computed.
#[test]
fn checkpointed_forward_peaks_lower_than_the_plain_one() {
    for (call, bound) in [
        ("segment(x)", ">= 16 * M + 4 * 16 * M"),
        (
            "torch.utils.checkpoint.checkpoint(segment, x, use_reentrant=False)",
            "<= 16 * M + 3 * 16 * M",
        ),
    ] {
        ok(&format!(
            "{SEGMENT}x = torch.empty(4096, 1024, device='cuda', requires_grad=True)
torch.cuda.reset_peak_memory_stats()
out = {call}
forward_peak = torch.cuda.max_memory_allocated() - params
assert forward_peak {bound}, forward_peak
assert out.requires_grad
out.sum().backward()
assert layers[3].weight.grad is not None
"
        ));
    }
}

/// The reentrant variant gives no graph when no input requires grad, as in PyTorch (the
/// classic pitfall: the parameters inside get no gradient).
#[test]
fn reentrant_checkpoint_without_grad_inputs_records_nothing() {
    let e = fails(&format!(
        "{SEGMENT}x = torch.empty(8, 1024, device='cuda')
out = torch.utils.checkpoint.checkpoint(segment, x, use_reentrant=True)
assert not out.requires_grad
out.sum().backward()
"
    ));
    assert!(e.contains("does not require grad"), "{e}");
    ok(&format!(
        "{SEGMENT}x = torch.empty(8, 1024, device='cuda')
out = torch.utils.checkpoint.checkpoint(segment, x, use_reentrant=False)
out.sum().backward()
assert layers[0].weight.grad is not None
"
    ));
}
