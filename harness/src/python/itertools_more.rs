//! More of `itertools`: `starmap`, `takewhile`, `dropwhile`, `accumulate`, `pairwise`
//! (3.10+), `zip_longest`, and the combinatoric `product`, `combinations`, `permutations`.
//!
//! As in CPython (`Modules/itertoolsmodule.c`): the filtering ones and `accumulate`,
//! `pairwise`, `zip_longest` are lazy, one GC object each, holding their source iterators
//! (and `accumulate` its running total, `pairwise` the previous item); the combinatoric ones
//! read every input into a tuple when they are made (their "pools", kept until the iterator
//! is dropped: a stored `product` over tensors keeps them all) and yield a new tuple per
//! step. Approximation: CPython hands the same result tuple back when the caller dropped
//! it; the model makes a new one each time (the same count once each is freed).

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

impl<'a> Interpreter<'a> {
    /// The constructors (arguments borrowed).
    pub(in crate::python) fn itertools_more_new(
        &mut self,
        n: Native,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let allowed: &[&str] = match n {
            Native::ItertoolsZipLongest => &["fillvalue"],
            Native::ItertoolsAccumulate => &["func", "initial"],
            Native::ItertoolsProduct => &["repeat"],
            Native::ItertoolsCombinations | Native::ItertoolsPermutations => &["r"],
            _ => &[],
        };
        if let Some((k, _)) = kw
            .iter()
            .find(|(k, _)| !allowed.contains(&self.names.name(*k)))
        {
            return self.error(format!(
                "TypeError: an itertools function got an unexpected keyword argument '{}'",
                self.names.name(*k)
            ));
        }
        match n {
            Native::ItertoolsStarmap | Native::ItertoolsTakewhile | Native::ItertoolsDropwhile => {
                let [f, source] = p else {
                    return self.error("TypeError: expected 2 arguments");
                };
                self.heap.incref(*source);
                let source = self.itertools_source(*source)?;
                self.heap.incref(*f);
                let (kind, flag) = match n {
                    Native::ItertoolsStarmap => (WrapperKind::Starmap, Value::None),
                    Native::ItertoolsTakewhile => (WrapperKind::TakeWhile, Value::Bool(false)),
                    _ => (WrapperKind::DropWhile, Value::Bool(true)),
                };
                Ok(self.new_wrapper(kind, vec![*f, source, flag]))
            }
            Native::ItertoolsAccumulate => {
                let (source, func) = match p {
                    [s] => (*s, self.keyword(kw, "func").unwrap_or(Value::None)),
                    [s, f] => (*s, *f),
                    _ => return self.error("TypeError: accumulate() takes 1 or 2 arguments"),
                };
                let initial = self.keyword(kw, "initial");
                self.heap.incref(source);
                let source = self.itertools_source(source)?;
                self.heap.incref(func);
                let total = initial.unwrap_or(Value::None);
                self.heap.incref(total);
                // Items: source, func, running total, whether a total exists, whether the
                // initial value is still to be yielded.
                let items = vec![
                    source,
                    func,
                    total,
                    Value::Bool(initial.is_some()),
                    Value::Bool(initial.is_some()),
                ];
                Ok(self.new_wrapper(WrapperKind::Accumulate, items))
            }
            Native::ItertoolsPairwise => {
                if self.heap.profile.version.minor < 10 {
                    return self
                        .error("AttributeError: module 'itertools' has no attribute 'pairwise'");
                }
                let [source] = p else {
                    return self.error("TypeError: pairwise expected 1 argument");
                };
                self.heap.incref(*source);
                let source = self.itertools_source(*source)?;
                Ok(self.new_wrapper(
                    WrapperKind::Pairwise,
                    vec![source, Value::None, Value::Bool(false)],
                ))
            }
            Native::ItertoolsZipLongest => {
                let fill = self.keyword(kw, "fillvalue").unwrap_or(Value::None);
                let mut iterators = Vec::with_capacity(p.len());
                for &s in p {
                    self.heap.incref(s);
                    match self.itertools_source(s) {
                        Ok(i) => iterators.push(i),
                        Err(e) => {
                            self.heap.decref_all(iterators);
                            return Err(e);
                        }
                    }
                }
                // CPython keeps the iterators in a tuple (`ittuple`) and makes its result
                // tuple at once.
                let n = iterators.len();
                let ittuple = Value::Obj(self.alloc(ObjKind::Tuple(iterators)));
                let result = Value::Obj(self.alloc(ObjKind::Tuple(vec![Value::None; n])));
                self.heap.incref(fill);
                Ok(self.new_wrapper(WrapperKind::ZipLongest, vec![fill, ittuple, result]))
            }
            Native::ItertoolsProduct => {
                let repeat = match self.keyword(kw, "repeat") {
                    None => 1,
                    Some(Value::Int(r)) if r >= 0 => r as usize,
                    Some(_) => return self.error("ValueError: repeat argument cannot be negative"),
                };
                let mut pools = Vec::with_capacity(p.len());
                for &s in p {
                    match self.pool_of(s) {
                        Ok(t) => pools.push(t),
                        Err(e) => {
                            self.heap.decref_all(pools);
                            return Err(e);
                        }
                    }
                }
                let mut all = Vec::with_capacity(pools.len() * repeat);
                for _ in 0..repeat {
                    for &t in &pools {
                        self.heap.incref(t);
                        all.push(t);
                    }
                }
                self.heap.decref_all(pools);
                let n = all.len();
                let pools = Value::Obj(self.alloc(ObjKind::Tuple(all)));
                let mut items = vec![pools, Value::Bool(false)];
                items.extend((0..n).map(|_| Value::Int(0)));
                Ok(self.new_wrapper(WrapperKind::Product, items))
            }
            Native::ItertoolsCombinations | Native::ItertoolsPermutations => {
                let (source, r) = match (p, self.keyword(kw, "r")) {
                    ([s], r) => (*s, r),
                    ([s, r], None) => (*s, Some(*r)),
                    _ => return self.error("TypeError: expected an iterable and r"),
                };
                let pool = self.pool_of(source)?;
                let len = match pool {
                    Value::Obj(t) => match self.heap.kind(t) {
                        ObjKind::Tuple(items) => items.len(),
                        _ => 0,
                    },
                    _ => 0,
                };
                let r = match r {
                    None | Some(Value::None) if n == Native::ItertoolsPermutations => len,
                    Some(Value::Int(r)) if r >= 0 => r as usize,
                    None | Some(Value::None) => {
                        self.heap.decref(pool);
                        return self.error(
                            "TypeError: combinations() missing required argument 'r' (pos 2)",
                        );
                    }
                    _ => {
                        self.heap.decref(pool);
                        return self.error("ValueError: r must be non-negative");
                    }
                };
                let kind = if n == Native::ItertoolsCombinations {
                    WrapperKind::Combinations
                } else {
                    WrapperKind::Permutations
                };
                // Items: the pool, r, whether started, then the indices (and for
                // permutations the cycles after them).
                let mut items = vec![pool, Value::Int(r as i64), Value::Bool(false)];
                if kind == WrapperKind::Combinations {
                    items.extend((0..r).map(|i| Value::Int(i as i64)));
                } else {
                    items.extend((0..len).map(|i| Value::Int(i as i64)));
                    items.extend((0..r).map(|i| Value::Int((len - i.min(len)) as i64)));
                }
                Ok(self.new_wrapper(kind, items))
            }
            _ => self.error("TypeError: not an itertools function"),
        }
    }

    /// `tuple(iterable)`: a pool of a combinatoric iterator (a tuple is used as it is).
    fn pool_of(&mut self, source: Value) -> R<Value> {
        if let Value::Obj(t) = source
            && matches!(self.heap.kind(t), ObjKind::Tuple(_))
        {
            self.heap.incref(source);
            return Ok(source);
        }
        let items = self.collect_items(source)?;
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
    }

    /// The next item of one of these iterators, or `None` at its end.
    pub(in crate::python) fn itertools_more_next(
        &mut self,
        id: ObjId,
        kind: WrapperKind,
        items: &[Value],
    ) -> R<Option<Value>> {
        let set = |it: &mut Self, slot: usize, v: Value| it.replace_wrapper_item(id, slot, v);
        match kind {
            WrapperKind::Starmap => {
                let Some(args) = self.next_of(items[1], 0)? else {
                    return Ok(None);
                };
                let call_args = self.collect_items(args);
                self.heap.decref(args);
                let r = self.call(items[0], call_args?, Vec::new())?;
                Ok(Some(r))
            }
            WrapperKind::TakeWhile => {
                if items[2] == Value::Bool(true) {
                    return Ok(None);
                }
                let Some(v) = self.next_of(items[1], 0)? else {
                    return Ok(None);
                };
                if self.predicate(items[0], v)? {
                    Ok(Some(v))
                } else {
                    self.heap.decref(v);
                    set(self, 2, Value::Bool(true));
                    Ok(None)
                }
            }
            WrapperKind::DropWhile => {
                let dropping = items[2] == Value::Bool(true);
                loop {
                    let Some(v) = self.next_of(items[1], 0)? else {
                        return Ok(None);
                    };
                    if !dropping {
                        return Ok(Some(v));
                    }
                    if self.predicate(items[0], v)? {
                        self.heap.decref(v);
                        continue;
                    }
                    set(self, 2, Value::Bool(false));
                    return Ok(Some(v));
                }
            }
            WrapperKind::Accumulate => {
                if items[4] == Value::Bool(true) {
                    set(self, 4, Value::Bool(false));
                    self.heap.incref(items[2]);
                    return Ok(Some(items[2]));
                }
                let Some(v) = self.next_of(items[0], 0)? else {
                    return Ok(None);
                };
                let total = if items[3] != Value::Bool(true) {
                    set(self, 3, Value::Bool(true));
                    v
                } else if items[1] == Value::None {
                    let sum = self.binary(ruff_python_ast::Operator::Add, items[2], v, false);
                    self.heap.decref(v);
                    sum?
                } else {
                    self.heap.incref(items[2]);
                    self.call(items[1], vec![items[2], v], Vec::new())?
                };
                self.heap.incref(total);
                set(self, 2, total);
                Ok(Some(total))
            }
            WrapperKind::Pairwise => {
                if items[2] != Value::Bool(true) {
                    let Some(first) = self.next_of(items[0], 0)? else {
                        return Ok(None);
                    };
                    set(self, 1, first);
                    set(self, 2, Value::Bool(true));
                }
                let Some(next) = self.next_of(items[0], 0)? else {
                    return Ok(None);
                };
                let previous = match self.heap.kind(id) {
                    ObjKind::Wrapper(_, i) => i[1],
                    _ => Value::None,
                };
                self.heap.incref(previous);
                self.heap.incref(next);
                set(self, 1, next);
                Ok(Some(Value::Obj(
                    self.alloc(ObjKind::Tuple(vec![previous, next])),
                )))
            }
            WrapperKind::ZipLongest => {
                let Value::Obj(ittuple) = items[1] else {
                    return Ok(None);
                };
                let sources = match self.heap.kind(ittuple) {
                    ObjKind::Tuple(t) => t.clone(),
                    _ => Vec::new(),
                };
                let mut row = Vec::with_capacity(sources.len());
                let mut live = 0;
                for (slot, &source) in sources.iter().enumerate() {
                    let v = if source == Value::None {
                        None
                    } else {
                        match self.next_of(source, 0) {
                            Ok(v) => v,
                            Err(e) => {
                                self.heap.decref_all(row);
                                return Err(e);
                            }
                        }
                    };
                    match v {
                        Some(v) => {
                            live += 1;
                            row.push(v);
                        }
                        None => {
                            if source != Value::None
                                && let ObjKind::Tuple(t) = self.heap.kind_mut(ittuple)
                            {
                                let old = std::mem::replace(&mut t[slot], Value::None);
                                self.heap.decref(old);
                            }
                            self.heap.incref(items[0]);
                            row.push(items[0]);
                        }
                    }
                }
                if live == 0 {
                    self.heap.decref_all(row);
                    return Ok(None);
                }
                Ok(Some(Value::Obj(self.alloc(ObjKind::Tuple(row)))))
            }
            WrapperKind::Product | WrapperKind::Combinations | WrapperKind::Permutations => {
                self.combinatoric_next(id, kind, items)
            }
            _ => {
                let t = self.heap.kind(id).type_name();
                self.error(format!("TypeError: '{t}' object is not an iterator"))
            }
        }
    }

    fn predicate(&mut self, f: Value, v: Value) -> R<bool> {
        self.heap.incref(v);
        let r = self.call(f, vec![v], Vec::new())?;
        let t = self.truth(r);
        self.heap.decref(r);
        t
    }

    /// The next tuple of `product`, `combinations` or `permutations`: CPython's index
    /// stepping, the indices kept in the wrapper after its header.
    fn combinatoric_next(
        &mut self,
        id: ObjId,
        kind: WrapperKind,
        items: &[Value],
    ) -> R<Option<Value>> {
        let int = |v: Value| match v {
            Value::Int(i) => i as usize,
            _ => 0,
        };
        let pool_items = |it: &Self, v: Value| -> Vec<Value> {
            match v.obj().map(|t| it.heap.kind(t)) {
                Some(ObjKind::Tuple(items)) => items.clone(),
                _ => Vec::new(),
            }
        };
        let started = items[if kind == WrapperKind::Product { 1 } else { 2 }] == Value::Bool(true);
        if matches!(items.last(), Some(Value::Bool(false))) && started {
            return Ok(None);
        }
        let mut state: Vec<usize> = items
            .iter()
            .skip(if kind == WrapperKind::Product { 2 } else { 3 })
            .map(|v| int(*v))
            .collect();
        let row: Option<Vec<Value>> = match kind {
            WrapperKind::Product => {
                let pools: Vec<Vec<Value>> = pool_items(self, items[0])
                    .into_iter()
                    .map(|p| pool_items(self, p))
                    .collect();
                if pools.iter().any(Vec::is_empty) {
                    None
                } else if !started {
                    Some(pools.iter().map(|p| p[0]).collect())
                } else {
                    let mut i = pools.len();
                    loop {
                        if i == 0 {
                            break None;
                        }
                        i -= 1;
                        state[i] += 1;
                        if state[i] < pools[i].len() {
                            break Some(());
                        }
                        state[i] = 0;
                    }
                    .map(|()| pools.iter().zip(&state).map(|(p, &j)| p[j]).collect())
                }
            }
            WrapperKind::Combinations => {
                let pool = pool_items(self, items[0]);
                let (n, r) = (pool.len(), int(items[1]));
                if r > n {
                    None
                } else if !started {
                    Some(state.iter().map(|&j| pool[j]).collect())
                } else {
                    let mut found = None;
                    for i in (0..r).rev() {
                        if state[i] != i + n - r {
                            found = Some(i);
                            break;
                        }
                    }
                    found.map(|i| {
                        state[i] += 1;
                        for j in i + 1..r {
                            state[j] = state[j - 1] + 1;
                        }
                        state.iter().map(|&j| pool[j]).collect()
                    })
                }
            }
            _ => {
                let pool = pool_items(self, items[0]);
                let (n, r) = (pool.len(), int(items[1]));
                let (indices, cycles) = state.split_at_mut(n);
                if r > n {
                    None
                } else if !started {
                    Some(indices[..r].iter().map(|&j| pool[j]).collect())
                } else {
                    let mut result = None;
                    for i in (0..r).rev() {
                        cycles[i] -= 1;
                        if cycles[i] == 0 {
                            indices[i..].rotate_left(1);
                            cycles[i] = n - i;
                        } else {
                            let j = cycles[i];
                            indices.swap(i, n - j);
                            result = Some(indices[..r].iter().map(|&k| pool[k]).collect());
                            break;
                        }
                    }
                    result
                }
            }
        };
        let header = if kind == WrapperKind::Product { 1 } else { 2 };
        let Some(row) = row else {
            if let ObjKind::Wrapper(_, w) = self.heap.kind_mut(id) {
                w[header] = Value::Bool(true);
                w.push(Value::Bool(false));
            }
            return Ok(None);
        };
        if let ObjKind::Wrapper(_, w) = self.heap.kind_mut(id) {
            w[header] = Value::Bool(true);
            for (slot, v) in w.iter_mut().skip(header + 1).zip(&state) {
                *slot = Value::Int(*v as i64);
            }
        }
        for &v in &row {
            self.heap.incref(v);
        }
        Ok(Some(Value::Obj(self.alloc(ObjKind::Tuple(row)))))
    }
}
