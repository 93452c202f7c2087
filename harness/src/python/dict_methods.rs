//! The methods of `dict` objects (`get`, `pop`, `setdefault`, `update`, ...); the
//! `defaultdict`/`OrderedDict`/`Counter` extras are tried first.

use super::interp::{Interpreter, R};
use super::natives::Args;
use crate::heap::{ObjId, ObjKind, Value};

/// `dict.method(...)` on dict `id`.
pub(super) fn dict_method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    if let Some(result) = it.dict_subclass_method(id, method, a) {
        return result;
    }
    let p = &a.pos;
    let ObjKind::Dict(items) = it.heap.kind(id) else {
        unreachable!()
    };
    let items = items.clone();
    match (method, p.as_slice()) {
        ("get", [k, rest @ ..]) if rest.len() <= 1 => {
            let v = it
                .dict_lookup(id, *k)?
                .map(|i| items[i].1)
                .or(rest.first().copied())
                .unwrap_or(Value::None);
            it.heap.incref(v);
            Ok(v)
        }
        ("keys" | "values", []) => {
            let vals: Vec<Value> = items
                .iter()
                .map(|(k, v)| if method == "keys" { *k } else { *v })
                .collect();
            for &v in &vals {
                it.heap.incref(v);
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(vals))))
        }
        // Like `keys`/`values` here: a list (CPython: a view), of `(key, value)` tuples.
        ("items", []) => {
            let pairs: Vec<(Value, Value)> = items.to_vec();
            let mut tuples = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                it.heap.incref(k);
                it.heap.incref(v);
                tuples.push(Value::Obj(it.alloc(ObjKind::Tuple(vec![k, v]))));
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(tuples))))
        }
        ("pop", [k, rest @ ..]) if rest.len() <= 1 => {
            let found = it.dict_lookup(id, *k)?;
            let ObjKind::Dict(entries) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            match found {
                Some(i) => {
                    let (key, v) = entries.remove(i);
                    it.heap.decref(key);
                    Ok(v)
                }
                None => match rest.first() {
                    Some(&d) => {
                        it.heap.incref(d);
                        Ok(d)
                    }
                    None => it.error(format!("KeyError: {}", it.repr_text(*k))),
                },
            }
        }
        // `logs.setdefault(name, [])`: the stored value, or `default` stored and returned.
        ("setdefault", [k, rest @ ..]) if rest.len() <= 1 => {
            if let Some(i) = it.dict_lookup(id, *k)? {
                let v = items[i].1;
                it.heap.incref(v);
                return Ok(v);
            }
            let d = rest.first().copied().unwrap_or(Value::None);
            it.heap.incref(*k);
            it.heap.incref(d);
            it.dict_set(id, *k, d);
            it.heap.incref(d);
            Ok(d)
        }
        ("update", [other]) if a.kw.is_empty() => {
            let pairs: Vec<(Value, Value)> = match *other {
                Value::Obj(o) => match it.heap.kind(o) {
                    ObjKind::Dict(entries) => entries.clone(),
                    _ => return it.unsupported(format!("dict.update from {}", it.display(*other))),
                },
                _ => return it.unsupported(format!("dict.update from {}", it.display(*other))),
            };
            for (k, v) in pairs {
                it.heap.incref(k);
                it.heap.incref(v);
                it.dict_set(id, k, v);
            }
            Ok(Value::None)
        }
        ("update", []) => {
            for &(k, v) in &a.kw {
                it.heap.incref(v);
                it.dict_set(id, Value::Str(k), v);
            }
            Ok(Value::None)
        }
        ("clear", []) => {
            let ObjKind::Dict(entries) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::take(entries);
            for (k, v) in old {
                it.heap.decref(k);
                it.heap.decref(v);
            }
            Ok(Value::None)
        }
        _ => {
            let t = it.dict_type_name(id);
            it.unsupported(format!("{t} method '{method}' with these arguments"))
        }
    }
}
