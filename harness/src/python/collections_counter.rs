//! `collections.Counter`: a dict subclass ([`DictSubclass::Counter`]) whose missing keys
//! read as 0 without being stored, built from an iterable (each item counted), a mapping
//! (its counts added) or keywords; `update`, `subtract`, `most_common`, `total` (3.10+).
//!
//! Counted as CPython counts it (measured with `gc.get_count()` on 3.8 – 3.13, free lists
//! full): a kept `Counter(...)` is one object, made through the type like the other dict
//! subclasses; the frames, `super()` object and keyword dict of its Python `__init__` are
//! made and freed within the call and are not modelled one by one (they move the counter
//! only while the call runs). `most_common` makes a list of `(key, count)` tuples, in
//! CPython's order (by count, ties in insertion order: `sorted` is stable).

use super::interp::{Interpreter, R};
use super::natives::{Args, sequence_items};
use crate::heap::{DictFlavour, DictSubclass, ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// `Counter(iterable_or_mapping=None, /, **kwds)`.
    pub(in crate::python) fn new_counter(&mut self, p: &[Value], kw: &[(Sym, Value)]) -> R<Value> {
        if p.len() > 1 {
            return self.error(format!(
                "TypeError: expected at most 1 argument, got {}",
                p.len()
            ));
        }
        let dict = super::builtin_calls::dict_from_type_call(self, &[], &[])?;
        let Value::Obj(id) = dict else {
            unreachable!("dict() returns a dict")
        };
        self.heap.set_dict_flavour(
            id,
            DictFlavour {
                subclass: DictSubclass::Counter,
                factory: Value::None,
            },
        );
        if let Err(e) = self.counter_add(id, p.first().copied(), kw, 1) {
            self.heap.decref(dict);
            return Err(e);
        }
        Ok(dict)
    }

    /// `update` (`sign` 1) and `subtract` (`sign` -1): counts of an iterable's items, or a
    /// mapping's counts, then the keywords' counts.
    fn counter_add(
        &mut self,
        id: ObjId,
        source: Option<Value>,
        kw: &[(Sym, Value)],
        sign: i64,
    ) -> R<()> {
        let mut pairs: Vec<(Value, i64)> = Vec::new();
        match source {
            None | Some(Value::None) => {}
            Some(Value::Obj(m)) if matches!(self.heap.kind(m), ObjKind::Dict(_)) => {
                let ObjKind::Dict(items) = self.heap.kind(m) else {
                    unreachable!()
                };
                for (k, v) in items.clone() {
                    pairs.push((k, self.count_of(v)?));
                }
            }
            Some(Value::Str(s)) => {
                let text = self.names.name(s).to_string();
                for ch in text.chars() {
                    let key = Value::Str(self.names.intern(&ch.to_string()));
                    pairs.push((key, 1));
                }
            }
            Some(v) => {
                for item in sequence_items(self, v)? {
                    pairs.push((item, 1));
                }
            }
        }
        for &(k, v) in kw {
            pairs.push((Value::Str(k), self.count_of(v)?));
        }
        for (key, n) in pairs {
            let old = match self.heap.kind(id) {
                ObjKind::Dict(items) => self.dict_find(id, key).map(|i| items[i].1),
                _ => None,
            };
            let old = match old {
                Some(v) => self.count_of(v)?,
                None => 0,
            };
            self.heap.incref(key);
            self.dict_set(id, key, Value::Int(old + sign * n));
        }
        Ok(())
    }

    /// A count as an int (floats and other numbers as counts are refused).
    fn count_of(&mut self, v: Value) -> R<i64> {
        match v {
            Value::Int(i) => Ok(i),
            Value::Bool(b) => Ok(i64::from(b)),
            _ => self.unsupported("a Counter count that is not an int"),
        }
    }

    /// The Counter methods beyond a dict's.
    pub(in crate::python) fn counter_method(
        &mut self,
        id: ObjId,
        method: &str,
        a: &Args,
    ) -> Option<R<Value>> {
        Some(match method {
            "update" | "subtract" => {
                let sign = if method == "update" { 1 } else { -1 };
                self.counter_add(id, a.pos.first().copied(), &a.kw, sign)
                    .map(|()| Value::None)
            }
            "most_common" => self.most_common(id, a.pos.first().copied()),
            "total" if self.heap.profile.version.minor >= 10 => {
                let ObjKind::Dict(items) = self.heap.kind(id) else {
                    unreachable!("a Counter is a dict")
                };
                let values: Vec<Value> = items.iter().map(|(_, v)| *v).collect();
                let mut total = 0;
                for v in values {
                    match self.count_of(v) {
                        Ok(n) => total += n,
                        Err(e) => return Some(Err(e)),
                    }
                }
                Ok(Value::Int(total))
            }
            _ => return None,
        })
    }

    /// `most_common(n=None)`: a new list of `(key, count)` tuples, largest count first,
    /// ties in insertion order.
    fn most_common(&mut self, id: ObjId, n: Option<Value>) -> R<Value> {
        let ObjKind::Dict(items) = self.heap.kind(id) else {
            unreachable!("a Counter is a dict")
        };
        let mut pairs = items.clone();
        let mut keyed = Vec::with_capacity(pairs.len());
        for (k, v) in pairs.drain(..) {
            keyed.push((self.count_of(v)?, k, v));
        }
        keyed.sort_by_key(|k| std::cmp::Reverse(k.0));
        let take = match n {
            None | Some(Value::None) => keyed.len(),
            Some(Value::Int(n)) => (n.max(0) as usize).min(keyed.len()),
            Some(_) => return self.error("TypeError: most_common() takes an int"),
        };
        let mut out = Vec::with_capacity(take);
        for &(_, k, v) in &keyed[..take] {
            self.heap.incref(k);
            self.heap.incref(v);
            out.push(Value::Obj(self.alloc(ObjKind::Tuple(vec![k, v]))));
        }
        Ok(Value::Obj(self.alloc(ObjKind::List(out))))
    }
}
