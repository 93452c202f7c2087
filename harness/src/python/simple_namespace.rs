//! `types.SimpleNamespace`: the config object reports pass around (`cfg =
//! SimpleNamespace(lr=1e-3, model=net)`). CPython's `namespace_new` (Objects/namespaceobject.c)
//! allocates a GC object and at once its `__dict__` (`PyDict_New`), and `namespace_init`
//! copies the keywords into that dict; a call with keywords also makes the keyword dict of
//! `_PyObject_MakeTpCall`, freed when the call returns. The model makes the namespace an
//! instance of one hidden class (`types.SimpleNamespace`, made once, uncounted like every
//! builtin type) whose attributes always live in that dict, so attribute reads, stores,
//! `del`, `vars()` and `__dict__` are the instance paths. `==` compares the two dicts when
//! both sides are namespaces (`namespace_richcompare`), the type is unhashable (a class
//! with `tp_richcompare` and no `tp_hash`), and `repr` is `namespace(a=1, ...)` with
//! `namespace(...)` for a namespace already being printed (`Py_ReprEnter`).
//!
//! `str()` (and so `print` and f-strings) is the `repr`: the type has no `tp_str`.
//!
//! Not modelled (refused or noted where used): subclassing (the name is a builtin
//! function here), and a positional argument other than a dict (3.13+ also takes an
//! iterable of pairs).

use super::interp::{Interpreter, R};
use crate::heap::{Attrs, Class, ObjId, ObjKind, Sym, Value};

impl Interpreter<'_> {
    /// The hidden class of namespaces, made the first time one is needed.
    fn namespace_class(&mut self) -> ObjId {
        if let Some(c) = self.stdlib.namespace_class {
            return c;
        }
        let name = self.names.intern("types.SimpleNamespace");
        let hash = self.names.intern("__hash__");
        let c = self.heap.insert_uncounted(ObjKind::Class(Class {
            name,
            base: None,
            // No `tp_hash` beside `tp_richcompare`: instances are unhashable.
            attrs: vec![(hash, Value::None)],
        }));
        self.stdlib.namespace_class = Some(c);
        c
    }

    /// Whether `class` is the class of namespaces.
    pub(in crate::python) fn is_namespace_class(&self, class: ObjId) -> bool {
        self.stdlib.namespace_class == Some(class)
    }

    /// The attribute dict of `v` when it is a namespace.
    pub(in crate::python) fn namespace_dict(&self, v: Value) -> Option<ObjId> {
        let Value::Obj(id) = v else { return None };
        match self.heap.kind(id) {
            ObjKind::Instance {
                class,
                attrs: Attrs::Dict(Some(d)),
            } if self.is_namespace_class(*class) => Some(*d),
            _ => None,
        }
    }

    /// `types.SimpleNamespace(*p, **kw)` (arguments borrowed).
    pub(in crate::python) fn new_namespace(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let minor = self.heap.profile.version.minor;
        let source = match p {
            [] => None,
            [_] if minor < 13 => return self.error("TypeError: no positional arguments expected"),
            [Value::Obj(d)] if matches!(self.heap.kind(*d), ObjKind::Dict(_)) => Some(*d),
            [_] => {
                return self.unsupported(
                    "`types.SimpleNamespace(iterable)`: a positional argument other than a dict",
                );
            }
            _ => {
                return self.error(format!(
                    "TypeError: SimpleNamespace expected at most 1 positional argument, got {}",
                    p.len()
                ));
            }
        };
        let pairs: Vec<(Value, Value)> = match source {
            Some(d) => match self.heap.kind(d) {
                ObjKind::Dict(items) => items.clone(),
                _ => unreachable!("checked above"),
            },
            None => Vec::new(),
        };
        if pairs.iter().any(|(k, _)| !matches!(k, Value::Str(_))) {
            return self.error("TypeError: keywords must be strings");
        }
        // `_PyObject_MakeTpCall`'s keyword dict lives for the call.
        self.varargs_call_begin(0, kw.len());
        let class = self.namespace_class();
        self.heap.incref(Value::Obj(class));
        let ns = self.alloc(ObjKind::Instance {
            class,
            attrs: Attrs::Dict(None),
        });
        let dict = self.alloc(ObjKind::Dict(Vec::new()));
        if let ObjKind::Instance { attrs, .. } = self.heap.kind_mut(ns) {
            *attrs = Attrs::Dict(Some(dict));
        }
        for (k, v) in pairs
            .into_iter()
            .chain(kw.iter().map(|&(s, v)| (Value::Str(s), v)))
        {
            self.heap.incref(k);
            self.heap.incref(v);
            self.dict_set(dict, k, v);
        }
        self.varargs_call_end(0, kw.len());
        Ok(Value::Obj(ns))
    }

    /// `a == b` when `a` is a namespace: the dicts compared if `b` is one too, else identity
    /// (`NotImplemented` both ways).
    pub(in crate::python) fn namespace_eq(&self, a: Value, b: Value) -> Option<bool> {
        let da = self.namespace_dict(a)?;
        Some(match self.namespace_dict(b) {
            Some(db) => self.values_equal(Value::Obj(da), Value::Obj(db)),
            None => a == b,
        })
    }

    /// `repr(ns)` at `depth`: `namespace(k=v, ...)`, or `namespace(...)` when `ns` is being
    /// printed already (a namespace that holds itself).
    pub(in crate::python) fn namespace_repr(&self, ns: ObjId, depth: u32) -> Option<String> {
        let d = self.namespace_dict(Value::Obj(ns))?;
        if self.stdlib.repr_active.borrow().contains(&ns) {
            return Some("namespace(...)".to_string());
        }
        let ObjKind::Dict(items) = self.heap.kind(d) else {
            return None;
        };
        self.stdlib.repr_active.borrow_mut().push(ns);
        let body: Vec<String> = items
            .iter()
            .map(|&(k, v)| {
                let key = match k {
                    Value::Str(s) => self.names.name(s).to_string(),
                    other => self.repr_at(other, depth + 1),
                };
                format!("{key}={}", self.repr_at(v, depth + 1))
            })
            .collect();
        self.stdlib.repr_active.borrow_mut().pop();
        Some(format!("namespace({})", body.join(", ")))
    }
}
