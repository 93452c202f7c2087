//! Builtins over iterables: the lazy iterators `enumerate`, `map`, `filter` and `reversed`
//! (one GC object each, items produced one at a time as CPython produces them), and the
//! consumers `sorted`, `any`, `all`, and `min` / `max` with `key`.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};
use std::cmp::Ordering;

impl<'a> Interpreter<'a> {
    /// `enumerate(it, start=0)`, `map(f, it)`, `filter(f, it)`, `reversed(seq)`: arguments
    /// are borrowed.
    pub(super) fn new_lazy_iterator(
        &mut self,
        kind: WrapperKind,
        args: &[Value],
        start: Option<Value>,
    ) -> R<Value> {
        let items = match (kind, args) {
            (WrapperKind::Enumerate, [source]) => {
                let count = match start {
                    None => 0,
                    Some(Value::Int(i)) => i,
                    Some(_) => return self.error("TypeError: enumerate start must be an integer"),
                };
                self.heap.incref(*source);
                let source = self.iterator_of(*source)?;
                // The result tuple it hands out again (`heap/iterator_results.rs`).
                let result = self.alloc(ObjKind::Tuple(vec![Value::None, Value::None]));
                self.heap.new_result_tuple(result);
                vec![source, Value::Int(0), Value::Int(count), Value::Obj(result)]
            }
            (WrapperKind::Map | WrapperKind::Filter, [func, source]) => {
                self.heap.incref(*func);
                self.heap.incref(*source);
                let source = match self.iterator_of(*source) {
                    Ok(s) => s,
                    Err(e) => {
                        self.heap.decref(*func);
                        return Err(e);
                    }
                };
                vec![*func, source, Value::Int(0)]
            }
            (WrapperKind::Map, [_, _, ..]) => {
                return self.unsupported("map() over several iterables");
            }
            (WrapperKind::Reversed, [seq]) => {
                let len = match seq {
                    Value::Obj(o) => match self.heap.kind(*o) {
                        ObjKind::List(items) | ObjKind::Tuple(items) => items.len(),
                        _ => return self.unsupported("reversed() of this object"),
                    },
                    Value::Str(text) => self.names.name(*text).chars().count(),
                    other => {
                        let name = self.value_type_name(*other);
                        return self.error(format!("TypeError: '{name}' object is not reversible"));
                    }
                };
                // A list's `__reversed__` is a C method, bound for the call
                // (`heap/seq_iter_free.rs`); tuples and strings have none.
                if matches!(seq, Value::Obj(o) if matches!(self.heap.kind(*o), ObjKind::List(_)))
                    && self.heap.count_temporary_cfunction()
                {
                    self.collection_due();
                }
                self.heap.incref(*seq);
                vec![*seq, Value::Int(len as i64)]
            }
            // `zip()` holds the empty tuple twice: nothing counted, nothing to hold.
            (WrapperKind::Zip, []) => Vec::new(),
            // As `zip_new`: the tuple of iterators, each iterator, the result tuple it hands
            // out again (`heap/iterator_results.rs`), then the zip object.
            (WrapperKind::Zip, sources) => {
                let ittuple = self.alloc(ObjKind::Tuple(vec![Value::None; sources.len()]));
                for (i, &source) in sources.iter().enumerate() {
                    self.heap.incref(source);
                    match self.iterator_of(source) {
                        Ok(iterator) => {
                            if let ObjKind::Tuple(held) = self.heap.kind_mut(ittuple) {
                                held[i] = iterator;
                            }
                        }
                        Err(e) => {
                            self.heap.decref(Value::Obj(ittuple));
                            return Err(e);
                        }
                    }
                }
                let result = self.alloc(ObjKind::Tuple(vec![Value::None; sources.len()]));
                self.heap.new_result_tuple(result);
                vec![Value::Obj(ittuple), Value::Obj(result)]
            }
            _ => return self.error("TypeError: wrong number of arguments"),
        };
        Ok(self.new_wrapper(kind, items))
    }

    /// `iter(x)` for a lazy iterator's source (`x` owned, the result owned): a list, tuple
    /// or dict gets its own iterator object, counted as CPython's GC-allocated
    /// `list_iterator` / `tuple_iterator` / `dict_keyiterator` are (measured:
    /// `enumerate((1,))` and `map(abs, (1,))` count 2, `zip((1,), (2,))` 3, `iter([1])` 1 on
    /// 3.8–3.13). A `range` is indexed directly: its iterator is not a GC object.
    pub(super) fn iterator_of(&mut self, source: Value) -> R<Value> {
        if let Value::Obj(o) = source
            && matches!(
                self.heap.kind(o),
                ObjKind::List(_)
                    | ObjKind::Tuple(_)
                    | ObjKind::Dict(_)
                    | ObjKind::NamedTuple { .. }
            )
        {
            return Ok(self.new_wrapper(WrapperKind::SeqIter, vec![source, Value::Int(0)]));
        }
        if self.is_tensor(source) {
            // A tensor's rows (`tensor_iter.rs`): a `tuple_iterator` over `unbind(0)`.
            let rows = self.user_iter(source)?;
            return self.iterator_of(rows);
        }
        if let Value::Str(text) = source {
            // A `str_iterator` (one GC object) over the characters, kept here as an
            // uncounted tuple of one-character strings.
            let text = self.names.name(text).to_string();
            let chars = text
                .chars()
                .map(|c| Value::Str(self.names.intern(c.encode_utf8(&mut [0; 4]))))
                .collect();
            let chars = Value::Obj(self.heap.insert_uncounted(ObjKind::Tuple(chars)));
            // The third item marks a `str_iterator`: no free list (`heap/seq_iter_free.rs`).
            let items = vec![chars, Value::Int(0), Value::None];
            return Ok(self.new_wrapper(WrapperKind::SeqIter, items));
        }
        self.user_iter(source)
    }

    /// `GET_ITER` of a `for` loop or a comprehension: on a list, tuple or dict CPython makes
    /// a GC-allocated iterator, counted while the loop runs and freed at its end (measured:
    /// `gc.get_count()` inside the body minus before the loop, 3.8–3.15); 3.14 takes a
    /// list's or tuple's from its free list when it can (`heap/seq_iter_free.rs`) and 3.15's
    /// virtual iterators skip it. Returns whether one was made, for
    /// [`Interpreter::free_loop_iterator`] when the loop ends.
    pub(in crate::python) fn count_loop_iterator(&mut self, iterable: Value) -> bool {
        let counted = match iterable {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::List(_) | ObjKind::Tuple(_) | ObjKind::NamedTuple { .. } => {
                    !self.heap.profile.virtual_loop_iterators
                }
                // `_collections._deque_iterator` is always GC-allocated.
                // So are `set_iterator`s.
                ObjKind::Dict(_) | ObjKind::Deque { .. } | ObjKind::Set { .. } => true,
                _ => false,
            },
            _ => false,
        };
        if counted && self.heap.count_loop_iterator(iterable) {
            self.collection_due();
        }
        counted
    }

    /// The end of a loop whose iterator [`Interpreter::count_loop_iterator`] made: onto its
    /// free list (3.14+, lists and tuples) or the counter drops.
    pub(in crate::python) fn free_loop_iterator(&mut self) {
        self.heap.free_loop_iterator();
    }

    /// The tuple `enumerate` or `zip` hands out: its kept `result` again when nothing else
    /// holds it, else a new one (`heap/iterator_results.rs`).
    fn result_tuple(&mut self, result: Value, items: Vec<Value>) -> Value {
        match self.heap.reuse_result_tuple(result, items) {
            Ok(tuple) => tuple,
            Err(items) => Value::Obj(self.alloc(ObjKind::Tuple(items))),
        }
    }

    /// The next item of a lazy iterator, or `None` when it is exhausted.
    pub(super) fn lazy_next(&mut self, id: ObjId) -> R<Option<Value>> {
        let (kind, items) = match self.heap.kind(id) {
            ObjKind::Wrapper(kind, items) => (*kind, items.clone()),
            _ => return Ok(None),
        };
        let set = |it: &mut Self, slot: usize, v: i64| {
            if let ObjKind::Wrapper(_, items) = it.heap.kind_mut(id) {
                items[slot] = Value::Int(v);
            }
        };
        let int = |v: Value| match v {
            Value::Int(i) => i,
            _ => 0,
        };
        match kind {
            WrapperKind::Enumerate => {
                let pos = int(items[1]);
                let Some(item) = self.next_of(items[0], pos as usize)? else {
                    return Ok(None);
                };
                set(self, 1, pos + 1);
                let count = int(items[2]);
                set(self, 2, count + 1);
                Ok(Some(
                    self.result_tuple(items[3], vec![Value::Int(count), item]),
                ))
            }
            WrapperKind::Map => {
                let pos = int(items[2]);
                let Some(item) = self.next_of(items[1], pos as usize)? else {
                    return Ok(None);
                };
                set(self, 2, pos + 1);
                self.call(items[0], vec![item], Vec::new()).map(Some)
            }
            WrapperKind::Filter => {
                let mut pos = int(items[2]);
                loop {
                    let Some(item) = self.next_of(items[1], pos as usize)? else {
                        set(self, 2, pos);
                        return Ok(None);
                    };
                    pos += 1;
                    let keep = if items[0] == Value::None {
                        self.truth(item)?
                    } else {
                        self.heap.incref(item);
                        let v = self.call(items[0], vec![item], Vec::new())?;
                        let t = self.truth(v);
                        self.heap.decref(v);
                        t?
                    };
                    if keep {
                        set(self, 2, pos);
                        return Ok(Some(item));
                    }
                    self.heap.decref(item);
                }
            }
            WrapperKind::Reversed => {
                let next = int(items[1]);
                if next <= 0 {
                    return Ok(None);
                }
                set(self, 1, next - 1);
                let item = match items[0] {
                    Value::Obj(o) => match self.heap.kind(o) {
                        ObjKind::List(v) | ObjKind::Tuple(v) => v.get(next as usize - 1).copied(),
                        _ => None,
                    },
                    // A string's code points, last first.
                    Value::Str(text) => {
                        let c = self.names.name(text).chars().nth(next as usize - 1);
                        c.map(|c| Value::Str(self.names.intern(&c.to_string())))
                    }
                    _ => None,
                };
                if let Some(v) = item {
                    self.heap.incref(v);
                }
                Ok(item)
            }
            WrapperKind::SeqIter | WrapperKind::RangeIter => {
                let pos = int(items[1]);
                let item = self.next_of(items[0], pos as usize)?;
                if item.is_some() {
                    set(self, 1, pos + 1);
                }
                Ok(item)
            }
            WrapperKind::Zip => {
                let iterators = match items.first() {
                    Some(&Value::Obj(t)) => match self.heap.kind(t) {
                        ObjKind::Tuple(held) => held.clone(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let mut row = Vec::with_capacity(iterators.len());
                for &source in &iterators {
                    match self.next_of(source, 0) {
                        Ok(Some(v)) => row.push(v),
                        Ok(None) => {
                            self.heap.decref_all(row);
                            return Ok(None);
                        }
                        Err(e) => {
                            self.heap.decref_all(row);
                            return Err(e);
                        }
                    }
                }
                if row.is_empty() {
                    return Ok(None);
                }
                Ok(Some(self.result_tuple(items[1], row)))
            }
            WrapperKind::Chain
            | WrapperKind::Islice
            | WrapperKind::Count
            | WrapperKind::Repeat
            | WrapperKind::Cycle => self.itertools_next(id, kind, &items),
            WrapperKind::Starmap
            | WrapperKind::TakeWhile
            | WrapperKind::DropWhile
            | WrapperKind::Accumulate
            | WrapperKind::Pairwise
            | WrapperKind::ZipLongest
            | WrapperKind::Product
            | WrapperKind::Combinations
            | WrapperKind::Permutations => self.itertools_more_next(id, kind, &items),
            _ => {
                let t = self.heap.kind(id).type_name();
                self.error(format!("TypeError: '{t}' object is not an iterator"))
            }
        }
    }

    /// All items of an iterable, produced one at a time (new references).
    pub(in crate::python) fn collect_items(&mut self, iterable: Value) -> R<Vec<Value>> {
        self.heap.incref(iterable);
        let iterable = self.user_iter(iterable)?;
        let mut out = Vec::new();
        let mut pos = 0;
        loop {
            match self.next_of(iterable, pos) {
                Ok(Some(v)) => out.push(v),
                Ok(None) => break,
                Err(e) => {
                    self.heap.decref_all(out);
                    self.heap.decref(iterable);
                    return Err(e);
                }
            }
            pos += 1;
        }
        self.heap.decref(iterable);
        Ok(out)
    }

    /// `any(it)` / `all(it)`: stops at the first deciding item.
    pub(super) fn any_all(&mut self, iterable: Value, any: bool) -> R<Value> {
        self.heap.incref(iterable);
        let iterable = self.user_iter(iterable)?;
        let mut pos = 0;
        let result = loop {
            match self.next_of(iterable, pos) {
                Ok(Some(v)) => {
                    let t = self.truth(v);
                    self.heap.decref(v);
                    match t {
                        Ok(t) if t == any => break Ok(Value::Bool(any)),
                        Ok(_) => {}
                        Err(e) => break Err(e),
                    }
                }
                Ok(None) => break Ok(Value::Bool(!any)),
                Err(e) => break Err(e),
            }
            pos += 1;
        };
        self.heap.decref(iterable);
        result
    }

    /// `sorted(it, key=None, reverse=False)`: a new list, sorted by the keys (numbers or
    /// strings) with a stable sort.
    pub(super) fn sorted(
        &mut self,
        iterable: Value,
        key: Option<Value>,
        reverse: bool,
    ) -> R<Value> {
        let items = self.collect_items(iterable)?;
        let keyed = match self.keys_of(&items, key) {
            Ok(k) => k,
            Err(e) => {
                self.heap.decref_all(items);
                return Err(e);
            }
        };
        let mut order: Vec<usize> = (0..items.len()).collect();
        let unorderable = std::cell::Cell::new(false);
        order.sort_by(|&a, &b| {
            let o = keyed[a].partial_cmp(&keyed[b]).unwrap_or_else(|| {
                unorderable.set(true);
                std::cmp::Ordering::Equal
            });
            if reverse { o.reverse() } else { o }
        });
        if unorderable.get() {
            self.heap.decref_all(items);
            return self.unsupported("sorting or comparing these values");
        }
        let sorted: Vec<Value> = order.into_iter().map(|i| items[i]).collect();
        Ok(Value::Obj(self.alloc(ObjKind::List(sorted))))
    }

    /// `min(it, key=f)` / `max(it, key=f)`: the first item with the smallest / largest key.
    pub(super) fn min_max_by_key(&mut self, iterable: Value, key: Value, max: bool) -> R<Value> {
        let items = self.collect_items(iterable)?;
        let keyed = match self.keys_of(&items, Some(key)) {
            Ok(k) => k,
            Err(e) => {
                self.heap.decref_all(items);
                return Err(e);
            }
        };
        let mut best: Option<usize> = None;
        for i in 0..items.len() {
            let better = match best {
                None => true,
                Some(b) => match keyed[i].partial_cmp(&keyed[b]) {
                    Some(o) => {
                        o == if max {
                            Ordering::Greater
                        } else {
                            Ordering::Less
                        }
                    }
                    None => {
                        self.heap.decref_all(items);
                        return self.unsupported("sorting or comparing these values");
                    }
                },
            };
            if better {
                best = Some(i);
            }
        }
        let Some(b) = best else {
            return self.error("ValueError: arg is an empty sequence");
        };
        let chosen = items[b];
        self.heap.incref(chosen);
        self.heap.decref_all(items);
        Ok(chosen)
    }

    /// Sort keys of items: the key function's results (or the items), numbers or strings.
    fn keys_of(&mut self, items: &[Value], key: Option<Value>) -> R<Vec<SortKey>> {
        let mut out = Vec::with_capacity(items.len());
        for &v in items {
            let k = match key {
                Some(f) if f != Value::None => {
                    self.heap.incref(v);
                    self.call(f, vec![v], Vec::new())?
                }
                _ => {
                    self.heap.incref(v);
                    v
                }
            };
            let sk = self.sort_key(k, 0);
            self.heap.decref(k);
            out.push(sk);
        }
        Ok(out)
    }

    /// The `index`-th step of iterating `iterable` (index-based for sequences, stateful for
    /// iterators).
    pub(super) fn next_of(&mut self, iterable: Value, index: usize) -> R<Option<Value>> {
        self.next_item(iterable, index)
    }

    /// Keyword argument `name` of a native call, if given.
    pub(super) fn keyword(&self, kwargs: &[(Sym, Value)], name: &str) -> Option<Value> {
        kwargs
            .iter()
            .find(|(k, _)| self.names.name(*k) == name)
            .map(|(_, v)| *v)
    }
}

impl Interpreter<'_> {
    /// The comparable form of a sort key (borrowed): a number, a string, or a tuple of them
    /// (compared item by item, as tuples compare, so an unorderable item only matters when
    /// the items before it are equal); anything else compares with nothing.
    fn sort_key(&self, k: Value, depth: u32) -> SortKey {
        match k {
            Value::Int(i) => SortKey::Number(i as f64),
            Value::Float(f) => SortKey::Number(f),
            Value::Bool(b) => SortKey::Number(b as i64 as f64),
            Value::Str(s) => SortKey::Text(self.names.name_rc(s)),
            Value::Obj(o) if depth < 32 => match self.heap.kind(o) {
                ObjKind::Tuple(items) => {
                    SortKey::Tuple(items.iter().map(|&v| self.sort_key(v, depth + 1)).collect())
                }
                _ => SortKey::Unorderable(Unorderable),
            },
            _ => SortKey::Unorderable(Unorderable),
        }
    }
}

#[derive(PartialEq)]
enum SortKey {
    Number(f64),
    Text(std::rc::Rc<str>),
    Tuple(Vec<SortKey>),
    Unorderable(Unorderable),
}

/// Numbers with numbers, strings with strings, tuples item by item; other pairs (a
/// number with a string, anything with an unorderable key) have no order, as CPython
/// raises `TypeError` for them.
impl PartialOrd for SortKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        match (self, other) {
            // NaN compares false both ways, so a sort treats it as equal to its neighbour.
            (SortKey::Number(a), SortKey::Number(b)) => {
                Some(a.partial_cmp(b).unwrap_or(Ordering::Equal))
            }
            (SortKey::Text(a), SortKey::Text(b)) => a.partial_cmp(b),
            (SortKey::Tuple(a), SortKey::Tuple(b)) => a.partial_cmp(b),
            _ => None,
        }
    }
}

/// A key the model cannot order (a tensor, an object): equal to nothing, ordered with
/// nothing, so a sort that compares it is refused.
#[derive(Debug)]
struct Unorderable;

impl PartialEq for Unorderable {
    fn eq(&self, _: &Self) -> bool {
        false
    }
}

impl PartialOrd for Unorderable {
    fn partial_cmp(&self, _: &Self) -> Option<Ordering> {
        None
    }
}
