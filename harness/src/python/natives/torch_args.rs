//! Argument readers shared by the `torch.*` functions and tensor methods: sequences, sizes,
//! nested data, and the `dtype=`/`device=` keywords.

use super::*;

/// Items of a list, tuple or `Size` (borrowed).
pub(in crate::python) fn sequence_items(it: &Interpreter<'_>, v: Value) -> R<Vec<Value>> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items)
            | ObjKind::Tuple(items)
            | ObjKind::Deque { items, .. }
            | ObjKind::StructSeq { items, .. }
            | ObjKind::NamedTuple { items, .. } => Ok(items.clone()),
            ObjKind::Dict(items) => Ok(items.iter().map(|(k, _)| *k).collect()),
            ObjKind::Set { table, .. } => Ok(table.items().collect()),
            ObjKind::Size(dims) => Ok(dims.iter().map(|&d| Value::Int(d)).collect()),
            &ObjKind::Range { start, stop, step } => {
                let len = int_ops::range_len(start, stop, step);
                it.budget_items(len)?;
                Ok((0..len)
                    .map_while(|i| int_ops::range_item(start, stop, step, i))
                    .map(Value::Int)
                    .collect())
            }
            other => {
                let t = other.type_name();
                it.unsupported(format!("iterating a '{t}' here"))
            }
        },
        _ => it.error("TypeError: object is not iterable"),
    }
}

pub(in crate::python) fn length(it: &Interpreter<'_>, v: Value) -> R<i64> {
    Ok(match v {
        Value::Str(s) => it.names.name(s).chars().count() as i64,
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items)
            | ObjKind::Tuple(items)
            | ObjKind::Deque { items, .. }
            | ObjKind::StructSeq { items, .. }
            | ObjKind::NamedTuple { items, .. } => items.len() as i64,
            ObjKind::Dict(items) => items.len() as i64,
            ObjKind::Set { table, .. } => table.len() as i64,
            ObjKind::Size(dims) => dims.len() as i64,
            ObjKind::Tensor(t) => match t.shape.first() {
                Some(&d) => d,
                None => return it.error("TypeError: len() of a 0-d tensor"),
            },
            &ObjKind::Range { start, stop, step } => {
                match i64::try_from(int_ops::range_len(start, stop, step)) {
                    Ok(n) => n,
                    Err(_) => {
                        return it
                            .error("OverflowError: Python int too large to convert to C ssize_t");
                    }
                }
            }
            other => {
                let t = other.type_name();
                return it.error(format!("TypeError: object of type '{t}' has no len()"));
            }
        },
        _ => return it.error("TypeError: object has no len()"),
    })
}

pub(super) fn tensor_of<'i>(it: &'i Interpreter<'_>, v: Value) -> Option<&'i torch::TensorData> {
    match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::Tensor(t) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Sizes given as `f(2, 3)`, `f((2, 3))`, `f([2, 3])` or `f(t.shape)`.
pub(super) fn shape_args(it: &Interpreter<'_>, p: &[Value]) -> R<Vec<i64>> {
    // Negative sizes are refused with PyTorch's message when the storage is sized.
    match p {
        [single @ Value::Obj(_)] => sequence_items(it, *single)?
            .into_iter()
            .map(|d| int_arg(it, d, "size"))
            .collect(),
        // Read in place: `zeros(16)` copies no argument list.
        many => many.iter().map(|&d| int_arg(it, d, "size")).collect(),
    }
}

/// Most dimensions `torch.tensor` accepts from nested data (torch's `MAX_DIMS`); deeper
/// (or self-referential) data raises its `ValueError` before any deep walk.
pub(super) const TENSOR_DATA_MAX_DIMS: usize = 128;

pub(super) fn nested_shape(it: &Interpreter<'_>, v: Value, depth: usize) -> R<(Vec<i64>, bool)> {
    if depth > TENSOR_DATA_MAX_DIMS {
        return it.error("ValueError: too many dimensions 'list'");
    }
    match v {
        Value::Int(_) | Value::Bool(_) => Ok((vec![], true)),
        Value::Float(_) => Ok((vec![], false)),
        Value::Obj(_) => {
            let items = sequence_items(it, v)?;
            let mut inner: Option<Vec<i64>> = None;
            let mut all_int = true;
            for item in &items {
                let (s, i) = nested_shape(it, *item, depth + 1)?;
                all_int &= i;
                match &inner {
                    Some(prev) if *prev != s => {
                        return it.error("ValueError: expected a rectangular nested sequence");
                    }
                    _ => inner = Some(s),
                }
            }
            let mut shape = vec![items.len() as i64];
            shape.extend(inner.unwrap_or_default());
            Ok((shape, all_int))
        }
        _ => it.unsupported("torch.tensor() of this data"),
    }
}

pub(super) fn dtype_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<Dtype>> {
    match a.kw(it, "dtype") {
        None | Some(Value::None) => Ok(None),
        Some(Value::Dtype(d)) => Ok(Some(d)),
        Some(_) => it.error("TypeError: dtype must be a torch dtype"),
    }
}

pub(super) fn device_kw(it: &Interpreter<'_>, a: &Args) -> R<Option<DeviceKind>> {
    match a.kw(it, "device") {
        None | Some(Value::None) => Ok(None),
        Some(v) => device_of(it, v).map(Some),
    }
}

pub(super) fn device_of(it: &Interpreter<'_>, v: Value) -> R<DeviceKind> {
    match v {
        Value::Device(d) => Ok(d),
        Value::Int(0) => Ok(DeviceKind::Cuda),
        Value::Str(s) => match DeviceKind::parse(it.names.name(s)) {
            Some(d) => Ok(d),
            None => it.unsupported(format!(
                "device '{}' (the model has one GPU, 'cuda' or 'cuda:0', and the CPU)",
                it.names.name(s)
            )),
        },
        _ => it.error("TypeError: expected a device"),
    }
}
