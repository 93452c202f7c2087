//! `weakref.WeakValueDictionary`, `weakref.WeakKeyDictionary` and `weakref.WeakSet`:
//! containers whose entries vanish when the object they hold weakly dies (by reference
//! counting or when the collector frees its cycle), which users reach for to make a cache
//! that does not keep tensors alive.
//!
//! Each entry holds one weak reference with a callback (CPython's `KeyedRef` for a
//! value, a `ref` with the container's `_remove` for a key or set item): one GC object per
//! entry, freed with the entry, as measured with `gc.get_count()` on CPython 3.8 – 3.15.
//! The callback removes the entry at the end of the statement in which the object died
//! (CPython removes it inside the deallocation); until then reads skip the dead entry, as
//! CPython's `get` and `__len__` do.
//!
//! Approximations: the objects CPython's pure-Python classes create on construction (the
//! instance, its `data` dict, the `_remove` closure, the pending-removals list, ...) are
//! counted as the measured total per version, not modelled one by one; `keys()`,
//! `values()`, `items()` and iteration give a list of the live entries at that moment
//! (CPython iterates lazily under an iteration guard); keys compare as the model compares
//! dict keys (ints, floats, strings by value, objects by identity).

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};

/// Marks a weak reference as an entry of a weak container (its second item); its first
/// item is the container's id, the callback that removes the entry.
const ENTRY: Value = Value::Bool(true);

impl<'a> Interpreter<'a> {
    /// `WeakValueDictionary()`, `WeakKeyDictionary()`, `WeakSet()`.
    pub(in crate::python) fn new_weak_container(
        &mut self,
        kind: WrapperKind,
        p: &[Value],
    ) -> R<Value> {
        if !p.is_empty() {
            return self.unsupported("initial contents of a weak container");
        }
        let minor = self.heap.profile.version.minor;
        // Measured `gc.get_count()` of a construction, 3.8 – 3.15.
        let total: u64 = match (kind, minor) {
            (WrapperKind::WeakValueDict, 9 | 10) => 6,
            (WrapperKind::WeakValueDict, 14..) => 4,
            (WrapperKind::WeakValueDict, _) => 5,
            (WrapperKind::WeakKeyDict, 11) => 4,
            (WrapperKind::WeakKeyDict, 14..) => 3,
            (WrapperKind::WeakKeyDict, _) => 5,
            (_, 11) => 5,
            (_, 14..) => 4,
            _ => 6,
        };
        let container = self.new_wrapper(kind, Vec::new());
        self.count_untracked_allocations(total - 1);
        Ok(container)
    }

    fn weak_kind(&self, id: ObjId) -> WrapperKind {
        match self.heap.kind(id) {
            ObjKind::Wrapper(k, _) => *k,
            _ => unreachable!("a weak container"),
        }
    }

    fn weak_items(&self, id: ObjId) -> Vec<Value> {
        match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => items.clone(),
            _ => Vec::new(),
        }
    }

    /// Items per entry: key and reference, reference and value, or the reference alone.
    fn entry_width(kind: WrapperKind) -> usize {
        if kind == WrapperKind::WeakSet { 1 } else { 2 }
    }

    /// Where the reference sits in an entry.
    fn ref_slot(kind: WrapperKind) -> usize {
        usize::from(kind == WrapperKind::WeakValueDict)
    }

    fn same_weak_key(&self, a: Value, b: Value) -> bool {
        a == b || self.values_equal(a, b)
    }

    /// The live target of an entry's reference.
    fn entry_target(&self, r: Value) -> Option<Value> {
        r.obj()
            .and_then(|r| self.heap.weak_target(r))
            .map(Value::Obj)
    }

    /// The index of the live entry for `key` (a key, or a set item).
    fn weak_find(&self, id: ObjId, key: Value) -> Option<usize> {
        let kind = self.weak_kind(id);
        let items = self.weak_items(id);
        let width = Self::entry_width(kind);
        (0..items.len()).step_by(width).find(|&i| {
            let r = items[i + Self::ref_slot(kind)];
            let Some(target) = self.entry_target(r) else {
                return false;
            };
            let k = if kind == WrapperKind::WeakValueDict {
                items[i]
            } else {
                target
            };
            self.same_weak_key(k, key)
        })
    }

    /// A weak reference for an entry of `container` (owned).
    fn entry_ref(&mut self, container: ObjId, target: Value) -> R<Value> {
        let target = match target {
            Value::Obj(t)
                if !matches!(
                    self.heap.kind(t),
                    ObjKind::List(_) | ObjKind::Dict(_) | ObjKind::Tuple(_)
                ) =>
            {
                t
            }
            other => {
                let t = self.type_name_of(other);
                return self.error(format!(
                    "TypeError: cannot create weak reference to '{t}' object"
                ));
            }
        };
        let r = self.alloc(ObjKind::Wrapper(
            WrapperKind::WeakRef,
            vec![Value::Int(i64::from(container.0)), ENTRY],
        ));
        self.heap.register_weak(r, target);
        Ok(Value::Obj(r))
    }

    /// Removes the entry at `index`, dropping its items.
    fn weak_remove_at(&mut self, id: ObjId, index: usize) {
        let width = Self::entry_width(self.weak_kind(id));
        let removed: Vec<Value> = match self.heap.kind_mut(id) {
            ObjKind::Wrapper(_, items) => items.drain(index..index + width).collect(),
            _ => Vec::new(),
        };
        self.heap.decref_all(removed);
    }

    /// `d[key] = value` on a weak dictionary, `s.add(item)` on a weak set (owned
    /// `key`, `value`; `value` is `None` for a set).
    pub(in crate::python) fn weak_store(&mut self, id: ObjId, key: Value, value: Value) -> R<()> {
        let kind = self.weak_kind(id);
        let (weakly, strongly) = match kind {
            WrapperKind::WeakValueDict => (value, key),
            _ => (key, value),
        };
        let r = match self.entry_ref(id, weakly) {
            Ok(r) => r,
            Err(e) => {
                self.heap.decref(key);
                self.heap.decref(value);
                return Err(e);
            }
        };
        if let Some(i) = self.weak_find(id, key) {
            self.weak_remove_at(id, i);
        }
        // The container holds the reference (and a key or value), not the weak side.
        self.heap.decref(weakly);
        let entry = match kind {
            WrapperKind::WeakValueDict => vec![strongly, r],
            WrapperKind::WeakKeyDict => vec![r, strongly],
            _ => vec![r],
        };
        if let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id) {
            items.extend(entry);
        }
        Ok(())
    }

    /// `d[key]` (a new reference), or CPython's `KeyError`.
    pub(in crate::python) fn weak_get(&mut self, id: ObjId, key: Value) -> R<Option<Value>> {
        let kind = self.weak_kind(id);
        let Some(i) = self.weak_find(id, key) else {
            return Ok(None);
        };
        let items = self.weak_items(id);
        let v = match kind {
            WrapperKind::WeakValueDict => self.entry_target(items[i + 1]).unwrap_or(Value::None),
            WrapperKind::WeakKeyDict => items[i + 1],
            _ => Value::Bool(true),
        };
        self.heap.incref(v);
        Ok(Some(v))
    }

    /// `key in d` / `item in s`.
    pub(in crate::python) fn weak_contains(&self, id: ObjId, key: Value) -> bool {
        self.weak_find(id, key).is_some()
    }

    /// `len(d)`: the live entries.
    pub(in crate::python) fn weak_len(&self, id: ObjId) -> i64 {
        let kind = self.weak_kind(id);
        let items = self.weak_items(id);
        (0..items.len())
            .step_by(Self::entry_width(kind))
            .filter(|&i| self.entry_target(items[i + Self::ref_slot(kind)]).is_some())
            .count() as i64
    }

    /// `del d[key]` / `s.remove(item)`: whether there was an entry.
    pub(in crate::python) fn weak_delete(&mut self, id: ObjId, key: Value) -> bool {
        match self.weak_find(id, key) {
            Some(i) => {
                self.weak_remove_at(id, i);
                true
            }
            None => false,
        }
    }

    /// The live keys, values or (key, value) pairs (`what` 0, 1, 2), or a set's items, as
    /// new references.
    fn weak_snapshot(&mut self, id: ObjId, what: u8) -> Vec<Value> {
        let kind = self.weak_kind(id);
        let items = self.weak_items(id);
        let width = Self::entry_width(kind);
        let mut out = Vec::new();
        for i in (0..items.len()).step_by(width) {
            let Some(target) = self.entry_target(items[i + Self::ref_slot(kind)]) else {
                continue;
            };
            let (k, v) = match kind {
                WrapperKind::WeakValueDict => (items[i], target),
                WrapperKind::WeakKeyDict => (target, items[i + 1]),
                _ => (target, Value::None),
            };
            let value = match what {
                0 => k,
                1 => v,
                _ => {
                    self.heap.incref(k);
                    self.heap.incref(v);
                    out.push(Value::Obj(self.alloc(ObjKind::Tuple(vec![k, v]))));
                    continue;
                }
            };
            self.heap.incref(value);
            out.push(value);
        }
        out
    }

    /// Iterating a weak container: a list of its live keys (or items) now.
    pub(in crate::python) fn weak_iter_list(&mut self, id: ObjId) -> Value {
        let items = self.weak_snapshot(id, 0);
        Value::Obj(self.alloc(ObjKind::List(items)))
    }

    /// Whether `id` is a weak container.
    pub(in crate::python) fn is_weak_container(&self, v: Value) -> Option<ObjId> {
        let id = v.obj()?;
        matches!(
            self.heap.kind(id),
            ObjKind::Wrapper(
                WrapperKind::WeakValueDict | WrapperKind::WeakKeyDict | WrapperKind::WeakSet,
                _
            )
        )
        .then_some(id)
    }

    /// The methods: `get`, `pop`, `keys`, `values`, `items`, `clear`, and on a set `add`,
    /// `discard`, `remove`.
    pub(in crate::python) fn weak_container_method(
        &mut self,
        id: ObjId,
        method: &str,
        p: &[Value],
    ) -> R<Value> {
        let set = self.weak_kind(id) == WrapperKind::WeakSet;
        match (method, p) {
            ("get", [k]) | ("get", [k, _]) if !set => match self.weak_get(id, *k)? {
                Some(v) => Ok(v),
                None => {
                    let d = p.get(1).copied().unwrap_or(Value::None);
                    self.heap.incref(d);
                    Ok(d)
                }
            },
            ("pop", [k]) | ("pop", [k, _]) if !set => match self.weak_get(id, *k)? {
                Some(v) => {
                    self.weak_delete(id, *k);
                    Ok(v)
                }
                None if p.len() == 2 => {
                    self.heap.incref(p[1]);
                    Ok(p[1])
                }
                None => self.key_error(*k),
            },
            ("keys" | "values" | "items", []) if !set => {
                let what = match method {
                    "keys" => 0,
                    "values" => 1,
                    _ => 2,
                };
                let items = self.weak_snapshot(id, what);
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            ("clear", []) => {
                let items = match self.heap.kind_mut(id) {
                    ObjKind::Wrapper(_, items) => std::mem::take(items),
                    _ => Vec::new(),
                };
                self.heap.decref_all(items);
                Ok(Value::None)
            }
            ("add", [x]) if set => {
                self.heap.incref(*x);
                self.weak_store(id, *x, Value::None)?;
                Ok(Value::None)
            }
            ("discard", [x]) if set => {
                self.weak_delete(id, *x);
                Ok(Value::None)
            }
            ("remove", [x]) if set => {
                if self.weak_delete(id, *x) {
                    Ok(Value::None)
                } else {
                    self.key_error(*x)
                }
            }
            _ => {
                let t = self.heap.kind(id).type_name();
                self.unsupported(format!("`{t}.{method}` with these arguments"))
            }
        }
    }

    /// CPython's `KeyError` for a missing key.
    pub(in crate::python) fn key_error<T>(&self, key: Value) -> R<T> {
        self.error(format!("KeyError: {}", self.repr_text(key)))
    }

    /// The callback of an entry's reference: its target died, so the entry goes (if the
    /// container and the entry are still there).
    pub(in crate::python) fn weak_entry_died(&mut self, r: ObjId) {
        let Some(&Value::Int(container)) = (match self.heap.kind(r) {
            ObjKind::Wrapper(_, items) => items.first(),
            _ => None,
        }) else {
            return;
        };
        let Ok(container) = u32::try_from(container) else {
            return;
        };
        let id = ObjId(container);
        // The reference is alive (the queue holds it), so only its own container holds it.
        if !self.heap.is_live(id) || self.is_weak_container(Value::Obj(id)).is_none() {
            return;
        }
        let kind = self.weak_kind(id);
        let items = self.weak_items(id);
        let width = Self::entry_width(kind);
        if let Some(i) = (0..items.len())
            .step_by(width)
            .find(|&i| items[i + Self::ref_slot(kind)] == Value::Obj(r))
        {
            self.weak_remove_at(id, i);
        }
    }
}
