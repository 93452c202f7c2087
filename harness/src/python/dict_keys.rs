//! Which values the model's dicts take as keys. A dict is a list of pairs compared by
//! `Value` equality: ints, strings and `None` by value, heap objects by identity. That is
//! CPython's lookup for every object hashed by `object.__hash__` (instances without their
//! own `__hash__`/`__eq__`, functions, classes, tensors, generators, modules), so those are
//! keys; a dict keyed by tensors keeps them alive. Unhashable keys raise CPython's
//! `TypeError`; keys compared by value (tuples, floats, user `__hash__`) are refused where
//! stored, since a lookup by an equal but distinct object is not modelled.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

/// What stands in the way of a key.
enum Problem {
    None,
    /// The type CPython names as unhashable (for a tuple, the item's).
    Unhashable(String),
    Refused(&'static str),
}

impl<'a> Interpreter<'a> {
    /// Ok when `key` can be stored in a dict as CPython would; otherwise CPython's
    /// `TypeError` for an unhashable key (worded as 3.14 words it from there on), or a
    /// located refusal.
    pub(in crate::python) fn check_dict_key(&mut self, key: Value) -> R<()> {
        match self.key_problem(key) {
            Problem::None => Ok(()),
            Problem::Refused(what) => self.unsupported(what),
            Problem::Unhashable(inner) if self.heap.profile.version.minor >= 14 => {
                let outer = match key {
                    Value::Obj(id) => match self.heap.kind(id) {
                        ObjKind::Instance { class, .. } => self.class_name(*class),
                        kind => kind.type_name().to_string(),
                    },
                    _ => inner.clone(),
                };
                self.error(format!(
                    "TypeError: cannot use '{outer}' as a dict key (unhashable type: '{inner}')"
                ))
            }
            Problem::Unhashable(t) => self.error(format!("TypeError: unhashable type: '{t}'")),
        }
    }

    fn key_problem(&mut self, key: Value) -> Problem {
        let Value::Obj(id) = key else {
            return match key {
                Value::Float(_) => Problem::Refused("float dict keys"),
                _ => Problem::None,
            };
        };
        match self.heap.kind(id) {
            ObjKind::Instance { class, .. } => {
                let class = *class;
                let hash_sym = self.names.intern("__hash__");
                let eq_sym = self.names.intern("__eq__");
                // A class body defining `__eq__` without `__hash__` gets `__hash__ = None`
                // (`type_new`); the model looks the two up instead.
                let hash = match self.class_lookup(class, hash_sym) {
                    None if matches!(self.class_lookup(class, eq_sym), Some(Value::Obj(_))) => {
                        Some(Value::None)
                    }
                    found => found,
                };
                match hash {
                    Some(Value::None) => Problem::Unhashable(self.class_name(class)),
                    Some(Value::Obj(_)) => Problem::Refused(
                        "dict keys whose class defines `__hash__` (lookup by value)",
                    ),
                    _ => Problem::None,
                }
            }
            ObjKind::Class(_)
            | ObjKind::Function(_)
            | ObjKind::Tensor(_)
            | ObjKind::Generator(_)
            | ObjKind::Future(_)
            | ObjKind::Exception(_) => Problem::None,
            kind @ (ObjKind::List(_)
            | ObjKind::Dict(_)
            | ObjKind::Deque { .. }
            | ObjKind::Set { frozen: false, .. }) => {
                Problem::Unhashable(kind.type_name().to_string())
            }
            ObjKind::Tuple(items) | ObjKind::NamedTuple { items, .. } => {
                // An unhashable item makes the tuple unhashable (`tuplehash`).
                for item in items.clone() {
                    if let Problem::Unhashable(t) = self.key_problem(item) {
                        return Problem::Unhashable(t);
                    }
                }
                Problem::Refused("tuple dict keys (lookup by value)")
            }
            _ => Problem::Refused("dict keys of this type"),
        }
    }
}
