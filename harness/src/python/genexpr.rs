//! Generator expressions consumed at once by a builtin (`sum(x for x in xs)`, `any(...)`,
//! `list(...)`, `"".join(...)`, `torch.cat(...)`), and dict comprehensions.
//!
//! A generator expression handed straight to a consumer needs no suspension: the consumer
//! pulls items one at a time, and each item is dropped before the next is produced, as in
//! CPython. Streaming consumers (`sum`, `any`, `all`, `min`, `max`) never hold more than
//! one item; collecting ones build the list CPython builds. The generator's objects are
//! counted as CPython counts them (measured, `gc.get_count()` inside the expression on
//! 3.8 – 3.13 with warm free lists): the genexpr function (freed at once up to 3.10, kept
//! by the generator's frame from 3.11), the iterator over a list, tuple or dict source,
//! the generator, and up to 3.10 its frame. A generator expression stored or iterated
//! later, and `yield`, are rejected: they need suspended frames (the workload VM).

use super::interp::{Interpreter, R};
use super::natives::Native;
use super::scope::symbol;
use crate::heap::{ObjKind, Sym, Value};
use ruff_python_ast::{self as ast, Expr, Operator};

/// What consumes a generator expression.
enum Consumer {
    Sum,
    AnyAll(bool),
    MinMax(bool),
    List,
    Tuple,
    /// Builtins that turn their argument into a list first (`PySequence_Fast`): the callee
    /// (a native or a bound string method) gets that list.
    Collect,
}

impl<'a> Interpreter<'a> {
    /// `callee(<genexpr>, **kw)`; `callee` and `kwargs` are owned. `receiver` is set for a
    /// method call (`sep.join(...)`).
    pub(super) fn call_with_generator(
        &mut self,
        callee: Option<Value>,
        receiver: Option<(Value, Sym)>,
        g: &'a ast::ExprGenerator,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        // `torch.cat(...)`: a module function is an ordinary callee.
        let (callee, receiver) = match receiver {
            Some((m @ Value::Module(_), name)) => (Some(self.get_attr(m, name)?), None),
            other => (callee, other),
        };
        let consumer = match (callee, receiver) {
            (Some(Value::Native(n)), _) => match Native::from_id(n) {
                Some(Native::Sum) if kwargs.is_empty() => Some(Consumer::Sum),
                Some(Native::Any) => Some(Consumer::AnyAll(true)),
                Some(Native::All) => Some(Consumer::AnyAll(false)),
                Some(Native::Min) if kwargs.is_empty() => Some(Consumer::MinMax(false)),
                Some(Native::Max) if kwargs.is_empty() => Some(Consumer::MinMax(true)),
                Some(Native::List) => Some(Consumer::List),
                Some(Native::Tuple) => Some(Consumer::Tuple),
                Some(
                    Native::Sorted
                    | Native::Cat
                    | Native::Stack
                    | Native::Min
                    | Native::Max
                    | Native::Sum,
                ) => Some(Consumer::Collect),
                _ => None,
            },
            (None, Some((Value::Str(_), m))) if self.names.name(m) == "join" => {
                Some(Consumer::Collect)
            }
            _ => None,
        };
        let Some(consumer) = consumer else {
            if let Some(c) = callee {
                self.heap.decref(c);
            }
            if let Some((r, _)) = receiver {
                self.heap.decref(r);
            }
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            self.at(g);
            return self.unsupported(super::constructs::Construct::GeneratorExpressions.what());
        };
        let mut acc: Option<Value> = match consumer {
            Consumer::Sum => Some(Value::Int(0)),
            _ => None,
        };
        let mut items: Vec<Value> = Vec::new();
        let mut verdict: Option<bool> = None;
        // `list(...)` and `tuple(...)` through `tp_call` on 3.8 (`heap/builtin_type_calls.rs`):
        // a 1-tuple holding the generator for the call (counted here before the generator:
        // approximation of the order).
        let packed = match consumer {
            Consumer::List => Some(crate::heap::BuiltinTypeCall::List),
            Consumer::Tuple => Some(crate::heap::BuiltinTypeCall::Tuple),
            _ => None,
        }
        .is_some_and(|t| t.packs_arguments(self.heap.profile.version));
        if packed {
            self.argument_tuple_begin(1);
        }
        let result = self.run_generator(g, &mut |it, v| match &consumer {
            Consumer::Sum => {
                let old = acc.take().unwrap_or(Value::Int(0));
                let new = it.binary(Operator::Add, old, v, false);
                it.heap.decref(old);
                it.heap.decref(v);
                acc = Some(new?);
                Ok(true)
            }
            Consumer::AnyAll(any) => {
                let t = it.truth(v);
                it.heap.decref(v);
                if t? == *any {
                    verdict = Some(*any);
                    return Ok(false);
                }
                Ok(true)
            }
            Consumer::MinMax(max) => {
                let Some(best) = acc else {
                    acc = Some(v);
                    return Ok(true);
                };
                let number = |x: Value| match x {
                    Value::Int(i) => Some(i as f64),
                    Value::Float(f) => Some(f),
                    Value::Bool(b) => Some(b as i64 as f64),
                    _ => None,
                };
                let (Some(a), Some(b)) = (number(v), number(best)) else {
                    it.heap.decref(v);
                    return it.unsupported("min/max of non-numbers");
                };
                if (*max && a > b) || (!*max && a < b) {
                    it.heap.decref(best);
                    acc = Some(v);
                } else {
                    it.heap.decref(v);
                }
                Ok(true)
            }
            Consumer::List | Consumer::Tuple | Consumer::Collect => {
                items.push(v);
                Ok(true)
            }
        });
        if packed {
            self.argument_tuple_end(1);
        }
        if let Err(e) = result {
            self.heap.decref_all(acc);
            self.heap.decref_all(items);
            if let Some(c) = callee {
                self.heap.decref(c);
            }
            if let Some((r, _)) = receiver {
                self.heap.decref(r);
            }
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return Err(e);
        }
        match consumer {
            Consumer::Sum => Ok(acc.unwrap_or(Value::Int(0))),
            Consumer::AnyAll(any) => Ok(Value::Bool(verdict.unwrap_or(!any))),
            Consumer::MinMax(_) => match acc {
                Some(v) => Ok(v),
                None => self.error("ValueError: arg is an empty sequence"),
            },
            // `list(...)` allocates through the type, never from the free list; 3.15's
            // compiler turns `list(<genexpr>)` into `BUILD_LIST` + `LIST_APPEND` (seen in
            // its `dis` output), which takes the free list.
            Consumer::List if self.heap.profile.version.minor >= 15 => {
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            Consumer::List => Ok(super::builtin_calls::list_from_type_call(self, items)),
            // A generator has no length hint: `PySequence_Tuple` starts from 10 items.
            Consumer::Tuple => Ok(super::builtin_calls::tuple_from_iterator(
                self,
                items,
                Some(10),
            )),
            Consumer::Collect => {
                let list = Value::Obj(self.alloc(ObjKind::List(items)));
                match (callee, receiver) {
                    (Some(f), _) => {
                        let r = self.call(f, vec![list], kwargs);
                        self.heap.decref(f);
                        r
                    }
                    (None, Some((recv, name))) => {
                        let r = self.call_method(recv, name, vec![list], kwargs);
                        self.heap.decref(recv);
                        r
                    }
                    _ => unreachable!("a consumer was found"),
                }
            }
        }
    }

    /// Runs a generator expression, handing each item (owned) to `sink`, which returns
    /// whether to go on; counts the generator's objects around the run.
    fn run_generator(
        &mut self,
        g: &'a ast::ExprGenerator,
        sink: &mut dyn FnMut(&mut Self, Value) -> R<bool>,
    ) -> R<()> {
        let Some((first, _)) = g.generators.split_first() else {
            return Ok(());
        };
        // The outermost iterable is evaluated in the enclosing scope, before the call.
        let source = self.eval(&first.iter)?;
        let source = self.user_iter(source)?;
        // MAKE_FUNCTION, then GET_ITER: the iterator over the source, from 3.14's free list
        // of list and tuple iterators when it holds one (and back onto it at the end).
        self.count_untracked_allocations(1);
        let iterator = self.count_loop_iterator(source);
        // The call: up to 3.10 its frame object (the genexpr code's zombie frame when one is
        // parked, `heap/zombie_frames.rs`), then the generator; the function is dropped once
        // the call returns, except from 3.11, where the generator's frame keeps it.
        let frame = self.enter_comprehension_frame(g as *const _ as usize);
        self.count_untracked_allocations(1);
        let legacy = frame.is_some();
        if legacy {
            self.uncount(1);
        }
        let result = self.with_own_targets(&g.generators, |it| {
            it.comprehension_loop(&g.generators, Some(source), &mut |it| {
                let v = it.eval(&g.elt)?;
                sink(it, v)
            })
        });
        self.heap.decref(source);
        // The generator goes, with its frame, the iterator and (from 3.11) the function.
        self.uncount(1);
        self.leave_comprehension_frame(frame);
        if iterator {
            self.free_loop_iterator();
        }
        if !legacy {
            self.uncount(1);
        }
        result.map(|_| ())
    }

    /// `{k: v for ...}`: a dict built in place, counted as a list comprehension is (a
    /// function object up to 3.11, inlined from 3.12).
    pub(super) fn eval_dict_comprehension(&mut self, c: &'a ast::ExprDictComp) -> R<Value> {
        let function = self.heap.profile.version.minor <= 11;
        if function {
            self.count_untracked_allocations(1);
        }
        let frame = self.enter_comprehension_frame(c as *const _ as usize);
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        let result = self.with_own_targets(&c.generators, |it| {
            it.comprehension_loop(&c.generators, None, &mut |it| {
                let Some(key) = &c.key else {
                    return it.unsupported("`**` in a dict comprehension");
                };
                let k = it.eval(key)?;
                let v = match it.eval(&c.value) {
                    Ok(v) => v,
                    Err(e) => {
                        it.heap.decref(k);
                        return Err(e);
                    }
                };
                if let Err(e) = it.check_dict_key(k) {
                    it.heap.decref(k);
                    it.heap.decref(v);
                    return Err(e);
                }
                it.dict_set(dict, k, v);
                Ok(true)
            })
        });
        self.leave_comprehension_frame(frame);
        if function {
            self.uncount(1);
        }
        match result {
            Ok(_) => Ok(Value::Obj(dict)),
            Err(e) => {
                self.heap.decref_id(dict);
                Err(e)
            }
        }
    }

    /// Runs `body` with the comprehension's targets as its own names: the enclosing
    /// scope's bindings of them come back afterwards.
    pub(super) fn with_own_targets<T>(
        &mut self,
        generators: &'a [ast::Comprehension],
        body: impl FnOnce(&mut Self) -> R<T>,
    ) -> R<T> {
        let mut targets = Vec::new();
        for g in generators {
            if g.is_async {
                self.at(g);
                return self.unsupported(super::constructs::Construct::AsyncComprehensions.what());
            }
            target_names(&g.target, &mut targets, self);
        }
        let saved: Vec<(Sym, Option<Value>)> =
            targets.iter().map(|&n| (n, self.take_name(n))).collect();
        let result = body(self);
        for (name, old) in saved {
            if let Some(inner) = self.take_name(name) {
                self.heap.decref(inner);
            }
            if let Some(v) = old {
                self.store_name(name, v);
            }
        }
        result
    }

    /// The nested loops of a comprehension; `each` runs at the innermost level and returns
    /// whether to go on. `first_source` is the already evaluated outermost iterable.
    pub(super) fn comprehension_loop(
        &mut self,
        generators: &'a [ast::Comprehension],
        first_source: Option<Value>,
        each: &mut dyn FnMut(&mut Self) -> R<bool>,
    ) -> R<bool> {
        let Some((first, rest)) = generators.split_first() else {
            return each(self);
        };
        // A generator expression's first source is iterated by the caller, which counted
        // its iterator; every other loop here makes its own (`GET_ITER`).
        let (iterable, hidden_iterator) = match first_source {
            Some(v) => {
                self.heap.incref(v);
                (v, false)
            }
            None => {
                let v = self.eval(&first.iter)?;
                let v = self.user_iter(v)?;
                (v, self.count_loop_iterator(v))
            }
        };
        let mut index = 0;
        let result = loop {
            let item = match self.next_item(iterable, index) {
                Ok(Some(item)) => item,
                Ok(None) => break Ok(true),
                Err(e) => break Err(e),
            };
            index += 1;
            if let Err(e) = self.budget_step() {
                self.heap.decref(item);
                break Err(e);
            }
            if let Err(e) = self.store(&first.target, item) {
                break Err(e);
            }
            let mut keep = true;
            for condition in &first.ifs {
                match self.eval_truth(condition) {
                    Ok(true) => {}
                    Ok(false) => {
                        keep = false;
                        break;
                    }
                    Err(e) => {
                        self.heap.decref(iterable);
                        if hidden_iterator {
                            self.free_loop_iterator();
                        }
                        return Err(e);
                    }
                }
            }
            if keep {
                match self.comprehension_loop(rest, None, each) {
                    Ok(true) => {}
                    Ok(false) => break Ok(false),
                    Err(e) => break Err(e),
                }
            }
        };
        self.heap.decref(iterable);
        if hidden_iterator {
            self.free_loop_iterator();
        }
        result
    }

    /// Counts `n` deallocations of objects without a free list.
    pub(in crate::python) fn uncount(&mut self, n: u32) {
        for _ in 0..n {
            self.heap.count_deallocation(&ObjKind::Cell(None));
        }
    }
}

fn target_names(target: &Expr, out: &mut Vec<Sym>, it: &mut Interpreter<'_>) {
    match target {
        Expr::Name(n) => out.push(symbol(&n.node_index, n.id.as_str(), &mut it.names)),
        Expr::Tuple(t) => t.elts.iter().for_each(|e| target_names(e, out, it)),
        Expr::List(t) => t.elts.iter().for_each(|e| target_names(e, out, it)),
        _ => {}
    }
}
