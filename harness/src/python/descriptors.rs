//! Decorators and the builtin wrappers they use: `staticmethod`, `classmethod`,
//! `property` (getter and setter), `functools.partial`, `functools.wraps`; how a class
//! attribute binds when read through an instance or the class; `__call__` on instances.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

impl<'a> Interpreter<'a> {
    /// `staticmethod(f)`, `classmethod(f)`, `property(fget, fset=None)`: a new wrapper
    /// object (one GC object, as CPython's).
    pub(super) fn new_wrapper(&mut self, kind: WrapperKind, items: Vec<Value>) -> Value {
        if kind == WrapperKind::Property {
            self.properties_defined = true;
        }
        Value::Obj(self.alloc(ObjKind::Wrapper(kind, items)))
    }

    /// `functools.partial(f, *args, **kwargs)`: the partial object, its argument tuple and
    /// its keyword dict (CPython's `partial_new` creates all three).
    pub(super) fn new_partial(&mut self, args: Vec<Value>, kwargs: Vec<(Sym, Value)>) -> R<Value> {
        let mut args = args.into_iter();
        let Some(func) = args.next() else {
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return self.error("TypeError: type 'partial' takes at least one argument");
        };
        let rest: Vec<Value> = args.collect();
        let tuple = if rest.is_empty() {
            super::natives::constant_tuple(self, Vec::new())
        } else {
            Value::Obj(self.alloc(ObjKind::Tuple(rest)))
        };
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, v) in kwargs {
            self.dict_set(dict, Value::Str(k), v);
        }
        Ok(self.new_wrapper(WrapperKind::Partial, vec![func, tuple, Value::Obj(dict)]))
    }

    /// A class attribute read through `instance` (or through the class when `None`):
    /// functions bind, static methods unwrap, class methods bind to the class, properties
    /// call their getter. Returns a new reference.
    pub(super) fn bind_class_attr(
        &mut self,
        attr: Value,
        instance: Option<Value>,
        class: ObjId,
    ) -> R<Value> {
        let Value::Obj(a) = attr else {
            return Ok(attr);
        };
        match self.heap.kind(a) {
            // The C lru_cache wrapper binds as a function does (`lru_cache_descr_get`).
            ObjKind::Function(_)
            | ObjKind::Wrapper(
                WrapperKind::LruCache
                | WrapperKind::DataclassInit
                | WrapperKind::DataclassEq
                | WrapperKind::GradModeFunction,
                _,
            ) if instance.is_some() => {
                let receiver = instance.expect("checked");
                self.heap.incref(attr);
                self.heap.incref(receiver);
                let m = self.alloc(ObjKind::BoundMethod { func: a, receiver });
                Ok(Value::Obj(m))
            }
            ObjKind::Wrapper(WrapperKind::StaticMethod, items) => {
                let f = items[0];
                self.heap.incref(f);
                Ok(f)
            }
            ObjKind::Wrapper(WrapperKind::ClassMethod, items) => {
                let Value::Obj(f) = items[0] else {
                    return self.error("TypeError: classmethod of a non-function");
                };
                self.heap.incref(Value::Obj(f));
                self.heap.incref(Value::Obj(class));
                let m = self.alloc(ObjKind::BoundMethod {
                    func: f,
                    receiver: Value::Obj(class),
                });
                Ok(Value::Obj(m))
            }
            ObjKind::Wrapper(WrapperKind::Property, items) => match instance {
                Some(receiver) => {
                    let getter = items[0];
                    self.heap.incref(receiver);
                    self.call(getter, vec![receiver], Vec::new())
                }
                None => {
                    self.heap.incref(attr);
                    Ok(attr)
                }
            },
            _ => {
                self.heap.incref(attr);
                Ok(attr)
            }
        }
    }

    /// Whether a class attribute needs binding other than a plain function's.
    pub(super) fn is_wrapper(&self, v: Value) -> bool {
        matches!(v, Value::Obj(a) if matches!(self.heap.kind(a), ObjKind::Wrapper(..)))
    }

    /// `instance.name = value` through a property of its class: calls the setter.
    /// `Ok(None)` when the class has no property of that name (value handed back).
    pub(super) fn set_through_property(
        &mut self,
        instance: Value,
        class: ObjId,
        name: Sym,
        value: Value,
    ) -> R<Option<Value>> {
        if let Err(e) = self.refuse_frozen_store(class, name) {
            self.heap.decref(value);
            return Err(e);
        }
        let Some(Value::Obj(p)) = self.class_lookup(class, name) else {
            return Ok(Some(value));
        };
        let ObjKind::Wrapper(WrapperKind::Property, items) = self.heap.kind(p) else {
            return Ok(Some(value));
        };
        let setter = items.get(1).copied().unwrap_or(Value::None);
        if setter == Value::None {
            self.heap.decref(value);
            return self.error(format!(
                "AttributeError: property '{}' has no setter",
                self.names.name(name)
            ));
        }
        self.heap.incref(instance);
        let r = self.call(setter, vec![instance, value], Vec::new())?;
        self.heap.decref(r);
        Ok(None)
    }

    /// Calls a wrapper object: a partial (stored arguments first, call keywords override
    /// stored ones), or a static method (callable since 3.10).
    pub(super) fn call_wrapper(
        &mut self,
        id: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let (kind, items) = match self.heap.kind(id) {
            ObjKind::Wrapper(kind, items) => (*kind, items.clone()),
            _ => unreachable!("checked by caller"),
        };
        match kind {
            WrapperKind::Partial => {
                let stored: Vec<Value> = match items[1] {
                    Value::Obj(t) => match self.heap.kind(t) {
                        ObjKind::Tuple(v) => v.clone(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let stored_kw: Vec<(Value, Value)> = match items[2] {
                    Value::Obj(d) => match self.heap.kind(d) {
                        ObjKind::Dict(v) => v.clone(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let mut all = Vec::with_capacity(stored.len() + args.len());
                for v in stored {
                    self.heap.incref(v);
                    all.push(v);
                }
                all.extend(args);
                let mut kw: Vec<(Sym, Value)> = Vec::new();
                for (k, v) in stored_kw {
                    if let Value::Str(k) = k
                        && !kwargs.iter().any(|(n, _)| *n == k)
                    {
                        self.heap.incref(v);
                        kw.push((k, v));
                    }
                }
                kw.extend(kwargs);
                self.call(items[0], all, kw)
            }
            WrapperKind::StaticMethod => self.call(items[0], args, kwargs),
            WrapperKind::ContextManagerFunction => self.contextmanager_call(id, args, kwargs),
            WrapperKind::GradModeFunction => self.grad_mode_function_call(id, args, kwargs),
            WrapperKind::WeakRef | WrapperKind::Finalize
                if args.is_empty() && kwargs.is_empty() =>
            {
                self.call_weak(id, kind)
            }
            WrapperKind::LruCache => self.lru_cache_call(id, args, kwargs),
            WrapperKind::LruCacheDecorator if kwargs.is_empty() => {
                let r = self.lru_cache_decorate(id, &args);
                self.heap.decref_all(args);
                r
            }
            WrapperKind::DataclassDecorator if kwargs.is_empty() => {
                let r = self.dataclass_decorate(id, &args);
                self.heap.decref_all(args);
                r
            }
            WrapperKind::DataclassInit => self.dataclass_init(id, args, kwargs),
            WrapperKind::DataclassEq if kwargs.is_empty() => self.dataclass_compare(id, args),
            WrapperKind::BuiltinMethod => self.call_builtin_method(&items, args, kwargs),
            _ => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                let t = self.heap.kind(id).type_name();
                self.error(format!("TypeError: '{t}' object is not callable"))
            }
        }
    }

    /// `prop.setter(f)` / `prop.getter(f)`: a new property with that accessor replaced.
    pub(super) fn property_method(&mut self, id: ObjId, method: &str, f: Value) -> R<Value> {
        let items = match self.heap.kind(id) {
            ObjKind::Wrapper(WrapperKind::Property, items) => items.clone(),
            _ => unreachable!("checked by caller"),
        };
        let (getter, setter) = match method {
            "setter" => (items[0], f),
            "getter" => (f, items[1]),
            _ => {
                self.heap.decref(f);
                return self.unsupported(format!("`property.{method}`"));
            }
        };
        let keep = if method == "setter" { getter } else { setter };
        self.heap.incref(keep);
        Ok(self.new_wrapper(WrapperKind::Property, vec![getter, setter]))
    }

    /// Evaluates a decorator expression; `@prop.setter` / `@prop.getter` become the
    /// property's bound accessor.
    pub(super) fn decorator(&mut self, e: &'a ruff_python_ast::Expr) -> R<Value> {
        if let ruff_python_ast::Expr::Attribute(a) = e
            && matches!(a.attr.as_str(), "setter" | "getter")
        {
            let target = self.eval(&a.value)?;
            if let Value::Obj(p) = target
                && matches!(
                    self.heap.kind(p),
                    ObjKind::Wrapper(WrapperKind::Property, _)
                )
            {
                let n = if a.attr.as_str() == "setter" {
                    super::natives::Native::PropertySetter
                } else {
                    super::natives::Native::PropertyGetter
                };
                return Ok(Value::BoundNative(n.id(), p));
            }
            self.heap.decref(target);
        }
        self.eval(e)
    }

    /// Calling an instance: its class's `__call__`.
    pub(super) fn call_instance(
        &mut self,
        instance: Value,
        class: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let call = self.names.intern("__call__");
        let Some(attr) = self.class_lookup(class, call) else {
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            let cname = self.class_name(class);
            return self.error(format!("TypeError: '{cname}' object is not callable"));
        };
        // A plain function is called as `slot_tp_call` calls it (Objects/typeobject.c): no bound
        // method; `_PyObject_MakeTpCall` packs the arguments in a tuple and the keywords in a
        // dict, and `_PyObject_Call_Prepend` turns that dict back into a keyword-names tuple
        // for the vectorcall (`_PyStack_UnpackDict`; 3.8's `_PyFunction_FastCallDict` builds a
        // tuple of names and values instead: one tuple either way). Measured after
        // `gc.collect()`: `c(1)` counts 1 and `c(1, y=2)` 3 on 3.8.18 – 3.15.2 and 3.13.5t
        // (`tests/gc_schedule_call_slots.rs`).
        if let Value::Obj(f) = attr
            && matches!(self.heap.kind(f), ObjKind::Function(_))
        {
            let (positional, keywords) = (args.len(), kwargs.len());
            let names = if keywords == 0 {
                0
            } else if self.heap.profile.version.minor == 8 {
                2 * keywords
            } else {
                keywords
            };
            self.varargs_call_begin(positional, keywords);
            self.argument_tuple_begin(names);
            self.heap.incref(instance);
            let mut full = Vec::with_capacity(positional + 1);
            full.push(instance);
            full.extend(args);
            let r = self.call(attr, full, kwargs);
            self.argument_tuple_end(names);
            self.varargs_call_end(positional, keywords);
            return r;
        }
        let bound = self.bind_class_attr(attr, Some(instance), class)?;
        let r = self.call(bound, args, kwargs);
        self.heap.decref(bound);
        r
    }

    /// A `def` with decorators: they are evaluated first, top to bottom, and applied to the
    /// new function bottom to top.
    pub(super) fn decorate(&mut self, decorators: Vec<Value>, function: Value) -> R<Value> {
        let mut f = function;
        let mut decorators = decorators;
        while let Some(d) = decorators.pop() {
            let r = self.call(d, vec![f], Vec::new());
            self.heap.decref(d);
            match r {
                Ok(v) => f = v,
                Err(e) => {
                    self.heap.decref_all(decorators);
                    return Err(e);
                }
            }
        }
        Ok(f)
    }
}
