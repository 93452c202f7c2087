//! A leaf's `AccumulateGrad` is one node per leaf, shared by every graph that reaches the
//! leaf while the node lives (`torch/csrc/autograd/variable.cpp`, `grad_accumulator`: the
//! leaf's autograd meta keeps a weak pointer `grad_accumulator_`, locked by each op and
//! replaced only once expired). The node holds the leaf strongly
//! (`functions/accumulate_grad.h`, `variable`), so the leaf lives while a graph reaches it.
//!
//! No PyTorch is installed here: the figures are worked out by hand. `X` is one
//! `[256, 256]` float32 tensor, 256 KiB, a multiple of the allocator's 512-byte rounding.

mod workload_runner;
use workload_runner::ok;

const PRELUDE: &str = "import weakref
X = 256 * 256 * 4
x = torch.empty(256, 256, device='cuda', requires_grad=True)
w = torch.empty(256, 256, device='cuda')
base = torch.cuda.memory_allocated()
";

#[test]
fn two_graphs_built_while_the_first_lives_share_the_leafs_accumulate_grad() {
    ok(&format!(
        "{PRELUDE}assert x.grad_fn is None
y = x * w
z = x * w
# MulBackward0's edges: (AccumulateGrad of x, 0) and (None, 0) for w, which needs no grad.
a = y.grad_fn.next_functions[0][0]
assert a.name() == 'AccumulateGrad'
assert a is z.grad_fn.next_functions[0][0]
assert y.grad_fn.next_functions[0][1] == 0
assert y.grad_fn.next_functions[1][0] is None
assert a.variable is x
# Only the two products are new: an AccumulateGrad has no device bytes.
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}

#[test]
fn the_shared_node_keeps_the_leaf_until_the_last_graph_dies() {
    ok(&format!(
        "{PRELUDE}y = x * w
z = x * w
leaf = weakref.ref(x)
del x
# Both graphs reach the one AccumulateGrad, which holds the leaf (256 KiB).
assert leaf() is not None
del y
assert leaf() is not None
assert torch.cuda.memory_allocated() == base + X
# The last graph goes: its MulBackward0 drops the node, the node drops the leaf.
del z
assert leaf() is None
assert torch.cuda.memory_allocated() == base - X
"
    ));
}

#[test]
fn a_new_graph_after_the_node_died_gets_a_new_node_for_the_same_leaf() {
    ok(&format!(
        "{PRELUDE}y = x * w
del y
# The first node died with y's graph; the weak pointer has expired.
z = x * w
a = z.grad_fn.next_functions[0][0]
assert a.name() == 'AccumulateGrad' and a.variable is x
z.sum().backward()
# One gradient, stolen from the engine's buffer: x.grad is 256 KiB; z (256 KiB) stays.
assert torch.cuda.memory_allocated() == base + 2 * X
"
    ));
}

#[test]
fn a_leaf_used_twice_gets_its_gradients_summed_before_one_accumulation() {
    // One node means one input buffer: MulBackward0 of y and of z each allocate a 256 KiB
    // gradient for x; the second is added into the first in place and freed, and the
    // leaf's hook (a pre-hook of its AccumulateGrad) runs once, on the sum.
    ok(&format!(
        "{PRELUDE}calls = []
def hook(g):
    calls.append(g.shape[0])
x.register_hook(hook)
y = x * w
z = x * w
(y + z).sum().backward()
assert calls == [256]
# x.grad (256 KiB) beside y and z; the sum, the loss and the engine's buffers are gone.
assert torch.cuda.memory_allocated() == base + 3 * X
"
    ));
}
