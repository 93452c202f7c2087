//! The methods of `list` objects (`append`, `pop`, `sort`, `index`, ...).

use super::interp::{Interpreter, R};
use super::natives::{Args, int_arg, sequence_items};
use crate::heap::{ObjId, ObjKind, Value};

/// `list.method(...)` on list `id`.
pub(super) fn list_method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let p = &a.pos;
    match (method, p.as_slice()) {
        ("append", [v]) => {
            it.heap.incref(*v);
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                items.push(*v);
            }
            Ok(Value::None)
        }
        ("extend", [v]) => {
            let items = sequence_items(it, *v)?;
            for &x in &items {
                it.heap.incref(x);
            }
            if let ObjKind::List(list) = it.heap.kind_mut(id) {
                list.extend(items);
            }
            Ok(Value::None)
        }
        ("insert", [i, v]) => {
            let i = int_arg(it, *i, "index")?;
            it.heap.incref(*v);
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                let n = items.len() as i64;
                let at = if i < 0 { (i + n).max(0) } else { i.min(n) } as usize;
                items.insert(at, *v);
            }
            Ok(Value::None)
        }
        ("pop", rest) => {
            let index = match rest {
                [] => -1,
                [i] => int_arg(it, *i, "index")?,
                _ => return it.error("TypeError: pop expected at most 1 argument"),
            };
            let ObjKind::List(items) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let n = items.len() as i64;
            let at = if index < 0 { index + n } else { index };
            if at < 0 || at >= n {
                return it.error("IndexError: pop index out of range");
            }
            Ok(items.remove(at as usize))
        }
        ("clear", []) => {
            let ObjKind::List(items) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::take(items);
            it.heap.decref_all(old);
            Ok(Value::None)
        }
        ("remove" | "index" | "count", [v]) => {
            let items = sequence_items(it, Value::Obj(id))?;
            // CPython tests identity first, then `==`; `==` of two distinct tensors needs
            // their values, which the model does not have.
            let mut found = Vec::new();
            for (i, &x) in items.iter().enumerate() {
                if x == *v {
                    found.push(i);
                } else if it.is_tensor(x) && it.is_tensor(*v) {
                    return it.unsupported("comparing tensors (values are not modelled)");
                } else if it.values_equal(x, *v) {
                    found.push(i);
                }
                if method != "count" && !found.is_empty() {
                    break;
                }
            }
            match (method, found.first()) {
                ("count", _) => Ok(Value::Int(found.len() as i64)),
                ("index", Some(&i)) => Ok(Value::Int(i as i64)),
                ("remove", Some(&i)) => {
                    let ObjKind::List(items) = it.heap.kind_mut(id) else {
                        unreachable!()
                    };
                    let removed = items.remove(i);
                    it.heap.decref(removed);
                    Ok(Value::None)
                }
                ("index", None) => it.error("ValueError: the value is not in list"),
                _ => it.error("ValueError: list.remove(x): x not in list"),
            }
        }
        ("reverse", []) => {
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                items.reverse();
            }
            Ok(Value::None)
        }
        _ => it.unsupported(format!("list method '{method}' with these arguments")),
    }
}
