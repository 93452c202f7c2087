//! `isinstance` and `issubclass`: user classes, exception classes, builtin types, and
//! tuples of them.

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{DeviceKind, Dtype};

impl<'a> Interpreter<'a> {
    /// The class object of a value, when it has one in the model's heap.
    pub(super) fn class_of(&self, v: Value) -> Option<ObjId> {
        match v {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::Instance { class, .. } | ObjKind::NamedTuple { class, .. } => Some(*class),
                ObjKind::Exception(e) => Some(e.class),
                _ => None,
            },
            _ => None,
        }
    }

    /// `isinstance(obj, spec)`.
    pub(super) fn isinstance(&mut self, obj: Value, spec: Value) -> R<bool> {
        match spec {
            Value::Obj(s) => match self.heap.kind(s) {
                ObjKind::Tuple(items) => {
                    for item in items.clone() {
                        if self.isinstance(obj, item)? {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                }
                ObjKind::Class(_) => Ok(self
                    .class_of(obj)
                    .is_some_and(|c| self.class_derives_from(c, s))),
                _ => self.error("TypeError: isinstance() arg 2 must be a type or tuple of types"),
            },
            Value::Native(n) => match Native::from_id(n) {
                Some(Native::TypesSimpleNamespace) => Ok(self.namespace_dict(obj).is_some()),
                Some(t) => match builtin_type_check(t, obj, &self.heap) {
                    Some(b) => Ok(b),
                    None => self.unsupported("isinstance() with this builtin type"),
                },
                None => self.unsupported("isinstance() with this builtin type"),
            },
            _ => self.error("TypeError: isinstance() arg 2 must be a type or tuple of types"),
        }
    }

    /// `issubclass(cls, spec)`.
    pub(super) fn issubclass(&mut self, cls: Value, spec: Value) -> R<bool> {
        let Value::Obj(c) = cls else {
            return self.unsupported("issubclass() of a builtin type");
        };
        if !matches!(self.heap.kind(c), ObjKind::Class(_)) {
            return self.error("TypeError: issubclass() arg 1 must be a class");
        }
        match spec {
            Value::Obj(s) => match self.heap.kind(s) {
                ObjKind::Tuple(items) => {
                    for item in items.clone() {
                        if self.issubclass(cls, item)? {
                            return Ok(true);
                        }
                    }
                    Ok(false)
                }
                ObjKind::Class(_) => Ok(self.class_derives_from(c, s)),
                _ => {
                    self.error("TypeError: issubclass() arg 2 must be a class or tuple of classes")
                }
            },
            Value::Native(n) if Native::from_id(n) == Some(Native::Object) => Ok(true),
            _ => self.unsupported("issubclass() with this builtin type"),
        }
    }
}

/// `isinstance(v, int)` and the other builtin types the model knows.
fn builtin_type_check(t: Native, v: Value, heap: &crate::heap::Heap) -> Option<bool> {
    let kind = match v {
        Value::Obj(o) => Some(heap.kind(o)),
        _ => None,
    };
    Some(match t {
        Native::Object => true,
        Native::Int => matches!(v, Value::Int(_) | Value::Bool(_)),
        Native::Bool => matches!(v, Value::Bool(_)),
        Native::NoneTypeFn => matches!(v, Value::None),
        Native::Float => matches!(v, Value::Float(_)),
        Native::Str => matches!(v, Value::Str(_)),
        Native::List => matches!(kind, Some(ObjKind::List(_))),
        Native::Tuple => matches!(
            kind,
            Some(
                ObjKind::Tuple(_)
                    | ObjKind::Size(_)
                    | ObjKind::StructSeq { .. }
                    | ObjKind::NamedTuple { .. }
            )
        ),
        Native::Dict => matches!(kind, Some(ObjKind::Dict(_))),
        // `collections` types: a flavoured dict is a `dict` too; `deque` is its own type.
        Native::DefaultDictFn | Native::OrderedDictFn | Native::CounterFn => {
            let wanted = match t {
                Native::DefaultDictFn => crate::heap::DictSubclass::DefaultDict,
                Native::OrderedDictFn => crate::heap::DictSubclass::OrderedDict,
                _ => crate::heap::DictSubclass::Counter,
            };
            match v {
                Value::Obj(o) => heap.dict_flavour(o).is_some_and(|f| f.subclass == wanted),
                _ => false,
            }
        }
        Native::Deque => matches!(kind, Some(ObjKind::Deque { .. })),
        Native::SetFn => matches!(kind, Some(ObjKind::Set { frozen: false, .. })),
        Native::FrozenSetFn => matches!(kind, Some(ObjKind::Set { frozen: true, .. })),
        // `torch.Tensor` is every tensor, `nn.Parameter` a tensor made by it (or registered
        // as one); the legacy type objects check dtype and device, as PyTorch's
        // `_TensorMeta.__instancecheck__` compares the tensor's type.
        Native::TorchTensor => matches!(kind, Some(ObjKind::Tensor(_))),
        Native::NnParameter => matches!(kind, Some(ObjKind::Tensor(t)) if t.is_param),
        _ => match legacy_tensor_type(t) {
            Some((dtype, device)) => {
                matches!(kind, Some(ObjKind::Tensor(x)) if x.dtype == dtype && x.device == device)
            }
            None => return None,
        },
    })
}

/// The dtype and device of a legacy tensor type (`torch.FloatTensor`, `torch.cuda.HalfTensor`,
/// …): what it allocates when called and what `isinstance` compares.
pub(super) fn legacy_tensor_type(t: Native) -> Option<(Dtype, DeviceKind)> {
    Some(match t {
        Native::LegacyFloatTensor => (Dtype::Float32, DeviceKind::Cpu),
        Native::LegacyHalfTensor => (Dtype::Float16, DeviceKind::Cpu),
        Native::LegacyDoubleTensor => (Dtype::Float64, DeviceKind::Cpu),
        Native::LegacyLongTensor => (Dtype::Int64, DeviceKind::Cpu),
        Native::LegacyCudaFloatTensor => (Dtype::Float32, DeviceKind::Cuda),
        Native::LegacyCudaHalfTensor => (Dtype::Float16, DeviceKind::Cuda),
        Native::LegacyCudaLongTensor => (Dtype::Int64, DeviceKind::Cuda),
        _ => return None,
    })
}

impl Interpreter<'_> {
    /// `torch.is_tensor(obj)` (`isinstance(obj, torch.Tensor)`, so a `Parameter` is one) and
    /// `torch.is_floating_point(input)` (a tensor of a floating dtype; anything else is the
    /// argument parser's `TypeError`).
    pub(super) fn torch_predicate(&mut self, n: Native, a: &super::natives::Args) -> R<Value> {
        let name = if n == Native::IsTensorFn {
            "obj"
        } else {
            "input"
        };
        let Some(v) = a.kw(self, name).or(a.pos.first().copied()) else {
            return self.error(format!(
                "TypeError: missing 1 required positional argument: '{name}'"
            ));
        };
        let tensor = self.tensor_data(v);
        match (n, tensor) {
            (Native::IsTensorFn, t) => Ok(Value::Bool(t.is_some())),
            (_, Some(t)) => Ok(Value::Bool(t.dtype.is_floating())),
            (_, None) => self.error(format!(
                "TypeError: is_floating_point(): argument 'input' (position 1) must be Tensor, not {}",
                self.type_name_of(v)
            )),
        }
    }
}
