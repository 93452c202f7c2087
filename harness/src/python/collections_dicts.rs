//! `collections.defaultdict` and `collections.OrderedDict`: dicts whose extra state (the
//! subclass, a default factory) the heap keeps beside their items ([`DictFlavour`]), so
//! every dict operation works on them unchanged.
//!
//! Counted as CPython counts them (measured with `gc.get_count()` on 3.8 – 3.15): building
//! one is one GC allocation, through the type (never the dict free list), and dropping it
//! gives the count back; it is tracked from birth, even empty. A missing key read with
//! `d[k]` calls the factory (`defaultdict(list)` counts the new list) and stores its
//! result; `get` and `in` never call it. The dict owns its factory: a lambda closing over a
//! tensor keeps the tensor as long as the dict lives.

use super::interp::{Interpreter, R};
use super::natives::Args;
use crate::heap::{DictFlavour, DictSubclass, ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// `defaultdict(factory=None, *dict_args, **kw)` and `OrderedDict(*dict_args, **kw)`.
    pub(in crate::python) fn new_dict_subclass(
        &mut self,
        subclass: DictSubclass,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let (factory, rest) = match (subclass, p.split_first()) {
            (DictSubclass::DefaultDict, Some((&f, rest))) => (f, rest),
            _ => (Value::None, p),
        };
        if factory != Value::None && !self.is_callable(factory) {
            return self.error("TypeError: first argument must be callable or None");
        }
        let dict = super::builtin_calls::dict_from_type_call(self, rest, kw)?;
        let Value::Obj(id) = dict else {
            unreachable!("dict() returns a dict")
        };
        self.heap.incref(factory);
        self.heap
            .set_dict_flavour(id, DictFlavour { subclass, factory });
        Ok(dict)
    }

    /// Whether `v` can be called (what `defaultdict` checks of its factory).
    fn is_callable(&self, v: Value) -> bool {
        match v {
            Value::Native(_) | Value::BoundNative(..) => true,
            Value::Obj(id) => matches!(
                self.heap.kind(id),
                ObjKind::Function(_)
                    | ObjKind::Class(_)
                    | ObjKind::BoundMethod { .. }
                    | ObjKind::Wrapper(..)
                    | ObjKind::Instance { .. }
            ),
            _ => false,
        }
    }

    /// `d[key]` of a key `d` lacks: a defaultdict with a factory calls it with no
    /// arguments and stores the result (`__missing__`); any other dict raises `KeyError`.
    pub(in crate::python) fn dict_missing(&mut self, id: ObjId, key: Value) -> R<Value> {
        let factory = match self.heap.dict_flavour(id) {
            Some(DictFlavour {
                subclass: DictSubclass::DefaultDict,
                factory,
            }) if *factory != Value::None => *factory,
            // `Counter.__missing__`: 0, not stored.
            Some(DictFlavour {
                subclass: DictSubclass::Counter,
                ..
            }) => return Ok(Value::Int(0)),
            _ => return self.error(format!("KeyError: {}", self.repr_text(key))),
        };
        self.heap.incref(factory);
        let made = self.call(factory, Vec::new(), Vec::new());
        self.heap.decref(factory);
        let value = made?;
        self.heap.incref(key);
        self.heap.incref(value);
        self.dict_set(id, key, value);
        Ok(value)
    }

    /// The type name a dict prints in errors: `collections.defaultdict`,
    /// `collections.OrderedDict` or `dict`.
    pub(in crate::python) fn dict_type_name(&self, id: ObjId) -> &'static str {
        match self.heap.dict_flavour(id).map(|f| f.subclass) {
            Some(DictSubclass::DefaultDict) => "collections.defaultdict",
            Some(DictSubclass::OrderedDict) => "collections.OrderedDict",
            Some(DictSubclass::Counter) => "collections.Counter",
            None => "dict",
        }
    }

    /// Methods only a dict subclass has (`None`: an ordinary dict method).
    pub(in crate::python) fn dict_subclass_method(
        &mut self,
        id: ObjId,
        method: &str,
        a: &Args,
    ) -> Option<R<Value>> {
        let subclass = self.heap.dict_flavour(id)?.subclass;
        match (subclass, method) {
            (DictSubclass::OrderedDict, "move_to_end") => Some(self.move_to_end(id, a)),
            (DictSubclass::OrderedDict, "popitem") => Some(self.ordered_popitem(id, a)),
            (DictSubclass::Counter, _) => self.counter_method(id, method, a),
            _ => None,
        }
    }

    /// `last=` of `move_to_end`/`popitem` (positional or keyword, default `True`).
    fn last_flag(&mut self, a: &Args, positional: usize) -> R<bool> {
        let v = a
            .pos
            .get(positional)
            .copied()
            .or_else(|| self.keyword(&a.kw, "last"));
        match v {
            None => Ok(true),
            Some(v) => self.truth(v),
        }
    }

    /// `od.move_to_end(key, last=True)`.
    fn move_to_end(&mut self, id: ObjId, a: &Args) -> R<Value> {
        let Some(&key) = a.pos.first() else {
            return self.error("TypeError: move_to_end() missing required argument 'key'");
        };
        let last = self.last_flag(a, 1)?;
        let ObjKind::Dict(items) = self.heap.kind(id) else {
            unreachable!("a dict method on a dict")
        };
        let Some(at) = items.iter().position(|&(k, _)| self.values_equal(k, key)) else {
            return self.error(format!("KeyError: {}", self.repr_text(key)));
        };
        let ObjKind::Dict(items) = self.heap.kind_mut(id) else {
            unreachable!("a dict method on a dict")
        };
        let entry = items.remove(at);
        if last {
            items.push(entry);
        } else {
            items.insert(0, entry);
        }
        Ok(Value::None)
    }

    /// `od.popitem(last=True)`: a `(key, value)` tuple (a new one, counted).
    fn ordered_popitem(&mut self, id: ObjId, a: &Args) -> R<Value> {
        let last = self.last_flag(a, 0)?;
        let ObjKind::Dict(items) = self.heap.kind_mut(id) else {
            unreachable!("a dict method on a dict")
        };
        let entry = if last {
            items.pop()
        } else if items.is_empty() {
            None
        } else {
            Some(items.remove(0))
        };
        match entry {
            Some((k, v)) => Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![k, v])))),
            None => self.error("KeyError: 'dictionary is empty'"),
        }
    }
}
