//! Activation functions and modules: `F.elu`/`F.hardtanh`/`F.relu6`/`F.mish`/`F.hardswish`
//! (with `inplace=`) and `nn.LeakyReLU`, `nn.SiLU`, `nn.ELU`, `nn.Hardtanh`, `nn.ReLU6`,
//! `nn.GELU`, `nn.Tanh`, `nn.Sigmoid`, `nn.Mish`, `nn.Hardswish`. No PyTorch is installed
//! here: what each node saves is read from `derivatives.yaml` (an input-reading formula keeps
//! the input alive; `elu_`'s own entry reads the result; an in-place op without an entry of
//! its own saves a copy of `self` taken before the write) and the bytes follow from it. A
//! `[1024, 1024]` float32 is 4 MiB.

mod workload_runner;
use workload_runner::{fails, ok};

/// `M`, `nn`, `F`; `x` is a `[1024, 1024]` float32 leaf (4 MiB) that requires grad.
const PRELUDE: &str = "M = 1024 * 1024
nn = torch.nn
F = torch.nn.functional
x = torch.empty(1024, 1024, device='cuda', requires_grad=True)
";

#[test]
fn out_of_place_activations_keep_their_input() {
    // h = x * 2 (4 MiB); each activation's node keeps h after its name is deleted.
    for call in [
        "F.elu(h, alpha=0.5)",
        "F.hardtanh(h, min_val=-2.0, max_val=2.0)",
        "F.relu6(h)",
        "F.mish(h)",
        "F.hardswish(h)",
    ] {
        ok(&format!(
            "{PRELUDE}h = x * 2
y = {call}
del h
# x, h (saved), y.
assert torch.cuda.memory_allocated() == 12 * M, torch.cuda.memory_allocated()
y.sum().backward()
# h goes with the graph; x.grad appears.
assert torch.cuda.memory_allocated() == 12 * M
"
        ));
    }
}

#[test]
fn activation_nodes_have_pytorchs_names() {
    ok(&format!(
        "{PRELUDE}assert F.elu(x).grad_fn.name() == 'EluBackward0'
assert F.hardtanh(x).grad_fn.name() == 'HardtanhBackward0'
assert F.relu6(x).grad_fn.name() == 'HardtanhBackward0'
assert F.mish(x).grad_fn.name() == 'MishBackward0'
assert F.hardswish(x).grad_fn.name() == 'HardswishBackward0'
h = x * 2
F.elu(h, inplace=True)
assert h.grad_fn.name() == 'EluBackward1'
g = x * 2
F.relu6(g, inplace=True)
assert g.grad_fn.name() == 'HardtanhBackward0'
"
    ));
}

#[test]
fn in_place_elu_saves_the_result_and_in_place_hardtanh_a_copy() {
    // elu_ (EluBackward1) reads the result: the written tensor itself, no new bytes.
    // hardtanh_ has no entry of its own: hardtanh's formula reads self, so a copy of self
    // from before the write (4 MiB) is saved.
    ok(&format!(
        "{PRELUDE}h = x * 2
r = F.elu(h, inplace=True)
assert r is h
assert torch.cuda.memory_allocated() == 8 * M
yh = h.sum()
del h, r
# EluBackward1 keeps the written tensor's data (reached through yh's graph).
assert torch.cuda.memory_allocated() == 8 * M + 512
g = x * 2
nn.Hardtanh(inplace=True)(g)
# x, h's data, g and the copy of g from before the write.
assert torch.cuda.memory_allocated() == 16 * M + 512
yg = g.sum()
del g
# g's own bytes go; the copy stays with HardtanhBackward0.
assert torch.cuda.memory_allocated() == 12 * M + 1024
"
    ));
}

#[test]
fn activation_modules_hold_their_settings_and_run_their_function() {
    ok(&format!(
        "{PRELUDE}m = nn.LeakyReLU(0.2)
assert m.negative_slope == 0.2 and m.inplace is False
assert m(x).grad_fn.name() == 'LeakyReluBackward0'
assert nn.SiLU()(x).grad_fn.name() == 'SiluBackward0'
e = nn.ELU(alpha=0.3)
assert e.alpha == 0.3
assert e(x).grad_fn.name() == 'EluBackward0'
r6 = nn.ReLU6()
assert r6.min_val == 0.0 and r6.max_val == 6.0
assert r6(x).grad_fn.name() == 'HardtanhBackward0'
assert nn.Hardtanh(-3.0, 3.0).max_val == 3.0
assert nn.GELU(approximate='tanh')(x).grad_fn.name() == 'GeluBackward0'
assert nn.Tanh()(x).grad_fn.name() == 'TanhBackward0'
assert nn.Sigmoid()(x).grad_fn.name() == 'SigmoidBackward0'
assert nn.Mish()(x).grad_fn.name() == 'MishBackward0'
assert nn.Hardswish()(x).grad_fn.name() == 'HardswishBackward0'
h = x * 2
nn.LeakyReLU(inplace=True)(h)
assert h.grad_fn.name() == 'LeakyReluBackward1'
s = x * 2
nn.SiLU(inplace=True)(s)
assert s.grad_fn.name() == 'SiluBackward0'
seq = nn.Sequential(nn.Linear(4, 4), nn.GELU(), nn.Linear(4, 1), nn.Sigmoid())
assert seq(torch.empty(2, 4)).grad_fn.name() == 'SigmoidBackward0'
"
    ));
}

#[test]
fn activations_reject_unknown_keywords_and_leaf_in_place() {
    let e = fails(
        "torch.nn.ELU(bogus=1)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:5:"),
        "{e}"
    );
    let e = fails(
        "x = torch.zeros(4, device='cuda')
torch.nn.functional.hardtanh(x, bogus=1)
",
    );
    assert!(
        e.contains("unexpected keyword argument 'bogus'") && e.contains("t.yaml:6:"),
        "{e}"
    );
    let e = fails(
        "x = torch.zeros(4, device='cuda', requires_grad=True)
torch.nn.functional.elu(x, inplace=True)
",
    );
    assert!(e.contains("a leaf Variable that requires grad"), "{e}");
}
