//! Attributes of tensors and other non-heap values: reading (`t.shape`, `t.grad`) and
//! setting (`t.data = ...`, `t.requires_grad = ...`).

use super::*;

pub(in crate::python) fn value_attr(it: &mut Interpreter<'_>, v: Value, name: Sym) -> R<Value> {
    let attr_rc = it.names.name_rc(name);
    let attr: &str = &attr_rc;
    match (v, attr) {
        (Value::Device(d), "type") => {
            let t = if d == DeviceKind::Cuda { "cuda" } else { "cpu" };
            Ok(Value::Str(it.names.intern(t)))
        }
        (Value::Dtype(d), "itemsize") => Ok(Value::Int(d.element_size() as i64)),
        (Value::Dtype(d), "is_floating_point") => Ok(Value::Bool(d.is_floating())),
        (Value::Native(n), "from_iterable") if n == super::Native::ItertoolsChain.id() => Ok(
            Value::Native(super::Native::ItertoolsChainFromIterable.id()),
        ),
        (Value::Native(n), "__name__" | "__qualname__")
            if super::Native::from_id(n)
                .and_then(crate::python::type_builtin::builtin_type_name)
                .is_some() =>
        {
            let name = super::Native::from_id(n)
                .and_then(crate::python::type_builtin::builtin_type_name)
                .unwrap_or("type");
            Ok(Value::Str(it.names.intern(name)))
        }
        (Value::Native(n), "__name__" | "__qualname__") if it.native_name(n).is_some() => {
            Ok(it.native_name(n).expect("checked"))
        }
        _ => it.unsupported(format!("attribute '{attr}' of {}", it.display(v))),
    }
}

pub(in crate::python) fn tensor_attr(it: &mut Interpreter<'_>, id: ObjId, name: Sym) -> R<Value> {
    // Read in place: only the shape is copied, and only by the attributes that return it.
    let t = tensor_record(it, id);
    let (dtype, device, storage) = (t.dtype, t.device, t.storage);
    match it.names.name(name) {
        "shape" => {
            let shape = tensor_record(it, id).shape.clone();
            Ok(Value::Obj(it.alloc(ObjKind::Size(shape))))
        }
        "dtype" => Ok(Value::Dtype(dtype)),
        "device" => Ok(Value::Device(device)),
        "ndim" => Ok(Value::Int(tensor_record(it, id).shape.len() as i64)),
        "is_cuda" => Ok(Value::Bool(device == DeviceKind::Cuda)),
        "requires_grad" => Ok(Value::Bool(tensor_record(it, id).requires_grad)),
        "is_leaf" => Ok(Value::Bool(tensor_record(it, id).is_leaf())),
        "grad" => match tensor_record(it, id).grad {
            Some(g) => {
                it.heap.incref(Value::Obj(g));
                Ok(Value::Obj(g))
            }
            None => Ok(Value::None),
        },
        "grad_fn" => {
            let grad_fn = tensor_record(it, id).grad_fn;
            it.grad_fn_object(grad_fn)
        }
        "_base" => match tensor_record(it, id).base {
            Some(b) => {
                it.heap.incref(Value::Obj(b));
                Ok(Value::Obj(b))
            }
            None => Ok(Value::None),
        },
        "data" => {
            let shape = tensor_record(it, id).shape.clone();
            it.new_tensor(shape, dtype, device, Some((storage, None)))
        }
        "T" => {
            let mut shape = tensor_record(it, id).shape.clone();
            shape.reverse();
            // `numpy_T`: a permute with the dimensions reversed.
            let v = view_by(it, id, shape, "permute")?;
            non_contiguous(it, v)
        }
        "__class__" => it.tensor_class_attr(id),
        other => it.unsupported(format!("tensor attribute '{other}'")),
    }
}

/// `tensor.attr = value` (borrowed value): `.data`, `.grad`, `.requires_grad`.
pub(in crate::python) fn set_tensor_attr(
    it: &mut Interpreter<'_>,
    id: ObjId,
    name: Sym,
    value: Value,
) -> R<()> {
    match it.names.name(name) {
        "data" => {
            let Some(src) = tensor_of(it, value).cloned() else {
                return it.error("TypeError: data must be a tensor");
            };
            it.storages.add_ref(src.storage);
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => {
                    let old = t.storage;
                    t.storage = src.storage;
                    t.shape = src.shape;
                    t.dtype = src.dtype;
                    t.device = src.device;
                    Some(old)
                }
                _ => None,
            };
            if let Some(old) = old {
                it.heap.dropped_storage_refs.push(old);
            }
            Ok(())
        }
        "grad" => {
            let new = match value {
                Value::None => None,
                Value::Obj(g) if it.is_tensor(value) => {
                    it.heap.incref(value);
                    Some(g)
                }
                _ => return it.error("TypeError: assigned grad must be a tensor or None"),
            };
            let old = match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) => std::mem::replace(&mut t.grad, new),
                _ => None,
            };
            if let Some(o) = old {
                it.heap.decref_id(o);
            }
            Ok(())
        }
        "requires_grad" => {
            let flag = it.truth(value)?;
            match it.heap.kind_mut(id) {
                ObjKind::Tensor(t) if t.grad_fn.is_none() => {
                    t.requires_grad = flag;
                    Ok(())
                }
                _ => it.error(
                    "RuntimeError: you can only change requires_grad flags of leaf variables.",
                ),
            }
        }
        other => it.unsupported(format!("setting attribute '{other}' on a tensor")),
    }
}
