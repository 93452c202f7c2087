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

pub(super) fn index_items(it: &mut Interpreter<'_>, index: &Index) -> R<Vec<IndexItem>> {
    let mut out = Vec::with_capacity(index.parts.len());
    // A tuple given as one value (`t[idx]` with `idx = (0, 1)`, a constant tuple) indexes
    // as its items, as `THPVariable_getitem` unpacks it; its items are borrowed.
    let items = match index.single() {
        Some(Value::Obj(id)) => match it.heap.kind(id) {
            ObjKind::Tuple(items) => {
                Some(items.iter().map(|&v| Part::Value(v)).collect::<Vec<_>>())
            }
            _ => None,
        },
        _ => None,
    };
    let r = index_items_into(it, items.as_deref().unwrap_or(&index.parts), &mut out);
    match r {
        Ok(()) => Ok(out),
        Err(e) => {
            release_index_items(it, out);
            Err(e)
        }
    }
}

fn index_items_into(it: &mut Interpreter<'_>, parts: &[Part], out: &mut Vec<IndexItem>) -> R<()> {
    for part in parts {
        out.push(match *part {
            Part::Slice(bounds) => {
                let (a, b, c) = slice_bounds(it, bounds)?;
                IndexItem::Slice(a, b, c)
            }
            Part::Ellipsis => IndexItem::Ellipsis,
            Part::Value(Value::None) => IndexItem::NewAxis,
            Part::Value(v) => {
                if let Some(t) = tensor_of(it, v) {
                    let item = if matches!(t.dtype, Dtype::Bool | Dtype::UInt8) {
                        IndexItem::Mask(t.shape.clone(), v)
                    } else {
                        IndexItem::Tensor(t.shape.clone(), Some(v))
                    };
                    it.heap.incref(v);
                    out.push(item);
                    continue;
                }
                if let Some(i) = index_int(it, v)? {
                    IndexItem::Int(i)
                } else if matches!(v, Value::Obj(_)) {
                    let n = sequence_items(it, v)?.len();
                    IndexItem::Tensor(vec![n as i64], None)
                } else {
                    return it.unsupported("this index");
                }
            }
        });
    }
    Ok(())
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

/// `obj[index]`: tensor views or copies, sequence items and slices, dict lookups. Borrows
/// `obj` and `index` (the caller releases them: the container first, as `BINARY_SUBSCR`).
pub(in crate::python) fn subscript(
    it: &mut Interpreter<'_>,
    obj: Value,
    index: &mut Index,
) -> R<Value> {
    if it.user_special(obj, "__getitem__").is_some() {
        let key = index.key(it)?;
        it.heap.incref(key);
        return it
            .call_special(obj, "__getitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"));
    }
    if it.is_data_subscript(obj) {
        let key = index.key(it)?;
        return it.dataset_item(obj, key);
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
    if let Some(bounds) = index.slice() {
        let (lower, upper, step) = slice_bounds(it, bounds)?;
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
    let key = index.key(it)?;
    let key = sequence_key(it, id, key)?;
    item(it, id, key)
}

/// A list's or tuple's index as an int (`__index__` called), any other key as it is.
fn sequence_key(it: &mut Interpreter<'_>, id: ObjId, key: Value) -> R<Value> {
    let sequence = matches!(
        it.heap.kind(id),
        ObjKind::List(_) | ObjKind::Tuple(_) | ObjKind::Deque { .. } | ObjKind::NamedTuple { .. }
    );
    if sequence
        && matches!(key, Value::Obj(_))
        && let Some(i) = index_int(it, key)?
    {
        return Ok(Value::Int(i));
    }
    Ok(key)
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

/// `obj[index] = value`, taking over `value`; borrows `obj` and `index`.
pub(in crate::python) fn store_subscript(
    it: &mut Interpreter<'_>,
    obj: Value,
    index: &mut Index,
    value: Value,
) -> R<()> {
    let r = store_borrowed(it, obj, index, value);
    it.heap.decref(value);
    r
}

/// `obj[index] = value` with every operand borrowed (`STORE_SUBSCR` releases the value
/// after the store).
fn store_borrowed(it: &mut Interpreter<'_>, obj: Value, index: &mut Index, value: Value) -> R<()> {
    if it.user_special(obj, "__setitem__").is_some() {
        let key = index.key(it)?;
        it.heap.incref(key);
        it.heap.incref(value);
        let r = it
            .call_special(obj, "__setitem__", vec![key, value])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        let t = it.value_type_name(obj);
        return it.error(format!(
            "TypeError: '{t}' object does not support item assignment"
        ));
    };
    if let Some(kind) = it.container_kind(obj) {
        it.heap.incref(value);
        return it.container_store(id, kind, index, value);
    }
    if it.is_weak_container(obj).is_some() {
        let key = index.key(it)?;
        it.heap.incref(key);
        it.heap.incref(value);
        return it.weak_store(id, key, value);
    }
    if it.is_tensor(obj) {
        // Writing into a tensor copies values into existing memory: no allocation, but
        // autograd history (`CopySlices`) and the version counter.
        let items = index_items(it, index)?;
        let r = match advanced_indices(&items) {
            Some(indices) => crate::python::index_put::index_put(it, id, value, &indices),
            None => crate::python::inplace::copy_into_index(it, id, value),
        };
        release_index_items(it, items);
        return r;
    }
    if let (Some(bounds), ObjKind::List(_)) = (index.slice(), it.heap.kind(id)) {
        return store_list_slice(it, id, bounds, value);
    }
    let key = index.key(it)?;
    let key = sequence_key(it, id, key)?;
    match it.heap.kind(id) {
        ObjKind::Dict(_) => {
            it.check_dict_key(key)?;
            it.heap.incref(key);
            it.heap.incref(value);
            it.dict_set(id, key, value);
            Ok(())
        }
        ObjKind::List(items) | ObjKind::Deque { items, .. } => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                let t = it.value_type_name(key);
                return it.error(format!(
                    "TypeError: list indices must be integers or slices, not {t}"
                ));
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                return it.error("IndexError: list assignment index out of range");
            }
            it.heap.incref(value);
            let (ObjKind::List(items) | ObjKind::Deque { items, .. }) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::replace(&mut items[at as usize], value);
            it.heap.decref(old);
            Ok(())
        }
        other => {
            let t = other.type_name();
            it.error(format!(
                "TypeError: '{t}' object does not support item assignment"
            ))
        }
    }
}

/// `lst[a:b] = iterable` (step 1 only): the slice's items are replaced by the iterable's.
fn store_list_slice(
    it: &mut Interpreter<'_>,
    id: ObjId,
    bounds: [Value; 3],
    value: Value,
) -> R<()> {
    let (lower, upper, step) = slice_bounds(it, bounds)?;
    if step.is_some_and(|s| s != 1) {
        return it.unsupported("assigning to an extended slice of a list");
    }
    let new = sequence_items(it, value)?;
    let ObjKind::List(items) = it.heap.kind(id) else {
        unreachable!("checked by the caller")
    };
    let n = items.len() as i64;
    let (start, _, count) = slice_len(n, lower, upper, None).expect("step 1");
    for &v in &new {
        it.heap.incref(v);
    }
    let ObjKind::List(items) = it.heap.kind_mut(id) else {
        unreachable!()
    };
    let start = start as usize;
    let removed: Vec<Value> = items.splice(start..start + count as usize, new).collect();
    // `list_ass_slice` releases the replaced items last to first.
    it.heap
        .decref_all(removed.into_iter().rev().collect::<Vec<_>>());
    Ok(())
}

/// `del obj[index]`; borrows `obj` and `index`.
pub(in crate::python) fn del_subscript(
    it: &mut Interpreter<'_>,
    obj: Value,
    index: &mut Index,
) -> R<()> {
    if it.user_special(obj, "__delitem__").is_some() {
        let key = index.key(it)?;
        it.heap.incref(key);
        let r = it
            .call_special(obj, "__delitem__", vec![key])
            .unwrap_or_else(|_| unreachable!("checked above"))?;
        it.heap.decref(r);
        return Ok(());
    }
    let Value::Obj(id) = obj else {
        let t = it.value_type_name(obj);
        return it.error(format!(
            "TypeError: '{t}' object doesn't support item deletion"
        ));
    };
    if let Some(kind) = it.container_kind(obj) {
        return it.container_delete(id, kind, index);
    }
    if let (Some(bounds), ObjKind::List(_)) = (index.slice(), it.heap.kind(id)) {
        let (lower, upper, step) = slice_bounds(it, bounds)?;
        let ObjKind::List(items) = it.heap.kind(id) else {
            unreachable!()
        };
        let Some((start, step, count)) = slice_len(items.len() as i64, lower, upper, step) else {
            return it.error("ValueError: slice step cannot be zero");
        };
        let mut picked: Vec<usize> = (0..count).map(|k| (start + k * step) as usize).collect();
        picked.sort_unstable();
        let ObjKind::List(items) = it.heap.kind_mut(id) else {
            unreachable!()
        };
        // Last to first for a plain slice (`list_ass_slice`'s `recycled`), in slice order
        // for an extended one (`list_ass_subscript`'s `garbage`).
        let mut removed: Vec<Value> = picked.iter().rev().map(|&i| items.remove(i)).collect();
        if step != 1 {
            removed.reverse();
        }
        it.heap.decref_all(removed);
        return Ok(());
    }
    let key = index.key(it)?;
    if it.is_weak_container(obj).is_some() {
        let found = it.weak_delete(id, key);
        return if found { Ok(()) } else { it.key_error(key) };
    }
    let key = sequence_key(it, id, key)?;
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
            None => return it.key_error(key),
        },
        ObjKind::List(items) => {
            let n = items.len() as i64;
            let Value::Int(i) = key else {
                return it.error("TypeError: list indices must be integers or slices");
            };
            let at = if i < 0 { i + n } else { i };
            if at < 0 || at >= n {
                return it.error("IndexError: list assignment index out of range");
            }
            vec![items.remove(at as usize)]
        }
        other @ (ObjKind::Tuple(_) | ObjKind::Set { .. }) => {
            let t = other.type_name();
            return it.error(format!(
                "TypeError: '{t}' object doesn't support item deletion"
            ));
        }
        _ => return it.unsupported("deleting items of this object"),
    };
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
