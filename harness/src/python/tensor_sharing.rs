//! `torch.as_tensor(data, dtype=None, device=None)`: shares what it can.
//!
//! As `torch/csrc/utils/tensor_new.cpp` (`as_tensor`) does: a tensor already of the asked
//! dtype and device is returned itself (no new object, no bytes); otherwise it is
//! `data.to(dtype, device)`, a copy recorded as the copy of `to` is. A NumPy array of the
//! model (`t.numpy()`) becomes a tensor on the array's memory when it stays on the CPU in
//! its dtype (`from_numpy`'s sharing); anything else (lists, numbers) is `torch.tensor`'s
//! copy.

use super::interp::{Interpreter, R};
use super::natives::{Args, Native};
use crate::heap::{Sym, Value};
use crate::torch::DeviceKind;

pub(super) fn as_tensor(it: &mut Interpreter<'_>, a: &Args) -> R<Value> {
    let Some(data) = a.kw(it, "data").or(a.pos.first().copied()) else {
        return it.error("TypeError: as_tensor() missing required argument 'data' (pos 1)");
    };
    let dtype = match a.kw(it, "dtype").or(a.pos.get(1).copied()) {
        None | Some(Value::None) => None,
        Some(Value::Dtype(d)) => Some(d),
        Some(_) => return it.error("TypeError: as_tensor(): dtype must be a torch.dtype"),
    };
    let device_value = a.kw(it, "device").or(a.pos.get(2).copied());
    let device = match device_value {
        None | Some(Value::None) => None,
        Some(Value::Device(d)) => Some(d),
        Some(Value::Int(0)) => Some(DeviceKind::Cuda),
        Some(Value::Str(s)) => match DeviceKind::parse(it.names.name(s)) {
            Some(d) => Some(d),
            None => {
                return it.unsupported(format!(
                    "device '{}' (the model has one GPU, 'cuda' or 'cuda:0', and the CPU)",
                    it.names.name(s)
                ));
            }
        },
        Some(_) => return it.error("TypeError: as_tensor(): expected a device"),
    };
    let source = match it.ndarray_tensor(data) {
        Some(t) => Some((Value::Obj(t), true)),
        None => it.tensor_data(data).map(|_| (data, false)),
    };
    let Some((tensor, from_array)) = source else {
        // Python data: `torch.tensor(data, dtype=, device=)`.
        let mut kwargs: Vec<(Sym, Value)> = Vec::new();
        for (name, v) in [("dtype", dtype.map(Value::Dtype)), ("device", device_value)] {
            if let Some(v) = v {
                it.heap.incref(v);
                kwargs.push((it.sym(name), v));
            }
        }
        it.heap.incref(data);
        return it.call(Value::Native(Native::TensorCtor.id()), vec![data], kwargs);
    };
    let t = it.tensor_data(tensor).expect("checked above");
    let same = dtype.is_none_or(|d| d == t.dtype) && device.is_none_or(|d| d == t.device);
    if same && from_array {
        // `from_numpy`: a new tensor on the array's memory (the array keeps its own).
        return it.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, None)));
    }
    if same {
        it.heap.incref(tensor);
        return Ok(tensor);
    }
    let mut kwargs: Vec<(Sym, Value)> = Vec::new();
    if let Some(d) = dtype {
        kwargs.push((it.sym("dtype"), Value::Dtype(d)));
    }
    if let Some(d) = device {
        kwargs.push((it.sym("device"), Value::Device(d)));
    }
    let to = it.sym("to");
    it.call_method(tensor, to, Vec::new(), kwargs)
}
