//! `torch.nn.utils.parameters_to_vector` / `vector_to_parameters`, run through the library.
//! Expected bytes and nodes derived by hand from `torch/nn/utils/convert_parameters.py`
//! (views, `torch.cat`, `.data` assignment); no PyTorch is installed here.

mod inline_workload;
use inline_workload::peak_allocated as run;

/// A `Linear(256, 256)` has 65 536 + 256 parameters: the vector is one new float32 tensor
/// of 65 792 elements (263 168 B, a multiple of 512) made by `cat` of the `view(-1)`s, with
/// `CatBackward0` reaching the parameters; the views are not kept.
#[test]
fn parameters_to_vector_is_one_concatenated_copy() {
    run(r#"import torch
from torch.nn.utils import parameters_to_vector
model = torch.nn.Linear(256, 256, device="cuda")
before = torch.cuda.memory_allocated()
vec = parameters_to_vector(model.parameters())
assert vec.shape == (65792,) and vec.grad_fn.name() == "CatBackward0"
assert torch.cuda.memory_allocated() - before == 65792 * 4
(vec * 2).sum().backward()
assert model.weight.grad.shape == (256, 256) and model.bias.grad.shape == (256,)
with torch.no_grad():
    v2 = torch.nn.utils.parameters_to_vector([model.bias])
assert v2.grad_fn is None and v2.shape == (256,)
"#)
    .unwrap();
}

/// `vector_to_parameters` makes each parameter's `.data` a view of `vec`: the parameters'
/// own storages are freed, and `vec`'s bytes stay while the parameters alias them, even
/// after `del vec`.
#[test]
fn vector_to_parameters_replaces_the_data() {
    run(r#"import torch
from torch.nn.utils import vector_to_parameters
model = torch.nn.Linear(256, 256, device="cuda")
params_bytes = torch.cuda.memory_allocated()
assert params_bytes == 65536 * 4 + 256 * 4
vec = torch.zeros(65792, device="cuda")
vector_to_parameters(vec, model.parameters())
assert torch.cuda.memory_allocated() == 65792 * 4
assert model.weight.shape == (256, 256) and model.bias.shape == (256,)
assert model.weight.requires_grad and model.weight.grad_fn is None
del vec
assert torch.cuda.memory_allocated() == 65792 * 4
del model
assert torch.cuda.memory_allocated() == 0
"#)
    .unwrap();
}

/// PyTorch's errors: a non-tensor vector, parameters on two devices, and a vector too short
/// for the parameters (`view_as` of the short slice).
#[test]
fn convert_parameters_errors_are_pytorchs() {
    let err = |w: &str| {
        run(&format!(
            "import torch\nfrom torch.nn.utils import vector_to_parameters, parameters_to_vector\n{w}\n"
        ))
        .unwrap_err()
    };
    let e = err("vector_to_parameters([1.0], [torch.zeros(1, device='cuda')])");
    assert!(
        e.contains("TypeError: expected torch.Tensor, but got: list"),
        "{e}"
    );
    let e = err("parameters_to_vector([torch.zeros(2, device='cuda'), torch.zeros(2)])");
    assert!(
        e.contains(
            "TypeError: Found two parameters on different devices, this is currently not supported."
        ),
        "{e}"
    );
    let e = err(
        "vector_to_parameters(torch.zeros(5, device='cuda'), [torch.zeros(3, 4, device='cuda')])",
    );
    assert!(
        e.contains("RuntimeError: shape '[3, 4]' is invalid for input of size 5"),
        "{e}"
    );
}
