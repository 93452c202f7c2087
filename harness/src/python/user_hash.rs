//! Instances whose class defines `__hash__` as dict keys and set members. CPython calls
//! `__hash__` once per insert or lookup (`slot_tp_hash`), keeps the result in the entry,
//! and calls `__eq__` (`PyObject_RichCompare(stored, probe, Py_EQ)`) only on an entry whose
//! kept hash equals the probe's and which is not the probe itself. The model keeps a user
//! key's hash from the store that inserted it (by key object: an object stored in two
//! dicts under different hashes keeps the later one, an approximation), and compares
//! colliding entries in insertion order (CPython's probe order, the same unless deleted
//! slots were reused). A class that defines `__eq__` without `__hash__`, or sets
//! `__hash__ = None`, is unhashable; a `__hash__` returning a non-int is CPython's
//! `TypeError`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};

/// How an instance's class hashes it.
pub(in crate::python) enum InstanceHash {
    /// `object.__hash__` (by identity).
    Identity,
    /// `__hash__` is `None` (set, or implied by an `__eq__` of the class body).
    Unhashable,
    /// A Python-level `__hash__` (the function, borrowed).
    User,
    /// A frozen dataclass with `eq` (its generated `__hash__` hashes the fields).
    FrozenDataclass,
}

impl<'a> Interpreter<'a> {
    /// How instances of `class` hash: the first class in the chain that defines `__hash__`
    /// decides; one that defines `__eq__` without `__hash__` got `__hash__ = None` from
    /// `type_new` (the model looks the pair up per class instead of storing `None`).
    pub(in crate::python) fn instance_hash(&self, class: ObjId) -> InstanceHash {
        // A name never interned is defined by no class.
        let sym = |s: &str| self.names.lookup(s);
        let (hash_sym, eq_sym, setattr_sym) = (sym("__hash__"), sym("__eq__"), sym("__setattr__"));
        let mut cur = Some(class);
        while let Some(c) = cur {
            let ObjKind::Class(cls) = self.heap.kind(c) else {
                break;
            };
            let own = |name: Option<crate::heap::Sym>| {
                let name = name?;
                cls.attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
            };
            match (own(hash_sym), own(eq_sym)) {
                (Some(Value::None), _) => return InstanceHash::Unhashable,
                (Some(_), _) => return InstanceHash::User,
                (None, Some(Value::Obj(eq))) => {
                    let generated = matches!(
                        self.heap.kind(eq),
                        ObjKind::Wrapper(WrapperKind::DataclassEq, _)
                    );
                    let frozen = matches!(own(setattr_sym), Some(Value::Obj(s)) if matches!(
                        self.heap.kind(s),
                        ObjKind::Wrapper(WrapperKind::DataclassFrozenSetattr, _)
                    ));
                    return if generated && frozen {
                        InstanceHash::FrozenDataclass
                    } else {
                        InstanceHash::Unhashable
                    };
                }
                _ => {}
            }
            cur = cls.base;
        }
        InstanceHash::Identity
    }

    /// Whether `v` is an instance hashed by its own `__hash__` (a user key).
    pub(in crate::python) fn is_user_hashed(&self, v: Value) -> bool {
        let Value::Obj(id) = v else { return false };
        let ObjKind::Instance { class, .. } = self.heap.kind(id) else {
            return false;
        };
        let class = *class;
        self.torch_class(class).is_none() && matches!(self.instance_hash(class), InstanceHash::User)
    }

    /// `hash(v)` for an instance whose class defines `__hash__`: one call (its frame made
    /// as any call's), the result checked as `slot_tp_hash` checks it (an int; `-1`
    /// becomes `-2`). `container` names what the key is for (3.14+ words the `TypeError`
    /// as `cannot use 'K' as a dict key (...)`).
    pub(in crate::python) fn call_user_hash(&mut self, v: Value, container: &str) -> R<i64> {
        let r = match self.call_slot(v, "__hash__", None) {
            Some(r) => r?,
            None => return self.error("TypeError: unhashable type"),
        };
        let h = match r {
            Value::Int(i) => i,
            Value::Bool(b) => i64::from(b),
            other => {
                self.heap.decref(other);
                return self.key_type_error(
                    v,
                    container,
                    "__hash__ method should return an integer",
                );
            }
        };
        Ok(if h == -1 { -2 } else { h })
    }

    /// CPython's `TypeError` for a key that cannot be hashed, in each release's words.
    pub(in crate::python) fn key_type_error<T>(
        &self,
        v: Value,
        container: &str,
        inner: &str,
    ) -> R<T> {
        if self.heap.profile.version.minor >= 14 && !container.is_empty() {
            let t = match v {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Instance { class, .. } => self.class_name(*class),
                    kind => kind.type_name().to_string(),
                },
                _ => "object".to_string(),
            };
            return self.error(format!(
                "TypeError: cannot use '{t}' as a {container} ({inner})"
            ));
        }
        self.error(format!("TypeError: {inner}"))
    }

    /// Whether a stored key and a probe are the same key: identity first (as the lookup
    /// checks before comparing), then the stored key's `__eq__`, else the probe's
    /// (reflected, as CPython tries it when the left one declines), else by value.
    pub(in crate::python) fn keys_equal(&mut self, stored: Value, probe: Value) -> R<bool> {
        if stored == probe {
            return Ok(true);
        }
        for (left, right) in [(stored, probe), (probe, stored)] {
            if let Some(eq) = self.namespace_eq(left, right) {
                return Ok(eq);
            }
            if let Some(r) = self.call_slot(left, "__eq__", Some(right)) {
                let v = r?;
                let t = self.truth(v);
                self.heap.decref(v);
                return t;
            }
        }
        Ok(self.values_equal(stored, probe))
    }

    /// A type slot calling a Python-level special method (`slot_tp_hash`,
    /// `slot_tp_richcompare`): a plain function is called with the instance prepended, no
    /// bound method made (`lookup_maybe_method`'s unbound call); anything else is bound
    /// first. `None` when the class does not define `name`.
    fn call_slot(&mut self, obj: Value, name: &str, arg: Option<Value>) -> Option<R<Value>> {
        let (_, method) = self.user_special(obj, name)?;
        let plain =
            matches!(method, Value::Obj(m) if matches!(self.heap.kind(m), ObjKind::Function(_)));
        let args: Vec<Value> = arg.into_iter().collect();
        for &a in &args {
            self.heap.incref(a);
        }
        if !plain {
            return match self.call_special(obj, name, args) {
                Ok(r) => Some(r),
                Err(args) => {
                    self.heap.decref_all(args);
                    None
                }
            };
        }
        self.heap.incref(obj);
        self.heap.incref(method);
        let mut full = vec![obj];
        full.extend(args);
        let r = self.call(method, full, Vec::new());
        self.heap.decref(method);
        Some(r)
    }

    /// The hash a stored entry keeps: a user key's from when it was stored, another key's
    /// as the model hashes it.
    fn entry_hash(&self, k: Value) -> Option<i64> {
        if let Value::Obj(id) = k
            && let Some(&h) = self.stdlib.key_hashes.get(&id)
            && matches!(self.heap.kind(id), ObjKind::Instance { .. })
        {
            return Some(h);
        }
        self.hash_value(k).ok()
    }

    /// `dict`'s entry for `key` when user keys are involved (the probe's hash computed by
    /// [`Self::check_dict_key`]): entries whose kept hash equals the probe's, in order, the
    /// probe itself or the first that compares equal.
    pub(in crate::python) fn dict_find_user(
        &mut self,
        dict: ObjId,
        key: Value,
        hash: i64,
    ) -> R<Option<usize>> {
        let candidates: Vec<Value> = match self.heap.kind(dict) {
            ObjKind::Dict(items) => items.iter().map(|&(k, _)| k).collect(),
            _ => return Ok(None),
        };
        for k in candidates {
            if self.entry_hash(k) != Some(hash) {
                continue;
            }
            self.heap.incref(k);
            let eq = self.keys_equal(k, key);
            self.heap.decref(k);
            if eq? {
                // The comparison may have changed the dict; CPython restarts, the model
                // takes the entry if it is still there.
                return Ok(match self.heap.kind(dict) {
                    ObjKind::Dict(items) => items.iter().position(|&(x, _)| x == k),
                    _ => None,
                });
            }
        }
        Ok(None)
    }

    /// Keeps a checked user key's hash for the store or lookup that follows. Bounded: keys
    /// checked and never used (an error between check and store) are dropped oldest first.
    pub(in crate::python) fn keep_probe_hash(&mut self, key: Value, hash: i64) {
        const KEPT: usize = 4096;
        let kept = &mut self.stdlib.probe_hashes;
        if kept.len() == KEPT {
            kept.remove(0);
        }
        kept.push((key, hash));
    }

    /// Takes the hash [`Self::check_dict_key`] computed for `key`, newest first.
    fn take_probe_hash(&mut self, key: Value) -> Option<i64> {
        let kept = &mut self.stdlib.probe_hashes;
        let at = kept.iter().rposition(|&(k, _)| k == key)?;
        Some(kept.remove(at).1)
    }

    /// The probe's hash when a dict operation must take the user-key path: the probe is a
    /// user key (its hash from [`Self::check_dict_key`], or, on a path that did not check
    /// it, from a `__hash__` call here), or user keys were stored in `dict` and the probe
    /// hashes as the model hashes it. `Err` is an exception of that `__hash__` call.
    pub(in crate::python) fn user_probe_hash(&mut self, dict: ObjId, key: Value) -> R<Option<i64>> {
        if let Value::Obj(_) = key
            && !self.stdlib.probe_hashes.is_empty()
            && let Some(h) = self.take_probe_hash(key)
        {
            return Ok(Some(h));
        }
        if self.is_user_hashed(key) {
            return self.call_user_hash(key, "dict key").map(Some);
        }
        if self.stdlib.user_key_dicts.is_empty() || !self.stdlib.user_key_dicts.contains(&dict) {
            return Ok(None);
        }
        Ok(self.hash_value(key).ok())
    }

    /// `dict`'s entry for `key` for a store (`dict_set`), which cannot fail: an exception
    /// from `__eq__` is kept and raised by the next dict or set operation of the run
    /// (approximation: CPython raises it at the store), the key then counted as absent.
    pub(in crate::python) fn dict_find_store(&mut self, dict: ObjId, key: Value) -> Option<usize> {
        let hash = match self.user_probe_hash(dict, key) {
            Ok(Some(hash)) => hash,
            Ok(None) => return self.dict_find(dict, key),
            Err(e) => {
                self.stdlib.key_error.get_or_insert(e);
                return self.dict_find(dict, key);
            }
        };
        let found = match self.dict_find_user(dict, key, hash) {
            Ok(found) => found,
            Err(e) => {
                self.stdlib.key_error.get_or_insert(e);
                None
            }
        };
        if found.is_none()
            && let Value::Obj(id) = key
            && self.is_user_hashed(key)
        {
            self.stdlib.key_hashes.insert(id, hash);
            self.stdlib.user_key_dicts.insert(dict);
        }
        found
    }

    /// Raises an exception a store's `__eq__` raised (see [`Self::dict_find_store`]).
    pub(in crate::python) fn raise_kept_key_error(&mut self) -> R<()> {
        match self.stdlib.key_error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<'a> Interpreter<'a> {
    /// A set key's hash: a user key's `__hash__` called once, an unhashable instance
    /// CPython's `TypeError`, a tuple holding a user key refused (located), others as the
    /// model hashes them.
    pub(in crate::python) fn set_key_hash(&mut self, v: Value) -> R<i64> {
        if let Value::Obj(id) = v {
            match self.heap.kind(id) {
                ObjKind::Instance { class, .. } if self.torch_class(*class).is_none() => {
                    let class = *class;
                    match self.instance_hash(class) {
                        InstanceHash::User => return self.call_user_hash(v, "set element"),
                        InstanceHash::Unhashable => {
                            let t = self.class_name(class);
                            let inner = format!("unhashable type: '{t}'");
                            return self.key_type_error(v, "set element", &inner);
                        }
                        InstanceHash::FrozenDataclass => {
                            return self
                                .unsupported("a frozen dataclass as a dict key or set member");
                        }
                        InstanceHash::Identity => {}
                    }
                }
                ObjKind::Tuple(items) | ObjKind::NamedTuple { items, .. }
                    if items.iter().any(|&i| self.is_user_hashed(i)) =>
                {
                    return self.unsupported(
                        "a tuple holding an instance with its own `__hash__` as a dict key or set member",
                    );
                }
                _ => {}
            }
        }
        self.hash_value(v)
    }

    /// The slot of set `id` holding `key` (hash `hash`): CPython's `set_lookkey` over the
    /// entries of that hash in probe order, the key itself or the first equal one, with
    /// instances compared by their `__eq__`.
    pub(in crate::python) fn set_find(
        &mut self,
        id: ObjId,
        hash: i64,
        key: Value,
    ) -> R<Option<usize>> {
        let is_instance = |s: &Self, v: Value| matches!(v, Value::Obj(o) if matches!(s.heap.kind(o), ObjKind::Instance { .. }));
        let key_instance = is_instance(self, key);
        let mut same_hash = Vec::new();
        let table = match self.heap.kind(id) {
            ObjKind::Set { table, .. } => table,
            _ => return Ok(None),
        };
        let fast = table.find(hash, |v| {
            same_hash.push(v);
            v == key || (!key_instance && !is_instance(self, v) && self.values_equal(v, key))
        });
        if !key_instance && !same_hash.iter().any(|&v| is_instance(self, v)) {
            return Ok(fast);
        }
        // Entries before the found one that need `__eq__` are compared first, in order.
        for v in same_hash {
            self.heap.incref(v);
            let eq = self.keys_equal(v, key);
            self.heap.decref(v);
            if eq? {
                return Ok(match self.heap.kind(id) {
                    ObjKind::Set { table, .. } => table.find(hash, |x| x == v),
                    _ => None,
                });
            }
        }
        Ok(None)
    }
}
