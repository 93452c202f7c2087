//! `functools.lru_cache` (bare, with `maxsize`, `None` for unbounded) and `functools.cache`:
//! a wrapper whose cache holds every argument key and result strongly, so a cached function
//! returning tensors keeps them alive until they are evicted or `cache_clear()` runs (the
//! classic leak), and a cached method keeps every `self` it saw.
//!
//! Follows CPython's C wrapper (`Modules/_functoolsmodule.c`): a call packs its arguments
//! into a tuple (and a keyword dict), as every `tp_call` does; the key is that tuple, or the
//! argument itself when it is a single exact `int` or `str`, or with keywords a new tuple
//! of the arguments, a marker and the keyword pairs. A miss keeps the key; a hit drops it.
//! The cache's link records are not GC objects, so they are not counted. Measured with
//! `gc.get_count()` on CPython 3.8 – 3.15 (free lists full): a hit counts 0, a miss counts
//! only what the function itself creates (the kept key tuple comes from its free list).
//!
//! Approximations: keys compare as the model compares dict keys (ints, floats, strings and
//! `None` by value, objects by identity, argument tuples item by item), so two equal but
//! distinct nested tuples are different keys; `typed=True` is refused; the objects the
//! decoration creates (CPython's closure and cache dict) are counted as the wrapper and
//! its dict only.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// CPython's default `maxsize`.
const DEFAULT_MAXSIZE: i64 = 128;
/// Items of a wrapper before its entries: the function, `maxsize` (`None`: unbounded), the
/// hit and miss counts. Entries follow as key, result pairs, least recently used first.
const HEADER: usize = 4;

impl<'a> Interpreter<'a> {
    /// `functools.lru_cache(f)`, `functools.lru_cache(maxsize=...)`, `functools.cache(f)`.
    pub(in crate::python) fn lru_cache_new(
        &mut self,
        unbounded: bool,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        if let Some(typed) = self.keyword(kw, "typed")
            && self.truth(typed)?
        {
            return self.unsupported("`functools.lru_cache(typed=True)`");
        }
        if unbounded {
            return match p {
                [f] => self.lru_cache_wrap(*f, Value::None),
                _ => self.error("TypeError: cache() takes exactly one argument"),
            };
        }
        let maxsize = match (p, self.keyword(kw, "maxsize")) {
            ([f @ Value::Obj(_)], None) => {
                return self.lru_cache_wrap(*f, Value::Int(DEFAULT_MAXSIZE));
            }
            ([], None) => Value::Int(DEFAULT_MAXSIZE),
            ([m], None) => *m,
            ([], Some(m)) => m,
            _ => return self.error("TypeError: lru_cache() takes at most 2 arguments"),
        };
        let maxsize = match maxsize {
            Value::None => Value::None,
            // CPython treats a negative size as 0: nothing is cached.
            Value::Int(n) => Value::Int(n.max(0)),
            Value::Bool(b) => Value::Int(b as i64),
            _ => {
                return self.error(
                    "TypeError: Expected first argument to be an integer, a callable, or None",
                );
            }
        };
        Ok(self.new_wrapper(WrapperKind::LruCacheDecorator, vec![maxsize]))
    }

    /// The decorator `lru_cache(maxsize)` returned, applied to `f`.
    pub(in crate::python) fn lru_cache_decorate(&mut self, id: ObjId, p: &[Value]) -> R<Value> {
        let maxsize = match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => items[0],
            _ => unreachable!("a decorator"),
        };
        match p {
            [f] => self.lru_cache_wrap(*f, maxsize),
            _ => self.error("TypeError: decorating_function() takes exactly one argument"),
        }
    }

    /// The wrapper object, plus the cache dict CPython makes with it (counted only).
    fn lru_cache_wrap(&mut self, f: Value, maxsize: Value) -> R<Value> {
        self.heap.incref(f);
        self.count_untracked_allocations(1);
        let items = vec![f, maxsize, Value::Int(0), Value::Int(0)];
        Ok(self.new_wrapper(WrapperKind::LruCache, items))
    }

    /// Calls a cached function: a hit returns the stored result, a miss calls the function
    /// and stores key and result, evicting the least recently used entry when full.
    pub(in crate::python) fn lru_cache_call(
        &mut self,
        id: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let (func, maxsize) = match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => (items[0], items[1]),
            _ => unreachable!("a cached function"),
        };
        if maxsize == Value::Int(0) {
            self.bump(id, 3);
            return self.call(func, args, kwargs);
        }
        let key = self.lru_key(&args, &kwargs);
        let found = match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => (HEADER..items.len())
                .step_by(2)
                .find(|&i| self.same_key(items[i], key)),
            _ => None,
        };
        if let Some(i) = found {
            self.bump(id, 2);
            let result = match self.heap.kind_mut(id) {
                ObjKind::Wrapper(_, items) => {
                    // Most recently used last.
                    let entry: Vec<Value> = items.drain(i..i + 2).collect();
                    items.extend(entry.iter().copied());
                    entry[1]
                }
                _ => unreachable!("a cached function"),
            };
            self.heap.decref(key);
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            self.heap.incref(result);
            return Ok(result);
        }
        self.bump(id, 3);
        let result = match self.call(func, args, kwargs) {
            Ok(r) => r,
            Err(e) => {
                self.heap.decref(key);
                return Err(e);
            }
        };
        self.heap.incref(result);
        let evicted = match self.heap.kind_mut(id) {
            ObjKind::Wrapper(_, items) => {
                let full =
                    matches!(maxsize, Value::Int(n) if (items.len() - HEADER) / 2 >= n as usize);
                let evicted: Vec<Value> = if full {
                    items.drain(HEADER..HEADER + 2).collect()
                } else {
                    Vec::new()
                };
                items.push(key);
                items.push(result);
                evicted
            }
            _ => unreachable!("a cached function"),
        };
        self.heap.decref_all(evicted);
        Ok(result)
    }

    /// Adds one to the hit (2) or miss (3) count.
    fn bump(&mut self, id: ObjId, slot: usize) {
        if let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id)
            && let Value::Int(n) = items[slot]
        {
            items[slot] = Value::Int(n + 1);
        }
    }

    /// The cache key of a call (a new reference), counting the call's argument tuple and
    /// keyword dict as `tp_call` makes them.
    fn lru_key(&mut self, args: &[Value], kwargs: &[(Sym, Value)]) -> Value {
        if kwargs.is_empty() {
            if let [single @ (Value::Int(_) | Value::Str(_))] = args {
                self.varargs_call_begin(1, 0);
                self.varargs_call_end(1, 0);
                return *single;
            }
            if args.is_empty() {
                // The empty tuple is a shared singleton.
                return super::natives::constant_tuple(self, Vec::new());
            }
            for &a in args {
                self.heap.incref(a);
            }
            return Value::Obj(self.alloc(ObjKind::Tuple(args.to_vec())));
        }
        self.varargs_call_begin(args.len(), kwargs.len());
        let mut items: Vec<Value> = args.to_vec();
        items.push(Value::Str(self.names.intern("<lru_cache keyword marker>")));
        for &(k, v) in kwargs {
            items.push(Value::Str(k));
            items.push(v);
        }
        for &v in &items {
            self.heap.incref(v);
        }
        let key = Value::Obj(self.alloc(ObjKind::Tuple(items)));
        self.varargs_call_end(args.len(), kwargs.len());
        key
    }

    /// Whether two keys are equal: the same value, or tuples of the same values.
    fn same_key(&self, a: Value, b: Value) -> bool {
        if a == b {
            return true;
        }
        match (a, b) {
            (Value::Obj(x), Value::Obj(y)) => match (self.heap.kind(x), self.heap.kind(y)) {
                (ObjKind::Tuple(p), ObjKind::Tuple(q)) => p == q,
                _ => false,
            },
            _ => false,
        }
    }

    /// `cache_clear()` and `cache_info()` of a cached function.
    pub(in crate::python) fn lru_cache_method(
        &mut self,
        id: ObjId,
        method: &str,
        p: &[Value],
    ) -> R<Value> {
        if !p.is_empty() {
            return self.error(format!("TypeError: {method}() takes no arguments"));
        }
        let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id) else {
            unreachable!("a cached function")
        };
        match method {
            "cache_clear" => {
                let entries: Vec<Value> = items.drain(HEADER..).collect();
                items[2] = Value::Int(0);
                items[3] = Value::Int(0);
                self.heap.decref_all(entries);
                Ok(Value::None)
            }
            "cache_info" => {
                // `CacheInfo(hits, misses, maxsize, currsize)`, a named tuple: allocated
                // through its type, never from the tuple free list.
                let size = Value::Int(((items.len() - HEADER) / 2) as i64);
                let info = vec![items[2], items[3], items[1], size];
                self.count_untracked_allocations(1);
                Ok(Value::Obj(self.heap.insert(ObjKind::Tuple(info))))
            }
            _ => self.unsupported(format!(
                "method '{method}' of a functools.lru_cache wrapper"
            )),
        }
    }
}
