//! `Tensor.numpy()`: PyTorch's `tensor_to_numpy` (`torch/csrc/utils/tensor_numpy.cpp`)
//! refuses CUDA tensors and tensors that require grad with the messages below, and makes
//! the tensor the array's base object, so the array keeps the tensor alive.

mod workload_runner;
use workload_runner::{fails, ok};

#[test]
fn an_array_shares_the_tensor_and_keeps_it_alive() {
    ok("import weakref
t = torch.empty(1000, 10)
a = t.numpy()
assert a.shape == (1000, 10)
assert a.dtype == 'float32'
assert len(a) == 1000 and a.ndim == 2 and a.size == 10000
alive = weakref.ref(t)
del t
# The array's base is the tensor.
assert alive() is not None
del a
assert alive() is None
");
}

#[test]
fn arrays_answer_python_values() {
    ok("t = torch.zeros(3, 4, dtype=torch.long)
rows = t.numpy().tolist()
assert len(rows) == 3 and len(rows[0]) == 4
assert type(rows[0][0]) is int
f = torch.empty(5).numpy()
assert type(f.mean()) is float and type(f.sum()) is float
c = torch.empty(1024, device='cuda', requires_grad=True)
host = c.detach().cpu().numpy()
assert host.shape == (1024,)
");
}

#[test]
fn cuda_tensors_and_tensors_that_require_grad_are_refused() {
    let e = fails("torch.empty(4, device='cuda').numpy()\n");
    assert!(
        e.contains("TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."),
        "{e}"
    );
    let e = fails("torch.empty(4, requires_grad=True).numpy()\n");
    assert!(
        e.contains("RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."),
        "{e}"
    );
    let e = fails("torch.empty(4).numpy().reshape(2, 2)\n");
    assert!(e.contains("unsupported: numpy.ndarray.reshape"), "{e}");
}
