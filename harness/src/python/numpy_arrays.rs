//! `Tensor.numpy()`: a NumPy array sharing the tensor's memory.
//!
//! PyTorch's `tensor_to_numpy` (`torch/csrc/utils/tensor_numpy.cpp`) refuses a tensor that
//! requires grad and one not on the CPU, then wraps the tensor's data in an `ndarray`
//! whose base object is the tensor itself (`PyArray_SetBaseObject`): the array keeps the
//! tensor, hence its storage, alive after `del t`.
//!
//! The array is a `numpy.ndarray` handle holding the tensor (not a GC object, as an
//! ndarray is not). What a workload reads of it: `.shape` (a tuple), `.dtype` (its NumPy
//! name, as a string), `.ndim`, `.size`, `len(a)`, and `.tolist()`/`.mean()`/`.sum()`/
//! `.item()` as Python values (`0.0`/`0`/`False`: the model holds no tensor values).
//! Anything else of NumPy is `unsupported: numpy.ndarray.<name>`.
//!
//! Approximation: host (CPU) storages are not on the device timeline, so only the
//! lifetime of the tensor object and of a CUDA tensor's D2H copy's source matter.

use super::interp::{Interpreter, R};
use super::natives::Args;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{DeviceKind, Dtype};

/// The type name of the handle, as `type(a).__name__` spells the module and class.
pub(super) const NDARRAY: &str = "numpy.ndarray";

impl Interpreter<'_> {
    /// `t.numpy(force=False)`.
    pub(in crate::python) fn tensor_numpy(&mut self, id: ObjId, a: &Args) -> R<Value> {
        if !a.pos.is_empty() {
            return self.error("TypeError: numpy() takes no positional arguments");
        }
        let Some(t) = self.tensor_data(Value::Obj(id)) else {
            unreachable!("a tensor receiver")
        };
        if t.device == DeviceKind::Cuda {
            return self.error(
                "TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first.",
            );
        }
        if t.dtype == Dtype::BFloat16 {
            return self.error("TypeError: Got unsupported ScalarType BFloat16");
        }
        if t.requires_grad {
            return self.error(
                "RuntimeError: Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead.",
            );
        }
        self.heap.incref(Value::Obj(id));
        Ok(Value::Obj(self.heap.insert_uncounted(ObjKind::CppHandle {
            type_name: NDARRAY,
            held: vec![Value::Obj(id)],
        })))
    }

    /// The tensor an array wraps, when `v` is an array.
    pub(in crate::python) fn ndarray_tensor(&self, v: Value) -> Option<ObjId> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::CppHandle {
                    type_name: NDARRAY,
                    held,
                } => held.first().and_then(|h| h.obj()),
                _ => None,
            },
            _ => None,
        }
    }

    /// `a.shape`, `a.dtype`, `a.ndim`, `a.size` (new reference).
    pub(in crate::python) fn ndarray_attr(&mut self, tensor: ObjId, name: Sym) -> R<Value> {
        let Some(t) = self.tensor_data(Value::Obj(tensor)) else {
            unreachable!("an array's tensor")
        };
        match self.names.name(name) {
            "shape" => {
                let dims = t.shape.iter().map(|&d| Value::Int(d)).collect();
                Ok(Value::Obj(self.alloc(ObjKind::Tuple(dims))))
            }
            "dtype" => {
                let name = t.dtype.name();
                Ok(Value::Str(self.names.intern(name)))
            }
            "ndim" => Ok(Value::Int(t.shape.len() as i64)),
            "size" => Ok(Value::Int(t.numel() as i64)),
            other => {
                let other = other.to_string();
                self.unsupported(format!("numpy.ndarray.{other}"))
            }
        }
    }

    /// `a.tolist()`, `a.mean()`, `a.sum()`, `a.item()` (new reference).
    pub(in crate::python) fn ndarray_method(
        &mut self,
        tensor: ObjId,
        method: &str,
        args: &[Value],
    ) -> R<Value> {
        let Some(t) = self.tensor_data(Value::Obj(tensor)) else {
            unreachable!("an array's tensor")
        };
        if !args.is_empty() {
            return self.unsupported(format!("numpy.ndarray.{method} with arguments"));
        }
        let scalar = match t.dtype {
            d if d.is_floating() => Value::Float(0.0),
            Dtype::Bool => Value::Bool(false),
            _ => Value::Int(0),
        };
        match method {
            "tolist" => self.nested_list(&t.shape, scalar),
            "item" if t.numel() != 1 => {
                self.error("ValueError: can only convert an array of size 1 to a Python scalar")
            }
            "item" => Ok(scalar),
            // NumPy's scalar results (`numpy.float32`, ...) read as Python numbers.
            "mean" => Ok(Value::Float(0.0)),
            "sum" if t.dtype.is_floating() => Ok(Value::Float(0.0)),
            "sum" => Ok(Value::Int(0)),
            other => self.unsupported(format!("numpy.ndarray.{other}")),
        }
    }

    /// `len(a)`: the first dimension; a 0-d array has none.
    pub(in crate::python) fn ndarray_len(&self, tensor: ObjId) -> R<Value> {
        let Some(t) = self.tensor_data(Value::Obj(tensor)) else {
            unreachable!("an array's tensor")
        };
        match t.shape.first() {
            Some(&d) => Ok(Value::Int(d)),
            None => self.error("TypeError: len() of unsized object"),
        }
    }

    /// Lists nested as `shape`, holding `scalar` (`ndarray.tolist()`).
    fn nested_list(&mut self, shape: &[i64], scalar: Value) -> R<Value> {
        let Some((&n, rest)) = shape.split_first() else {
            return Ok(scalar);
        };
        let mut items = Vec::with_capacity(n.max(0) as usize);
        for _ in 0..n {
            items.push(self.nested_list(rest, scalar)?);
        }
        Ok(Value::Obj(self.alloc(ObjKind::List(items))))
    }
}
