//! Builtin functions (`len`, `range`, `min`, `isinstance`, ...) and the `gc`, `sys`,
//! `asyncio`, `functools` and stdlib natives: the dispatch of a native call. Tensor and
//! `torch.*` natives are in `natives/`, which this dispatch falls back to. The methods of
//! lists and dicts, `list(...)`/`tuple(...)`/`dict(...)` and arithmetic on non-tensor
//! values live in their own modules, re-exported here for their callers.

use super::builtin_type_calls::length_hint;
pub(super) use super::builtin_type_calls::{
    dict_from_type_call, list_from_type_call, tuple_from_iterator,
};
pub(super) use super::dict_methods::dict_method;
use super::int_ops;
use super::interp::{Interpreter, R};
pub(super) use super::list_methods::list_method;
use super::natives::{
    Args, Native, float_of, int_arg, length, new_sequence, new_tuple, sequence_items,
};
pub(super) use super::scalar_arith::scalar_binary;
use crate::heap::{DictSubclass, ObjKind, Value, WrapperKind};

/// Calls native `n`: builtins here, everything else in [`super::natives`].
pub(super) fn call_native(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    use Native::*;
    let p = &a.pos;
    match n {
        SysExcInfo => Ok(it.sys_exc_info()),
        SysGetrefcount => it.sys_getrefcount(p),
        TypingName | Silent | OsGetenv | MathSqrt | MathExp | MathLog | MathCeil | MathFloor
        | MathIsfinite | MathIsnan | MathIsinf | TimeClock | TimeSleep | NullContext | GetLogger | MathCos | MathSin | MathTan | MathTanh
        | MathAtan | MathLog2 | MathLog10 | MathFabs => it.call_stdlib(n, p, &a.kw),
        Deque => it.new_deque(p, &a.kw),
        TracebackFormatExc | TracebackPrintExc | TracebackFormatException
        | TracebackPrintException | TracebackClearFrames => it.call_traceback(n, p, &a.kw),
        ContextManager => it.contextmanager_decorate(p),
        Suppress => it.new_suppress(p),
        VarsFn => it.vars_builtin(p),
        TypesMethodType => it.method_type(p),
        TypesSimpleNamespace => it.new_namespace(p, &a.kw),
        NamedtupleFn | TypingNamedTuple => {
            it.new_namedtuple_class(n == TypingNamedTuple, p, &a.kw)
        }
        CopyDeepcopy | CopyCopy => match p.as_slice() {
            [x] if n == CopyDeepcopy => it.deepcopy(*x),
            [x] => it.shallow_copy(*x),
            _ => it.error("TypeError: copy functions take exactly one argument"),
        },
        WeakrefRef => it.new_weak_ref(p),
        WeakrefFinalize => it.new_finalizer(p, &a.kw),
        FunctoolsLruCache | FunctoolsCache => it.lru_cache_new(n == FunctoolsCache, p, &a.kw),
        ItertoolsChain | ItertoolsChainFromIterable | ItertoolsIslice | ItertoolsCount
        | ItertoolsRepeat | ItertoolsCycle => it.itertools_new(n, p, &a.kw),
        DataclassesDataclass => it.dataclass_new(p, &a.kw),
        DataclassesField => it.dataclass_field(p, &a.kw),
        DataclassesFields => it.dataclass_fields_call(p),
        DataclassesIsDataclass => it.dataclass_is(p),
        DataclassesAsdict | DataclassesAstuple => it.dataclass_asdict(p, n == DataclassesAstuple),
        DataclassesReplace => it.dataclass_replace(p, &a.kw),
        WeakrefWeakValueDictionary => it.new_weak_container(crate::heap::WrapperKind::WeakValueDict, p),
        WeakrefWeakKeyDictionary => it.new_weak_container(crate::heap::WrapperKind::WeakKeyDict, p),
        WeakrefWeakSet => it.new_weak_container(crate::heap::WrapperKind::WeakSet, p),
        TypeFn => it.type_call(p),
        IdFn | HashFn | CallableFn => it.call_identity_builtin(n, p),
        AnextFn => it.builtin_anext(p),
        NoneTypeFn => match (p.as_slice(), a.kw.is_empty()) {
            ([], true) => Ok(Value::None),
            _ => it.error("TypeError: NoneType takes no arguments"),
        },
        Repr => match p.as_slice() {
            [v] => {
                let s = it.repr_text(*v);
                Ok(Value::Str(it.names.intern(&s)))
            }
            _ => it.error("TypeError: repr() takes exactly one argument"),
        },
        ItertoolsStarmap | ItertoolsTakewhile | ItertoolsDropwhile | ItertoolsAccumulate
        | ItertoolsPairwise | ItertoolsZipLongest | ItertoolsProduct | ItertoolsCombinations
        | ItertoolsPermutations => it.itertools_more_new(n, p, &a.kw),
        DefaultDictFn => it.new_dict_subclass(DictSubclass::DefaultDict, p, &a.kw),
        OrderedDictFn => it.new_dict_subclass(DictSubclass::OrderedDict, p, &a.kw),
        CounterFn => it.new_counter(p, &a.kw),
        RandomSeed | RandomRandom | RandomRandint | RandomUniform | RandomChoice
        | RandomShuffle | RandomSample => it.call_random(n, p),
        SetFn | FrozenSetFn => it.new_set_call(p, !a.kw.is_empty(), n == FrozenSetFn),
        Enumerate | MapFn | FilterFn | Reversed => {
            use crate::heap::WrapperKind as W;
            let kind = match n {
                Enumerate => W::Enumerate,
                MapFn => W::Map,
                FilterFn => W::Filter,
                _ => W::Reversed,
            };
            let start = it.keyword(&a.kw, "start").or(if n == Enumerate {
                p.get(1).copied()
            } else {
                None
            });
            let args = if n == Enumerate {
                &p[..p.len().min(1)]
            } else {
                &p[..]
            };
            it.new_lazy_iterator(kind, args, start)
        }
        NextFn => match p.as_slice() {
            // A generator's return value becomes `StopIteration.value`.
            [Value::Obj(id)] if matches!(it.heap.kind(*id), ObjKind::Generator(_)) => {
                it.generator_method(*id, "__next__", &[])
            }
            [iterator] | [iterator, _] => match it.iterator_next(*iterator)? {
                Some(v) => Ok(v),
                None => match p.get(1) {
                    Some(&default) => {
                        it.heap.incref(default);
                        Ok(default)
                    }
                    None => it.raise_builtin("StopIteration", Vec::new()),
                },
            },
            _ => it.error("TypeError: next expected 1 or 2 arguments"),
        },
        IterFn => match p.as_slice() {
            // `range_iterator` is not a GC object: never counted or tracked.
            [v @ Value::Obj(o)] if matches!(it.heap.kind(*o), ObjKind::Range { .. }) => {
                it.heap.incref(*v);
                let iterator = ObjKind::Wrapper(WrapperKind::RangeIter, vec![*v, Value::Int(0)]);
                Ok(Value::Obj(it.heap.insert_uncounted(iterator)))
            }
            // A generator or lazy iterator is its own iterator.
            [v @ Value::Obj(id)]
                if matches!(
                    it.heap.kind(*id),
                    ObjKind::Generator(_) | ObjKind::Wrapper(..)
                ) =>
            {
                it.heap.incref(*v);
                Ok(*v)
            }
            [v @ Value::Obj(o)]
                if matches!(
                    it.heap.kind(*o),
                    ObjKind::List(_) | ObjKind::Tuple(_) | ObjKind::Dict(_)
                ) =>
            {
                it.heap.incref(*v);
                it.iterator_of(*v)
            }
            [v] if it.is_data_loader(*v) => {
                it.heap.incref(*v);
                it.user_iter(*v)
            }
            [_] => it.unsupported(
                "iter() of this object (iter() of lists, tuples, dicts, generators and lazy iterators is modelled)",
            ),
            _ => it.error("TypeError: iter expected 1 argument"),
        },
        Sorted => match p.as_slice() {
            [v] => {
                let key = it.keyword(&a.kw, "key");
                let reverse = match it.keyword(&a.kw, "reverse") {
                    Some(r) => it.truth(r)?,
                    None => false,
                };
                it.sorted(*v, key, reverse)
            }
            _ => it.error("TypeError: sorted expected 1 argument"),
        },
        Any | All => match p.as_slice() {
            [v] => it.any_all(*v, n == Any),
            _ => it.error("TypeError: any()/all() take exactly one argument"),
        },
        StaticMethodFn | ClassMethodFn | PropertyFn => {
            use crate::heap::WrapperKind;
            let (kind, items) = match (n, p.as_slice()) {
                (StaticMethodFn, [f]) => (WrapperKind::StaticMethod, vec![*f]),
                (ClassMethodFn, [f]) => (WrapperKind::ClassMethod, vec![*f]),
                (PropertyFn, [g]) => (
                    WrapperKind::Property,
                    vec![*g, a.kw(it, "fset").unwrap_or(Value::None)],
                ),
                (PropertyFn, [g, s]) => (WrapperKind::Property, vec![*g, *s]),
                _ => return it.error("TypeError: wrong number of arguments"),
            };
            for &v in &items {
                it.heap.incref(v);
            }
            Ok(it.new_wrapper(kind, items))
        }
        FunctoolsPartial => {
            for &v in p.iter().chain(a.kw.iter().map(|(_, v)| v)) {
                it.heap.incref(v);
            }
            it.new_partial(p.clone(), a.kw.clone())
        }
        // `functools.wraps(f)` copies metadata the model does not keep: the decorator it
        // returns hands the wrapper back unchanged.
        FunctoolsWraps => Ok(Value::Native(IdentityDecorator.id())),
        // Only reached bound to a property (`Value::BoundNative`).
        PropertySetter | PropertyGetter => it.error("TypeError: descriptor needs a property"),
        IdentityDecorator => match p.as_slice() {
            [f] => {
                it.heap.incref(*f);
                Ok(*f)
            }
            _ => it.error("TypeError: expected one argument"),
        },
        // Lazy: holds an iterator per source; `len(zip(...))` is a TypeError as in Python.
        Zip => it.new_lazy_iterator(crate::heap::WrapperKind::Zip, p, None),
        Super => it.super_builtin(p),
        ModTorch | ModCuda | ModGc | ModAsyncio | ModSys | ModFunctools | ModTyping | ModOs
        | ModMath | ModTime | ModRandom | ModItertools | ModCollections | ModDataclasses
        | ModWeakref | ModContextlib | ModLogging | ModWarnings | ModNn | ModFunctional
        | ModAutograd | ModVariable | ModEngine | ModDist | ModOptim | ModCudaMemory
        | ModLrScheduler | ModUtils | ModCheckpoint | ModLinalg => {
            it.error("TypeError: 'module' object is not callable")
        }
        Checkpoint => {
            let use_reentrant = match a.kw(it, "use_reentrant") {
                None | Some(Value::None) => true,
                Some(v) => it.truth(v)?,
            };
            it.checkpoint_apply(p.to_vec(), use_reentrant)
        }
        Object => {
            let name = it.names.intern("object");
            let class = it.alloc(ObjKind::Class(crate::heap::Class {
                name,
                base: None,
                attrs: Vec::new(),
            }));
            let inst = it.alloc(ObjKind::Instance {
                class,
                attrs: crate::heap::Attrs::Inline(Vec::new()),
            });
            Ok(Value::Obj(inst))
        }
        Range => {
            let ints: Vec<i64> = p
                .iter()
                .map(|&v| int_arg(it, v, "range() argument"))
                .collect::<R<_>>()?;
            let (start, stop, step) = match ints.as_slice() {
                [stop] => (0, *stop, 1),
                [start, stop] => (*start, *stop, 1),
                [start, stop, step] => (*start, *stop, *step),
                _ => return it.error("TypeError: range expected 1 to 3 arguments"),
            };
            if step == 0 {
                return it.error("ValueError: range() arg 3 must not be zero");
            }
            Ok(Value::Obj(it.heap.insert_uncounted(ObjKind::Range {
                start,
                stop,
                step,
            })))
        }
        Len => match p.as_slice() {
            [v] => match it.user_len(*v) {
                Some(n) => Ok(Value::Int(n?)),
                None if let Some(w) = it.is_weak_container(*v) => Ok(Value::Int(it.weak_len(w))),
                None if let Some(t) = it.ndarray_tensor(*v) => it.ndarray_len(t),
                None => Ok(Value::Int(length(it, *v)?)),
            },
            _ => it.error("TypeError: len() takes exactly one argument"),
        },
        Print => it.print_call(p, &a.kw),
        Int => match p.as_slice() {
            [] => Ok(Value::Int(0)),
            [Value::Int(i)] => Ok(Value::Int(*i)),
            [Value::Bool(b)] => Ok(Value::Int(*b as i64)),
            [Value::Float(f)] => int_ops::to_value(it, int_ops::from_float(*f)),
            [Value::Obj(t)] if it.is_tensor(Value::Obj(*t)) => {
                super::tensor_pieces::to_number(it, *t, true)
            }
            [Value::Str(s)] => match it.names.name(*s).trim().parse::<i64>() {
                Ok(i) => Ok(Value::Int(i)),
                Err(_) => it.error("ValueError: invalid literal for int()"),
            },
            _ => it.unsupported("int() of this value"),
        },
        Float => match p.as_slice() {
            [] => Ok(Value::Float(0.0)),
            [Value::Obj(t)] if it.is_tensor(Value::Obj(*t)) => {
                super::tensor_pieces::to_number(it, *t, false)
            }
            // `float('inf')`, `float("nan")`, `float(" 1.5 ")`: Python's float syntax
            // (Rust's parser takes the same spellings of infinity and NaN, any case).
            [Value::Str(s)] => {
                let text = it.names.name_rc(*s);
                match text.trim().parse::<f64>() {
                    Ok(f) if !text.trim().contains(['_', 'x', 'X']) => Ok(Value::Float(f)),
                    _ => it.error(format!(
                        "ValueError: could not convert string to float: {}",
                        super::reprs::quote(&text)
                    )),
                }
            }
            [v] => match float_of(*v) {
                Some(f) => Ok(Value::Float(f)),
                None => it.unsupported("float() of this value"),
            },
            _ => it.error("TypeError: float() takes at most 1 argument"),
        },
        Str => {
            let s = p.first().map_or(String::new(), |v| it.display(*v));
            Ok(Value::Str(it.names.intern(&s)))
        }
        Bool => match p.first() {
            Some(v) => Ok(Value::Bool(it.truth(*v)?)),
            None => Ok(Value::Bool(false)),
        },
        Round => it.round_builtin(p, a.kw(it, "ndigits")),
        FormatFn | HexFn | BinFn | OctFn | ChrFn | OrdFn | PowFn => {
            it.call_conversion_builtin(n, p)
        }
        DivMod => match p.as_slice() {
            [x, y] => it.divmod_builtin(*x, *y),
            _ => it.error("TypeError: divmod expected 2 arguments"),
        },
        Abs => match p.as_slice() {
            [Value::Int(i)] => int_ops::to_value(it, int_ops::absolute(*i)),
            [Value::Float(f)] => Ok(Value::Float(f.abs())),
            _ => it.unsupported("abs() of this value"),
        },
        Min | Max if it.keyword(&a.kw, "key").is_some() => {
            let key = it.keyword(&a.kw, "key").unwrap_or(Value::None);
            match p.as_slice() {
                [one] => it.min_max_by_key(*one, key, n == Max),
                many => {
                    let tuple = Value::Obj(it.heap.insert_uncounted(ObjKind::Tuple(many.to_vec())));
                    for &v in many {
                        it.heap.incref(v);
                    }
                    let r = it.min_max_by_key(tuple, key, n == Max);
                    it.heap.decref(tuple);
                    r
                }
            }
        }
        Sum => it.sum_builtin(p, a.kw(it, "start")),
        Min | Max => {
            let items: Vec<Value> = match p.as_slice() {
                [Value::Obj(id)] => match it.heap.kind(*id) {
                    ObjKind::List(items) | ObjKind::Tuple(items) => items.clone(),
                    ObjKind::Generator(_) | ObjKind::Wrapper(..) | ObjKind::Instance { .. } => {
                        // An iterator: consumed now; only numbers are compared, so the
                        // references can go at once.
                        let items = it.collect_items(Value::Obj(*id))?;
                        it.heap.decref_all(items.iter().copied());
                        items
                    }
                    _ => return it.unsupported("this argument of min/max/sum"),
                },
                many => many.to_vec(),
            };
            let nums: Option<Vec<f64>> = items.iter().map(|v| float_of(*v)).collect();
            let Some(nums) = nums else {
                return it.unsupported("min/max of non-numbers");
            };
            let all_int = items
                .iter()
                .all(|v| matches!(v, Value::Int(_) | Value::Bool(_)));
            if nums.is_empty() {
                return it.error("ValueError: arg is an empty sequence");
            }
            let r = match n {
                Min => nums.iter().cloned().fold(f64::INFINITY, f64::min),
                _ => nums.iter().cloned().fold(f64::NEG_INFINITY, f64::max),
            };
            Ok(if all_int {
                Value::Int(r as i64)
            } else {
                Value::Float(r)
            })
        }
        List | Tuple => {
            let items = match p.first() {
                None => Vec::new(),
                Some(&v @ Value::Obj(o))
                    if matches!(
                        it.heap.kind(o),
                        ObjKind::Wrapper(..)
                            | ObjKind::Instance { .. }
                            | ObjKind::Generator(_)
                            | ObjKind::Tensor(_)
                    ) =>
                {
                    // An iterator (or a tensor's rows, `tensor_iter.rs`): its items are
                    // produced now (new references).
                    let hint = length_hint(it, o);
                    let items = it.collect_items(v)?;
                    if n == List {
                        return Ok(list_from_type_call(it, items));
                    }
                    return Ok(tuple_from_iterator(it, items, hint));
                }
                Some(&v) => sequence_items(it, v)?,
            };
            if n == List {
                for &v in &items {
                    it.heap.incref(v);
                }
                return Ok(list_from_type_call(it, items));
            }
            Ok(new_sequence(it, false, items))
        }
        Dict => dict_from_type_call(it, p, &a.kw),
        IsInstance | IsSubclass => {
            let [obj, cls] = p.as_slice() else {
                return it.error("TypeError: isinstance expected 2 arguments");
            };
            let r = if n == IsInstance {
                it.isinstance(*obj, *cls)?
            } else {
                it.issubclass(*obj, *cls)?
            };
            Ok(Value::Bool(r))
        }
        GetAttr | HasAttr => {
            let (obj, name) = match p.as_slice() {
                [o, Value::Str(s), ..] => (*o, *s),
                _ => return it.error("TypeError: attribute name must be a string"),
            };
            match it.get_attr(obj, name) {
                Ok(v) if n == HasAttr => {
                    it.heap.decref(v);
                    Ok(Value::Bool(true))
                }
                Ok(v) => Ok(v),
                Err(e) => {
                    if n == HasAttr {
                        return Ok(Value::Bool(false));
                    }
                    match p.get(2) {
                        Some(&default) => {
                            it.heap.incref(default);
                            Ok(default)
                        }
                        None => Err(e),
                    }
                }
            }
        }
        SetAttr => {
            let [obj, Value::Str(name), value] = p.as_slice() else {
                return it.error("TypeError: setattr expected (object, name, value)");
            };
            it.heap.incref(*value);
            it.set_attr(*obj, *name, *value)?;
            Ok(Value::None)
        }
        GcCollect => {
            let generation = match p.first().or(a.kw(it, "generation").as_ref()) {
                Some(&v) => int_arg(it, v, "generation")?,
                None => 2,
            };
            if !(0..=2).contains(&generation) {
                return it.error("ValueError: invalid generation");
            }
            Ok(Value::Int(it.explicit_collect(generation as u8)? as i64))
        }
        GcEnable => {
            it.heap.enabled = true;
            Ok(Value::None)
        }
        GcDisable => {
            it.heap.enabled = false;
            Ok(Value::None)
        }
        GcIsEnabled => Ok(Value::Bool(it.heap.enabled)),
        GcGetCount => {
            it.heap.flush_thread_count();
            let c = it.heap.visible_counts();
            Ok(new_tuple(it, c.iter().map(|&x| Value::Int(x)).collect()))
        }
        GcGetThreshold => {
            let t = it.heap.thresholds;
            Ok(new_tuple(
                it,
                t.iter().map(|&x| Value::Int(x as i64)).collect(),
            ))
        }
        GcSetThreshold => {
            if p.is_empty() || p.len() > 3 {
                return it.error("TypeError: set_threshold expects 1 to 3 arguments");
            }
            for (i, &v) in p.iter().enumerate() {
                let t = int_arg(it, v, "threshold")?;
                it.heap.thresholds[i] = t.max(0) as u64;
            }
            Ok(Value::None)
        }
        GcFreeze => {
            for generation in 0..3 {
                for id in it.heap.generation_members(generation) {
                    it.heap.move_to_generation(id, crate::heap::PERMANENT);
                }
            }
            it.heap.counts[0] = 0;
            Ok(Value::None)
        }
        GcUnfreeze => {
            for id in it.heap.generation_members(crate::heap::PERMANENT) {
                it.heap.move_to_generation(id, 2);
            }
            Ok(Value::None)
        }
        GcGetFreezeCount => Ok(Value::Int(it.heap.generation_sizes()[3] as i64)),
        AsyncioRun | AsyncioGather | AsyncioSleep | AsyncioCreateTask | AsyncioWaitFor => {
            it.asyncio_call(n, p, &a.kw)
        }
        AsyncioQueue => it.asyncio_queue_new(p, &a.kw),
        GcGetObjects => it.gc_get_objects(a),
        GcGetReferrers => it.gc_get_referrers(a),
        GcGetReferents => it.gc_get_referents(a),
        GcIsTracked => it.gc_is_tracked(a),
        _ => super::natives::call_torch_native(it, n, a),
    }
}
