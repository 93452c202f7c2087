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
//! `slots=True`, `unsafe_hash=True` and `InitVar`/`ClassVar` annotations are refused. A
//! `_: KW_ONLY` annotation (3.10+) is no field; the fields after it are keyword-only.
//!
//! The generated `__init__` is in [`super::dataclass_init`], the comparisons and the
//! frozen `__setattr__` in [`super::dataclass_compare`], the module's functions in
//! [`super::dataclass_functions`].

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// The `@dataclass(...)` options the model takes, with CPython's defaults; a decorator
/// wrapper's items are their values in this order.
pub(super) const OPTIONS: &[(&str, bool)] = &[
    ("init", true),
    ("repr", true),
    ("eq", true),
    ("frozen", false),
    ("kw_only", false),
    ("order", false),
];
pub(super) const INIT: usize = 0;
pub(super) const EQ: usize = 2;
pub(super) const FROZEN: usize = 3;
pub(super) const KW_ONLY: usize = 4;
pub(super) const ORDER: usize = 5;

/// `order=True`'s methods, in the order `_process_class` adds them, each with the operator
/// it compares with (its index is the wrapper's item).
pub(super) const ORDER_METHODS: [(&str, &str); 4] = [
    ("__lt__", "<"),
    ("__le__", "<="),
    ("__gt__", ">"),
    ("__ge__", ">="),
];

/// Items of a `Field` wrapper.
pub(super) const FIELD_NAME: usize = 0;
pub(super) const FIELD_HAS_DEFAULT: usize = 1;
pub(super) const FIELD_DEFAULT: usize = 2;
/// The factory, or `None` when there is none.
pub(super) const FIELD_FACTORY: usize = 3;
pub(super) const FIELD_INIT: usize = 4;
/// `None` (inherit the class's `kw_only`), or a bool.
pub(super) const FIELD_KW_ONLY: usize = 5;

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
    pub(super) fn dataclass_process(&mut self, class: ObjId, options: &[Value]) -> R<Value> {
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
        // `_: KW_ONLY`: the fields after it are keyword-only (3.10+, one per class).
        let marks = self
            .stdlib
            .kw_only_classes
            .iter()
            .find(|(c, _)| *c == class)
            .map(|(_, m)| m.clone())
            .unwrap_or_default();
        if !marks.is_empty() && self.heap.profile.version.minor < 10 {
            self.heap.decref_all(fields.into_iter().map(Value::Obj));
            return self.error(
                "ImportError: cannot import name 'KW_ONLY' from 'dataclasses' (added in 3.10)",
            );
        }
        if marks.len() > 1 {
            self.heap.decref_all(fields.into_iter().map(Value::Obj));
            return self.unsupported("two `KW_ONLY` pseudo-fields in one dataclass");
        }
        let kw_only_from = marks.first().copied().unwrap_or(usize::MAX);
        for (index, name) in names.into_iter().enumerate() {
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
                self.field_items_mut(field)[FIELD_KW_ONLY] =
                    Value::Bool(on(KW_ONLY) || index >= kw_only_from);
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
    pub(super) fn mutable_default(&self, v: Value) -> Option<&'static str> {
        match self.heap.kind(v.obj()?) {
            ObjKind::List(_) => Some("list"),
            ObjKind::Dict(_) => Some("dict"),
            ObjKind::Set { .. } => Some("set"),
            _ => None,
        }
    }

    /// A positional `__init__` parameter without a default after one with a default.
    pub(super) fn check_field_order(&self, fields: &[ObjId]) -> R<()> {
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

    pub(super) fn field_items(&self, field: ObjId) -> &[Value] {
        match self.heap.kind(field) {
            ObjKind::Wrapper(_, items) => items,
            _ => &[],
        }
    }

    pub(super) fn field_items_mut(&mut self, field: ObjId) -> &mut Vec<Value> {
        match self.heap.kind_mut(field) {
            ObjKind::Wrapper(_, items) => items,
            _ => unreachable!("a Field"),
        }
    }

    pub(super) fn value_name(&self, v: Value) -> String {
        match v {
            Value::Str(s) => self.names.name(s).to_string(),
            _ => String::new(),
        }
    }

    /// A class's own attribute (not its bases'), borrowed.
    pub(super) fn class_own_attr(&self, class: ObjId, name: Sym) -> Option<Value> {
        match self.heap.kind(class) {
            ObjKind::Class(c) => c.attrs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            _ => None,
        }
    }

    /// Sets (taking over `value`) or removes a class's own attribute.
    pub(super) fn set_class_own_attr(&mut self, class: ObjId, name: Sym, value: Option<Value>) {
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
