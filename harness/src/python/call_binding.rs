//! Matching a call's arguments to a function's parameters (CPython's
//! `initialize_locals`): positional, keyword, positional-only and keyword-only parameters,
//! defaults, `*args` (a new tuple, or the empty-tuple singleton when nothing is left over)
//! and `**kwargs` (always a new dict).

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl<'a> Interpreter<'a> {
    /// Binds owned arguments; returns the values in the order of the code's local
    /// parameters: the named ones, then `*args`, then `**kwargs`.
    pub(super) fn bind_general(
        &mut self,
        func: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Vec<Value>> {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let defaults = f.defaults.clone();
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(f.code);
        let fname = self.names.name(code.name).to_string();
        let n = code.params.len();
        let positional_count = code.params.iter().filter(|p| !p.keyword_only).count();
        let mut args = args;
        let extra: Vec<Value> = if args.len() > positional_count {
            if code.vararg.is_none() {
                let given = args.len();
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                return self.error(format!(
                    "TypeError: {fname}() takes {positional_count} positional arguments but {given} were given"
                ));
            }
            args.split_off(positional_count)
        } else {
            Vec::new()
        };
        let mut slots: Vec<Option<Value>> = vec![None; n];
        for (i, v) in args.into_iter().enumerate() {
            slots[i] = Some(v);
        }
        let mut extra_kw: Vec<(Sym, Value)> = Vec::new();
        let mut failure: Option<String> = None;
        for (name, v) in kwargs {
            let index = code
                .params
                .iter()
                .enumerate()
                .position(|(i, p)| p.name == name && i >= code.posonly);
            match index {
                Some(i) if slots[i].is_none() => slots[i] = Some(v),
                Some(_) => {
                    self.heap.decref(v);
                    failure.get_or_insert_with(|| {
                        format!(
                            "TypeError: {fname}() got multiple values for argument '{}'",
                            self.names.name(name)
                        )
                    });
                }
                None if code.kwarg.is_some() => extra_kw.push((name, v)),
                None => {
                    self.heap.decref(v);
                    failure.get_or_insert_with(|| {
                        format!(
                            "TypeError: {fname}() got an unexpected keyword argument '{}'",
                            self.names.name(name)
                        )
                    });
                }
            }
        }
        if let Some(message) = failure {
            self.heap.decref_all(slots.into_iter().flatten());
            self.heap.decref_all(extra);
            self.heap.decref_all(extra_kw.into_iter().map(|(_, v)| v));
            return self.error(message);
        }
        // Defaults belong to the parameters that have one, in order.
        let with_default: Vec<usize> = (0..n)
            .filter(|&i| code.params[i].default.is_some())
            .collect();
        let mut out = Vec::with_capacity(n + 2);
        let mut missing = None;
        for (i, slot) in slots.into_iter().enumerate() {
            match slot {
                Some(v) => out.push(v),
                None => match with_default.iter().position(|&j| j == i) {
                    Some(k) if k < defaults.len() => {
                        self.heap.incref(defaults[k]);
                        out.push(defaults[k]);
                    }
                    _ => {
                        missing.get_or_insert(code.params[i].name);
                    }
                },
            }
        }
        if let Some(name) = missing {
            self.heap.decref_all(out);
            self.heap.decref_all(extra);
            self.heap.decref_all(extra_kw.into_iter().map(|(_, v)| v));
            return self.error(format!(
                "TypeError: {fname}() missing required argument: '{}'",
                self.names.name(name)
            ));
        }
        if code.vararg.is_some() {
            let tuple = if extra.is_empty() {
                super::natives::constant_tuple(self, Vec::new())
            } else {
                Value::Obj(self.alloc(ObjKind::Tuple(extra)))
            };
            out.push(tuple);
        }
        if code.kwarg.is_some() {
            let dict = self.alloc(ObjKind::Dict(Vec::new()));
            for (k, v) in extra_kw {
                self.dict_set(dict, Value::Str(k), v);
            }
            out.push(Value::Obj(dict));
        }
        Ok(out)
    }

    /// `f(**mapping)`: the mapping's items as keyword arguments (new references).
    pub(super) fn keyword_items(&mut self, mapping: Value) -> R<Vec<(Sym, Value)>> {
        let items = match mapping {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Dict(items) => items.clone(),
                _ => return self.unsupported("`**` unpacking of this object"),
            },
            _ => return self.error("TypeError: argument after ** must be a mapping"),
        };
        let mut out = Vec::with_capacity(items.len());
        for (k, v) in items {
            let Value::Str(name) = k else {
                self.heap.decref_all(out.into_iter().map(|(_, v)| v));
                return self.error("TypeError: keywords must be strings");
            };
            self.heap.incref(v);
            out.push((name, v));
        }
        Ok(out)
    }
}
