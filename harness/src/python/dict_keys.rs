//! Which values the model's dicts take as keys, and how a lookup finds one. A dict is a
//! list of pairs; a lookup tries the same value first (CPython's identity shortcut), then,
//! for keys compared by value, an equal one: numbers across `int`/`float`/`bool` (`1.0 ==
//! 1 == True`, one key, the first stored kept), tuples item by item (their items by
//! identity where they are objects), frozensets by members. Strings are interned, so the
//! same text is the same value. Every object hashed by `object.__hash__` (instances without
//! their own `__hash__`/`__eq__`, functions, classes, tensors, generators, modules) is a
//! key by identity; a dict keyed by tensors keeps them alive. Unhashable keys raise
//! CPython's `TypeError` on every dict operation (store, `[]`, `in`, `get`, `pop`, `del`).
//! Instances whose class defines `__hash__` are hashed once per operation and compared
//! with their `__eq__` (python/user_hash.rs); in a tuple they are refused, located.

use super::interp::{Interpreter, R};
use super::user_hash::InstanceHash;
use crate::heap::{ObjId, ObjKind, Value};

/// What stands in the way of a key.
enum Problem {
    None,
    /// The type CPython names as unhashable (for a tuple, the item's).
    Unhashable(String),
    Refused(&'static str),
    /// An instance with its own `__hash__` (called by the check).
    User,
}

impl<'a> Interpreter<'a> {
    /// Ok when `key` can be stored in a dict as CPython would; otherwise CPython's
    /// `TypeError` for an unhashable key (worded as 3.14 words it from there on), or a
    /// located refusal.
    pub(in crate::python) fn check_dict_key(&mut self, key: Value) -> R<()> {
        self.raise_kept_key_error()?;
        match self.key_problem(key) {
            Problem::None => Ok(()),
            Problem::User => {
                let h = self.call_user_hash(key, "dict key")?;
                self.keep_probe_hash(key, h);
                Ok(())
            }
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

    /// The index of `dict`'s entry for `key` (borrowed), after CPython's unhashable-key
    /// check: what `d[k]`, `k in d`, `d.get(k)`, `d.pop(k)` and `del d[k]` look up.
    pub(in crate::python) fn dict_lookup(&mut self, dict: ObjId, key: Value) -> R<Option<usize>> {
        self.check_dict_key(key)?;
        match self.user_probe_hash(dict, key)? {
            Some(hash) => self.dict_find_user(dict, key, hash),
            None => Ok(self.dict_find(dict, key)),
        }
    }

    /// The index of `dict`'s entry whose key is `key` or equal to it (no hashability check:
    /// stores check first). Keys compared by identity stop after the first pass.
    pub(in crate::python) fn dict_find(&self, dict: ObjId, key: Value) -> Option<usize> {
        let ObjKind::Dict(items) = self.heap.kind(dict) else {
            return None;
        };
        if let Some(i) = items.iter().position(|(k, _)| *k == key) {
            return Some(i);
        }
        if !self.compared_by_value(key) {
            return None;
        }
        items
            .iter()
            .position(|&(k, _)| self.compared_by_value(k) && self.values_equal(k, key))
    }

    /// The value of `dict`'s entry `i` (borrowed), as [`Self::dict_find`] found it.
    pub(in crate::python) fn dict_value_at(&self, dict: ObjId, i: usize) -> Value {
        match self.heap.kind(dict) {
            ObjKind::Dict(items) => items[i].1,
            _ => unreachable!("an index found in a dict"),
        }
    }

    /// Whether equal keys may be distinct values: numbers (`1`, `1.0`, `True`), tuples,
    /// named tuples and frozensets (distinct objects equal by contents).
    fn compared_by_value(&self, v: Value) -> bool {
        match v {
            Value::Int(_) | Value::Bool(_) | Value::Float(_) => true,
            Value::Obj(id) => matches!(
                self.heap.kind(id),
                ObjKind::Tuple(_) | ObjKind::NamedTuple { .. } | ObjKind::Set { frozen: true, .. }
            ),
            _ => false,
        }
    }

    fn key_problem(&mut self, key: Value) -> Problem {
        let Value::Obj(id) = key else {
            return Problem::None;
        };
        match self.heap.kind(id) {
            ObjKind::Instance { class, .. } => {
                let class = *class;
                if self.torch_class(class).is_some() {
                    return Problem::None;
                }
                match self.instance_hash(class) {
                    InstanceHash::Identity => Problem::None,
                    InstanceHash::Unhashable => Problem::Unhashable(self.class_name(class)),
                    InstanceHash::User => Problem::User,
                    InstanceHash::FrozenDataclass => {
                        Problem::Refused("a frozen dataclass as a dict key or set member")
                    }
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
                // The first item that is unhashable (or refused) decides (`tuplehash`
                // hashes the items in order).
                for item in items.clone() {
                    match self.key_problem(item) {
                        Problem::None => {}
                        Problem::User => {
                            return Problem::Refused(
                                "a tuple holding an instance with its own `__hash__` as a dict key or set member",
                            );
                        }
                        problem => return problem,
                    }
                }
                Problem::None
            }
            ObjKind::Set { frozen: true, .. } => Problem::None,
            _ => Problem::Refused("dict keys of this type"),
        }
    }
}
