//! `set` and `frozenset`: displays, comprehensions, `set(...)`/`frozenset(...)`, their
//! methods and operators. The table itself ([`SetTable`]) keeps CPython's slot layout, so
//! iteration order follows the interpreter's for keys whose hashes the model knows exactly
//! (ints, bools, tuples of them); strings, floats with a fraction, `None` and objects get
//! a deterministic stand-in hash (CPython's string hash is randomised per process, the
//! others depend on addresses).
//!
//! Counted as CPython counts them (measured with `gc.get_count()` on 3.8 – 3.15): every set
//! is one GC allocation and stays tracked; `frozenset()` (and any empty frozenset) is a
//! shared singleton on 3.8 – 3.9 and a new object from 3.10; `frozenset(f)` of a
//! frozenset is `f` itself. Filling a set from a list or tuple goes through a GC-allocated
//! iterator; from a set, a frozenset or a dict it does not.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, SetTable, Value};
use ruff_python_ast::{self as ast, Operator};

/// `_PyHASH_MODULUS` (2**61 - 1): ints hash to their value modulo it.
const HASH_MODULUS: u64 = (1 << 61) - 1;
/// CPython's tuple hash (xxHash's round over the item hashes).
const XXPRIME_1: u64 = 11400714785074694791;
const XXPRIME_2: u64 = 14029467366897019727;
const XXPRIME_5: u64 = 2870177450012600261;
/// `hash(None)` from 3.12 (a constant; earlier ones hash its address).
pub(super) const NONE_HASH: i64 = 0xFCA86420;

/// CPython's tuple hash (`Objects/tupleobject.c` `tuplehash`), fed one item hash at a
/// time so that callers compute those in their own (fallible) way; `hash()` and set keys
/// share it.
pub(super) struct TupleHash(u64);

impl TupleHash {
    pub(super) fn new() -> Self {
        TupleHash(XXPRIME_5)
    }

    pub(super) fn push(&mut self, lane: i64) {
        self.0 = self
            .0
            .wrapping_add((lane as u64).wrapping_mul(XXPRIME_2))
            .rotate_left(31)
            .wrapping_mul(XXPRIME_1);
    }

    pub(super) fn finish(self, len: usize) -> i64 {
        let acc = self.0.wrapping_add((len as u64) ^ (XXPRIME_5 ^ 3527539));
        if acc == u64::MAX {
            1546275796
        } else {
            acc as i64
        }
    }
}
/// A key for the interpreter's constant table that no AST node can have: the shared empty
/// frozenset of 3.8 – 3.9.
const EMPTY_FROZENSET_KEY: usize = usize::MAX - 0x5e7;

/// `hash(i)` of an int.
fn int_hash(i: i64) -> i64 {
    let magnitude = (i.unsigned_abs() % HASH_MODULUS) as i64;
    let h = if i < 0 { -magnitude } else { magnitude };
    if h == -1 { -2 } else { h }
}

/// A stand-in for a hash CPython computes from data the model does not reproduce (FNV-1a,
/// folded like CPython's: never -1).
fn stand_in_hash(bytes: &[u8]) -> i64 {
    let h = bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    }) as i64;
    if h == -1 { -2 } else { h }
}

impl<'a> Interpreter<'a> {
    /// `hash(v)` for a set key; lists, dicts and sets are unhashable.
    pub(in crate::python) fn hash_value(&self, v: Value) -> R<i64> {
        Ok(match v {
            Value::Int(i) => int_hash(i),
            Value::Bool(b) => i64::from(b),
            Value::Float(f) if f.fract() == 0.0 && f.abs() < 9.2e18 => int_hash(f as i64),
            Value::Float(f) => stand_in_hash(&f.to_bits().to_le_bytes()),
            Value::Str(s) => stand_in_hash(self.names.name(s).as_bytes()),
            Value::None => NONE_HASH,
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::NamedTuple { items, .. } => {
                    let mut acc = TupleHash::new();
                    for &item in items {
                        acc.push(self.hash_value(item)?);
                    }
                    acc.finish(items.len())
                }
                ObjKind::Set {
                    frozen: true,
                    table,
                } => {
                    // Order-independent, as CPython's frozenset hash is (not its formula).
                    let h = table
                        .entries()
                        .fold(0u64, |acc, (h, _)| acc ^ (h as u64).wrapping_mul(XXPRIME_1));
                    stand_in_hash(&h.to_le_bytes())
                }
                ObjKind::List(_)
                | ObjKind::Dict(_)
                | ObjKind::Set { .. }
                | ObjKind::Deque { .. } => {
                    let t = self.heap.kind(id).type_name();
                    return self.error(format!("TypeError: unhashable type: '{t}'"));
                }
                // Identity hash (`_Py_HashPointer`): the object's index stands for its address.
                _ => stand_in_hash(&id.0.to_le_bytes()),
            },
            other => stand_in_hash(format!("{other:?}").as_bytes()),
        })
    }

    fn set_table(&self, id: ObjId) -> &SetTable {
        match self.heap.kind(id) {
            ObjKind::Set { table, .. } => table,
            _ => unreachable!("a set operation on a set"),
        }
    }

    fn set_table_mut(&mut self, id: ObjId) -> &mut SetTable {
        match self.heap.kind_mut(id) {
            ObjKind::Set { table, .. } => table,
            _ => unreachable!("a set operation on a set"),
        }
    }

    /// Whether `v` is a set or frozenset (`Some(frozen)`).
    pub(in crate::python) fn set_kind(&self, v: Value) -> Option<bool> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Set { frozen, .. } => Some(*frozen),
                _ => None,
            },
            _ => None,
        }
    }

    /// `key in s`.
    pub(in crate::python) fn set_contains(&mut self, id: ObjId, key: Value) -> R<bool> {
        self.raise_kept_key_error()?;
        let hash = self.set_key_hash(key)?;
        Ok(self.set_find(id, hash, key)?.is_some())
    }

    /// `key in s` for a key whose hash another set's entry kept (no `__hash__` call).
    fn set_contains_entry(&mut self, id: ObjId, hash: i64, key: Value) -> R<bool> {
        Ok(self.set_find(id, hash, key)?.is_some())
    }

    /// `s.add(key)`, taking over `key`'s reference.
    pub(in crate::python) fn set_add(&mut self, id: ObjId, key: Value) -> R<()> {
        let hash = match self
            .raise_kept_key_error()
            .and_then(|_| self.set_key_hash(key))
        {
            Ok(h) => h,
            Err(e) => {
                self.heap.decref(key);
                return Err(e);
            }
        };
        self.set_add_entry(id, hash, key)
    }

    /// `set_add_entry`: adds a key whose hash is known, taking over its reference.
    fn set_add_entry(&mut self, id: ObjId, hash: i64, key: Value) -> R<()> {
        let present = match self.set_find(id, hash, key) {
            Ok(p) => p.is_some(),
            Err(e) => {
                self.heap.decref(key);
                return Err(e);
            }
        };
        if present {
            self.heap.decref(key);
        } else {
            self.set_table_mut(id).insert_new(hash, key);
        }
        Ok(())
    }

    /// An empty set or frozenset (counted, tracked).
    fn new_empty_set(&mut self, frozen: bool) -> ObjId {
        self.alloc(ObjKind::Set {
            table: Box::default(),
            frozen,
        })
    }

    /// CPython's `set_merge`: another set's entries into `id`.
    fn set_merge(&mut self, id: ObjId, source: ObjId) {
        if id == source {
            return;
        }
        let other = self.set_table(source).clone();
        for v in other.items() {
            self.heap.incref(v);
        }
        self.merge_table(id, &other);
    }

    /// Merges a table whose every key is an owned reference: one resize first; an empty
    /// target takes the keys in the source's slot order without equality checks.
    fn merge_table(&mut self, id: ObjId, other: &SetTable) {
        if other.is_empty() {
            return;
        }
        let target = self.set_table_mut(id);
        target.reserve_for_merge(other.len());
        if target.same_layout_as(other) {
            target.copy_layout(other);
            return;
        }
        if target.never_filled() {
            for (h, v) in other.entries() {
                target.insert_distinct(h, v);
            }
            return;
        }
        for (h, v) in other.entries() {
            let present = self
                .set_table(id)
                .find(h, |x| self.values_equal(x, v))
                .is_some();
            if present {
                self.heap.decref(v);
            } else {
                self.set_table_mut(id).insert_new(h, v);
            }
        }
    }

    /// `set_update_internal`: adds the items of any iterable to `id`.
    pub(in crate::python) fn set_update(&mut self, id: ObjId, source: Value) -> R<()> {
        if let Value::Obj(o) = source {
            match self.heap.kind(o) {
                ObjKind::Set { .. } => {
                    self.set_merge(id, o);
                    return Ok(());
                }
                // The dict fast path iterates the keys without an iterator object.
                ObjKind::Dict(items) => {
                    let keys: Vec<Value> = items.iter().map(|(k, _)| *k).collect();
                    for k in keys {
                        self.heap.incref(k);
                        self.set_add(id, k)?;
                    }
                    return Ok(());
                }
                _ => {}
            }
        }
        let iterator_counted = self.count_loop_iterator_of_sequence(source);
        let items = self.collect_items(source);
        if iterator_counted {
            self.free_loop_iterator();
        }
        let mut items = items?.into_iter();
        while let Some(v) = items.next() {
            if let Err(e) = self.set_add(id, v) {
                self.heap.decref_all(items);
                return Err(e);
            }
        }
        Ok(())
    }

    /// A list's or tuple's iterator (`PyObject_GetIter`), which is GC-allocated (from its
    /// free list on 3.14+, `heap/seq_iter_free.rs`).
    fn count_loop_iterator_of_sequence(&mut self, source: Value) -> bool {
        let sequence = matches!(source, Value::Obj(o)
            if matches!(self.heap.kind(o), ObjKind::List(_) | ObjKind::Tuple(_) | ObjKind::Deque { .. }));
        if sequence && self.heap.count_loop_iterator(source) {
            self.collection_due();
        }
        sequence
    }

    /// `set(iterable=())` and `frozenset(iterable=())`.
    pub(in crate::python) fn new_set_call(
        &mut self,
        p: &[Value],
        keywords: bool,
        frozen: bool,
    ) -> R<Value> {
        let name = if frozen { "frozenset" } else { "set" };
        if keywords {
            return self.error(format!("TypeError: {name}() takes no keyword arguments"));
        }
        if p.len() > 1 {
            return self.error(format!(
                "TypeError: {name} expected at most 1 argument, got {}",
                p.len()
            ));
        }
        if frozen
            && let Some(&v) = p.first()
            && self.set_kind(v) == Some(true)
        {
            self.heap.incref(v);
            return Ok(v);
        }
        let id = self.new_empty_set(frozen);
        if let Some(&source) = p.first()
            && let Err(e) = self.set_update(id, source)
        {
            self.heap.decref_id(id);
            return Err(e);
        }
        if frozen && self.heap.profile.version.minor <= 9 && self.set_table(id).is_empty() {
            self.heap.decref_id(id);
            return Ok(self.empty_frozenset_singleton());
        }
        Ok(Value::Obj(id))
    }

    /// The shared empty frozenset of 3.8 – 3.9 (created once, outside the counts: the
    /// interpreter made it long before the workload).
    fn empty_frozenset_singleton(&mut self) -> Value {
        let id = match self.constants.get(&EMPTY_FROZENSET_KEY) {
            Some(&id) => id,
            None => {
                let id = self.heap.insert_uncounted(ObjKind::Set {
                    table: Box::default(),
                    frozen: true,
                });
                self.heap.incref(Value::Obj(id));
                self.constants.insert(EMPTY_FROZENSET_KEY, id);
                id
            }
        };
        self.heap.incref(Value::Obj(id));
        Value::Obj(id)
    }

    /// `{a, b, ...}`. From 3.9 a display of three or more constants compiles to an empty
    /// `BUILD_SET` and a `SET_UPDATE` of a constant frozenset, so the set takes the merge
    /// order of that frozenset's table; otherwise items are added left to right.
    pub(super) fn eval_set_display(&mut self, s: &'a ast::ExprSet) -> R<Value> {
        // `*x` items are spread in (`SET_UPDATE`).
        let items = self.eval_spread(&s.elts)?;
        let folded = self.heap.profile.version.minor >= 9
            && s.elts.len() >= 3
            && s.elts.iter().all(super::interp::is_constant);
        let id = self.new_empty_set(false);
        if folded {
            // The constant frozenset's table, built by adding the items in order.
            let mut constant = SetTable::default();
            for v in items {
                let hash = match self.hash_value(v) {
                    Ok(h) => h,
                    Err(e) => {
                        self.heap.decref(v);
                        let held = constant.drain();
                        self.heap.decref_all(held);
                        self.heap.decref_id(id);
                        return Err(e);
                    }
                };
                if constant.find(hash, |x| self.values_equal(x, v)).is_some() {
                    self.heap.decref(v);
                } else {
                    constant.insert_new(hash, v);
                }
            }
            self.merge_table(id, &constant);
            return Ok(Value::Obj(id));
        }
        let mut items = items.into_iter();
        while let Some(v) = items.next() {
            if let Err(e) = self.set_add(id, v) {
                self.heap.decref_all(items);
                self.heap.decref_id(id);
                return Err(e);
            }
        }
        Ok(Value::Obj(id))
    }

    /// `{x for ...}`: built in place, counted as a list comprehension is (a function object
    /// up to 3.11, inlined from 3.12).
    pub(super) fn eval_set_comprehension(&mut self, c: &'a ast::ExprSetComp) -> R<Value> {
        let function = self.heap.profile.version.minor <= 11;
        if function {
            self.count_untracked_allocations(1);
        }
        let frame = self.enter_comprehension_frame(c as *const _ as usize);
        let id = self.new_empty_set(false);
        let result = self.with_own_targets(&c.generators, |it| {
            it.comprehension_loop(&c.generators, None, &mut |it| {
                let v = it.eval(&c.elt)?;
                it.set_add(id, v)?;
                Ok(true)
            })
        });
        self.leave_comprehension_frame(frame);
        if function {
            self.free_loop_iterator();
        }
        match result {
            Ok(_) => Ok(Value::Obj(id)),
            Err(e) => {
                self.heap.decref_id(id);
                Err(e)
            }
        }
    }

    /// A copy of `id` as a new set of the given kind (`set_copy`: an empty set merged).
    fn set_copy(&mut self, id: ObjId, frozen: bool) -> ObjId {
        let copy = self.new_empty_set(frozen);
        self.set_merge(copy, id);
        copy
    }

    /// A set built from any iterable operand of a method (`s.union([1, 2])`), owned.
    fn set_operand(&mut self, v: Value) -> R<ObjId> {
        if let (Value::Obj(o), Some(_)) = (v, self.set_kind(v)) {
            self.heap.incref(v);
            return Ok(o);
        }
        let id = self.new_empty_set(false);
        if let Err(e) = self.set_update(id, v) {
            self.heap.decref_id(id);
            return Err(e);
        }
        Ok(id)
    }

    /// `a | b`, `a & b`, `a - b`, `a ^ b` of two sets; the result takes `a`'s kind.
    fn set_combine(&mut self, op: Operator, a: ObjId, b: ObjId) -> R<ObjId> {
        let frozen = self.set_kind(Value::Obj(a)) == Some(true);
        match op {
            Operator::BitOr => {
                let out = self.set_copy(a, frozen);
                self.set_merge(out, b);
                Ok(out)
            }
            Operator::BitAnd => {
                // CPython walks the smaller set, testing membership in the larger.
                let (small, large) = if self.set_table(b).len() > self.set_table(a).len() {
                    (a, b)
                } else {
                    (b, a)
                };
                let out = self.new_empty_set(frozen);
                let keys: Vec<(i64, Value)> = self.set_table(small).entries().collect();
                for (h, k) in keys {
                    if self.set_contains_entry(large, h, k)? {
                        self.heap.incref(k);
                        self.set_add_entry(out, h, k)?;
                    }
                }
                Ok(out)
            }
            Operator::Sub | Operator::BitXor => {
                let out = self.new_empty_set(frozen);
                let keys: Vec<(i64, Value)> = self.set_table(a).entries().collect();
                for (h, k) in keys {
                    if !self.set_contains_entry(b, h, k)? {
                        self.heap.incref(k);
                        self.set_add_entry(out, h, k)?;
                    }
                }
                if op == Operator::BitXor {
                    let keys: Vec<(i64, Value)> = self.set_table(b).entries().collect();
                    for (h, k) in keys {
                        if !self.set_contains_entry(a, h, k)? {
                            self.heap.incref(k);
                            self.set_add_entry(out, h, k)?;
                        }
                    }
                }
                Ok(out)
            }
            _ => unreachable!("set_binary passes only set operators"),
        }
    }

    /// A binary operator with a set on either side (`None`: not a set operation).
    pub(in crate::python) fn set_binary(
        &mut self,
        op: Operator,
        l: Value,
        r: Value,
    ) -> Option<R<Value>> {
        let (left, right) = (self.set_kind(l), self.set_kind(r));
        if left.is_none() && right.is_none() {
            return None;
        }
        let symbol = match op {
            Operator::BitOr => "|",
            Operator::BitAnd => "&",
            Operator::Sub => "-",
            Operator::BitXor => "^",
            _ => return None,
        };
        let (Value::Obj(a), Value::Obj(b), Some(_), Some(_)) = (l, r, left, right) else {
            let name = |v: Value| match v {
                Value::Obj(id) => self.heap.kind(id).type_name(),
                Value::Int(_) => "int",
                Value::Str(_) => "str",
                Value::Float(_) => "float",
                Value::Bool(_) => "bool",
                Value::None => "NoneType",
                _ => "object",
            };
            return Some(self.error(format!(
                "TypeError: unsupported operand type(s) for {symbol}: '{}' and '{}'",
                name(l),
                name(r)
            )));
        };
        Some(self.set_combine(op, a, b).map(Value::Obj))
    }

    /// Whether two sets hold equal keys (`set == frozenset` compares contents).
    pub(in crate::python) fn sets_equal(&self, a: ObjId, b: ObjId) -> bool {
        let (x, y) = (self.set_table(a), self.set_table(b));
        // By kept hash, then identity or value (approximation: no `__eq__` call here).
        x.len() == y.len()
            && x.entries()
                .all(|(h, k)| y.find(h, |v| v == k || self.values_equal(v, k)).is_some())
    }

    /// A method of a set or frozenset, on borrowed arguments.
    pub(in crate::python) fn set_method(
        &mut self,
        id: ObjId,
        method: &str,
        p: &[Value],
    ) -> R<Value> {
        let frozen = self.set_kind(Value::Obj(id)) == Some(true);
        let mutating = matches!(
            method,
            "add" | "discard" | "remove" | "pop" | "clear" | "update"
        );
        if frozen && mutating {
            return self.error(format!(
                "AttributeError: 'frozenset' object has no attribute '{method}'"
            ));
        }
        match (method, p) {
            ("add", [v]) => {
                self.heap.incref(*v);
                self.set_add(id, *v)?;
                Ok(Value::None)
            }
            ("discard" | "remove", [v]) => {
                self.raise_kept_key_error()?;
                let hash = self.set_key_hash(*v)?;
                let at = self.set_find(id, hash, *v)?;
                match at {
                    Some(at) => {
                        let old = self.set_table_mut(id).remove_at(at);
                        self.heap.decref(old);
                        Ok(Value::None)
                    }
                    None if method == "remove" => {
                        self.error(format!("KeyError: {}", self.repr_text(*v)))
                    }
                    None => Ok(Value::None),
                }
            }
            ("pop", []) => match self.set_table_mut(id).pop() {
                Some(v) => Ok(v),
                None => self.error("KeyError: 'pop from an empty set'"),
            },
            ("clear", []) => {
                let old = self.set_table_mut(id).clear();
                self.heap.decref_all(old);
                Ok(Value::None)
            }
            ("update", sources) => {
                for &s in sources {
                    self.set_update(id, s)?;
                }
                Ok(Value::None)
            }
            ("copy", []) => Ok(Value::Obj(self.set_copy(id, frozen))),
            ("union" | "intersection" | "difference" | "symmetric_difference", others) => {
                let op = match method {
                    "union" => Operator::BitOr,
                    "intersection" => Operator::BitAnd,
                    "difference" => Operator::Sub,
                    _ => Operator::BitXor,
                };
                self.heap.incref(Value::Obj(id));
                let mut acc = id;
                for &other in others {
                    let operand = match self.set_operand(other) {
                        Ok(o) => o,
                        Err(e) => {
                            self.heap.decref_id(acc);
                            return Err(e);
                        }
                    };
                    let next = self.set_combine(op, acc, operand);
                    self.heap.decref_id(operand);
                    self.heap.decref_id(acc);
                    acc = next?;
                }
                if acc == id {
                    self.heap.decref_id(acc);
                    acc = self.set_copy(id, frozen);
                }
                Ok(Value::Obj(acc))
            }
            ("issubset" | "issuperset" | "isdisjoint", [other]) => {
                let other = self.set_operand(*other)?;
                let (small, large) = if method == "issuperset" {
                    (other, id)
                } else {
                    (id, other)
                };
                let keys: Vec<(i64, Value)> = self.set_table(small).entries().collect();
                let mut answer = true;
                for (h, k) in keys {
                    let inside = self.set_contains_entry(large, h, k)?;
                    if inside == (method == "isdisjoint") {
                        answer = false;
                        break;
                    }
                }
                self.heap.decref_id(other);
                Ok(Value::Bool(answer))
            }
            _ => {
                let t = if frozen { "frozenset" } else { "set" };
                self.unsupported(format!("{t} method '{method}' with these arguments"))
            }
        }
    }
}
