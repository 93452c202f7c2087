//! `list(x)`, `tuple(x)` and `dict(x)` called as types: how CPython allocates (and so
//! counts) the container each makes, which differs from the displays' free lists.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// `list(x)` allocates through the type (`PyType_GenericAlloc`), never from the list free
/// list that `[...]` displays use, so it is always counted (measured: `keep.append(list((1,
/// 2)))` counts 1 on CPython 3.8–3.13 with the free lists full, `[1, 2]` counts 0).
/// `PyObject_LengthHint` of an iterator `tuple(...)` consumes: the remaining length of a
/// sequence or range iterator or a `reversed`, else the default 10 (generators, `map`,
/// `filter`, `zip`, `enumerate` and user iterators have no `__length_hint__`).
pub(super) fn length_hint(it: &Interpreter<'_>, iterator: ObjId) -> Option<usize> {
    match it.heap.kind(iterator) {
        ObjKind::Wrapper(
            WrapperKind::SeqIter | WrapperKind::RangeIter | WrapperKind::Reversed,
            _,
        ) => None,
        _ => Some(10),
    }
}

/// `PySequence_Tuple` of an iterator (`items` owned): CPython allocates a tuple of the
/// length hint (`Some(n)`; `None`: exactly the items, as the hint of a sequence iterator
/// is), taking it from that size's free list when it can, grows and shrinks it in place
/// (`_PyTuple_Resize`, nothing counted) to the final size. So `tuple(<genexpr>)` counts
/// 1 only once the size-10 free list is empty (measured on 3.8 – 3.15: the first calls
/// count 0 until it drains, then 1 each), and the tuple dies onto its own size's list.
pub(super) fn tuple_from_iterator(
    it: &mut Interpreter<'_>,
    items: Vec<Value>,
    hint: Option<usize>,
) -> Value {
    match hint {
        Some(hint) if !items.is_empty() => {
            if it.heap.count_tuple_allocation(hint) {
                it.collection_due();
            }
            Value::Obj(it.heap.insert(ObjKind::Tuple(items)))
        }
        _ => Value::Obj(it.alloc(ObjKind::Tuple(items))),
    }
}

pub(super) fn list_from_type_call(it: &mut Interpreter<'_>, items: Vec<Value>) -> Value {
    it.count_untracked_allocations(1);
    Value::Obj(it.heap.insert(ObjKind::List(items)))
}

/// `dict(mapping_or_pairs, **kw)`: like `list(...)`, allocated through the type and so always
/// counted (measured: `dict()`, `dict(a=1)`, `dict({1: 2})` and `dict([(1, 2)])` each count
/// 1 on CPython 3.8–3.13 with the free lists full). Tracked only once it holds a GC object.
pub(super) fn dict_from_type_call(
    it: &mut Interpreter<'_>,
    p: &[Value],
    kw: &[(Sym, Value)],
) -> R<Value> {
    // Borrowed (key, value) pairs first; `pairs` owns what `collect_items` produced.
    let (mut borrowed, pairs) = match p {
        [] => (Vec::new(), Vec::new()),
        [Value::Obj(src)] if matches!(it.heap.kind(*src), ObjKind::Dict(_)) => {
            let ObjKind::Dict(entries) = it.heap.kind(*src) else {
                unreachable!()
            };
            (entries.clone(), Vec::new())
        }
        [source] => {
            let pairs = it.collect_items(*source)?;
            let mut kv = Vec::with_capacity(pairs.len());
            for &pair in &pairs {
                match pair {
                    Value::Obj(o) => match it.heap.kind(o) {
                        ObjKind::Tuple(two) | ObjKind::List(two) if two.len() == 2 => {
                            kv.push((two[0], two[1]))
                        }
                        _ => kv.clear(),
                    },
                    _ => kv.clear(),
                }
                if kv.is_empty() {
                    it.heap.decref_all(pairs);
                    return it.error("ValueError: dictionary update sequence element has the wrong length (2 is required)");
                }
            }
            (kv, pairs)
        }
        _ => return it.error("TypeError: dict expected at most 1 argument"),
    };
    borrowed.extend(kw.iter().map(|&(k, v)| (Value::Str(k), v)));
    let keys: Vec<Value> = borrowed.iter().map(|(k, _)| *k).collect();
    for k in keys {
        if let Err(e) = it.check_dict_key(k) {
            it.heap.decref_all(pairs);
            return Err(e);
        }
    }
    it.count_untracked_allocations(1);
    let dict = it.heap.insert(ObjKind::Dict(Vec::new()));
    for (k, v) in borrowed {
        // `dict_set` keeps the first equal key and takes over both references.
        it.heap.incref(k);
        it.heap.incref(v);
        it.dict_set(dict, k, v);
    }
    it.heap.decref_all(pairs);
    Ok(Value::Obj(dict))
}
