//! The `__init__` that `@dataclass` generates (Lib/dataclasses.py `_init_fn`): binds every
//! field from the arguments, its default or its factory, with CPython's error texts.

use super::dataclasses::*;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
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
    pub(super) fn init_qualname(&self, instance: Value) -> String {
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
