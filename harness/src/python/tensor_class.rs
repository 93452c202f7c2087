//! `t.__class__` of a tensor: `torch.nn.Parameter` for a parameter, `torch.Tensor`
//! otherwise (what `type(t)` is in PyTorch; the model's `type(t)` answers `torch.Tensor`
//! for both).

use super::interp::{Interpreter, R};
use super::natives::{self, Native};
use crate::heap::{ObjId, ObjKind, Value};

impl Interpreter<'_> {
    pub(in crate::python) fn tensor_class_attr(&mut self, id: ObjId) -> R<Value> {
        let is_param = matches!(self.heap.kind(id), ObjKind::Tensor(t) if t.is_param);
        let class = if is_param {
            Native::NnParameter
        } else {
            Native::TorchTensor
        };
        Ok(natives::native_value(class))
    }
}
