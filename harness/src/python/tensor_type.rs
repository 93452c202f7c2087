//! `Tensor.type()`: with no argument the legacy type name (`torch.cuda.FloatTensor`); with a
//! dtype or a legacy type name, a conversion.
//!
//! PyTorch's `THPVariable_type` (`torch/csrc/autograd/python_variable_methods.cpp`): a
//! dtype keeps the device; a legacy name also picks the device (`torch.cuda.` prefix for
//! CUDA, none for CPU). It then converts as `to()` does (`_to_copy`, node
//! `ToCopyBackward0`), returning the tensor itself when nothing changes.

use super::autograd;
use super::interp::{Interpreter, R};
use super::natives::Args;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{DeviceKind, Dtype};

const DTYPES: [Dtype; 10] = [
    Dtype::Float32,
    Dtype::Float16,
    Dtype::BFloat16,
    Dtype::Float64,
    Dtype::Int64,
    Dtype::Int32,
    Dtype::Int16,
    Dtype::Int8,
    Dtype::UInt8,
    Dtype::Bool,
];

/// The dtype and device a legacy type name stands for (`torch.cuda.HalfTensor`).
fn legacy_target(name: &str) -> Option<(Dtype, DeviceKind)> {
    DTYPES.iter().find_map(|&d| {
        if name == legacy_type_name(d, true) {
            Some((d, DeviceKind::Cuda))
        } else if name == legacy_type_name(d, false) {
            Some((d, DeviceKind::Cpu))
        } else {
            None
        }
    })
}

/// `t.type(dtype=None, non_blocking=False)`.
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        return it.error("TypeError: type() of a non-tensor");
    };
    let t = t.clone();
    let target = a.pos.first().copied().or_else(|| a.kw(it, "dtype"));
    let (dtype, device) = match target {
        None | Some(Value::None) => {
            let name = legacy_type_name(t.dtype, t.device == DeviceKind::Cuda);
            return Ok(Value::Str(it.names.intern(&name)));
        }
        Some(Value::Dtype(d)) => (d, t.device),
        Some(Value::Str(s)) => {
            let name = it.names.name_rc(s);
            match legacy_target(&name) {
                Some(target) => target,
                None => return it.error(format!("ValueError: invalid type: '{name}'")),
            }
        }
        Some(other) => {
            let shown = it.display(other);
            return it.error(format!(
                "TypeError: type() received an invalid combination of arguments - got ({shown})"
            ));
        }
    };
    if dtype == t.dtype && device == t.device {
        it.heap.incref(Value::Obj(id));
        return Ok(Value::Obj(id));
    }
    let category = it.storages.get(t.storage).category;
    let out = it.new_tensor_as(t.shape, dtype, device, None, category)?;
    autograd::record_op(it, out, "to", &[Value::Obj(id)]);
    Ok(out)
}

/// `torch.cuda.FloatTensor`: the legacy type name PyTorch's messages use.
pub(super) fn legacy_type_name(dtype: Dtype, cuda: bool) -> String {
    let base = match dtype {
        Dtype::Float32 => "FloatTensor",
        Dtype::Float16 => "HalfTensor",
        Dtype::BFloat16 => "BFloat16Tensor",
        Dtype::Float64 => "DoubleTensor",
        Dtype::Int64 => "LongTensor",
        Dtype::Int32 => "IntTensor",
        Dtype::Int16 => "ShortTensor",
        Dtype::Int8 => "CharTensor",
        Dtype::UInt8 => "ByteTensor",
        Dtype::Bool => "BoolTensor",
    };
    if cuda {
        format!("torch.cuda.{base}")
    } else {
        format!("torch.{base}")
    }
}
