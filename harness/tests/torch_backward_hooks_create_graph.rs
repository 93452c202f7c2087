//! `create_graph=True` through a module's `BackwardHookFunctionBackward` nodes with several
//! slots (torch/utils/hooks.py: `BackwardHookFunction.backward` returns its gradients
//! unchanged, one per tensor argument or output). With `create_graph` the engine runs in
//! grad mode, so each gradient keeps its own graph, and a gradient that is itself output
//! `k` of a multi-output node (`Edge::input_nr`, torch/csrc/autograd/edge.h) sends its
//! gradient back to slot `k` of that node. No PyTorch is installed; the expectations follow
//! the derivative formulas and `BackwardHook`'s bookkeeping: for `(a * b, a + b)` summed,
//! `d/da = b + 1` and `d/db = a + 1`, each with a graph.

mod workload_runner;
use workload_runner::ok;

const MODULE: &str = "import torch
from torch import nn
N = 256 * 1024
class Two(nn.Module):
    def forward(self, a, b):
        return a * b, a + b
m = Two()
calls = []
m.register_full_backward_hook(lambda mod, gi, go: calls.append((len(gi), len(go))))
pre = []
m.register_full_backward_pre_hook(lambda mod, go: pre.append([g is None for g in go]))
a = torch.zeros(N, device='cuda', requires_grad=True)
b = torch.zeros(N, device='cuda', requires_grad=True)
p, s = m(a, b)
";

#[test]
fn each_slot_keeps_its_own_graph_with_create_graph() {
    // The second backward from `ga` runs MulBackward0's double-backward node into `b`'s
    // hooked view (slot 1 of the inputs' node); the outputs' node is not on that path, so
    // `grad_outputs` is unset and the full hook does not run again.
    ok(&format!(
        "{MODULE}loss = p.sum() + s.sum()
ga, gb = torch.autograd.grad(loss, [a, b], create_graph=True)
assert calls == [(2, 2)], calls
assert pre == [[False, False]], pre
assert ga.requires_grad and ga.grad_fn is not None
assert gb.requires_grad and gb.grad_fn is not None
ga.sum().backward()
assert b.grad is not None
assert calls == [(2, 2)], calls
"
    ));
}

#[test]
fn a_gradient_that_is_output_one_of_a_hook_node_returns_to_slot_one() {
    // `s` (output 1 of the outputs' node) is the gradient fed to `y = a * 3`: with
    // create_graph, `g = s * 3` has a graph whose edge is (outputs' node, input_nr 1). The
    // backward from `g` reaches that node in slot 1 only: the pre-hook sees
    // `grad_output = (None, tensor)`.
    ok(&format!(
        "{MODULE}y = a * 3
g, = torch.autograd.grad(y, a, grad_outputs=s, create_graph=True)
assert g.grad_fn is not None
g.sum().backward()
assert pre == [[True, False]], pre
assert len(calls) == 1, calls
"
    ));
}

#[test]
fn backward_with_create_graph_gives_both_grads_a_graph() {
    ok(&format!(
        "{MODULE}(p.sum() + s.sum()).backward(create_graph=True)
assert a.grad.requires_grad and a.grad.grad_fn is not None
assert b.grad.requires_grad and b.grad.grad_fn is not None
"
    ));
}
