//! The text of PyTorch's "modified by an inplace operation" error for each kind of saved
//! tensor, derived by hand from `SavedVariable::unpack` (torch/csrc/autograd/
//! saved_variable.cpp) and `VariableHooks::grad_fn` (variable.cpp): no PyTorch is
//! installed here.
//!
//! - a saved input that is not a leaf names its grad_fn as it reads at backward (after an
//!   in-place op, that op's node) and its output number;
//! - a saved output names the node that saved it;
//! - a leaf names no node;
//! - a differentiable view whose version moved regenerates its grad_fn as
//!   `AsStridedBackward0` (strided tensors have no `view_fn`), and its own sizes are named.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// Runs an inline workload; the error text if it failed.
fn error_of(workload: &str) -> String {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&yaml, "t.yaml").expect("parses");
    let v = s.variants().remove(0);
    match run_variant(&s, &v) {
        Ok(_) => panic!("the workload ran without error"),
        Err(e) => e.to_string(),
    }
}

const HINT: &str = " Hint: enable anomaly detection to find the operation that failed to compute its gradient, with torch.autograd.set_detect_anomaly(True).";

#[test]
fn a_non_leaf_names_its_current_grad_fn() {
    let e = error_of(
        "import torch\nx = torch.randn(4, 3, device='cuda', requires_grad=True)\n\
         y = x * 2\nz = y * y\ny.add_(1)\nz.sum().backward()\n",
    );
    let want = format!(
        "RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation: [torch.cuda.FloatTensor [4, 3]], which is output 0 of AddBackward0, is at version 1; expected version 0 instead.{HINT}"
    );
    assert!(e.contains(&want), "{e}");
}

#[test]
fn a_saved_output_names_the_node_that_saved_it() {
    let e = error_of(
        "import torch\nx = torch.randn(4, 3, device='cuda', requires_grad=True)\n\
         y = x.exp()\ny.mul_(2)\ny.sum().backward()\n",
    );
    assert!(
        e.contains("[torch.cuda.FloatTensor [4, 3]], which is output 0 of ExpBackward0, is at version 1; expected version 0 instead."),
        "{e}"
    );
}

#[test]
fn a_leaf_names_no_node() {
    let e = error_of(
        "import torch\nx = torch.randn(4, 3, device='cuda', requires_grad=True)\n\
         a = torch.randn(4, 3, device='cuda')\nz = x * a\na.add_(1)\nz.sum().backward()\n",
    );
    assert!(
        e.contains("inplace operation: [torch.cuda.FloatTensor [4, 3]] is at version 1; expected version 0 instead."),
        "{e}"
    );
}

#[test]
fn a_view_names_its_sizes_and_as_strided_backward() {
    let e = error_of(
        "import torch\nx = torch.randn(4, 3, device='cuda', requires_grad=True)\n\
         y = x * 2\nv = y[0]\nz = v * v\ny.add_(1)\nz.sum().backward()\n",
    );
    assert!(
        e.contains("inplace operation: [torch.cuda.FloatTensor [3]], which is output 0 of AsStridedBackward0, is at version 1; expected version 0 instead."),
        "{e}"
    );
}
