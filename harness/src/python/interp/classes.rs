//! Class statements, class attribute lookup and `super()`.

use super::{Interpreter, R};
use crate::heap::{Class, ObjId, ObjKind, Sym, Value, WrapperKind};
use crate::python::natives::Native;
use ruff_python_ast::{self as ast};

impl<'a> Interpreter<'a> {
    pub(super) fn exec_class(&mut self, c: &'a ast::StmtClassDef) -> R<()> {
        // Decorator expressions are evaluated before the class body runs (as for `def`).
        let mut decorators = Vec::with_capacity(c.decorator_list.len());
        for dec in &c.decorator_list {
            match self.eval(&dec.expression) {
                Ok(v) => decorators.push(v),
                Err(e) => {
                    self.heap.decref_all(decorators);
                    return Err(e);
                }
            }
        }
        let base = match c.arguments.as_deref() {
            Some(args) if !args.keywords.is_empty() || args.args.len() > 1 => {
                self.refuse_class_arguments(c)
            }
            args => args
                .and_then(|a| a.args.first())
                .map(|b| self.eval(b))
                .transpose(),
        };
        let base = match base {
            Ok(base) => base,
            Err(e) => {
                self.heap.decref_all(decorators);
                return Err(e);
            }
        };
        let bound = self.class_statement(c, decorators, base)?;
        let name = self.names.intern(c.name.as_str());
        self.store_name(name, bound);
        Ok(())
    }

    /// The refusal of a class statement with keywords (`metaclass=`) or several bases,
    /// located at its arguments.
    pub(in crate::python) fn refuse_class_arguments<T>(
        &mut self,
        c: &'a ast::StmtClassDef,
    ) -> R<T> {
        if let Some(args) = c.arguments.as_deref() {
            self.at(args);
        }
        self.unsupported(crate::python::constructs::Construct::ClassKeywordsOrBases.what())
    }

    /// A class statement whose decorators and base (owned) were evaluated: runs its body,
    /// makes the class and applies the decorators; returns the value to bind.
    pub(in crate::python) fn class_statement(
        &mut self,
        c: &'a ast::StmtClassDef,
        decorators: Vec<Value>,
        base: Option<Value>,
    ) -> R<Value> {
        let made = self.class_object(c, base);
        let class = match made {
            Ok(class) => class,
            Err(e) => {
                self.heap.decref_all(decorators);
                return Err(e);
            }
        };
        self.at(c);
        // A class statement is a `CALL` of the C function `__build_class__`: 3.12+ check
        // the eval breaker after it (Python/bytecodes.c `CALL`), so a collection the class's
        // objects scheduled runs before the decorators and the name binding. Measured with a
        // `__slots__` class under thresholds 11 – 17 (`tests/gc_schedule_constructs.rs`).
        self.eval_breaker();
        if !decorators.is_empty() {
            self.stdlib.kw_only_marks.clear();
            let annotated = self.annotated_names(c);
            self.class_annotations.insert(class, annotated);
            let marks = std::mem::take(&mut self.stdlib.kw_only_marks);
            self.stdlib.kw_only_classes.push((class, marks));
        }
        let bound = self.decorate(decorators, Value::Obj(class));
        self.class_annotations.remove(&class);
        self.stdlib.kw_only_classes.retain(|(c, _)| *c != class);
        bound
    }

    /// The names a class body annotates (`x: int`, `y: list = ...`), in order, as
    /// `__annotations__` holds them; `ClassVar[...]` ones are class attributes, not fields.
    fn annotated_names(&mut self, c: &'a ast::StmtClassDef) -> Vec<Sym> {
        let mut names = Vec::new();
        for stmt in &c.body {
            if let ast::Stmt::AnnAssign(a) = stmt
                && let ast::Expr::Name(n) = &*a.target
            {
                let class_var = match &*a.annotation {
                    ast::Expr::Subscript(s) => {
                        matches!(&*s.value, ast::Expr::Name(v) if v.id.as_str() == "ClassVar")
                            || matches!(&*s.value, ast::Expr::Attribute(v) if v.attr.as_str() == "ClassVar")
                    }
                    ast::Expr::Name(v) => v.id.as_str() == "ClassVar",
                    _ => false,
                };
                // `_: KW_ONLY` (dataclasses, 3.10+) is no field: the fields after it are
                // keyword-only (python/dataclasses.rs).
                let kw_only = match &*a.annotation {
                    ast::Expr::Name(v) => v.id.as_str() == "KW_ONLY",
                    ast::Expr::Attribute(v) => v.attr.as_str() == "KW_ONLY",
                    _ => false,
                };
                if kw_only {
                    self.stdlib.kw_only_marks.push(names.len());
                    continue;
                }
                if !class_var {
                    let sym = self.names.intern(n.id.as_str());
                    if !names.contains(&sym) {
                        names.push(sym);
                    }
                }
            }
        }
        names
    }

    /// Runs a class statement's body and makes the class object (a new reference).
    fn class_object(&mut self, c: &'a ast::StmtClassDef, base_value: Option<Value>) -> R<ObjId> {
        let mut base = None;
        let mut named_tuple = false;
        if let Some(args) = &c.arguments
            && let (Some(b), Some(v)) = (args.args.first(), base_value)
        {
            match v {
                Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Class(_)) => {
                    base = Some(id)
                }
                Value::Native(n) if Native::from_id(n) == Some(Native::Object) => {}
                // `class P(typing.NamedTuple)` (python/namedtuples.rs).
                Value::Native(n) if Native::from_id(n) == Some(Native::TypingNamedTuple) => {
                    named_tuple = true
                }
                other => {
                    self.heap.decref(other);
                    self.at(b);
                    return self.unsupported("this base class");
                }
            }
        }
        self.class_statement_prologue(c);
        if let Some(f) = self.frames.last_mut() {
            f.class_namespaces.push(Vec::new());
        }
        let body = self.run_class_body(c);
        let namespace = self
            .frames
            .last_mut()
            .and_then(|f| f.class_namespaces.pop())
            .unwrap_or_default();
        if let Err(e) = body {
            self.heap.decref_all(namespace.into_iter().map(|(_, v)| v));
            if let Some(b) = base {
                self.heap.decref_id(b);
            }
            return Err(e);
        }
        let name = self.names.intern(c.name.as_str());
        if named_tuple {
            let annotated = self.annotated_names(c);
            return self.namedtuple_class_from_body(name, annotated, namespace);
        }
        let class = self.alloc(ObjKind::Class(Class {
            name,
            base,
            attrs: namespace,
        }));
        self.class_statement_epilogue(base, class);
        Ok(class)
    }

    /// What a class statement allocates before its body runs (measured per version): the
    /// namespace dict, and up to 3.10 the frame of the class body, kept as its code object's
    /// zombie frame after the first run.
    fn class_statement_prologue(&mut self, c: &'a ast::StmtClassDef) {
        // The body's function: kept until the next collection on free-threaded builds.
        let top_level = self.frames.last().is_some_and(|f| f.code.is_none());
        if top_level && self.heap.drop_top_level_function() {
            self.collection_due();
        }
        self.count_shape(&ObjKind::Dict(Vec::new()));
        if self.heap.profile.frame_objects && self.class_bodies_run.insert(c as *const _ as usize) {
            self.count_untracked_allocations(1);
        }
    }

    /// The rest of a class statement, around the type object itself: the `type(name, bases,
    /// ns)` argument tuple, the type's dict, MRO and bases tuples, the `__dict__` and
    /// `__weakref__` descriptors (only when the base has none), the base's subclass registry
    /// (a dict created on a class's first subclass, then a weak reference per subclass), and
    /// `init_subclass`'s temporaries (up to 3.10 a 2-tuple, on 3.8 and 3.14+ a bound method, both
    /// left on their free lists). The temporary dicts go back to the free list.
    /// Together: 10 objects for a class with one method on 3.11 – 3.13, 12 on 3.9 – 3.10,
    /// 13 on 3.8 (cold free lists), as measured.
    fn class_statement_epilogue(&mut self, base: Option<ObjId>, class: ObjId) {
        let dict = ObjKind::Dict(Vec::new());
        self.temporary_tuple(3);
        let mro_len = {
            let mut n = 2;
            let mut cur = base;
            while let Some(b) = cur {
                n += 1;
                cur = match self.heap.kind(b) {
                    ObjKind::Class(k) => k.base,
                    _ => None,
                };
            }
            n
        };
        self.count_shape(&dict);
        self.count_shape(&ObjKind::Tuple(vec![Value::None; mro_len]));
        self.count_shape(&ObjKind::Tuple(vec![Value::None]));
        let slots = self.own_slot_names(class);
        // Descriptors the collector tracks, in the class's cycle (`heap/class_cycles.rs`).
        let mut tracked_descriptors = 0;
        if let Some(names) = &slots {
            // `type_new` sorts the slot names in a new list (`PyList_New`, `PyList_Sort`,
            // `PyList_AsTuple`, Objects/typeobject.c) and drops it: a list from the list free
            // list, counted when that is empty. Measured with two equal class statements right
            // after `gc.collect()` on 3.8.18 – 3.15.2: with `__slots__` the first costs one
            // more over the second than without (3.8.18: `('a', 'b')` 14 then 9, `pass` 12
            // then 8), also for `__slots__ = ()`.
            let sorted_names = ObjKind::List(Vec::new());
            self.count_shape(&sorted_names);
            self.heap.count_deallocation(&sorted_names);
            let members = self.slot_descriptors(names);
            tracked_descriptors = members.saturating_sub(u64::from(!names.is_empty()));
            if members > 0 {
                self.count_untracked_allocations(members);
            }
        }
        match base {
            None => {
                // `__slots__` replaces the `__dict__`/`__weakref__` descriptors (counted above).
                let descriptors = if slots.is_none() {
                    self.heap.profile.new_class_descriptors
                } else {
                    0
                };
                tracked_descriptors += descriptors;
                if descriptors > 0 {
                    self.count_untracked_allocations(descriptors);
                }
            }
            Some(b) => {
                if self.classes_with_subclasses.insert(b) {
                    self.count_untracked_allocations(1);
                }
            }
        }
        self.count_untracked_allocations(1);
        // `type_new_set_names` (Objects/typeobject.c) walks a `PyDict_Copy` of the new type's
        // dict and drops it: a third dict, new when the dict free list is empty. Measured from
        // empty free lists (calibration probe): the first class statement counts one more than
        // the namespace and type dicts alone on 3.10, 3.12 and 3.13; with one dict on the free
        // list beforehand, one less.
        self.count_shape(&dict);
        self.heap.count_deallocation(&dict);
        // `init_subclass`, last in `type_new`: up to 3.10 `super(type, type)` packs its
        // arguments in a temporary 2-tuple (see `GcProfile::init_subclass_super_tuple`), then
        // the `__init_subclass__` lookup binds a method (3.8 and 3.14+: from its free list).
        if self.heap.profile.init_subclass_super_tuple {
            self.temporary_tuple(2);
        }
        if self.heap.profile.method_free_list && self.heap.count_temporary_method() {
            self.collection_due();
        }
        // The namespace dict goes back to the dict free list.
        self.heap.count_deallocation(&dict);
        self.enter_class_cycle(class, tracked_descriptors);
    }

    /// Puts the new class in its reference cycle (`heap/class_cycles.rs`) with the tracked
    /// objects the model does not keep: the MRO and bases tuples, the descriptors, and the
    /// type's dict where the collector tracks it (it holds a descriptor or an object, or
    /// always from 3.14). Measured with `gc.collect()` after dropping classes on 3.8.18 –
    /// 3.15.2 (`tests/gc_schedule_classes.rs`).
    fn enter_class_cycle(&mut self, class: ObjId, tracked_descriptors: u64) {
        let attrs_hold_objects = match self.heap.kind(class) {
            ObjKind::Class(c) => c.attrs.iter().any(|(_, v)| match v {
                // A tuple of strings (`__slots__`) is untracked like any atomic tuple.
                Value::Obj(id) => match self.heap.kind(*id) {
                    ObjKind::Tuple(items) => items.iter().any(|i| matches!(i, Value::Obj(_))),
                    _ => true,
                },
                _ => false,
            }),
            _ => false,
        };
        let dict_tracked = tracked_descriptors > 0
            || attrs_hold_objects
            || self.heap.profile.class_dict_always_tracked;
        let hidden = 2 + tracked_descriptors + u64::from(dict_tracked);
        self.heap.enter_class_cycle(class, hidden);
    }

    /// The names of a class's own `__slots__` (a string, or a tuple or list of strings), or
    /// `None` when its body assigns none.
    fn own_slot_names(&self, class: ObjId) -> Option<Vec<String>> {
        let ObjKind::Class(cls) = self.heap.kind(class) else {
            return None;
        };
        let value = cls
            .attrs
            .iter()
            .find(|(n, _)| self.names.name(*n) == "__slots__")?
            .1;
        let items = match value {
            Value::Str(s) => vec![Value::Str(s)],
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => items.clone(),
                _ => return None,
            },
            _ => return None,
        };
        Some(
            items
                .iter()
                .filter_map(|v| match v {
                    Value::Str(s) => Some(self.names.name(*s).to_string()),
                    _ => None,
                })
                .collect(),
        )
    }

    /// What `type_new` makes for `__slots__` (Objects/typeobject.c `type_new_descriptors`,
    /// `type_new_copy_slots`): a member descriptor per name, the `__dict__`/`__weakref__`
    /// getset descriptors only where named, and the sorted copy of the names (`ht_slots`, a
    /// new tuple unless empty). Measured on 3.8 – 3.15: a class statement with n ≥ 1 slot
    /// names costs n + 1 more than one with `__slots__ = ()`.
    fn slot_descriptors(&self, names: &[String]) -> u64 {
        let special = |n: &String| n == "__dict__" || n == "__weakref__";
        let members = names.iter().filter(|n| !special(n)).count() as u64;
        let getsets = names.iter().filter(|n| special(n)).count() as u64
            * (self.heap.profile.new_class_descriptors / 2);
        members + getsets + u64::from(!names.is_empty())
    }

    /// Instances of `class` have no `__dict__`: it and each of its bases define `__slots__`
    /// without `"__dict__"` (otherwise `type_new` gives them a dict offset). Matters where
    /// instance attributes live in a separate dict object (≤ 3.10).
    pub(in crate::python) fn instances_without_dict(&self, class: ObjId) -> bool {
        let mut cur = Some(class);
        while let Some(c) = cur {
            match self.own_slot_names(c) {
                Some(names) if !names.iter().any(|n| n == "__dict__") => {}
                _ => return false,
            }
            cur = match self.heap.kind(c) {
                ObjKind::Class(k) => k.base,
                _ => None,
            };
        }
        true
    }

    /// Counts an object of this shape (through its free list) that the model does not keep.
    pub(super) fn count_shape(&mut self, kind: &ObjKind) {
        if self.heap.count_allocation(kind) {
            self.collection_due();
        }
    }

    /// Looks a name up in a class and its bases (borrowed value).
    pub(in crate::python) fn class_lookup(&self, class: ObjId, name: Sym) -> Option<Value> {
        let mut cur = Some(class);
        while let Some(c) = cur {
            let ObjKind::Class(cls) = self.heap.kind(c) else {
                return None;
            };
            if let Some((_, v)) = cls.attrs.iter().find(|(n, _)| *n == name) {
                return Some(*v);
            }
            cur = cls.base;
        }
        None
    }

    /// `super().name(...)`: looked up after the class that defines the running method.
    pub(super) fn call_super(
        &mut self,
        proxy: ObjId,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let self_sym = self.names.intern("__self__");
        let start_sym = self.names.intern("__thisclass__");
        let (Some(receiver), Some(Value::Obj(start))) = (
            self.instance_attr(proxy, self_sym),
            self.instance_attr(proxy, start_sym),
        ) else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let base = match self.heap.kind(start) {
            ObjKind::Class(c) => c.base,
            _ => None,
        };
        if receiver == Value::None {
            // An unbound `super(cls)`: no MRO to search (`super_getattro`).
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            let name = self.names.name(name).to_string();
            return self.error(format!(
                "AttributeError: 'super' object has no attribute '{name}'"
            ));
        }
        let found = base.and_then(|b| self.class_lookup(b, name));
        let wrapped = match found {
            Some(Value::Obj(w)) => match self.heap.kind(w) {
                ObjKind::Wrapper(
                    kind @ (WrapperKind::ClassMethod | WrapperKind::StaticMethod),
                    items,
                ) => items
                    .first()
                    .map(|&f| (*kind == WrapperKind::ClassMethod, f)),
                _ => None,
            },
            _ => None,
        };
        if let Some((class_method, f)) = wrapped {
            // `classmethod.__get__(obj, type(obj))` binds the class (the receiver itself
            // when `super(B, cls)` is used in a classmethod); `staticmethod` binds nothing.
            let mut all = Vec::with_capacity(args.len() + 1);
            if class_method {
                let cls = match receiver {
                    Value::Obj(r) if matches!(self.heap.kind(r), ObjKind::Class(_)) => receiver,
                    _ => self.class_of(receiver).map_or(receiver, Value::Obj),
                };
                self.heap.incref(cls);
                all.push(cls);
            }
            all.extend(args);
            self.heap.incref(f);
            let r = self.call(f, all, kwargs);
            self.heap.decref(f);
            return r;
        }
        match found {
            Some(Value::Obj(f)) if matches!(self.heap.kind(f), ObjKind::Function(_)) => {
                self.heap.incref(receiver);
                let mut all = vec![receiver];
                all.extend(args);
                self.call_function(f, all, kwargs)
            }
            _ if self.names.name(name) == "__init__"
                && matches!(receiver, Value::Obj(r) if matches!(self.heap.kind(r), ObjKind::Exception(_))) =>
            {
                // `BaseException.__init__`: the arguments become `args`.
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                if let Value::Obj(r) = receiver {
                    self.exception_init(r, args);
                }
                Ok(Value::None)
            }
            _ => {
                // torch's own `__init__`: a data class keeps what it is given
                // (`data_loader.rs`); Module's and Function's track nothing.
                let ran = match (receiver, base) {
                    (Value::Obj(r), Some(b)) if self.names.name(name) == "__init__" => {
                        self.data_base_init(r, b, &args, &kwargs)
                    }
                    _ => Ok(false),
                };
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                ran?;
                if self.names.name(name) == "__init__" {
                    Ok(Value::None)
                } else {
                    self.unsupported(format!("super().{}()", self.names.name(name)))
                }
            }
        }
    }

    /// `super()` in a method: a proxy (a GC object, as CPython's) for the running
    /// method's class and its first argument.
    pub(in crate::python) fn make_super(&mut self) -> R<Value> {
        let Some(frame) = self.frames.last() else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let Some(code) = frame.code else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let first = self.codes.get(code).params.first().map(|p| p.name);
        // The first argument is a local, or a cell when a closure of the method uses it.
        let receiver = first.and_then(|n| {
            self.local_by_name(frame, n).or_else(|| {
                match frame.cells.get(&n).map(|c| self.heap.kind(*c)) {
                    Some(ObjKind::Cell(Some(v))) => Some(*v),
                    _ => None,
                }
            })
        });
        let Some(receiver) = receiver else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let receiver_id = receiver.obj().unwrap_or(ObjId(0));
        let class = match self.heap.kind(receiver_id) {
            ObjKind::Instance { class, .. } => class,
            ObjKind::Exception(e) => &e.class,
            // A classmethod's `cls`: `super()` there is `super(__class__, cls)`.
            ObjKind::Class(_) => &receiver_id,
            _ => return self.error("RuntimeError: super(): __class__ cell not found"),
        };
        // The class that defines the running method: walk the receiver's MRO.
        let mut cur = Some(*class);
        let mut defining = *class;
        while let Some(c) = cur {
            let ObjKind::Class(cls) = self.heap.kind(c) else {
                break;
            };
            // The method itself, or the function a `classmethod`/`staticmethod` wraps.
            let runs_code = |v: Value| match v {
                Value::Obj(f) => match self.heap.kind(f) {
                    ObjKind::Function(func) => func.code == code,
                    ObjKind::Wrapper(WrapperKind::ClassMethod | WrapperKind::StaticMethod, w) => {
                        matches!(w.first(), Some(Value::Obj(g)) if matches!(self.heap.kind(*g), ObjKind::Function(func) if func.code == code))
                    }
                    _ => false,
                },
                _ => false,
            };
            if cls.attrs.iter().any(|(_, v)| runs_code(*v)) {
                defining = c;
                break;
            }
            cur = cls.base;
        }
        self.super_proxy(defining, receiver)
    }

    /// `super(cls, obj)`: a proxy (a GC object, as CPython's) that looks names up after
    /// `cls` in `obj`'s class chain.
    pub(in crate::python) fn super_proxy(&mut self, defining: ObjId, receiver: Value) -> R<Value> {
        self.heap.incref(receiver);
        self.heap.incref(Value::Obj(defining));
        let proxy = self.new_torch_instance(
            crate::python::torchlib::TorchClass::Super,
            vec![
                ("__self__", receiver),
                ("__thisclass__", Value::Obj(defining)),
            ],
        )?;
        Ok(Value::Obj(proxy))
    }

    pub(in crate::python) fn class_name(&self, class: ObjId) -> String {
        match self.heap.kind(class) {
            ObjKind::Class(c) => self.names.name(c.name).to_string(),
            _ => "object".to_string(),
        }
    }
}
