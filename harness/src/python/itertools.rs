//! `itertools.chain` (and `chain.from_iterable`), `islice`, `count`, `repeat` and `cycle`:
//! lazy iterators, one GC object each, holding their sources until they are dropped, so a
//! stored `cycle` over tensors keeps them (it saves every item it has seen) and a stored
//! `repeat(t)` keeps `t`.
//!
//! Construction creates what CPython's constructors create (`Modules/itertoolsmodule.c`):
//! `chain(*its)` keeps its argument tuple through a `tuple_iterator` and takes each
//! source's iterator only when it reaches it; `islice` and `cycle` take their source's
//! iterator at once (`cycle` also a list for the saved items); `count` and `repeat` are
//! one object. The rest of `itertools` is refused where it is named.

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};

impl<'a> Interpreter<'a> {
    /// Calls one of the modelled `itertools` constructors (arguments borrowed).
    pub(in crate::python) fn itertools_new(
        &mut self,
        n: Native,
        p: &[Value],
        kw: &[(crate::heap::Sym, Value)],
    ) -> R<Value> {
        if !kw.is_empty() && !matches!(n, Native::ItertoolsCount | Native::ItertoolsRepeat) {
            return self.unsupported("keyword arguments of this itertools function");
        }
        match n {
            Native::ItertoolsChain => {
                for &v in p {
                    self.heap.incref(v);
                }
                let args = if p.is_empty() {
                    super::natives::constant_tuple(self, Vec::new())
                } else {
                    Value::Obj(self.alloc(ObjKind::Tuple(p.to_vec())))
                };
                let sources = self.new_wrapper(WrapperKind::SeqIter, vec![args, Value::Int(0)]);
                Ok(self.new_wrapper(WrapperKind::Chain, vec![sources, Value::None]))
            }
            Native::ItertoolsChainFromIterable => match p {
                [source] => {
                    self.heap.incref(*source);
                    let sources = self.itertools_source(*source)?;
                    Ok(self.new_wrapper(WrapperKind::Chain, vec![sources, Value::None]))
                }
                _ => self.error("TypeError: from_iterable() takes exactly one argument"),
            },
            Native::ItertoolsIslice => {
                let int_or_none = |it: &Self, v: Value, what: &str| {
                    match v {
                    Value::None => Ok(None),
                    Value::Int(i) if i >= 0 => Ok(Some(i)),
                    _ => it.error(format!(
                        "ValueError: {what} argument for islice() must be None or an integer: 0 <= x <= sys.maxsize."
                    )),
                }
                };
                let (source, start, stop, step) = match p {
                    [s, stop] => (*s, Some(0), int_or_none(self, *stop, "Stop")?, Some(1)),
                    [s, start, stop] => (
                        *s,
                        int_or_none(self, *start, "Indices")?,
                        int_or_none(self, *stop, "Stop")?,
                        Some(1),
                    ),
                    [s, start, stop, step] => (
                        *s,
                        int_or_none(self, *start, "Indices")?,
                        int_or_none(self, *stop, "Stop")?,
                        int_or_none(self, *step, "Step")?,
                    ),
                    _ => return self.error("TypeError: islice expected 2 to 4 arguments"),
                };
                let step = step.unwrap_or(1);
                if step == 0 {
                    return self.error(
                        "ValueError: Step for islice() must be a positive integer or None.",
                    );
                }
                self.heap.incref(source);
                let source = self.itertools_source(source)?;
                let stop = stop.map_or(Value::None, Value::Int);
                let items = vec![
                    source,
                    Value::Int(start.unwrap_or(0)),
                    stop,
                    Value::Int(step),
                    Value::Int(0),
                ];
                Ok(self.new_wrapper(WrapperKind::Islice, items))
            }
            Native::ItertoolsCount => {
                let start = p
                    .first()
                    .copied()
                    .or_else(|| self.keyword(kw, "start"))
                    .unwrap_or(Value::Int(0));
                let step = p
                    .get(1)
                    .copied()
                    .or_else(|| self.keyword(kw, "step"))
                    .unwrap_or(Value::Int(1));
                match (start, step) {
                    (Value::Int(_), Value::Int(_)) => {
                        Ok(self.new_wrapper(WrapperKind::Count, vec![start, step]))
                    }
                    _ => self.unsupported("`itertools.count` of non-integers"),
                }
            }
            Native::ItertoolsRepeat => {
                let Some(&object) = p.first().or(kw
                    .iter()
                    .find(|(k, _)| self.names.name(*k) == "object")
                    .map(|(_, v)| v))
                else {
                    return self.error("TypeError: repeat() missing required argument 'object'");
                };
                let times = match p.get(1).copied().or_else(|| self.keyword(kw, "times")) {
                    None => Value::None,
                    Some(Value::Int(t)) => Value::Int(t.max(0)),
                    Some(_) => return self.error("TypeError: repeat() times must be an integer"),
                };
                self.heap.incref(object);
                Ok(self.new_wrapper(WrapperKind::Repeat, vec![object, times]))
            }
            Native::ItertoolsCycle => match p {
                [source] => {
                    self.heap.incref(*source);
                    let source = self.itertools_source(*source)?;
                    let saved = self.alloc(ObjKind::List(Vec::new()));
                    let items = vec![source, Value::Obj(saved), Value::Int(-1)];
                    Ok(self.new_wrapper(WrapperKind::Cycle, items))
                }
                _ => self.error("TypeError: cycle expected 1 argument"),
            },
            _ => self.error("TypeError: not an itertools function"),
        }
    }

    /// The iterator an itertools object takes of `source` (owned): `iter(source)`, read one
    /// item at a time. A range gets its `range_iterator` (not a GC object); sources the
    /// model iterates only by index (sets, deques, strings) are refused.
    pub(in crate::python) fn itertools_source(&mut self, source: Value) -> R<Value> {
        if let Value::Obj(o) = source
            && matches!(self.heap.kind(o), ObjKind::Range { .. })
        {
            let iterator = ObjKind::Wrapper(WrapperKind::RangeIter, vec![source, Value::Int(0)]);
            return Ok(Value::Obj(self.heap.insert_uncounted(iterator)));
        }
        let iterator = self.iterator_of(source)?;
        let stepwise = matches!(iterator, Value::Obj(o) if matches!(
            self.heap.kind(o),
            ObjKind::Wrapper(..) | ObjKind::Generator(_) | ObjKind::Instance { .. }
        ));
        if !stepwise {
            self.heap.decref(iterator);
            return self.unsupported("itertools over this iterable (lists, tuples, dicts, ranges, generators and iterators are modelled)");
        }
        Ok(iterator)
    }

    /// Puts `v` in slot `slot` of the iterator object `id`, dropping what was there (the
    /// state an iterator keeps between steps, as CPython's iterator structs do).
    pub(in crate::python) fn replace_wrapper_item(&mut self, id: ObjId, slot: usize, v: Value) {
        if let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id) {
            let old = std::mem::replace(&mut items[slot], v);
            self.heap.decref(old);
        }
    }

    /// The next item of an `itertools` iterator (`kind`, its `items`), or `None` at its end.
    pub(in crate::python) fn itertools_next(
        &mut self,
        id: ObjId,
        kind: WrapperKind,
        items: &[Value],
    ) -> R<Option<Value>> {
        let set = |it: &mut Self, slot: usize, v: Value| it.replace_wrapper_item(id, slot, v);
        let int = |v: Value| match v {
            Value::Int(i) => i,
            _ => 0,
        };
        match kind {
            WrapperKind::Count => {
                let (value, step) = (int(items[0]), int(items[1]));
                set(self, 0, Value::Int(value + step));
                Ok(Some(Value::Int(value)))
            }
            WrapperKind::Repeat => {
                if let Value::Int(left) = items[1] {
                    if left == 0 {
                        return Ok(None);
                    }
                    set(self, 1, Value::Int(left - 1));
                }
                self.heap.incref(items[0]);
                Ok(Some(items[0]))
            }
            WrapperKind::Chain => {
                let mut current = items[1];
                loop {
                    if current != Value::None {
                        if let Some(v) = self.next_of(current, 0)? {
                            return Ok(Some(v));
                        }
                        set(self, 1, Value::None);
                    }
                    let Some(source) = self.next_of(items[0], 0)? else {
                        return Ok(None);
                    };
                    current = self.itertools_source(source)?;
                    set(self, 1, current);
                }
            }
            WrapperKind::Islice => {
                let (next, step, seen) = (int(items[1]), int(items[3]), int(items[4]));
                if let Value::Int(stop) = items[2]
                    && next >= stop
                {
                    return Ok(None);
                }
                let mut seen = seen;
                while seen < next {
                    match self.next_of(items[0], 0)? {
                        Some(v) => self.heap.decref(v),
                        None => {
                            set(self, 4, Value::Int(seen));
                            return Ok(None);
                        }
                    }
                    seen += 1;
                }
                let item = self.next_of(items[0], 0)?;
                set(self, 4, Value::Int(seen + 1));
                if item.is_some() {
                    set(self, 1, Value::Int(next + step));
                }
                Ok(item)
            }
            WrapperKind::Cycle => {
                let Value::Obj(saved) = items[1] else {
                    return Ok(None);
                };
                // -1 while the first pass reads the source, then the index into `saved`.
                if int(items[2]) < 0 {
                    if let Some(v) = self.next_of(items[0], 0)? {
                        self.heap.incref(v);
                        if let ObjKind::List(list) = self.heap.kind_mut(saved) {
                            list.push(v);
                        }
                        return Ok(Some(v));
                    }
                    set(self, 2, Value::Int(0));
                }
                let item = match self.heap.kind(saved) {
                    ObjKind::List(list) if !list.is_empty() => {
                        let i = int(items[2]).max(0) as usize % list.len();
                        Some((list[i], (i + 1) % list.len()))
                    }
                    _ => None,
                };
                let Some((v, next)) = item else {
                    return Ok(None);
                };
                set(self, 2, Value::Int(next as i64));
                self.heap.incref(v);
                Ok(Some(v))
            }
            _ => {
                let t = self.heap.kind(id).type_name();
                self.error(format!("TypeError: '{t}' object is not an iterator"))
            }
        }
    }
}
