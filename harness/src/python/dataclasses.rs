//! `dataclasses`: `@dataclass` (bare or with `init`, `repr`, `eq`, `frozen`, `order`, `kw_only`),
//! `field(default=..., default_factory=..., init=..., repr=..., kw_only=...)`, `fields`,
//! `is_dataclass`, `asdict`, `astuple` and `replace`.
//!
//! What matters for memory: the generated `__init__` binds every field on the instance
//! (a `default_factory` is called once per instance, so each instance owns a new list),
//! the class keeps its `Field` objects and their defaults in `__dataclass_fields__`, and
//! `asdict`/`astuple` deep-copy what the instance holds (tensors included), as CPython's
//! recursion ends in `copy.deepcopy`.
//!
//! The generated `__init__` and `__eq__` are modelled as native callables that do what
//! CPython's generated source does (Lib/dataclasses.py `_init_fn`, `_cmp_fn`): an instance
//! counts as one made by a hand-written `__init__` storing the same attributes, as
//! measured (1 object, plus what a `default_factory` makes). Approximations: the objects
//! the decoration itself makes are the `Field` objects, the `__dataclass_fields__` dict and
//! the generated methods only, while CPython's `exec` of the generated source leaves
//! 25 – 39 objects per class whose number varies with free lists and versions; no
//! `__repr__` is generated (the model prints no instance reprs);
//! `slots=True`, `unsafe_hash=True` and `InitVar`/`ClassVar` annotations are refused.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// The `@dataclass(...)` options the model takes, with CPython's defaults; a decorator
/// wrapper's items are their values in this order.
const OPTIONS: &[(&str, bool)] = &[
    ("init", true),
    ("repr", true),
    ("eq", true),
    ("frozen", false),
    ("kw_only", false),
    ("order", false),
];
const INIT: usize = 0;
const EQ: usize = 2;
const FROZEN: usize = 3;
const KW_ONLY: usize = 4;
const ORDER: usize = 5;

/// `order=True`'s methods, in the order `_process_class` adds them, each with the operator
/// it compares with (its index is the wrapper's item).
const ORDER_METHODS: [(&str, &str); 4] = [
    ("__lt__", "<"),
    ("__le__", "<="),
    ("__gt__", ">"),
    ("__ge__", ">="),
];

/// Items of a `Field` wrapper.
const FIELD_NAME: usize = 0;
const FIELD_HAS_DEFAULT: usize = 1;
const FIELD_DEFAULT: usize = 2;
/// The factory, or `None` when there is none.
const FIELD_FACTORY: usize = 3;
const FIELD_INIT: usize = 4;
/// `None` (inherit the class's `kw_only`), or a bool.
const FIELD_KW_ONLY: usize = 5;

impl<'a> Interpreter<'a> {
    /// `dataclasses.dataclass(cls)` or `dataclasses.dataclass(**options)`.
    pub(in crate::python) fn dataclass_new(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let minor = self.heap.profile.version.minor;
        let mut options = Vec::with_capacity(OPTIONS.len());
        for (k, _) in kw {
            let name = self.names.name(*k).to_string();
            let known_since = match name.as_str() {
                "slots" | "kw_only" | "match_args" | "weakref_slot" => 10,
                _ => 8,
            };
            if minor < known_since {
                return self.error(format!(
                    "TypeError: dataclass() got an unexpected keyword argument '{name}'"
                ));
            }
            match name.as_str() {
                "slots" | "unsafe_hash" | "weakref_slot" => {
                    if self.truth(self.keyword(kw, &name).unwrap_or(Value::None))? {
                        return self.unsupported(format!("`dataclass({name}=True)`"));
                    }
                }
                "match_args" => {}
                _ if OPTIONS.iter().any(|(o, _)| *o == name) => {}
                _ => {
                    return self.error(format!(
                        "TypeError: dataclass() got an unexpected keyword argument '{name}'"
                    ));
                }
            }
        }
        for &(name, default) in OPTIONS {
            let on = match self.keyword(kw, name) {
                Some(v) => self.truth(v)?,
                None => default,
            };
            options.push(Value::Bool(on));
        }
        match p {
            [] => Ok(self.new_wrapper(WrapperKind::DataclassDecorator, options)),
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => {
                self.dataclass_process(*c, &options)
            }
            _ => self.error("TypeError: dataclass() takes a class"),
        }
    }

    /// The decorator `dataclass(**options)` returned, applied to a class.
    pub(in crate::python) fn dataclass_decorate(&mut self, id: ObjId, p: &[Value]) -> R<Value> {
        let options = match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => items.clone(),
            _ => unreachable!("a dataclass decorator"),
        };
        match p {
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => {
                self.dataclass_process(*c, &options)
            }
            _ => self.error("TypeError: dataclass() takes a class"),
        }
    }

    /// `dataclasses.field(...)`: a `Field` whose name is filled in by `@dataclass`.
    pub(in crate::python) fn dataclass_field(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        if !p.is_empty() {
            return self.error(format!(
                "TypeError: field() takes 0 positional arguments but {} were given",
                p.len()
            ));
        }
        let default = self.keyword(kw, "default");
        let factory = self.keyword(kw, "default_factory");
        if default.is_some() && factory.is_some() {
            return self.error("ValueError: cannot specify both default and default_factory");
        }
        let init = match self.keyword(kw, "init") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let kw_only = match self.keyword(kw, "kw_only") {
            Some(_) if self.heap.profile.version.minor < 10 => {
                return self
                    .error("TypeError: field() got an unexpected keyword argument 'kw_only'");
            }
            Some(v) => Value::Bool(self.truth(v)?),
            None => Value::None,
        };
        let default_value = default.unwrap_or(Value::None);
        let factory_value = factory.unwrap_or(Value::None);
        self.heap.incref(default_value);
        self.heap.incref(factory_value);
        let items = vec![
            Value::None,
            Value::Bool(default.is_some()),
            default_value,
            factory_value,
            Value::Bool(init),
            kw_only,
        ];
        Ok(self.new_wrapper(WrapperKind::DataclassField, items))
    }

    /// Turns `class` into a dataclass: collects its fields (base dataclasses' first), keeps
    /// them in `__dataclass_fields__`, and installs `__init__` and `__eq__` unless the class
    /// defines them. Returns the class (a new reference).
    fn dataclass_process(&mut self, class: ObjId, options: &[Value]) -> R<Value> {
        let on = |i: usize| options.get(i) == Some(&Value::Bool(true));
        let fields_sym = self.names.intern("__dataclass_fields__");
        let mut fields: Vec<ObjId> = Vec::new();
        let base = match self.heap.kind(class) {
            ObjKind::Class(c) => c.base,
            _ => None,
        };
        if let Some(b) = base
            && let Some(Value::Obj(d)) = self.class_lookup(b, fields_sym)
            && let ObjKind::Dict(entries) = self.heap.kind(d)
        {
            fields.extend(entries.iter().filter_map(|(_, f)| f.obj()));
        }
        for f in &fields {
            self.heap.incref(Value::Obj(*f));
        }
        let names = self
            .class_annotations
            .get(&class)
            .cloned()
            .unwrap_or_default();
        for name in names {
            let own = self.class_own_attr(class, name);
            let field = match own {
                Some(Value::Obj(f))
                    if matches!(
                        self.heap.kind(f),
                        ObjKind::Wrapper(WrapperKind::DataclassField, _)
                    ) =>
                {
                    self.heap.incref(Value::Obj(f));
                    f
                }
                other => {
                    let (has, default) = match other {
                        Some(v) => (true, v),
                        None => (false, Value::None),
                    };
                    if let Some(kind) = self.mutable_default(default) {
                        self.heap.decref_all(fields.into_iter().map(Value::Obj));
                        return self.error(format!(
                            "ValueError: mutable default <class '{kind}'> for field {} is not allowed: use default_factory",
                            self.names.name(name)
                        ));
                    }
                    self.heap.incref(default);
                    let items = vec![
                        Value::None,
                        Value::Bool(has),
                        default,
                        Value::None,
                        Value::Bool(true),
                        Value::None,
                    ];
                    match self.new_wrapper(WrapperKind::DataclassField, items) {
                        Value::Obj(f) => f,
                        _ => unreachable!("a wrapper is an object"),
                    }
                }
            };
            self.field_items_mut(field)[FIELD_NAME] = Value::Str(name);
            if self.field_items(field)[FIELD_KW_ONLY] == Value::None {
                self.field_items_mut(field)[FIELD_KW_ONLY] = Value::Bool(on(KW_ONLY));
            }
            // The class attribute becomes the default (or goes, without one).
            let (has_default, default) = {
                let items = self.field_items(field);
                (
                    items[FIELD_HAS_DEFAULT] == Value::Bool(true),
                    items[FIELD_DEFAULT],
                )
            };
            if matches!(own, Some(Value::Obj(f)) if f == field) {
                if has_default {
                    self.heap.incref(default);
                    self.set_class_own_attr(class, name, Some(default));
                } else {
                    self.set_class_own_attr(class, name, None);
                }
            }
            // A field redefined in a subclass replaces the base's, in its place.
            if let Some(pos) = fields
                .iter()
                .position(|f| self.field_items(*f)[FIELD_NAME] == Value::Str(name))
            {
                let old = std::mem::replace(&mut fields[pos], field);
                self.heap.decref_id(old);
            } else {
                fields.push(field);
            }
        }
        if let Err(e) = self.check_field_order(&fields) {
            self.heap.decref_all(fields.into_iter().map(Value::Obj));
            return Err(e);
        }
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        for f in &fields {
            let name = self.field_items(*f)[FIELD_NAME];
            self.heap.incref(Value::Obj(*f));
            self.dict_set(dict, name, Value::Obj(*f));
        }
        self.set_class_own_attr(class, fields_sym, Some(Value::Obj(dict)));
        let init_sym = self.names.intern("__init__");
        if on(INIT) && self.class_own_attr(class, init_sym).is_none() {
            let mut items = vec![Value::Bool(on(FROZEN))];
            items.extend(fields.iter().map(|f| Value::Obj(*f)));
            let init = self.new_wrapper(WrapperKind::DataclassInit, items);
            self.set_class_own_attr(class, init_sym, Some(init));
        } else {
            self.heap.decref_all(fields.into_iter().map(Value::Obj));
        }
        if on(ORDER) {
            self.dataclass_add_order(class, on(EQ))?;
        }
        let eq_sym = self.names.intern("__eq__");
        if on(EQ) && self.class_own_attr(class, eq_sym).is_none() {
            let eq = self.new_wrapper(WrapperKind::DataclassEq, Vec::new());
            self.set_class_own_attr(class, eq_sym, Some(eq));
        }
        if on(FROZEN) {
            let setattr = self.names.intern("__setattr__");
            let marker = self.new_wrapper(WrapperKind::DataclassFrozenSetattr, Vec::new());
            self.set_class_own_attr(class, setattr, Some(marker));
            // Attribute stores on instances now look for the frozen marker.
            self.properties_defined = true;
        }
        self.heap.incref(Value::Obj(class));
        Ok(Value::Obj(class))
    }

    /// CPython refuses a `list`, `dict` or `set` default (an unhashable default).
    fn mutable_default(&self, v: Value) -> Option<&'static str> {
        match self.heap.kind(v.obj()?) {
            ObjKind::List(_) => Some("list"),
            ObjKind::Dict(_) => Some("dict"),
            ObjKind::Set { .. } => Some("set"),
            _ => None,
        }
    }

    /// A positional `__init__` parameter without a default after one with a default.
    fn check_field_order(&self, fields: &[ObjId]) -> R<()> {
        let mut seen_default: Option<Value> = None;
        for &f in fields {
            let items = self.field_items(f);
            if items[FIELD_INIT] != Value::Bool(true) || items[FIELD_KW_ONLY] == Value::Bool(true) {
                continue;
            }
            let has = items[FIELD_HAS_DEFAULT] == Value::Bool(true)
                || items[FIELD_FACTORY] != Value::None;
            let name = self.value_name(items[FIELD_NAME]);
            match seen_default {
                Some(before) if !has => {
                    let text = if self.heap.profile.version.minor >= 13 {
                        format!(
                            "TypeError: non-default argument '{name}' follows default argument '{}'",
                            self.value_name(before)
                        )
                    } else {
                        format!("TypeError: non-default argument '{name}' follows default argument")
                    };
                    return self.error(text);
                }
                _ if has => seen_default = Some(items[FIELD_NAME]),
                _ => {}
            }
        }
        Ok(())
    }

    /// The generated `__init__(self, ...)`: binds each field from the arguments, its
    /// default, or a new object from its factory, and stores it on the instance (through
    /// `object.__setattr__` for a frozen class). `args` starts with the instance; owned.
    pub(in crate::python) fn dataclass_init(
        &mut self,
        id: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let items = match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => items.clone(),
            _ => unreachable!("a dataclass __init__"),
        };
        let frozen = items[0] == Value::Bool(true);
        let fields: Vec<ObjId> = items[1..].iter().filter_map(|v| v.obj()).collect();
        let mut args = args.into_iter();
        let Some(instance) = args.next() else {
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return self
                .error("TypeError: __init__() missing 1 required positional argument: 'self'");
        };
        let mut positional: Vec<Value> = args.collect();
        positional.reverse();
        let mut kwargs = kwargs;
        let mut bound: Vec<(Sym, Value)> = Vec::new();
        let mut missing: Vec<String> = Vec::new();
        let qualname = self.init_qualname(instance);
        let fail =
            |it: &mut Self, bound: Vec<(Sym, Value)>, rest: Vec<Value>, kw: Vec<(Sym, Value)>| {
                it.heap.decref_all(bound.into_iter().map(|(_, v)| v));
                it.heap.decref_all(rest);
                it.heap.decref_all(kw.into_iter().map(|(_, v)| v));
                it.heap.decref(instance);
            };
        let positional_count = fields
            .iter()
            .filter(|f| {
                let i = self.field_items(**f);
                i[FIELD_INIT] == Value::Bool(true) && i[FIELD_KW_ONLY] != Value::Bool(true)
            })
            .count();
        if positional.len() > positional_count {
            let given = positional.len() + 1;
            fail(self, bound, positional, kwargs);
            return self.error(format!(
                "TypeError: {qualname}() takes {} positional argument{} but {given} were given",
                positional_count + 1,
                if positional_count == 0 { "" } else { "s" }
            ));
        }
        for &f in &fields {
            let items = self.field_items(f).to_vec();
            let Value::Str(name) = items[FIELD_NAME] else {
                continue;
            };
            let in_init = items[FIELD_INIT] == Value::Bool(true);
            let keyword_only = items[FIELD_KW_ONLY] == Value::Bool(true);
            let given = if !in_init {
                None
            } else if !keyword_only && let Some(v) = positional.pop() {
                if let Some(pos) = kwargs.iter().position(|(k, _)| *k == name) {
                    let (_, dup) = kwargs.remove(pos);
                    self.heap.decref(dup);
                    fail(self, bound, positional, kwargs);
                    self.heap.decref(v);
                    return self.error(format!(
                        "TypeError: {qualname}() got multiple values for argument '{}'",
                        self.names.name(name)
                    ));
                }
                Some(v)
            } else {
                kwargs
                    .iter()
                    .position(|(k, _)| *k == name)
                    .map(|pos| kwargs.remove(pos).1)
            };
            let value = match given {
                Some(v) => v,
                None if items[FIELD_FACTORY] != Value::None => {
                    match self.call(items[FIELD_FACTORY], Vec::new(), Vec::new()) {
                        Ok(v) => v,
                        Err(e) => {
                            fail(self, bound, positional, kwargs);
                            return Err(e);
                        }
                    }
                }
                None if items[FIELD_HAS_DEFAULT] == Value::Bool(true) => {
                    if !in_init {
                        continue;
                    }
                    self.heap.incref(items[FIELD_DEFAULT]);
                    items[FIELD_DEFAULT]
                }
                None if !in_init => continue,
                None => {
                    missing.push(self.names.name(name).to_string());
                    continue;
                }
            };
            bound.push((name, value));
        }
        if let Some((k, _)) = kwargs.first() {
            let name = self.names.name(*k).to_string();
            fail(self, bound, positional, kwargs);
            return self.error(format!(
                "TypeError: {qualname}() got an unexpected keyword argument '{name}'"
            ));
        }
        if !missing.is_empty() {
            fail(self, bound, positional, kwargs);
            return self.error(missing_arguments(&qualname, &missing));
        }
        let properties = self.properties_defined;
        if frozen {
            self.properties_defined = false;
        }
        let mut result = Ok(Value::None);
        let mut bound = bound.into_iter();
        for (name, value) in bound.by_ref() {
            if let Err(e) = self.set_attr(instance, name, value) {
                result = Err(e);
                break;
            }
        }
        self.properties_defined = properties;
        self.heap.decref_all(bound.map(|(_, v)| v));
        self.heap.decref(instance);
        result
    }

    /// How CPython names the generated `__init__` in argument errors: its qualified name
    /// from 3.10 (`C.__init__`), the bare name before.
    fn init_qualname(&self, instance: Value) -> String {
        if self.heap.profile.version.minor < 10 {
            return "__init__".to_string();
        }
        match instance.obj().map(|i| self.heap.kind(i)) {
            Some(ObjKind::Instance { class, .. }) => {
                format!("{}.__init__", self.class_name(*class))
            }
            _ => "__init__".to_string(),
        }
    }

    /// `order=True`: `__lt__`, `__le__`, `__gt__`, `__ge__`, each a generated function
    /// (the wrapper of `__eq__` with the method's index as its item), refused as CPython
    /// refuses it without `eq` or over a method the class defines.
    fn dataclass_add_order(&mut self, class: ObjId, eq: bool) -> R<()> {
        if !eq {
            return self.error("ValueError: eq must be true if order is true");
        }
        for (i, (method, _)) in ORDER_METHODS.iter().enumerate() {
            let sym = self.names.intern(method);
            if self.class_own_attr(class, sym).is_some() {
                let name = self.class_name(class);
                // 3.13 dropped the full stop of the message.
                let stop = if self.heap.profile.version.minor >= 13 {
                    ""
                } else {
                    "."
                };
                return self.error(format!(
                    "TypeError: Cannot overwrite attribute {method} in class {name}{stop} Consider using functools.total_ordering"
                ));
            }
            let f = self.new_wrapper(WrapperKind::DataclassEq, vec![Value::Int(i as i64)]);
            self.set_class_own_attr(class, sym, Some(f));
        }
        Ok(())
    }

    /// A generated comparison method called: `__eq__` (no item) or one of `order=True`'s
    /// (its index as the item). `args` are owned.
    pub(in crate::python) fn dataclass_compare(&mut self, id: ObjId, args: Vec<Value>) -> R<Value> {
        match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => match items.first() {
                Some(&Value::Int(i)) => self.dataclass_order(ORDER_METHODS[i as usize], args),
                _ => self.dataclass_eq(args),
            },
            _ => unreachable!("a generated comparison"),
        }
    }

    /// `_cmp_fn`'s method: the fields of both instances compared as tuples when `other` has
    /// the same class. A different class makes CPython's method return `NotImplemented`,
    /// and the operator then fails with the `TypeError` the model raises here (a reflected
    /// method of the other class is not tried). `args` are owned.
    fn dataclass_order(&mut self, (method, op): (&str, &str), args: Vec<Value>) -> R<Value> {
        let class = |v: &Value| match v.obj().map(|i| self.heap.kind(i)) {
            Some(ObjKind::Instance { class, .. }) => Some(*class),
            _ => None,
        };
        let result = match args.as_slice() {
            [a, b] => match (class(a), class(b)) {
                (Some(x), Some(y)) if x == y => {
                    let names = self.dataclass_field_names(x);
                    let (ai, bi) = (a.obj().expect("an instance"), b.obj().expect("an instance"));
                    let mut xs = Vec::with_capacity(names.len());
                    let mut ys = Vec::with_capacity(names.len());
                    for n in names {
                        xs.extend(self.instance_attr(ai, n));
                        ys.extend(self.instance_attr(bi, n));
                    }
                    match self.values_ordering(&xs, &ys) {
                        Some(o) => Ok(Value::Bool(match op {
                            "<" => o.is_lt(),
                            "<=" => o.is_le(),
                            ">" => o.is_gt(),
                            _ => o.is_ge(),
                        })),
                        None => self.error(format!(
                            "TypeError: '{op}' not supported between these field values in the workload model"
                        )),
                    }
                }
                _ => {
                    let (l, r) = (self.type_name_of(*a), self.type_name_of(*b));
                    let (l, r) = match (class(a), class(b)) {
                        (Some(x), Some(y)) => (self.class_name(x), self.class_name(y)),
                        (Some(x), None) => (self.class_name(x), r.to_string()),
                        (None, Some(y)) => (l.to_string(), self.class_name(y)),
                        (None, None) => (l.to_string(), r.to_string()),
                    };
                    self.error(format!(
                        "TypeError: '{op}' not supported between instances of '{l}' and '{r}'"
                    ))
                }
            },
            _ => self.error(format!("TypeError: {method}() takes exactly one argument")),
        };
        self.heap.decref_all(args);
        result
    }

    /// The generated `__eq__(self, other)`: field by field when `other` has the same class,
    /// `NotImplemented` (here: identity) otherwise. `args` are owned.
    fn dataclass_eq(&mut self, args: Vec<Value>) -> R<Value> {
        let result = match args.as_slice() {
            [a, b] => {
                let class = |v: &Value| match v.obj().map(|i| self.heap.kind(i)) {
                    Some(ObjKind::Instance { class, .. }) => Some(*class),
                    _ => None,
                };
                match (class(a), class(b)) {
                    (Some(x), Some(y)) if x == y => {
                        let names = self.dataclass_field_names(x);
                        let (ai, bi) =
                            (a.obj().expect("an instance"), b.obj().expect("an instance"));
                        Ok(Value::Bool(names.iter().all(|n| {
                            match (self.instance_attr(ai, *n), self.instance_attr(bi, *n)) {
                                (Some(p), Some(q)) => p == q || self.values_equal(p, q),
                                (None, None) => true,
                                _ => false,
                            }
                        })))
                    }
                    _ => Ok(Value::Bool(a == b)),
                }
            }
            _ => self.error("TypeError: __eq__() takes exactly one argument"),
        };
        self.heap.decref_all(args);
        result
    }

    /// The frozen class's `__setattr__`: every store on an instance is refused.
    pub(in crate::python) fn refuse_frozen_store(&mut self, class: ObjId, name: Sym) -> R<()> {
        let setattr = self.names.intern("__setattr__");
        match self.class_lookup(class, setattr) {
            Some(Value::Obj(m))
                if matches!(
                    self.heap.kind(m),
                    ObjKind::Wrapper(WrapperKind::DataclassFrozenSetattr, _)
                ) =>
            {
                self.error(format!(
                    "FrozenInstanceError: cannot assign to field '{}'",
                    self.names.name(name)
                ))
            }
            _ => Ok(()),
        }
    }

    /// The field names of a dataclass, in order (empty for other classes).
    fn dataclass_field_names(&self, class: ObjId) -> Vec<Sym> {
        self.dataclass_fields_of(class)
            .into_iter()
            .filter_map(|f| match self.field_items(f)[FIELD_NAME] {
                Value::Str(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// The `Field` objects of a dataclass (borrowed), in order.
    fn dataclass_fields_of(&self, class: ObjId) -> Vec<ObjId> {
        let Some(sym) = self.names.lookup("__dataclass_fields__") else {
            return Vec::new();
        };
        match self.class_lookup(class, sym) {
            Some(Value::Obj(d)) => match self.heap.kind(d) {
                ObjKind::Dict(entries) => entries.iter().filter_map(|(_, f)| f.obj()).collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// The class of a dataclass instance.
    fn dataclass_instance_class(&self, v: Value) -> Option<ObjId> {
        match self.heap.kind(v.obj()?) {
            ObjKind::Instance { class, .. } if !self.dataclass_fields_of(*class).is_empty() => {
                Some(*class)
            }
            _ => None,
        }
    }

    /// `dataclasses.fields(x)`: a tuple of the `Field` objects.
    pub(in crate::python) fn dataclass_fields_call(&mut self, p: &[Value]) -> R<Value> {
        let class = match p {
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => Some(*c),
            [v] => self.dataclass_instance_class(*v),
            _ => None,
        };
        let Some(class) = class.filter(|c| !self.dataclass_fields_of(*c).is_empty()) else {
            return self.error("TypeError: must be called with a dataclass type or instance");
        };
        let fields: Vec<Value> = self
            .dataclass_fields_of(class)
            .into_iter()
            .map(Value::Obj)
            .collect();
        for f in &fields {
            self.heap.incref(*f);
        }
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(fields))))
    }

    /// `dataclasses.is_dataclass(x)`.
    pub(in crate::python) fn dataclass_is(&mut self, p: &[Value]) -> R<Value> {
        let yes = match p {
            [Value::Obj(c)] if matches!(self.heap.kind(*c), ObjKind::Class(_)) => {
                !self.dataclass_fields_of(*c).is_empty()
            }
            [v] => self.dataclass_instance_class(*v).is_some(),
            _ => return self.error("TypeError: is_dataclass() takes exactly one argument"),
        };
        Ok(Value::Bool(yes))
    }

    /// `dataclasses.asdict(x)` / `astuple(x)`: the fields, recursively through dataclass
    /// instances, lists, tuples and dicts (new containers), anything else deep-copied.
    pub(in crate::python) fn dataclass_asdict(&mut self, p: &[Value], as_tuple: bool) -> R<Value> {
        let what = if as_tuple { "astuple" } else { "asdict" };
        match p {
            [v] if self.dataclass_instance_class(*v).is_some() => self.as_inner(*v, as_tuple),
            _ => self.error(format!(
                "TypeError: {what}() should be called on dataclass instances"
            )),
        }
    }

    fn as_inner(&mut self, v: Value, as_tuple: bool) -> R<Value> {
        if let Some(class) = self.dataclass_instance_class(v) {
            let id = v.obj().expect("an instance");
            let names = self.dataclass_field_names(class);
            let mut pairs = Vec::with_capacity(names.len());
            for n in names {
                let item = self.instance_attr(id, n).unwrap_or(Value::None);
                match self.as_inner(item, as_tuple) {
                    Ok(c) => pairs.push((Value::Str(n), c)),
                    Err(e) => {
                        self.heap.decref_all(pairs.into_iter().map(|(_, c)| c));
                        return Err(e);
                    }
                }
            }
            if as_tuple {
                let items = pairs.into_iter().map(|(_, c)| c).collect();
                return Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))));
            }
            let d = self.alloc(ObjKind::Dict(Vec::new()));
            for (k, c) in pairs {
                self.dict_set(d, k, c);
            }
            return Ok(Value::Obj(d));
        }
        let container = v.obj().map(|id| self.heap.kind(id).clone());
        match container {
            Some(ObjKind::List(items)) | Some(ObjKind::Tuple(items)) => {
                let is_list = matches!(
                    self.heap.kind(v.obj().expect("an object")),
                    ObjKind::List(_)
                );
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match self.as_inner(item, as_tuple) {
                        Ok(c) => out.push(c),
                        Err(e) => {
                            self.heap.decref_all(out);
                            return Err(e);
                        }
                    }
                }
                let kind = if is_list {
                    ObjKind::List(out)
                } else {
                    ObjKind::Tuple(out)
                };
                Ok(Value::Obj(self.alloc(kind)))
            }
            Some(ObjKind::Dict(entries)) => {
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                for (k, item) in entries {
                    let key = self.as_inner(k, as_tuple);
                    let value = self.as_inner(item, as_tuple);
                    match (key, value) {
                        (Ok(k), Ok(c)) => self.dict_set(d, k, c),
                        (k, c) => {
                            for r in [k, c].into_iter().flatten() {
                                self.heap.decref(r);
                            }
                            self.heap.decref_id(d);
                            return self.error("TypeError: a dict item could not be copied");
                        }
                    }
                }
                Ok(Value::Obj(d))
            }
            _ => self.deepcopy(v),
        }
    }

    /// `dataclasses.replace(obj, **changes)`: a new instance from the class, built with
    /// `obj`'s init fields overridden by `changes`.
    pub(in crate::python) fn dataclass_replace(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let Some((obj, class)) = p
            .first()
            .and_then(|v| self.dataclass_instance_class(*v).map(|c| (*v, c)))
            .filter(|_| p.len() == 1)
        else {
            return self.error("TypeError: replace() should be called on dataclass instances");
        };
        let id = obj.obj().expect("an instance");
        let mut kwargs: Vec<(Sym, Value)> = Vec::new();
        for f in self.dataclass_fields_of(class) {
            let items = self.field_items(f).to_vec();
            let Value::Str(name) = items[FIELD_NAME] else {
                continue;
            };
            if items[FIELD_INIT] != Value::Bool(true) {
                if kw.iter().any(|(k, _)| *k == name) {
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    return self.error(format!(
                        "ValueError: field {} is declared with init=False, it cannot be specified with replace()",
                        self.names.name(name)
                    ));
                }
                continue;
            }
            let value = match kw.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => *v,
                None => self.instance_attr(id, name).unwrap_or(Value::None),
            };
            self.heap.incref(value);
            kwargs.push((name, value));
        }
        for (k, v) in kw {
            if !kwargs.iter().any(|(n, _)| n == k) {
                self.heap.incref(*v);
                kwargs.push((*k, *v));
            }
        }
        self.heap.incref(Value::Obj(class));
        let r = self.call(Value::Obj(class), Vec::new(), kwargs);
        self.heap.decref(Value::Obj(class));
        r
    }

    /// `Field.name`, `.default`, `.default_factory`, `.init`, `.kw_only` (a missing default
    /// reads as `None` where CPython gives its `MISSING` marker).
    pub(in crate::python) fn dataclass_field_attr(&mut self, field: ObjId, name: Sym) -> R<Value> {
        let index = match self.names.name(name) {
            "name" => FIELD_NAME,
            "default" => FIELD_DEFAULT,
            "default_factory" => FIELD_FACTORY,
            "init" => FIELD_INIT,
            "kw_only" => FIELD_KW_ONLY,
            other => {
                return self.error(format!(
                    "AttributeError: 'Field' object has no attribute '{other}'"
                ));
            }
        };
        let v = self.field_items(field)[index];
        self.heap.incref(v);
        Ok(v)
    }

    fn field_items(&self, field: ObjId) -> &[Value] {
        match self.heap.kind(field) {
            ObjKind::Wrapper(_, items) => items,
            _ => &[],
        }
    }

    fn field_items_mut(&mut self, field: ObjId) -> &mut Vec<Value> {
        match self.heap.kind_mut(field) {
            ObjKind::Wrapper(_, items) => items,
            _ => unreachable!("a Field"),
        }
    }

    fn value_name(&self, v: Value) -> String {
        match v {
            Value::Str(s) => self.names.name(s).to_string(),
            _ => String::new(),
        }
    }

    /// A class's own attribute (not its bases'), borrowed.
    fn class_own_attr(&self, class: ObjId, name: Sym) -> Option<Value> {
        match self.heap.kind(class) {
            ObjKind::Class(c) => c.attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            _ => None,
        }
    }

    /// Sets (taking over `value`) or removes a class's own attribute.
    fn set_class_own_attr(&mut self, class: ObjId, name: Sym, value: Option<Value>) {
        let old = match self.heap.kind_mut(class) {
            ObjKind::Class(c) => {
                let pos = c.attrs.iter().position(|(n, _)| *n == name);
                match (pos, value) {
                    (Some(i), Some(v)) => Some(std::mem::replace(&mut c.attrs[i].1, v)),
                    (Some(i), None) => Some(c.attrs.remove(i).1),
                    (None, Some(v)) => {
                        c.attrs.push((name, v));
                        None
                    }
                    (None, None) => None,
                }
            }
            _ => value,
        };
        if let Some(v) = old {
            self.heap.decref(v);
        }
    }
}

/// CPython's text for missing arguments: `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`.
fn missing_arguments(qualname: &str, missing: &[String]) -> String {
    let quoted: Vec<String> = missing.iter().map(|m| format!("'{m}'")).collect();
    let list = match quoted.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
        [] => String::new(),
    };
    format!(
        "TypeError: {qualname}() missing {} required positional argument{}: {list}",
        missing.len(),
        if missing.len() == 1 { "" } else { "s" }
    )
}
