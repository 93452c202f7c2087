//! `collections.Counter` arithmetic: `c + d`, `c - d`, `c | d`, `c & d` make a new Counter
//! (`Counter()` through the type, as `new_counter` counts it) holding only positive counts;
//! `+=`, `-=`, `|=`, `&=` change the left Counter in place and then drop what is not
//! positive (`Counter._keep_positive`), so `c -= d` differs from `c = c - d` for keys only
//! in `d` (Lib/collections/__init__.py). Unary `+c`/`-c` make a new Counter too. Counts are
//! ints; other operands are not handled here.

use super::interp::{Interpreter, R};
use crate::heap::{DictSubclass, ObjId, ObjKind, Value};
use ruff_python_ast::Operator;

impl<'a> Interpreter<'a> {
    /// `l op r` when both are Counters and `op` is one of Counter's; `None` otherwise.
    pub(in crate::python) fn counter_binary(
        &mut self,
        op: Operator,
        l: Value,
        r: Value,
        in_place: bool,
    ) -> Option<R<Value>> {
        if !matches!(
            op,
            Operator::Add | Operator::Sub | Operator::BitOr | Operator::BitAnd
        ) {
            return None;
        }
        let (a, b) = (self.counter_id(l)?, self.counter_id(r)?);
        Some(self.counter_op(op, a, b, in_place))
    }

    /// `+c` (the positive counts) and `-c` (the negative counts negated) as a new Counter,
    /// keys in `c`'s order (`Counter.__pos__`/`__neg__`); `None` when `v` is not a Counter.
    /// Counted as `Counter()` is: the `dict_items` view and iterator `__pos__`'s loop makes
    /// (and, up to 3.10, its frame) are not (approximation).
    pub(in crate::python) fn counter_unary(&mut self, negate: bool, v: Value) -> Option<R<Value>> {
        let id = self.counter_id(v)?;
        Some(self.counts(id).and_then(|counts| {
            let kept: Vec<(Value, i64)> = counts
                .into_iter()
                .filter(|&(_, n)| if negate { n < 0 } else { n > 0 })
                .map(|(k, n)| (k, if negate { -n } else { n }))
                .collect();
            let target = self.new_counter(&[], &[])?;
            if let Value::Obj(t) = target {
                for (k, n) in kept {
                    self.heap.incref(k);
                    self.dict_set(t, k, Value::Int(n));
                }
            }
            Ok(target)
        }))
    }

    fn counter_id(&self, v: Value) -> Option<ObjId> {
        let Value::Obj(id) = v else { return None };
        (self.heap.dict_flavour(id)?.subclass == DictSubclass::Counter).then_some(id)
    }

    /// The (key, count) pairs of a Counter, counts as ints (borrowed keys).
    fn counts(&self, id: ObjId) -> R<Vec<(Value, i64)>> {
        let ObjKind::Dict(items) = self.heap.kind(id) else {
            unreachable!("a Counter is a dict")
        };
        items
            .iter()
            .map(|&(k, v)| match v {
                Value::Int(n) => Ok((k, n)),
                Value::Bool(b) => Ok((k, i64::from(b))),
                _ => self.unsupported("Counter arithmetic on counts that are not ints"),
            })
            .collect()
    }

    fn counter_op(&mut self, op: Operator, a: ObjId, b: ObjId, in_place: bool) -> R<Value> {
        let (mine, other) = (self.counts(a)?, self.counts(b)?);
        let get = |list: &[(Value, i64)], k: Value| {
            list.iter().find(|(x, _)| *x == k).map_or(0, |(_, n)| *n)
        };
        let mut out: Vec<(Value, i64)> = Vec::new();
        if in_place {
            // `__iadd__` and friends: update `a` key by key, then keep the positive counts.
            out = mine.clone();
            let pairs: Vec<(Value, i64)> = match op {
                Operator::BitAnd => mine.clone(),
                _ => other.clone(),
            };
            for (k, c) in pairs {
                let current = get(&out, k);
                let new = match op {
                    Operator::Add => current + c,
                    Operator::Sub => current - c,
                    Operator::BitOr => current.max(c),
                    _ => c.min(get(&other, k)),
                };
                match out.iter_mut().find(|(x, _)| *x == k) {
                    Some(slot) => slot.1 = new,
                    None => out.push((k, new)),
                }
            }
        } else {
            for &(k, c) in &mine {
                let o = get(&other, k);
                let new = match op {
                    Operator::Add => c + o,
                    Operator::Sub => c - o,
                    Operator::BitOr => c.max(o),
                    _ => c.min(o),
                };
                out.push((k, new));
            }
            if op != Operator::BitAnd {
                for &(k, c) in &other {
                    if !mine.iter().any(|(x, _)| *x == k) {
                        // `-`: a key only on the right enters as `0 - count`.
                        out.push((k, if op == Operator::Sub { -c } else { c }));
                    }
                }
            }
        }
        out.retain(|(_, n)| *n > 0);
        let target = if in_place {
            self.heap.incref(Value::Obj(a));
            Value::Obj(a)
        } else {
            self.new_counter(&[], &[])?
        };
        let Value::Obj(t) = target else {
            unreachable!("a Counter is an object")
        };
        for (k, _) in &out {
            self.heap.incref(*k);
        }
        let entries = out.into_iter().map(|(k, n)| (k, Value::Int(n))).collect();
        let old = match self.heap.kind_mut(t) {
            ObjKind::Dict(items) => std::mem::replace(items, entries),
            _ => unreachable!("a Counter is a dict"),
        };
        self.heap
            .decref_all(old.into_iter().flat_map(|(k, v)| [k, v]));
        Ok(target)
    }
}
