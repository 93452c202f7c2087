//! `nn.Softmax`, `nn.LogSoftmax`, `nn.Softmin`, `F.softmin`, `nn.Unflatten` (and
//! `Tensor.unflatten`), `nn.GELU`'s `approximate` check, run through the library. Expected
//! nodes, bytes and error texts are derived by hand from PyTorch's sources
//! (`torch/nn/modules/activation.py`, `flatten.py`, `torch/nn/functional.py`, ATen's
//! `unflatten` and `get_gelutype_enum`): no PyTorch is installed here.

mod inline_workload;
use inline_workload::peak_allocated as run;

/// The softmax modules hold `dim` and nothing else (empty `state_dict`, no parameters);
/// their forward is the function's node: `SoftmaxBackward0`, `LogSoftmaxBackward0`, and for
/// `Softmin` the softmax of a negated copy.
#[test]
fn softmax_modules_run_the_functions() {
    run(r#"import torch
import torch.nn as nn
import torch.nn.functional as F
x = torch.randn(4, 10, device="cuda", requires_grad=True)
for m in [nn.Softmax(dim=1), nn.LogSoftmax(1), nn.Softmin(dim=-1)]:
    assert m.dim in (1, -1)
    assert len(m.state_dict()) == 0 and len(list(m.parameters())) == 0
    y = m(x)
    assert y.shape == (4, 10)
assert nn.Softmax(dim=1)(x).grad_fn.name() == "SoftmaxBackward0"
assert nn.LogSoftmax(dim=1)(x).grad_fn.name() == "LogSoftmaxBackward0"
assert nn.Softmin(dim=1)(x).grad_fn.name() == "SoftmaxBackward0"
assert F.softmin(x, dim=0).grad_fn.name() == "SoftmaxBackward0"
assert nn.Softmax()(x).shape == (4, 10)
seq = nn.Sequential(nn.Linear(10, 10), nn.GELU(), nn.Tanh(), nn.Sigmoid(), nn.Flatten(0), nn.LogSoftmax(dim=0))
assert seq(x).shape == (40,)
"#)
    .unwrap();
    let e =
        run("import torch\nnn = torch.nn\nnn.Softmax(dim=2)(torch.zeros(3, 4, device='cuda'))\n")
            .unwrap_err();
    assert!(e.contains("IndexError: Dimension out of range"), "{e}");
}

/// `F.softmin` is `(-input).softmax(dim)`: the negated copy exists while the softmax is
/// computed (peak: input + copy + result, 3 × 1 MiB) and is freed after; the softmax node
/// keeps its result, so the graph holds 1 MiB beyond the input.
#[test]
fn softmin_frees_its_negated_copy() {
    let peak = run(r#"import torch
x = torch.randn(512, 512, device="cuda", requires_grad=True)
y = torch.nn.Softmin(dim=1)(x)
assert torch.cuda.memory_allocated() == 2 * 1024 * 1024
"#)
    .unwrap();
    assert_eq!(peak, 3 * 1024 * 1024);
    let peak = run(r#"import torch
x = torch.randn(512, 512, device="cuda", requires_grad=True)
y = torch.nn.Softmax(dim=1)(x)
assert torch.cuda.memory_allocated() == 2 * 1024 * 1024
"#)
    .unwrap();
    assert_eq!(peak, 2 * 1024 * 1024);
}

/// `nn.Unflatten(1, (2, 5))` views its input (`ViewBackward0`, no bytes), infers a `-1`,
/// and its constructor and ATen refuse what PyTorch refuses, with PyTorch's messages.
#[test]
fn unflatten_is_a_view_with_pytorchs_checks() {
    run(r#"import torch
import torch.nn as nn
x = torch.randn(4, 10, device="cuda", requires_grad=True)
before = torch.cuda.memory_allocated()
m = nn.Unflatten(1, (2, 5))
assert m.dim == 1 and m.unflattened_size == (2, 5) and len(m.state_dict()) == 0
y = m(x)
assert y.shape == (4, 2, 5) and y.grad_fn.name() == "ViewBackward0"
assert torch.cuda.memory_allocated() == before
assert nn.Unflatten(-1, [5, -1])(x).shape == (4, 5, 2)
assert x.unflatten(0, (2, 2)).shape == (2, 2, 10)
"#)
    .unwrap();
    let err = |w: &str| run(&format!("import torch\nnn = torch.nn\n{w}\n")).unwrap_err();
    let e = err("nn.Unflatten(1, (3, 3))(torch.zeros(4, 10, device='cuda'))");
    assert!(
        e.contains("RuntimeError: unflatten: Provided sizes [3, 3] don't multiply up to the size of dim 1 (10) in the input tensor"),
        "{e}"
    );
    let e = err("nn.Unflatten(1, 10)");
    assert!(
        e.contains("TypeError: unflattened_size must be a tuple of ints, but found type int"),
        "{e}"
    );
    let e = err("nn.Unflatten(1, (2, 5.0))");
    assert!(
        e.contains("TypeError: unflattened_size must be tuple of ints, but found element of type float at pos 1"),
        "{e}"
    );
    let e = err("nn.Unflatten(1.0, (2, 5))");
    assert!(
        e.contains("TypeError: invalid argument type for dim parameter"),
        "{e}"
    );
}

/// `nn.GELU(approximate=...)` stores anything; ATen's `get_gelutype_enum` refuses a value
/// other than `'none'`/`'tanh'` when the module runs.
#[test]
fn gelu_checks_approximate_when_it_runs() {
    run(r#"import torch
x = torch.randn(4, 10, device="cuda", requires_grad=True)
assert torch.nn.GELU(approximate="tanh")(x).shape == (4, 10)
m = torch.nn.GELU(approximate="fast")
assert m.approximate == "fast"
"#)
    .unwrap();
    let e = run("import torch\ntorch.nn.GELU(approximate='fast')(torch.zeros(2, device='cuda'))\n")
        .unwrap_err();
    assert!(
        e.contains("RuntimeError: approximate argument must be either none or tanh."),
        "{e}"
    );
}
