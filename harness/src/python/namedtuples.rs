//! `collections.namedtuple(...)` and `class P(typing.NamedTuple)`: a class whose instances
//! are tuples ([`ObjKind::NamedTuple`]) with named fields.
//!
//! What CPython allocates, as modelled (measured with `gc.get_count()` on 3.8 – 3.15):
//! - `P(x, y)` runs the generated Python `__new__`, `tuple.__new__(cls, (x, y))`: the class
//!   call's argument tuple, the `(x, y)` tuple, then the instance (counted, GC-tracked, never
//!   untracked, holding its class), after which both tuples go (net one object);
//! - `P._make(xs)`: a tuple of the items unless `xs` is an exact tuple, then the instance;
//! - `p._replace(**kw)`: a `map` object and a tuple made for 10 items (a map's length is
//!   unknown) and shrunk, around the new instance;
//! - `p._asdict()`: a `zip` object around a new dict.
//!
//! Approximations: the class itself counts as the class object with its `_fields` tuple and
//! `_field_defaults` dict, not the ~30 objects `namedtuple()`'s `exec` makes once per class;
//! the frames of the generated Python methods (≤ 3.10) are not made.

use super::interp::{Interpreter, R};
use super::natives::{Native, sequence_items};
use crate::heap::{Class, ObjId, ObjKind, Sym, Value, WrapperKind};

/// Attributes a `typing.NamedTuple` body may not define (`typing._prohibited`).
const PROHIBITED: &[&str] = &[
    "__new__",
    "__init__",
    "__slots__",
    "__getnewargs__",
    "_fields",
    "_field_defaults",
    "_make",
    "_replace",
    "_asdict",
    "_source",
];

/// Natives bound to a namedtuple instance (`_replace`, `_asdict`) or class (`_make`).
pub(super) fn is_bound_native(n: crate::heap::NativeId) -> bool {
    matches!(
        Native::from_id(n),
        Some(Native::NamedtupleMake | Native::NamedtupleReplace | Native::NamedtupleAsdict)
    )
}

impl<'a> Interpreter<'a> {
    /// Whether `class` (or a base) was made by `namedtuple`: its `__new__` is the marker.
    pub(in crate::python) fn is_namedtuple_class(&self, class: ObjId) -> bool {
        let new = self.names.lookup("__new__");
        new.and_then(|s| self.class_lookup(class, s))
            == Some(Value::Native(Native::NamedtupleNew.id()))
    }

    /// The field names of a namedtuple class, in order.
    fn namedtuple_fields(&self, class: ObjId) -> Vec<Sym> {
        let fields = self.names.lookup("_fields");
        match fields.and_then(|s| self.class_lookup(class, s)) {
            Some(Value::Obj(t)) => match self.heap.kind(t) {
                ObjKind::Tuple(items) => items
                    .iter()
                    .filter_map(|v| match v {
                        Value::Str(s) => Some(*s),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// `_field_defaults` of a namedtuple class (borrowed values).
    fn namedtuple_defaults(&self, class: ObjId) -> Vec<(Value, Value)> {
        let defaults = self.names.lookup("_field_defaults");
        match defaults.and_then(|s| self.class_lookup(class, s)) {
            Some(Value::Obj(d)) => match self.heap.kind(d) {
                ObjKind::Dict(items) => items.clone(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// `collections.namedtuple(typename, field_names, *, rename=False, defaults=None,
    /// module=None)`; also `typing.NamedTuple(typename, [(name, type), ...])`.
    pub(in crate::python) fn new_namedtuple_class(
        &mut self,
        typing: bool,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let (Some(&Value::Str(name)), Some(&spec)) = (p.first(), p.get(1)) else {
            return self
                .error("TypeError: namedtuple() needs a type name and field names (strings)");
        };
        if p.len() > 2 {
            return self.error(format!(
                "TypeError: namedtuple() takes 2 positional arguments but {} were given",
                p.len()
            ));
        }
        for (k, _) in kw {
            let k = self.names.name(*k);
            if !matches!(k, "defaults" | "module") {
                return self.unsupported(format!("`namedtuple(..., {k}=...)`"));
            }
        }
        let mut fields = Vec::new();
        match spec {
            Value::Str(s) if !typing => {
                let text = self.names.name(s).replace(',', " ");
                for f in text.split_whitespace() {
                    fields.push(self.names.intern(f));
                }
            }
            Value::Obj(_) => {
                for item in sequence_items(self, spec)? {
                    match item {
                        Value::Str(s) if !typing => fields.push(s),
                        Value::Obj(pair) if typing => match self.heap.kind(pair) {
                            ObjKind::Tuple(two) if two.len() == 2 => match two[0] {
                                Value::Str(s) => fields.push(s),
                                _ => return self.error("TypeError: field names must be strings"),
                            },
                            _ => return self.error("TypeError: fields must be (name, type) pairs"),
                        },
                        _ => {
                            return self
                                .error("TypeError: Type names and field names must be strings");
                        }
                    }
                }
            }
            _ => return self.error("TypeError: Type names and field names must be strings"),
        }
        self.check_field_names(name, &fields)?;
        let given = self.keyword(kw, "defaults");
        let defaults = match given {
            None | Some(Value::None) => Vec::new(),
            Some(v) => sequence_items(self, v)?,
        };
        if defaults.len() > fields.len() {
            return self.error("TypeError: Got more default values than field names");
        }
        let pairs: Vec<(Sym, Value)> = fields[fields.len() - defaults.len()..]
            .iter()
            .copied()
            .zip(defaults)
            .collect();
        for (_, v) in &pairs {
            self.heap.incref(*v);
        }
        Ok(Value::Obj(self.make_namedtuple_class(
            name,
            &fields,
            pairs,
            Vec::new(),
        )))
    }

    /// CPython's checks on the names (`collections.namedtuple` without `rename`).
    fn check_field_names(&self, name: Sym, fields: &[Sym]) -> R<()> {
        let ident = |s: &str| {
            s.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_alphanumeric() || c == '_')
        };
        let tname = self.names.name(name);
        if !ident(tname) {
            return self.error(format!(
                "ValueError: Type names and field names must be valid identifiers: '{tname}'"
            ));
        }
        for (i, &f) in fields.iter().enumerate() {
            let text = self.names.name(f);
            if !ident(text) {
                return self.error(format!(
                    "ValueError: Type names and field names must be valid identifiers: '{text}'"
                ));
            }
            if text.starts_with('_') {
                return self.error(format!(
                    "ValueError: Field names cannot start with an underscore: '{text}'"
                ));
            }
            if fields[..i].contains(&f) {
                return self.error(format!(
                    "ValueError: Encountered duplicate field name: '{text}'"
                ));
            }
        }
        Ok(())
    }

    /// The class: `_fields`, `_field_defaults` (owned `defaults`), the marker `__new__`,
    /// `_make`/`_replace`/`_asdict`, then `extra` (owned: a `NamedTuple` body's methods).
    fn make_namedtuple_class(
        &mut self,
        name: Sym,
        fields: &[Sym],
        defaults: Vec<(Sym, Value)>,
        extra: Vec<(Sym, Value)>,
    ) -> ObjId {
        let names = fields.iter().map(|&f| Value::Str(f)).collect();
        let fields_tuple = self.alloc(ObjKind::Tuple(names));
        let defaults = defaults
            .into_iter()
            .map(|(k, v)| (Value::Str(k), v))
            .collect();
        let defaults_dict = self.alloc(ObjKind::Dict(defaults));
        let native = |n: Native| Value::Native(n.id());
        let mut attrs = vec![
            (self.names.intern("_fields"), Value::Obj(fields_tuple)),
            (
                self.names.intern("_field_defaults"),
                Value::Obj(defaults_dict),
            ),
            (self.names.intern("__new__"), native(Native::NamedtupleNew)),
            (self.names.intern("_make"), native(Native::NamedtupleMake)),
            (
                self.names.intern("_replace"),
                native(Native::NamedtupleReplace),
            ),
            (
                self.names.intern("_asdict"),
                native(Native::NamedtupleAsdict),
            ),
        ];
        attrs.extend(extra);
        let class = self.alloc(ObjKind::Class(Class {
            name,
            base: None,
            attrs,
        }));
        // Its MRO and bases tuples (held by the class, not kept by the model).
        self.heap.enter_class_cycle(class, 2);
        class
    }

    /// `class P(NamedTuple):` after its body ran: the annotated names are the fields, their
    /// values the defaults; the rest of the namespace (owned) goes onto the class.
    pub(in crate::python) fn namedtuple_class_from_body(
        &mut self,
        name: Sym,
        annotated: Vec<Sym>,
        namespace: Vec<(Sym, Value)>,
    ) -> R<ObjId> {
        let mut defaults = Vec::new();
        let mut extra = Vec::new();
        let mut problem = None;
        for (k, v) in namespace {
            if annotated.contains(&k) {
                defaults.push((k, v));
                continue;
            }
            let text = self.names.name(k);
            if problem.is_none() && PROHIBITED.contains(&text) {
                problem = Some(format!(
                    "AttributeError: Cannot overwrite NamedTuple attribute {text}"
                ));
            }
            extra.push((k, v));
        }
        // Defaults in field order; a field without one may not follow one with one.
        defaults.sort_by_key(|(k, _)| annotated.iter().position(|a| a == k));
        if problem.is_none() {
            let mut seen_default = None;
            for f in &annotated {
                match defaults.iter().find(|(k, _)| k == f) {
                    Some(_) => seen_default = Some(*f),
                    None if seen_default.is_some() => {
                        let (a, b) = (self.names.name(*f), self.names.name(seen_default.unwrap()));
                        problem = Some(format!(
                            "TypeError: Non-default namedtuple field {a} cannot follow default field {b}"
                        ));
                        break;
                    }
                    None => {}
                }
            }
        }
        if problem.is_none()
            && let Err(e) = self.check_field_names(name, &annotated)
        {
            self.heap.decref_all(defaults.into_iter().map(|(_, v)| v));
            self.heap.decref_all(extra.into_iter().map(|(_, v)| v));
            return Err(e);
        }
        if let Some(message) = problem {
            self.heap.decref_all(defaults.into_iter().map(|(_, v)| v));
            self.heap.decref_all(extra.into_iter().map(|(_, v)| v));
            return self.error(message);
        }
        Ok(self.make_namedtuple_class(name, &annotated, defaults, extra))
    }

    /// Calling a namedtuple class: binds the arguments (owned) to the fields, filling in
    /// defaults, and makes the instance.
    pub(in crate::python) fn namedtuple_call(
        &mut self,
        class: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let fields = self.namedtuple_fields(class);
        let n = fields.len();
        // From 3.10 the error names the function by its qualified name.
        let new = if self.heap.profile.version.minor >= 10 {
            format!("{}.__new__", self.class_name(class))
        } else {
            "__new__".to_string()
        };
        let release = |it: &mut Self, args: Vec<Value>, kwargs: Vec<(Sym, Value)>| {
            it.heap.decref_all(args);
            it.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
        };
        if args.len() > n {
            let given = args.len() + 1;
            release(self, args, kwargs);
            return self.error(format!(
                "TypeError: {new}() takes {} positional arguments but {given} were given",
                n + 1
            ));
        }
        let positional = args.len();
        let mut slots: Vec<Option<Value>> = args.into_iter().map(Some).collect();
        slots.resize(n, None);
        let mut problem = None;
        for (k, v) in kwargs {
            match fields.iter().position(|f| *f == k) {
                Some(i) if slots[i].is_none() => slots[i] = Some(v),
                Some(_) => {
                    self.heap.decref(v);
                    problem.get_or_insert(format!(
                        "TypeError: {new}() got multiple values for argument '{}'",
                        self.names.name(k)
                    ));
                }
                None => {
                    self.heap.decref(v);
                    problem.get_or_insert(format!(
                        "TypeError: {new}() got an unexpected keyword argument '{}'",
                        self.names.name(k)
                    ));
                }
            }
        }
        let defaults = self.namedtuple_defaults(class);
        let mut missing = Vec::new();
        for (i, f) in fields.iter().enumerate() {
            if slots[i].is_some() {
                continue;
            }
            match defaults.iter().find(|(k, _)| *k == Value::Str(*f)) {
                Some(&(_, v)) => {
                    self.heap.incref(v);
                    slots[i] = Some(v);
                }
                None => missing.push(format!("'{}'", self.names.name(*f))),
            }
        }
        if problem.is_none() && !missing.is_empty() {
            let s = if missing.len() == 1 { "" } else { "s" };
            problem = Some(format!(
                "TypeError: {new}() missing {} required positional argument{s}: {}",
                missing.len(),
                missing.join(" and ")
            ));
        }
        if let Some(message) = problem {
            self.heap.decref_all(slots.into_iter().flatten());
            return self.error(message);
        }
        let items: Vec<Value> = slots.into_iter().flatten().collect();
        // `type.__call__`'s argument tuple lives through `__new__`.
        self.argument_tuple_begin(positional);
        // The generated `__new__` builds `(x, y)` and passes it to `tuple.__new__`.
        for v in &items {
            self.heap.incref(*v);
        }
        let packed = self.alloc(ObjKind::Tuple(items.clone()));
        let instance = self.namedtuple_instance(class, items);
        self.heap.decref_id(packed);
        self.argument_tuple_end(positional);
        Ok(instance)
    }

    /// `tuple.__new__(cls, items)`'s new object (items owned).
    fn namedtuple_instance(&mut self, class: ObjId, items: Vec<Value>) -> Value {
        self.heap.incref(Value::Obj(class));
        Value::Obj(self.alloc(ObjKind::NamedTuple { class, items }))
    }

    /// `p.name`: a field, a method of the class (bound), or a class attribute.
    pub(in crate::python) fn namedtuple_attr(
        &mut self,
        obj: Value,
        class: ObjId,
        name: Sym,
    ) -> R<Value> {
        let Value::Obj(id) = obj else {
            unreachable!("a namedtuple is an object")
        };
        if let Some(i) = self
            .namedtuple_fields(class)
            .iter()
            .position(|f| *f == name)
        {
            let v = match self.heap.kind(id) {
                ObjKind::NamedTuple { items, .. } => items[i],
                _ => unreachable!("checked by caller"),
            };
            self.heap.incref(v);
            return Ok(v);
        }
        match self.class_lookup(class, name) {
            Some(Value::Obj(f)) if matches!(self.heap.kind(f), ObjKind::Function(_)) => {
                self.heap.incref(Value::Obj(f));
                self.heap.incref(obj);
                Ok(Value::Obj(self.alloc(ObjKind::BoundMethod {
                    func: f,
                    receiver: obj,
                })))
            }
            Some(Value::Native(n)) if Native::from_id(n) == Some(Native::NamedtupleMake) => {
                self.heap.incref(Value::Obj(class));
                Ok(Value::BoundNative(n, class))
            }
            Some(Value::Native(n)) if is_bound_native(n) => {
                self.heap.incref(obj);
                Ok(Value::BoundNative(n, id))
            }
            Some(v) if self.is_wrapper(v) => self.bind_class_attr(v, Some(obj), class),
            Some(v) => {
                self.heap.incref(v);
                Ok(v)
            }
            None if matches!(self.names.name(name), "count" | "index") => {
                self.unsupported(format!("`{}` of a namedtuple", self.names.name(name)))
            }
            None => {
                let cname = self.class_name(class);
                self.error(format!(
                    "AttributeError: '{cname}' object has no attribute '{}'",
                    self.names.name(name)
                ))
            }
        }
    }

    /// `p.name = v`: a field is read-only, and so is any name on a class with `__slots__`
    /// (the namedtuple class itself has `__slots__ = ()`); a subclass without `__slots__`
    /// gives its instances a `__dict__`, which the model does not make.
    pub(in crate::python) fn namedtuple_set_attr(&mut self, class: ObjId, name: Sym) -> R<()> {
        if self.namedtuple_fields(class).contains(&name) {
            return self.error("AttributeError: can't set attribute");
        }
        let own = |s: &str| match (self.names.lookup(s), self.heap.kind(class)) {
            (Some(s), ObjKind::Class(c)) => c.attrs.iter().any(|(n, _)| *n == s),
            _ => false,
        };
        if own("__new__") || own("__slots__") {
            let cname = self.class_name(class);
            return self.error(format!(
                "AttributeError: '{cname}' object has no attribute '{}'",
                self.names.name(name)
            ));
        }
        self.unsupported("attribute stores on instances of a namedtuple subclass")
    }

    /// `P._make` read from the class itself (bound to it, as a classmethod is).
    pub(in crate::python) fn namedtuple_class_attr(&mut self, class: ObjId, v: Value) -> Value {
        match v {
            Value::Native(n) if Native::from_id(n) == Some(Native::NamedtupleMake) => {
                self.heap.incref(Value::Obj(class));
                Value::BoundNative(n, class)
            }
            v => {
                self.heap.incref(v);
                v
            }
        }
    }

    /// `p.name(args)`: a Python method of the class with `p` first, else what
    /// [`Interpreter::namedtuple_attr`] gives, called.
    pub(in crate::python) fn namedtuple_method(
        &mut self,
        recv: Value,
        class: ObjId,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        if let Some(Value::Obj(f)) = self.class_lookup(class, name)
            && matches!(self.heap.kind(f), ObjKind::Function(_))
        {
            self.heap.incref(recv);
            let mut all = Vec::with_capacity(args.len() + 1);
            all.push(recv);
            all.extend(args);
            return self.call(Value::Obj(f), all, kwargs);
        }
        let f = match self.namedtuple_attr(recv, class, name) {
            Ok(f) => f,
            Err(e) => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                return Err(e);
            }
        };
        let r = self.call(f, args, kwargs);
        self.heap.decref(f);
        r
    }

    /// Calls `_make` (bound to a class), `_replace` or `_asdict` (bound to an instance).
    pub(in crate::python) fn namedtuple_bound_call(
        &mut self,
        n: crate::heap::NativeId,
        receiver: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let r = match Native::from_id(n) {
            Some(Native::NamedtupleMake) => self.namedtuple_make(receiver, &args, &kwargs),
            Some(Native::NamedtupleReplace) if args.is_empty() => {
                self.namedtuple_replace(receiver, &kwargs)
            }
            Some(Native::NamedtupleReplace) => self.error(format!(
                "TypeError: _replace() takes 1 positional argument but {} were given",
                args.len() + 1
            )),
            Some(Native::NamedtupleAsdict) if args.is_empty() && kwargs.is_empty() => {
                self.namedtuple_asdict(receiver)
            }
            _ => self.error("TypeError: _asdict() takes no arguments"),
        };
        self.heap.decref_all(args);
        self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
        r
    }

    /// `P._make(iterable)`: `tuple.__new__(cls, iterable)` (arguments borrowed).
    fn namedtuple_make(&mut self, class: ObjId, p: &[Value], kw: &[(Sym, Value)]) -> R<Value> {
        let ([source], true) = (p, kw.is_empty()) else {
            return self.error("TypeError: _make() takes exactly one argument (the iterable)");
        };
        let items = sequence_items(self, *source)?;
        let n = self.namedtuple_fields(class).len();
        if items.len() != n {
            return self.error(format!(
                "TypeError: Expected {n} arguments, got {}",
                items.len()
            ));
        }
        // `PySequence_Tuple` returns an exact tuple itself, else makes one.
        let exact =
            matches!(source, Value::Obj(o) if matches!(self.heap.kind(*o), ObjKind::Tuple(_)));
        for v in &items {
            self.heap.incref(*v);
        }
        let temporary = (!exact).then(|| {
            for v in &items {
                self.heap.incref(*v);
            }
            self.alloc(ObjKind::Tuple(items.clone()))
        });
        let instance = self.namedtuple_instance(class, items);
        if let Some(t) = temporary {
            self.heap.decref_id(t);
        }
        Ok(instance)
    }

    /// `p._replace(**kw)`: `self._make(map(kw.pop, self._fields, self))`.
    fn namedtuple_replace(&mut self, id: ObjId, kw: &[(Sym, Value)]) -> R<Value> {
        let ObjKind::NamedTuple { class, items } = self.heap.kind(id) else {
            unreachable!("bound to a namedtuple")
        };
        let (class, mut items) = (*class, items.clone());
        let fields = self.namedtuple_fields(class);
        let unknown: Vec<String> = kw
            .iter()
            .filter(|(k, _)| !fields.contains(k))
            .map(|(k, _)| format!("'{}'", self.names.name(*k)))
            .collect();
        for (k, v) in kw {
            if let Some(i) = fields.iter().position(|f| f == k) {
                items[i] = *v;
            }
        }
        let map = ObjKind::Wrapper(WrapperKind::Map, Vec::new());
        self.count_temporary(&map);
        for v in &items {
            self.heap.incref(*v);
        }
        // `PySequence_Tuple(map)` guesses 10 items (a map has no length), fills and shrinks
        // the tuple in place: it is allocated as a 10-tuple and freed as an n-tuple.
        if self.heap.count_tuple_allocation(10) {
            self.collection_due();
        }
        let n = items.len();
        let instance = self.namedtuple_instance(class, items);
        self.heap.count_tuple_deallocation(n);
        self.heap.count_deallocation(&map);
        if !unknown.is_empty() {
            self.heap.decref(instance);
            // `ValueError` up to 3.12, `TypeError` from 3.13.
            let kind = if self.heap.profile.version.minor >= 13 {
                "TypeError"
            } else {
                "ValueError"
            };
            return self.error(format!(
                "{kind}: Got unexpected field names: [{}]",
                unknown.join(", ")
            ));
        }
        Ok(instance)
    }

    /// `p._asdict()`: `dict(zip(self._fields, self))`.
    fn namedtuple_asdict(&mut self, id: ObjId) -> R<Value> {
        let ObjKind::NamedTuple { class, items } = self.heap.kind(id) else {
            unreachable!("bound to a namedtuple")
        };
        let (class, items) = (*class, items.clone());
        let fields = self.namedtuple_fields(class);
        let zip = ObjKind::Wrapper(WrapperKind::Zip, Vec::new());
        self.count_temporary(&zip);
        let pairs: Vec<(Value, Value)> = fields
            .iter()
            .zip(items)
            .map(|(&f, v)| {
                self.heap.incref(v);
                (Value::Str(f), v)
            })
            .collect();
        // `dict(...)` allocates through the type (`builtin_calls::dict_from_type_call`):
        // counted even with the dict free list full.
        self.count_untracked_allocations(1);
        let dict = self.heap.insert(ObjKind::Dict(pairs));
        self.heap.count_deallocation(&zip);
        Ok(Value::Obj(dict))
    }

    /// Counts the allocation of an object the model does not keep.
    fn count_temporary(&mut self, kind: &ObjKind) {
        if self.heap.count_allocation(kind) {
            self.collection_due();
        }
    }

    /// `repr(p)`: `P(x=1, y=2)`.
    pub(in crate::python) fn namedtuple_repr(
        &self,
        class: ObjId,
        items: &[Value],
        depth: u32,
    ) -> String {
        let fields = self.namedtuple_fields(class);
        let body = fields
            .iter()
            .zip(items)
            .map(|(f, v)| format!("{}={}", self.names.name(*f), self.repr_at(*v, depth + 1)))
            .collect::<Vec<_>>()
            .join(", ");
        format!("{}({body})", self.class_name(class))
    }
}
