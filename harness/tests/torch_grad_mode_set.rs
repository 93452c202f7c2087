//! `torch.set_grad_enabled` as a plain call, a context manager and a decorator, the
//! predicates `torch.is_grad_enabled`, `torch.is_tensor`, `torch.is_floating_point` /
//! `Tensor.is_floating_point`. `set_grad_enabled` (`torch/autograd/grad_mode.py`) switches
//! the mode in `__init__` (remembering `prev`), sets it again in `__enter__`, restores
//! `prev` in `__exit__`, and `__call__(func)` restores `prev` before decorating. Figures:
//! a `[1024, 1024]` float32 is 4 MiB; `a * b` of two tensors that need grad saves both
//! (`MulBackward0`), which is what grad mode decides here.

mod workload_runner;
use workload_runner::{fails, ok};

/// `M`; `w` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "M = 1024 * 1024
w = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn a_plain_call_switches_grad_mode_until_switched_back() {
    ok(&format!(
        "{PRELUDE}assert torch.is_grad_enabled()
torch.set_grad_enabled(False)
assert not torch.is_grad_enabled()
out = (w * 2) * (w * 3)
assert out.grad_fn is None
# No graph: the two products are gone, w and out stay.
assert torch.cuda.memory_allocated() == 8 * M
torch.set_grad_enabled(True)
kept = (w * 2) * (w * 3)
# With grad: MulBackward0 keeps both factors.
assert torch.cuda.memory_allocated() == 8 * M + 12 * M
"
    ));
}

#[test]
fn the_context_manager_restores_the_mode_from_before_the_call() {
    ok(&format!(
        "{PRELUDE}with torch.set_grad_enabled(False):
    assert not torch.is_grad_enabled()
    h = (w * 2) * (w * 3)
assert torch.is_grad_enabled()
assert h.grad_fn is None
torch.set_grad_enabled(False)
with torch.set_grad_enabled(True):
    assert torch.is_grad_enabled()
    g = (w * 2) * (w * 3)
assert not torch.is_grad_enabled()
assert g.grad_fn.name() == 'MulBackward0'
torch.set_grad_enabled(True)
is_train = False
with torch.set_grad_enabled(is_train):
    e = w * 2
assert e.grad_fn is None
assert torch.cuda.memory_allocated() == 4 * M + 4 * M + 12 * M + 4 * M
"
    ));
    let e = fails("torch.set_grad_enabled(1)\n");
    assert!(
        e.contains("TypeError: enabled must be a bool (got int)"),
        "{e}"
    );
}

#[test]
fn the_decorator_runs_each_call_in_the_mode() {
    ok(&format!(
        "{PRELUDE}@torch.set_grad_enabled(False)
def forward(a):
    assert not torch.is_grad_enabled()
    return (a * 2) * (a * 3)
# Decorating restores the mode from before the call.
assert torch.is_grad_enabled()
out = forward(w)
assert out.grad_fn is None
assert torch.is_grad_enabled()
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn tensor_predicates() {
    ok("t = torch.empty(4, device='cuda')
i = torch.zeros(4, dtype=torch.long)
p = torch.nn.Parameter(torch.empty(2))
assert torch.is_tensor(t) and torch.is_tensor(p)
assert not torch.is_tensor(3) and not torch.is_tensor([t])
assert torch.is_floating_point(t) and not torch.is_floating_point(i)
assert t.is_floating_point() and not i.is_floating_point()
assert not (t > 0).is_floating_point()
");
    let e = fails("torch.is_floating_point(3)\n");
    assert!(
        e.contains(
            "TypeError: is_floating_point(): argument 'input' (position 1) must be Tensor, not int"
        ),
        "{e}"
    );
    let e = fails("torch.is_inference_mode_enabled()\n");
    assert!(
        e.contains("unsupported: torch.is_inference_mode_enabled()"),
        "{e}"
    );
}
