//! Builtin functions (`len`, `range`, `min`, `isinstance`, ...), the `gc`, `sys`, `asyncio`,
//! `functools` and stdlib natives, the methods of lists and dicts, and arithmetic on
//! non-tensor values. Tensor and `torch.*` natives are in `natives/`, which this dispatch
//! falls back to.

use super::int_ops;
use super::interp::{Interpreter, R};
use super::natives::{
    Args, Native, float_of, int_arg, length, new_sequence, new_tuple, sequence_items,
};
use crate::heap::{DictSubclass, ObjId, ObjKind, Sym, Value, WrapperKind};
use ruff_python_ast::Operator;

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
        Super => match p.as_slice() {
            [] => it.make_super(),
            [Value::Obj(cls), obj] if matches!(it.heap.kind(*cls), ObjKind::Class(_)) => {
                it.super_proxy(*cls, *obj)
            }
            _ => it.unsupported("super() with these arguments"),
        },
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
                        ObjKind::Wrapper(..) | ObjKind::Instance { .. } | ObjKind::Generator(_)
                    ) =>
                {
                    // An iterator: its items are produced now (new references).
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
            Ok(Value::Int(it.collect(generation as u8, false) as i64))
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

/// `list(x)` allocates through the type (`PyType_GenericAlloc`), never from the list free
/// list that `[...]` displays use, so it is always counted (measured: `keep.append(list((1,
/// 2)))` counts 1 on CPython 3.8–3.13 with the free lists full, `[1, 2]` counts 0).
/// `PyObject_LengthHint` of an iterator `tuple(...)` consumes: the remaining length of a
/// sequence or range iterator or a `reversed`, else the default 10 (generators, `map`,
/// `filter`, `zip`, `enumerate` and user iterators have no `__length_hint__`).
fn length_hint(it: &Interpreter<'_>, iterator: ObjId) -> Option<usize> {
    match it.heap.kind(iterator) {
        ObjKind::Wrapper(
            WrapperKind::SeqIter | WrapperKind::RangeIter | WrapperKind::Reversed,
            _,
        ) => None,
        _ => Some(10),
    }
}

/// `PySequence_Tuple` of an iterator (`items` owned): CPython allocates a tuple of the
/// length hint (`Some(n)`; `None`: exactly the items, as the hint of a sequence iterator
/// is), taking it from that size's free list when it can, grows and shrinks it in place
/// (`_PyTuple_Resize`, nothing counted) to the final size. So `tuple(<genexpr>)` counts
/// 1 only once the size-10 free list is empty (measured on 3.8 – 3.15: the first calls
/// count 0 until it drains, then 1 each), and the tuple dies onto its own size's list.
pub(super) fn tuple_from_iterator(
    it: &mut Interpreter<'_>,
    items: Vec<Value>,
    hint: Option<usize>,
) -> Value {
    match hint {
        Some(hint) if !items.is_empty() => {
            if it.heap.count_tuple_allocation(hint) {
                it.collection_due();
            }
            Value::Obj(it.heap.insert(ObjKind::Tuple(items)))
        }
        _ => Value::Obj(it.alloc(ObjKind::Tuple(items))),
    }
}

pub(super) fn list_from_type_call(it: &mut Interpreter<'_>, items: Vec<Value>) -> Value {
    it.count_untracked_allocations(1);
    Value::Obj(it.heap.insert(ObjKind::List(items)))
}

/// `dict(mapping_or_pairs, **kw)`: like `list(...)`, allocated through the type and so always
/// counted (measured: `dict()`, `dict(a=1)`, `dict({1: 2})` and `dict([(1, 2)])` each count
/// 1 on CPython 3.8–3.13 with the free lists full). Tracked only once it holds a GC object.
pub(super) fn dict_from_type_call(
    it: &mut Interpreter<'_>,
    p: &[Value],
    kw: &[(Sym, Value)],
) -> R<Value> {
    // Borrowed (key, value) pairs first; `pairs` owns what `collect_items` produced.
    let (mut borrowed, pairs) = match p {
        [] => (Vec::new(), Vec::new()),
        [Value::Obj(src)] if matches!(it.heap.kind(*src), ObjKind::Dict(_)) => {
            let ObjKind::Dict(entries) = it.heap.kind(*src) else {
                unreachable!()
            };
            (entries.clone(), Vec::new())
        }
        [source] => {
            let pairs = it.collect_items(*source)?;
            let mut kv = Vec::with_capacity(pairs.len());
            for &pair in &pairs {
                match pair {
                    Value::Obj(o) => match it.heap.kind(o) {
                        ObjKind::Tuple(two) | ObjKind::List(two) if two.len() == 2 => {
                            kv.push((two[0], two[1]))
                        }
                        _ => kv.clear(),
                    },
                    _ => kv.clear(),
                }
                if kv.is_empty() {
                    it.heap.decref_all(pairs);
                    return it.error("ValueError: dictionary update sequence element has the wrong length (2 is required)");
                }
            }
            (kv, pairs)
        }
        _ => return it.error("TypeError: dict expected at most 1 argument"),
    };
    borrowed.extend(kw.iter().map(|&(k, v)| (Value::Str(k), v)));
    let keys: Vec<Value> = borrowed.iter().map(|(k, _)| *k).collect();
    for k in keys {
        if let Err(e) = it.check_dict_key(k) {
            it.heap.decref_all(pairs);
            return Err(e);
        }
    }
    let mut entries: Vec<(Value, Value)> = Vec::with_capacity(borrowed.len());
    for (k, v) in borrowed {
        it.heap.incref(v);
        match entries.iter().position(|(key, _)| *key == k) {
            Some(i) => {
                let old = std::mem::replace(&mut entries[i].1, v);
                it.heap.decref(old);
            }
            None => entries.push((k, v)),
        }
    }
    it.heap.decref_all(pairs);
    it.count_untracked_allocations(1);
    Ok(Value::Obj(it.heap.insert(ObjKind::Dict(entries))))
}

pub(super) fn list_method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    let p = &a.pos;
    match (method, p.as_slice()) {
        ("append", [v]) => {
            it.heap.incref(*v);
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                items.push(*v);
            }
            Ok(Value::None)
        }
        ("extend", [v]) => {
            let items = sequence_items(it, *v)?;
            for &x in &items {
                it.heap.incref(x);
            }
            if let ObjKind::List(list) = it.heap.kind_mut(id) {
                list.extend(items);
            }
            Ok(Value::None)
        }
        ("insert", [i, v]) => {
            let i = int_arg(it, *i, "index")?;
            it.heap.incref(*v);
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                let n = items.len() as i64;
                let at = if i < 0 { (i + n).max(0) } else { i.min(n) } as usize;
                items.insert(at, *v);
            }
            Ok(Value::None)
        }
        ("pop", rest) => {
            let index = match rest {
                [] => -1,
                [i] => int_arg(it, *i, "index")?,
                _ => return it.error("TypeError: pop expected at most 1 argument"),
            };
            let ObjKind::List(items) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let n = items.len() as i64;
            let at = if index < 0 { index + n } else { index };
            if at < 0 || at >= n {
                return it.error("IndexError: pop index out of range");
            }
            Ok(items.remove(at as usize))
        }
        ("clear", []) => {
            let ObjKind::List(items) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::take(items);
            it.heap.decref_all(old);
            Ok(Value::None)
        }
        ("remove" | "index" | "count", [v]) => {
            let items = sequence_items(it, Value::Obj(id))?;
            // CPython tests identity first, then `==`; `==` of two distinct tensors needs
            // their values, which the model does not have.
            let mut found = Vec::new();
            for (i, &x) in items.iter().enumerate() {
                if x == *v {
                    found.push(i);
                } else if it.is_tensor(x) && it.is_tensor(*v) {
                    return it.unsupported("comparing tensors (values are not modelled)");
                } else if it.values_equal(x, *v) {
                    found.push(i);
                }
                if method != "count" && !found.is_empty() {
                    break;
                }
            }
            match (method, found.first()) {
                ("count", _) => Ok(Value::Int(found.len() as i64)),
                ("index", Some(&i)) => Ok(Value::Int(i as i64)),
                ("remove", Some(&i)) => {
                    let ObjKind::List(items) = it.heap.kind_mut(id) else {
                        unreachable!()
                    };
                    let removed = items.remove(i);
                    it.heap.decref(removed);
                    Ok(Value::None)
                }
                ("index", None) => it.error("ValueError: the value is not in list"),
                _ => it.error("ValueError: list.remove(x): x not in list"),
            }
        }
        ("reverse", []) => {
            if let ObjKind::List(items) = it.heap.kind_mut(id) {
                items.reverse();
            }
            Ok(Value::None)
        }
        _ => it.unsupported(format!("list method '{method}' with these arguments")),
    }
}

pub(super) fn dict_method(it: &mut Interpreter<'_>, id: ObjId, method: &str, a: &Args) -> R<Value> {
    if let Some(result) = it.dict_subclass_method(id, method, a) {
        return result;
    }
    let p = &a.pos;
    let ObjKind::Dict(items) = it.heap.kind(id) else {
        unreachable!()
    };
    let items = items.clone();
    match (method, p.as_slice()) {
        ("get", [k, rest @ ..]) if rest.len() <= 1 => {
            let v = items
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| *v)
                .or(rest.first().copied())
                .unwrap_or(Value::None);
            it.heap.incref(v);
            Ok(v)
        }
        ("keys" | "values", []) => {
            let vals: Vec<Value> = items
                .iter()
                .map(|(k, v)| if method == "keys" { *k } else { *v })
                .collect();
            for &v in &vals {
                it.heap.incref(v);
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(vals))))
        }
        // Like `keys`/`values` here: a list (CPython: a view), of `(key, value)` tuples.
        ("items", []) => {
            let pairs: Vec<(Value, Value)> = items.to_vec();
            let mut tuples = Vec::with_capacity(pairs.len());
            for (k, v) in pairs {
                it.heap.incref(k);
                it.heap.incref(v);
                tuples.push(Value::Obj(it.alloc(ObjKind::Tuple(vec![k, v]))));
            }
            Ok(Value::Obj(it.alloc(ObjKind::List(tuples))))
        }
        ("pop", [k, rest @ ..]) if rest.len() <= 1 => {
            let ObjKind::Dict(entries) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            match entries.iter().position(|(key, _)| key == k) {
                Some(i) => {
                    let (key, v) = entries.remove(i);
                    it.heap.decref(key);
                    Ok(v)
                }
                None => match rest.first() {
                    Some(&d) => {
                        it.heap.incref(d);
                        Ok(d)
                    }
                    None => it.error(format!("KeyError: {}", it.repr_text(*k))),
                },
            }
        }
        // `logs.setdefault(name, [])`: the stored value, or `default` stored and returned.
        ("setdefault", [k, rest @ ..]) if rest.len() <= 1 => {
            if let Some(&(_, v)) = items.iter().find(|(key, _)| key == k) {
                it.heap.incref(v);
                return Ok(v);
            }
            let d = rest.first().copied().unwrap_or(Value::None);
            it.heap.incref(*k);
            it.heap.incref(d);
            it.dict_set(id, *k, d);
            it.heap.incref(d);
            Ok(d)
        }
        ("update", [other]) if a.kw.is_empty() => {
            let pairs: Vec<(Value, Value)> = match *other {
                Value::Obj(o) => match it.heap.kind(o) {
                    ObjKind::Dict(entries) => entries.clone(),
                    _ => return it.unsupported(format!("dict.update from {}", it.display(*other))),
                },
                _ => return it.unsupported(format!("dict.update from {}", it.display(*other))),
            };
            for (k, v) in pairs {
                it.heap.incref(k);
                it.heap.incref(v);
                it.dict_set(id, k, v);
            }
            Ok(Value::None)
        }
        ("update", []) => {
            for &(k, v) in &a.kw {
                it.heap.incref(v);
                it.dict_set(id, Value::Str(k), v);
            }
            Ok(Value::None)
        }
        ("clear", []) => {
            let ObjKind::Dict(entries) = it.heap.kind_mut(id) else {
                unreachable!()
            };
            let old = std::mem::take(entries);
            for (k, v) in old {
                it.heap.decref(k);
                it.heap.decref(v);
            }
            Ok(Value::None)
        }
        _ => {
            let t = it.dict_type_name(id);
            it.unsupported(format!("{t} method '{method}' with these arguments"))
        }
    }
}

/// Arithmetic on ints, floats, strings and sequences (borrowed operands).
pub(super) fn scalar_binary(
    it: &mut Interpreter<'_>,
    op: Operator,
    l: Value,
    r: Value,
) -> R<Value> {
    use Operator::*;
    let overflow = |it: &Interpreter<'_>| it.unsupported::<Value>("integers beyond 64 bits");
    let as_int = |v: Value| match v {
        Value::Int(i) => Some(i),
        Value::Bool(b) => Some(b as i64),
        _ => None,
    };
    if let (Some(a), Some(b)) = (as_int(l), as_int(r)) {
        return match op {
            Add => a
                .checked_add(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Sub => a
                .checked_sub(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Mult => a
                .checked_mul(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Div => {
                if b == 0 {
                    return it.error("ZeroDivisionError: division by zero");
                }
                Ok(Value::Float(a as f64 / b as f64))
            }
            FloorDiv => int_ops::to_value(it, int_ops::floor_div(a, b)),
            Mod => int_ops::to_value(it, int_ops::modulo(a, b)),
            Pow if b < 0 => int_ops::negative_power(a, b)
                .map(Value::Float)
                .or_else(|fault| fault.raise(it)),
            Pow => int_ops::to_value(it, int_ops::power(a, b)),
            LShift => int_ops::to_value(it, int_ops::shift_left(a, b)),
            RShift => int_ops::to_value(it, int_ops::shift_right(a, b)),
            BitAnd => Ok(Value::Int(a & b)),
            BitOr => Ok(Value::Int(a | b)),
            BitXor => Ok(Value::Int(a ^ b)),
            MatMult => it.error("TypeError: unsupported operand type(s) for @"),
        };
    }
    if let (Some(a), Some(b)) = (float_of(l), float_of(r)) {
        return Ok(Value::Float(match op {
            Add => a + b,
            Sub => a - b,
            Mult => a * b,
            Div => {
                if b == 0.0 {
                    return it.error("ZeroDivisionError: float division by zero");
                }
                a / b
            }
            FloorDiv | Mod if b == 0.0 => {
                // The texts of CPython 3.10 – 3.12 (3.13 says "float modulo by zero").
                let what = if op == FloorDiv {
                    "floor division by zero"
                } else {
                    "modulo"
                };
                return it.error(format!("ZeroDivisionError: float {what}"));
            }
            FloorDiv => int_ops::float_divmod(a, b).0,
            Mod => int_ops::float_divmod(a, b).1,
            Pow => a.powf(b),
            _ => return it.error("TypeError: unsupported operand type(s) for float"),
        }));
    }
    match (op, l, r) {
        (Add, Value::Str(a), Value::Str(b)) => {
            it.budget_bytes((it.names.name(a).len() + it.names.name(b).len()) as u64)?;
            let s = format!("{}{}", it.names.name(a), it.names.name(b));
            Ok(Value::Str(it.names.intern(&s)))
        }
        // `"=" * 40`: the string repeated (empty for n <= 0), as log lines build rulers.
        (Mult, Value::Str(a), Value::Int(n)) | (Mult, Value::Int(n), Value::Str(a)) => {
            let count = usize::try_from(n.max(0)).unwrap_or(0);
            let len = it.names.name(a).len().saturating_mul(count);
            it.budget_bytes(len as u64)?;
            let s = it.names.name(a).repeat(count);
            Ok(Value::Str(it.names.intern(&s)))
        }
        // `[None] * n`: a new list (or tuple) repeating the items.
        (Mult, Value::Obj(seq), Value::Int(n)) | (Mult, Value::Int(n), Value::Obj(seq)) => {
            let (is_list, items) = match it.heap.kind(seq) {
                ObjKind::List(items) => (true, items.clone()),
                ObjKind::Tuple(items) => (false, items.clone()),
                _ => return it.unsupported("`*` on this object"),
            };
            let count = usize::try_from(n.max(0)).unwrap_or(0);
            it.budget_items(items.len().saturating_mul(count) as u64)?;
            if items.len().saturating_mul(count) > 100_000_000 {
                return it.unsupported("sequences of more than 100 000 000 items");
            }
            let repeated: Vec<Value> = std::iter::repeat_n(items, count).flatten().collect();
            Ok(new_sequence(it, is_list, repeated))
        }
        (Add, Value::Obj(a), Value::Obj(b)) => {
            let (ka, kb) = (it.heap.kind(a), it.heap.kind(b));
            let joined = match (ka, kb) {
                (ObjKind::List(x), ObjKind::List(y)) => {
                    Some((true, [x.clone(), y.clone()].concat()))
                }
                (ObjKind::Tuple(x), ObjKind::Tuple(y)) => {
                    Some((false, [x.clone(), y.clone()].concat()))
                }
                _ => None,
            };
            match joined {
                Some((is_list, items)) => Ok(new_sequence(it, is_list, items)),
                None => it.unsupported("`+` on these objects"),
            }
        }
        _ => it.unsupported(format!("the operator {} on these values", op.as_str())),
    }
}
