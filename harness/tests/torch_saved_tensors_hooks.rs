//! `torch.autograd.graph.saved_tensors_hooks(pack, unpack)` and `save_on_cpu`: a node
//! keeps what `pack` returned, never the tensor (`SavedVariable`'s constructor with default
//! hooks, `torch/csrc/autograd/saved_variable.cpp`), and calls `unpack` when backward
//! reaches it; releasing the node drops the packed object.
//!
//! No PyTorch is installed here: the figures are worked out by hand. `X` is one
//! `[256, 256]` float32 tensor, 256 KiB, a multiple of the allocator's 512-byte rounding;
//! a 0-dim float32 (a loss, the engine's seed gradient) takes one 512-byte block.

mod workload_runner;
use workload_runner::{fails, ok};

const PRELUDE: &str = "import gc
X = 256 * 256 * 4
x = torch.empty(256, 256, device='cuda', requires_grad=True)
base = torch.cuda.memory_allocated()
";

#[test]
fn packing_to_the_host_frees_the_device_bytes_until_backward() {
    ok(&format!(
        "{PRELUDE}def pack(t):
    return t.cpu()
def unpack(t):
    return t.cuda()
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x.exp()
    z = y.exp()
del y
# Each ExpBackward0 keeps a host copy of its result: y's device bytes died with y; z (X)
# is alive as a variable.
assert torch.cuda.memory_allocated() == base + X
loss = z.sum()
torch.cuda.reset_peak_memory_stats()
loss.backward()
# The seed (512 B) and SumBackward0's X-sized gradient (base + 2X + 1 KiB) go first;
# then each ExpBackward0 holds its incoming gradient, the device copy `unpack` made and
# the gradient it computes: 3X beside z and the loss.
assert torch.cuda.max_memory_allocated() == base + X + 512 + 3 * X
# Left: z, the loss and x.grad (stolen from the engine's buffer).
assert torch.cuda.memory_allocated() == base + 2 * X + 512
"
    ));
}

#[test]
fn without_hooks_the_node_keeps_the_result_on_the_device() {
    // The control of the test above: ExpBackward0 keeps y's data, so `del y` frees nothing.
    ok(&format!(
        "{PRELUDE}y = x.exp()
z = y.exp()
del y
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}

#[test]
fn save_on_cpu_packs_to_the_host_the_same_way() {
    ok(&format!(
        "{PRELUDE}with torch.autograd.graph.save_on_cpu():
    y = x.exp()
    z = y.exp()
del y
assert torch.cuda.memory_allocated() == base + X
loss = z.sum()
torch.cuda.reset_peak_memory_stats()
loss.backward()
# As with the hand-written pair: `tensor.to(device)` of the host copy in each node.
assert torch.cuda.max_memory_allocated() == base + X + 512 + 3 * X
assert torch.cuda.memory_allocated() == base + 2 * X + 512
"
    ));
}

#[test]
fn packing_into_a_list_keeps_the_bytes_for_as_long_as_the_list() {
    ok(&format!(
        "{PRELUDE}stash = []
def pack(t):
    stash.append(t)
    return len(stash) - 1
def unpack(i):
    return stash[i]
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = x.exp()
loss = y.sum()
del y
# ExpBackward0 holds an int; the list holds y (X) itself.
assert len(stash) == 1
assert torch.cuda.memory_allocated() == base + X + 512
loss.backward()
# Backward released the node's index; the list still holds y. x.grad is new (X).
assert torch.cuda.memory_allocated() == base + 2 * X + 512
stash.clear()
assert torch.cuda.memory_allocated() == base + X + 512
"
    ));
}

#[test]
fn an_identity_pack_of_an_output_is_a_cycle_only_backward_breaks() {
    // pytorch/pytorch#115255: the output's grad_fn owns the packed output, which owns its
    // grad_fn, all through C++ references: no collection frees them. Backward without
    // `retain_graph` drops the packed object and breaks the cycle.
    ok(&format!(
        "{PRELUDE}with torch.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
    y = x.exp()
    w = x.exp()
del y
gc.collect()
assert torch.cuda.memory_allocated() == base + 2 * X
loss = w.sum()
del w
loss.backward()
del loss
gc.collect()
# w's node released its packed w: only the leaked y and x.grad stay.
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}

#[test]
fn pack_runs_once_per_saved_tensor_with_grad_mode_off() {
    // `a * b` saves both operands when both require grad; `a + b` saves nothing; the hook
    // runs under `NoGradGuard`, so its own op records nothing.
    ok(&format!(
        "{PRELUDE}w = torch.empty(256, 256, device='cuda', requires_grad=True)
seen = []
def pack(t):
    seen.append(torch.is_grad_enabled())
    return t * 2
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    p = x * w
    s = x + w
assert seen == [False, False]
# p, s and the two packed copies (each X) beside x and w.
assert torch.cuda.memory_allocated() == base + 5 * X
# p's node dies with p, and with it the two packed copies.
del p
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}

#[test]
fn hooks_apply_only_inside_the_block() {
    ok(&format!(
        "{PRELUDE}seen = []
def pack(t):
    seen.append(1)
    return t
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    a = x.exp()
b = x.exp()
assert seen == [1]
"
    ));
}

#[test]
fn a_released_node_cannot_run_again_and_unpack_must_give_a_tensor() {
    let twice = fails(&format!(
        "{PRELUDE}with torch.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), lambda t: t.cuda()):
    y = x.exp()
y.sum().backward()
y.sum().backward()
"
    ));
    assert!(
        twice.contains("Trying to backward through the graph a second time"),
        "{twice}"
    );
    let not_tensor = fails(&format!(
        "{PRELUDE}with torch.autograd.graph.saved_tensors_hooks(lambda t: 0, lambda i: i):
    y = x.exp()
y.sum().backward()
"
    ));
    assert!(
        not_tensor.contains(
            "Output of saved tensor unpack_hook expected to be a Tensor but got result of type int"
        ),
        "{not_tensor}"
    );
}

#[test]
fn a_custom_functions_saved_tensors_go_through_the_hooks() {
    ok(&format!(
        "{PRELUDE}packed = []
unpacked = []
def pack(t):
    packed.append(1)
    return t.cpu()
def unpack(t):
    unpacked.append(1)
    return t.cuda()
class Square(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a * a
    @staticmethod
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return g * a
with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    y = Square.apply(x)
assert packed == [1]
y.sum().backward()
assert unpacked == [1]
"
    ));
}

/// pytorch/pytorch#115255 (the workload as reported, without the checkpointing around it):
/// `saved_tensors_hooks(lambda x: x, lambda x: x)` around `ln2` and a `relu`. With a
/// backward per iteration every node is released: flat. Forward only, the `relu`'s node
/// holds its own output through the identity pack (PR #153049's documented cycle), and
/// with it the graph behind it, which no `gc.collect()` frees.
const ISSUE_115255: &str = "import gc
class TestNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1 = torch.nn.Linear(10, 20)
        self.ln2 = torch.nn.Linear(20, 3000)
        self.ln3 = torch.nn.Linear(3000, 40)
    def forward(self, x):
        x = self.ln1(x)
        x = torch.nn.functional.relu(x)
        with torch.autograd.graph.saved_tensors_hooks(lambda x: x, lambda x: x):
            x = self.ln2(x)
            x = torch.nn.functional.relu(x)
        x = self.ln3(x)
        return x
model = TestNN().cuda()
sizes = []
";

#[test]
fn issue_115255_identity_hooks_are_flat_with_backward() {
    ok(&format!(
        "{ISSUE_115255}for i in range(5):
    x = torch.randn(256, 10, device='cuda')
    y = model(x).sum()
    y.backward()
    sizes.append(torch.cuda.memory_allocated())
assert len(set(sizes)) == 1, sizes
"
    ));
}

#[test]
fn issue_115255_identity_hooks_leak_the_graph_without_backward() {
    // Per iteration, kept by the cycle: the second relu's output [256, 3000] (3,072,000 B),
    // the first relu's output [256, 20] (20,480 B, packed as ln2's input) and x [256, 10]
    // (10,240 B, saved by ln1's AddmmBackward0 without hooks): 3,102,720 B, all multiples
    // of 512.
    ok(&format!(
        "{ISSUE_115255}for i in range(5):
    x = torch.randn(256, 10, device='cuda')
    y = model(x).sum()
    gc.collect()
    sizes.append(torch.cuda.memory_allocated())
steps = [b - a for a, b in zip(sizes, sizes[1:])]
assert steps == [3102720] * 4, steps
"
    ));
}

#[test]
fn the_innermost_pair_applies_and_the_outer_one_comes_back() {
    ok(&format!(
        "{PRELUDE}from torch.autograd.graph import saved_tensors_hooks
outer = []
inner = []
def pack_outer(t):
    outer.append(1)
    return t
def pack_inner(t):
    inner.append(1)
    return t
with saved_tensors_hooks(pack_outer, lambda t: t):
    a = x.exp()
    with saved_tensors_hooks(pack_inner, lambda t: t):
        b = x.exp()
    c = x.exp()
assert outer == [1, 1] and inner == [1]
"
    ));
}

#[test]
fn retain_graph_keeps_the_packed_copy_and_unpacks_each_time() {
    ok(&format!(
        "{PRELUDE}calls = []
def unpack(t):
    calls.append(1)
    return t.cuda()
with torch.autograd.graph.saved_tensors_hooks(lambda t: t.cpu(), unpack):
    y = x.exp()
loss = y.sum()
del y
loss.backward(retain_graph=True)
loss.backward()
assert calls == [1, 1]
# x.grad (X) and the loss: the unpacked copies died with each node run.
assert torch.cuda.memory_allocated() == base + X + 512
"
    ));
}

#[test]
fn a_pack_that_raises_leaves_the_tensor_saved_without_hooks() {
    // Approximation (noted in the run): PyTorch raises at the op; the model keeps going
    // with the tensor saved as without hooks, so ExpBackward0 keeps y's bytes.
    ok(&format!(
        "{PRELUDE}def pack(t):
    raise ValueError('no')
with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    y = x.exp()
z = y * 1
del y
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}
