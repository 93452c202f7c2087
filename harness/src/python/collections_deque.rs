//! `collections.deque`: a GC-tracked sequence with cheap appends and pops at both ends. A
//! bounded deque (`maxlen`) drops the item at the far end when an append overflows it,
//! releasing the reference, which is how a workload keeps a bounded history of tensors.
//!
//! Counted as CPython counts it (measured with `gc.get_count()` on 3.8 – 3.13): building
//! one is one GC allocation; `append`, `appendleft`, `pop`, `popleft`, `extend` and
//! `clear` allocate nothing counted (CPython's blocks of 64 slots are plain memory).

use super::interp::{Interpreter, R};
use super::natives::{int_arg, sequence_items};
use crate::heap::{ObjId, ObjKind, Sym, Value};

/// Which end of a deque an operation works on.
#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Left,
    Right,
}

impl<'a> Interpreter<'a> {
    /// `deque(iterable=(), maxlen=None)`.
    pub(super) fn new_deque(&mut self, p: &[Value], kw: &[(Sym, Value)]) -> R<Value> {
        if p.len() > 2 {
            return self.error("TypeError: deque() takes at most 2 arguments");
        }
        if let Some((k, _)) = kw
            .iter()
            .find(|(k, _)| !matches!(self.names.name(*k), "iterable" | "maxlen"))
        {
            let k = self.names.name(*k).to_string();
            return self.error(format!(
                "TypeError: deque() got an unexpected keyword argument '{k}'"
            ));
        }
        let iterable = p.first().copied().or_else(|| self.keyword(kw, "iterable"));
        let maxlen = match p.get(1).copied().or_else(|| self.keyword(kw, "maxlen")) {
            None | Some(Value::None) => None,
            Some(v) => {
                let n = int_arg(self, v, "maxlen")?;
                if n < 0 {
                    return self.error("ValueError: maxlen must be non-negative");
                }
                Some(n as usize)
            }
        };
        let items = match iterable {
            None => Vec::new(),
            Some(v) => self.deque_source_items(v)?,
        };
        let deque = self.alloc(ObjKind::Deque {
            items: Vec::new(),
            maxlen,
        });
        self.deque_extend(deque, items, End::Right);
        Ok(Value::Obj(deque))
    }

    /// The items of an iterable given to a deque, as new references.
    fn deque_source_items(&mut self, v: Value) -> R<Vec<Value>> {
        let lazy = matches!(v, Value::Obj(o) if matches!(
            self.heap.kind(o),
            ObjKind::Generator(_) | ObjKind::Wrapper(..) | ObjKind::Instance { .. }
        ));
        if lazy {
            return self.collect_items(v);
        }
        let items = sequence_items(self, v)?;
        for &x in &items {
            self.heap.incref(x);
        }
        Ok(items)
    }

    /// Adds owned `items` one by one at `end`; past `maxlen` each addition drops the item
    /// at the other end.
    fn deque_extend(&mut self, id: ObjId, items: Vec<Value>, end: End) {
        let mut dropped = Vec::new();
        if let ObjKind::Deque {
            items: held,
            maxlen,
        } = self.heap.kind_mut(id)
        {
            for v in items {
                if *maxlen == Some(0) {
                    dropped.push(v);
                    continue;
                }
                match end {
                    End::Right => held.push(v),
                    End::Left => held.insert(0, v),
                }
                if maxlen.is_some_and(|m| held.len() > m) {
                    dropped.push(match end {
                        End::Right => held.remove(0),
                        End::Left => held.pop().expect("over maxlen, so not empty"),
                    });
                }
            }
        }
        self.heap.decref_all(dropped);
    }

    /// A method of a deque.
    pub(super) fn deque_method(&mut self, id: ObjId, method: &str, p: &[Value]) -> R<Value> {
        match (method, p) {
            ("append" | "appendleft", [v]) => {
                self.heap.incref(*v);
                let end = if method == "append" {
                    End::Right
                } else {
                    End::Left
                };
                self.deque_extend(id, vec![*v], end);
                Ok(Value::None)
            }
            ("extend" | "extendleft", [v]) => {
                let items = self.deque_source_items(*v)?;
                let end = if method == "extend" {
                    End::Right
                } else {
                    End::Left
                };
                self.deque_extend(id, items, end);
                Ok(Value::None)
            }
            ("pop" | "popleft", []) => {
                let ObjKind::Deque { items, .. } = self.heap.kind_mut(id) else {
                    unreachable!("a deque method on a deque")
                };
                let popped = if method == "pop" {
                    items.pop()
                } else if items.is_empty() {
                    None
                } else {
                    Some(items.remove(0))
                };
                match popped {
                    Some(v) => Ok(v),
                    None => self.error("IndexError: pop from an empty deque"),
                }
            }
            ("rotate", rest) => {
                let n = match rest {
                    [] => 1,
                    [n] => int_arg(self, *n, "rotate")?,
                    _ => return self.error("TypeError: rotate expected at most 1 argument"),
                };
                if let ObjKind::Deque { items, .. } = self.heap.kind_mut(id)
                    && !items.is_empty()
                {
                    let shift = n.rem_euclid(items.len() as i64) as usize;
                    items.rotate_right(shift);
                }
                Ok(Value::None)
            }
            ("reverse", []) => {
                if let ObjKind::Deque { items, .. } = self.heap.kind_mut(id) {
                    items.reverse();
                }
                Ok(Value::None)
            }
            ("count" | "remove", [v]) => {
                let items = match self.heap.kind(id) {
                    ObjKind::Deque { items, .. } => items.clone(),
                    _ => Vec::new(),
                };
                let matches: Vec<usize> = (0..items.len())
                    .filter(|&i| self.values_equal(items[i], *v))
                    .collect();
                if method == "count" {
                    return Ok(Value::Int(matches.len() as i64));
                }
                let Some(&at) = matches.first() else {
                    return self.error("ValueError: deque.remove(x): x not in deque");
                };
                let ObjKind::Deque { items, .. } = self.heap.kind_mut(id) else {
                    unreachable!("a deque method on a deque")
                };
                let removed = items.remove(at);
                self.heap.decref(removed);
                Ok(Value::None)
            }
            ("clear", []) => {
                let ObjKind::Deque { items, .. } = self.heap.kind_mut(id) else {
                    unreachable!("a deque method on a deque")
                };
                let old = std::mem::take(items);
                self.heap.decref_all(old);
                Ok(Value::None)
            }
            _ => self.unsupported(format!("deque method '{method}' with these arguments")),
        }
    }

    /// `d.maxlen`.
    pub(super) fn deque_maxlen(&self, id: ObjId) -> Value {
        match self.heap.kind(id) {
            ObjKind::Deque {
                maxlen: Some(m), ..
            } => Value::Int(*m as i64),
            _ => Value::None,
        }
    }
}
