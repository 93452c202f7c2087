//! Subscripts: `obj[index]`, `obj[index] = value` and `del obj[index]` on tensors,
//! sequences and dicts.

use super::*;

/// One item of a tensor index.
pub(super) enum IndexItem {
    Int(i64),
    Slice(Option<i64>, Option<i64>, Option<i64>),
    NewAxis,
    Ellipsis,
    /// Advanced indexing by an index tensor of this shape (the tensor, a reference the item
    /// owns, when it is one; a list index has none).
    Tensor(Vec<i64>, Option<Value>),
    /// Advanced indexing by a bool (or uint8) mask of this shape: it stands for as many
    /// dimensions as it has, which become one dimension of its `True` count. The tensor
    /// (a reference the item owns; see [`release_index_items`]) is what `IndexBackward0`
    /// saves.
    Mask(Vec<i64>, Value),
}

/// Drops the references the items of an index hold.
pub(super) fn release_index_items(it: &mut Interpreter<'_>, items: Vec<IndexItem>) {
    for item in items {
        if let IndexItem::Mask(_, v) | IndexItem::Tensor(_, Some(v)) = item {
            it.heap.decref(v);
        }
    }
}

pub(in crate::python) fn eval_opt_int<'a>(
    it: &mut Interpreter<'a>,
    e: &'a Option<Box<Expr>>,
) -> R<Option<i64>> {
    match e {
        None => Ok(None),
        Some(e) => {
            let v = it.eval(e)?;
            match v {
                Value::None => Ok(None),
                Value::Int(i) => Ok(Some(i)),
                other => {
                    it.heap.decref(other);
                    it.error("TypeError: slice indices must be integers or None")
                }
            }
        }
    }
}

pub(super) fn index_items<'a>(it: &mut Interpreter<'a>, index: &'a Expr) -> R<Vec<IndexItem>> {
    let parts: Vec<&'a Expr> = match index {
        Expr::Tuple(t) => t.elts.iter().collect(),
        other => vec![other],
    };
    let mut out = Vec::with_capacity(parts.len());
    for part in parts {
        out.push(match part {
            Expr::Slice(s) => IndexItem::Slice(
                eval_opt_int(it, &s.lower)?,
                eval_opt_int(it, &s.upper)?,
                eval_opt_int(it, &s.step)?,
            ),
            Expr::EllipsisLiteral(_) => IndexItem::Ellipsis,
            Expr::NoneLiteral(_) => IndexItem::NewAxis,
            other => {
                let v = it.eval(other)?;
                let item = match v {
                    Value::Int(i) => IndexItem::Int(i),
                    Value::Bool(b) => IndexItem::Int(b as i64),
                    Value::Obj(_) => match tensor_of(it, v) {
                        Some(t) if matches!(t.dtype, Dtype::Bool | Dtype::UInt8) => {
                            out.push(IndexItem::Mask(t.shape.clone(), v));
                            continue;
                        }
                        Some(t) => {
                            out.push(IndexItem::Tensor(t.shape.clone(), Some(v)));
                            continue;
                        }
                        None => match sequence_items(it, v) {
                            Ok(items) => IndexItem::Tensor(vec![items.len() as i64], None),
                            Err(e) => {
                                it.heap.decref(v);
                                return Err(e);
                            }
                        },
                    },
                    _ => return it.unsupported("this index"),
                };
                it.heap.decref(v);
                item
            }
        });
    }
    Ok(out)
}

/// Python's `slice.indices(len)` and the resulting length.
pub(in crate::python) fn slice_len(
    len: i64,
    start: Option<i64>,
    stop: Option<i64>,
    step: Option<i64>,
) -> Option<(i64, i64, i64)> {
    let step = step.unwrap_or(1);
    if step == 0 {
        return None;
    }
    let clamp = |v: i64, lo: i64, hi: i64| v.max(lo).min(hi);
    let (lo, hi) = if step > 0 { (0, len) } else { (-1, len - 1) };
    let fix = |v: Option<i64>, default: i64| match v {
        None => default,
        Some(v) if v < 0 => clamp(v + len, lo, hi),
        Some(v) => clamp(v, lo, hi),
    };
    let start = fix(start, if step > 0 { 0 } else { len - 1 });
    let stop = fix(stop, if step > 0 { len } else { -1 });
    let count = if step > 0 {
        if stop > start {
            (stop - start + step - 1) / step
        } else {
            0
        }
    } else if start > stop {
        (start - stop - step - 1) / -step
    } else {
        0
    };
    Some((start, step, count))
}

/// `obj[index]`: tensor views or copies, sequence items and slices, dict lookups.
pub(in crate::python) fn subscript<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    index: &'a Expr,
) -> R<Value> {
    if it.user_special(obj, "__getitem__").is_some() {
        let key = it.eval(index)?;
        return it
            .call_special(obj, "__getitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"));
    }
    if it.is_data_subscript(obj) {
        let key = it.eval(index)?;
        let r = it.dataset_item(obj, key);
        it.heap.decref(key);
        return r;
    }
    let Value::Obj(id) = obj else {
        if let Value::Str(text) = obj {
            return crate::python::str_indexing::subscript(it, text, index);
        }
        let name = it.value_type_name(obj);
        return it.error(format!("TypeError: '{name}' object is not subscriptable"));
    };
    if let Some(kind) = it.container_kind(obj) {
        return it.container_subscript(id, kind, index);
    }
    if let ObjKind::Tensor(t) = it.heap.kind(id) {
        let t = t.clone();
        let items = index_items(it, index)?;
        let r = tensor_index(it, id, &t, &items);
        release_index_items(it, items);
        return r;
    }
    if let Expr::Slice(s) = index {
        let (lower, upper, step) = (
            eval_opt_int(it, &s.lower)?,
            eval_opt_int(it, &s.upper)?,
            eval_opt_int(it, &s.step)?,
        );
        let (items, is_list) = match it.heap.kind(id) {
            ObjKind::List(items) => (items.clone(), true),
            ObjKind::Tuple(items)
            | ObjKind::StructSeq { items, .. }
            | ObjKind::NamedTuple { items, .. } => (items.clone(), false),
            _ => return it.unsupported("slicing this object"),
        };
        let Some((start, step, count)) = slice_len(items.len() as i64, lower, upper, step) else {
            return it.error("ValueError: slice step cannot be zero");
        };
        let picked: Vec<Value> = (0..count)
            .map(|k| items[(start + k * step) as usize])
            .collect();
        for &v in &picked {
            it.heap.incref(v);
        }
        return Ok(Value::Obj(it.alloc(if is_list {
            ObjKind::List(picked)
        } else {
            ObjKind::Tuple(picked)
        })));
    }
    let key = it.eval(index)?;
    let result = item(it, id, key);
    it.heap.decref(key);
    result
}

/// `tensor[i]` with an evaluated integer index: a view (`SelectBackward0`).
pub(in crate::python) fn tensor_int_index(it: &mut Interpreter<'_>, id: ObjId, i: i64) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        return it.error("TypeError: expected a tensor");
    };
    let t = t.clone();
    tensor_index(it, id, &t, &[IndexItem::Int(i)])
}

/// `tensor[:, k]` with an evaluated column index: a view (`unbind(1)`'s pieces).
pub(in crate::python) fn tensor_column(it: &mut Interpreter<'_>, id: ObjId, k: i64) -> R<Value> {
    let ObjKind::Tensor(t) = it.heap.kind(id) else {
        return it.error("TypeError: expected a tensor");
    };
    let t = t.clone();
    tensor_index(
        it,
        id,
        &t,
        &[IndexItem::Slice(None, None, None), IndexItem::Int(k)],
    )
}

pub(in crate::python) fn item(it: &mut Interpreter<'_>, id: ObjId, key: Value) -> R<Value> {
    if it.is_weak_container(Value::Obj(id)).is_some() {
        return match it.weak_get(id, key)? {
            Some(v) => Ok(v),
            None => it.key_error(key),
        };
    }
    match it.heap.kind(id) {
        ObjKind::List(items)
        | ObjKind::Tuple(items)
        | ObjKind::Deque { items, .. }
        | ObjKind::StructSeq { items, .. }
        | ObjKind::NamedTuple { items, .. } => {
            let Value::Int(i) = key else {
                return it.error("TypeError: indices must be integers");
            };
            let n = items.len() as i64;
            let at = if i < 0 { i + n } else { i };
            match items.get(at as usize).copied().filter(|_| at >= 0) {
                Some(v) => {
                    it.heap.incref(v);
                    Ok(v)
                }
                None => {
                    let t = it.heap.kind(id).type_name();
                    it.error(format!("IndexError: {t} index out of range"))
                }
            }
        }
        ObjKind::Size(dims) => {
            let Value::Int(i) = key else {
                return it.error("TypeError: indices must be integers");
            };
            let n = dims.len() as i64;
            let at = if i < 0 { i + n } else { i };
            match dims.get(at as usize).copied().filter(|_| at >= 0) {
                Some(d) => Ok(Value::Int(d)),
                None => it.error("IndexError: index out of range"),
            }
        }
        ObjKind::Dict(_) => match it.dict_lookup(id, key)?.map(|i| it.dict_value_at(id, i)) {
            Some(v) => {
                it.heap.incref(v);
                Ok(v)
            }
            None => it.dict_missing(id, key),
        },
        other => {
            let t = other.type_name();
            it.error(format!("TypeError: '{t}' object is not subscriptable"))
        }
    }
}

/// Basic indexing gives a view; any index tensor makes a copy (advanced indexing).
pub(super) fn tensor_index(
    it: &mut Interpreter<'_>,
    id: ObjId,
    t: &torch::TensorData,
    items: &[IndexItem],
) -> R<Value> {
    let consumed: usize = items
        .iter()
        .map(|i| match i {
            IndexItem::NewAxis | IndexItem::Ellipsis => 0,
            IndexItem::Mask(s, _) => s.len(),
            _ => 1,
        })
        .sum();
    if consumed > t.shape.len() {
        return it.error(format!(
            "IndexError: too many indices for tensor of dimension {}",
            t.shape.len()
        ));
    }
    let mut shape = Vec::new();
    let mut dim = 0usize;
    let mut advanced: Option<Vec<i64>> = None;
    let mut masks: Vec<Value> = Vec::new();
    for item in items {
        match item {
            IndexItem::Int(i) => {
                let size = t.shape[dim];
                if *i >= size || *i < -size {
                    return it.error(format!("IndexError: index {i} is out of bounds for dimension {dim} with size {size}"));
                }
                dim += 1;
            }
            IndexItem::Slice(a, b, s) => {
                let Some((_, _, count)) = slice_len(t.shape[dim], *a, *b, *s) else {
                    return it.error("ValueError: slice step cannot be zero");
                };
                if s.is_some_and(|s| s < 0) {
                    return it.error("ValueError: step must be greater than zero");
                }
                shape.push(count);
                dim += 1;
            }
            IndexItem::NewAxis => shape.push(1),
            IndexItem::Ellipsis => {
                let rest = consumed.saturating_sub(dim);
                let skip = t.shape.len() - dim - rest;
                shape.extend_from_slice(&t.shape[dim..dim + skip]);
                dim += skip;
            }
            IndexItem::Tensor(s, v) => {
                if advanced.is_none() {
                    advanced = Some(s.clone());
                    shape.extend_from_slice(s);
                }
                masks.extend(*v);
                dim += 1;
            }
            IndexItem::Mask(s, v) => {
                for (k, &size) in s.iter().enumerate() {
                    if t.shape[dim + k] != size {
                        return it.error(format!(
                            "IndexError: The shape of the mask {s:?} at index {k} does not match the shape of the indexed tensor {:?} at index {}",
                            t.shape,
                            dim + k
                        ));
                    }
                }
                // The count of `True` elements depends on values the model does not hold:
                // the upper bound, every element selected.
                let selected: i64 = s.iter().product();
                if advanced.is_none() {
                    advanced = Some(vec![selected]);
                    shape.push(selected);
                }
                masks.push(*v);
                dim += s.len();
            }
        }
    }
    shape.extend_from_slice(&t.shape[dim..]);
    if advanced.is_some() {
        // `index.Tensor`: a copy; `IndexBackward0` keeps the index tensors and masks as
        // given (and self's sizes).
        let mut inputs = vec![Value::Obj(id)];
        inputs.extend(masks.iter().copied());
        let out = op_output(it, shape, t.dtype, t.device, &inputs)?;
        let saves: Vec<Save> = (1..inputs.len()).map(Save::Input).collect();
        autograd::record(
            it,
            out,
            crate::python::autograd::row("index").node,
            GradFlow::Compute,
            &inputs,
            &saves,
        );
        return Ok(out);
    }
    let op = indexing_view_op(items, &t.shape);
    super::tensor_methods::view_by(it, id, shape, op)
}

/// The index tensors of an index that `THPVariable_setitem` hands to `index_put_` on the
/// tensor itself (borrowed): some advanced item, every other item a whole-dimension slice
/// (which `applySlicing` answers with the tensor itself). `None` for a basic index or a mix
/// whose slicing makes a view (written by `copy_` into that view). A list index has no
/// tensor object in the model, so nothing of it is listed.
fn advanced_indices(items: &[IndexItem]) -> Option<Vec<Value>> {
    let advanced = items
        .iter()
        .any(|i| matches!(i, IndexItem::Mask(..) | IndexItem::Tensor(..)));
    let whole = items.iter().all(|i| {
        matches!(
            i,
            IndexItem::Mask(..) | IndexItem::Tensor(..) | IndexItem::Slice(None, None, None)
        )
    });
    (advanced && whole).then(|| {
        items
            .iter()
            .filter_map(|i| match i {
                IndexItem::Mask(_, v) | IndexItem::Tensor(_, Some(v)) => Some(*v),
                _ => None,
            })
            .collect()
    })
}

/// `obj[index] = value`, taking over `value`.
pub(in crate::python) fn store_subscript<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    index: &'a Expr,
    value: Value,
) -> R<()> {
    if it.user_special(obj, "__setitem__").is_some() {
        let key = match it.eval(index) {
            Ok(k) => k,
            Err(e) => {
                it.heap.decref(value);
                return Err(e);
            }
        };
        let r = it
            .call_special(obj, "__setitem__", vec![key, value])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        it.heap.decref(value);
        return it.error("TypeError: object does not support item assignment");
    };
    if let Some(kind) = it.container_kind(obj) {
        return it.container_store(id, kind, index, value);
    }
    if it.is_weak_container(obj).is_some() {
        let key = match it.eval(index) {
            Ok(k) => k,
            Err(e) => {
                it.heap.decref(value);
                return Err(e);
            }
        };
        return it.weak_store(id, key, value);
    }
    if it.is_tensor(obj) {
        // Writing into a tensor copies values into existing memory: no allocation, but
        // autograd history (`CopySlices`) and the version counter.
        let r = index_items(it, index).and_then(|items| {
            let r = match advanced_indices(&items) {
                Some(indices) => crate::python::index_put::index_put(it, id, value, &indices),
                None => crate::python::inplace::copy_into_index(it, id, value),
            };
            release_index_items(it, items);
            r
        });
        it.heap.decref(value);
        return r;
    }
    let key = it.eval(index)?;
    match it.heap.kind(id) {
        ObjKind::Dict(_) => {
            if let Err(e) = it.check_dict_key(key) {
                it.heap.decref(key);
                it.heap.decref(value);
                return Err(e);
            }
            it.dict_set(id, key, value);
            Ok(())
        }
        ObjKind::List(items) | ObjKind::Deque { items, .. } => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                it.heap.decref(value);
                return it.error("TypeError: list indices must be integers");
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                it.heap.decref(value);
                return it.error("IndexError: list assignment index out of range");
            }
            let (ObjKind::List(items) | ObjKind::Deque { items, .. }) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::replace(&mut items[at as usize], value);
            it.heap.decref(old);
            Ok(())
        }
        other => {
            let t = other.type_name();
            it.heap.decref(key);
            it.heap.decref(value);
            it.error(format!(
                "TypeError: '{t}' object does not support item assignment"
            ))
        }
    }
}

/// `del obj[index]`.
pub(in crate::python) fn del_subscript<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    index: &'a Expr,
) -> R<()> {
    if it.user_special(obj, "__delitem__").is_some() {
        let key = it.eval(index)?;
        let r = it
            .call_special(obj, "__delitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        return it.error("TypeError: object does not support item deletion");
    };
    if let Some(kind) = it.container_kind(obj) {
        return it.container_delete(id, kind, index);
    }
    let key = it.eval(index)?;
    if it.is_weak_container(obj).is_some() {
        let found = it.weak_delete(id, key);
        let r = if found { Ok(()) } else { it.key_error(key) };
        it.heap.decref(key);
        return r;
    }
    let found = match it.heap.kind(id) {
        ObjKind::Dict(_) => it.dict_lookup(id, key)?,
        _ => None,
    };
    let removed = match it.heap.kind_mut(id) {
        ObjKind::Dict(items) => match found {
            Some(i) => {
                let (k, v) = items.remove(i);
                vec![k, v]
            }
            None => return it.error(format!("KeyError: {}", it.repr_text(key))),
        },
        ObjKind::List(items) => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                return it.error("TypeError: list indices must be integers");
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                return it.error("IndexError: list assignment index out of range");
            }
            vec![items.remove(at as usize)]
        }
        _ => return it.unsupported("deleting items of this object"),
    };
    it.heap.decref(key);
    it.heap.decref_all(removed);
    Ok(())
}

/// The view op whose node basic indexing leaves on its result (`get_item` in ATen's
/// TensorIndexing.h): one index is `select`, `slice` (even `[:]`), `unsqueeze` (`None`) or
/// `alias` (`...`); several apply one op each in turn, skipping a slice that keeps a whole
/// dimension, and give an `alias` when none applied.
fn indexing_view_op(items: &[IndexItem], shape: &[i64]) -> &'static str {
    if let [single] = items {
        return match single {
            IndexItem::Int(_) => "select",
            IndexItem::Slice(..) => "slice",
            IndexItem::NewAxis => "unsqueeze",
            IndexItem::Ellipsis | IndexItem::Tensor(..) | IndexItem::Mask(..) => "alias",
        };
    }
    let mut last = "alias";
    let mut dim = 0usize;
    let consumed = items
        .iter()
        .filter(|i| !matches!(i, IndexItem::NewAxis | IndexItem::Ellipsis))
        .count();
    for item in items {
        match item {
            IndexItem::Int(_) => {
                last = "select";
                dim += 1;
            }
            IndexItem::Slice(a, b, s) => {
                let size = shape.get(dim).copied().unwrap_or(0);
                let whole =
                    a.unwrap_or(0) == 0 && b.is_none_or(|b| b >= size) && s.unwrap_or(1) == 1;
                if !whole {
                    last = "slice";
                }
                dim += 1;
            }
            IndexItem::NewAxis => last = "unsqueeze",
            IndexItem::Ellipsis => dim += shape.len().saturating_sub(consumed),
            IndexItem::Tensor(..) => dim += 1,
            IndexItem::Mask(s, _) => dim += s.len(),
        }
    }
    last
}
