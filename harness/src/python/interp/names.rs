//! Name binding: loads, stores and deletes of names by scope, and assignment
//! targets (unpacking, subscripts, attributes).

use super::{Interpreter, R};
use crate::heap::{ObjKind, Sym, Value};
use crate::python::natives;
use crate::python::scope::{NameScope, symbol};
use ruff_python_ast::Expr;

impl<'a> Interpreter<'a> {
    // ----- names ----------------------------------------------------------------------------

    fn scope_of(&self, name: Sym) -> Option<NameScope> {
        let frame = self.frames.last()?;
        let code = frame.code?;
        self.codes.get(code).scopes.get(&name).copied()
    }

    /// A plain local of `frame` by name (a search of its code's slot table), for readers
    /// that have a name rather than a slot.
    pub(in crate::python) fn local_by_name(
        &self,
        frame: &super::Frame,
        name: Sym,
    ) -> Option<Value> {
        let code = frame.code?;
        frame.locals.by_name(&self.codes.get(code).varnames, name)
    }

    /// A compiled `LoadFast`: the local in `slot` of the running frame.
    #[inline]
    pub(in crate::python) fn load_fast(&mut self, slot: u32, name: Sym) -> R<Value> {
        let frame = self.frames.last().expect("a frame");
        match frame.locals.get(slot) {
            Some(v) => {
                self.heap.incref(v);
                Ok(v)
            }
            None => self.unbound_local(name),
        }
    }

    /// A compiled `LoadDeref`: the contents of the running frame's cell for `name`.
    pub(in crate::python) fn load_deref(&mut self, name: Sym) -> R<Value> {
        let frame = self.frames.last().expect("a frame");
        match frame.cells.get(&name).map(|c| self.heap.kind(*c)) {
            Some(ObjKind::Cell(Some(v))) => {
                let v = *v;
                self.heap.incref(v);
                Ok(v)
            }
            _ => self.unbound_free(name),
        }
    }

    /// A compiled `LoadGlobal`: a module global, else a builtin.
    pub(in crate::python) fn load_global(&mut self, name: Sym) -> R<Value> {
        match self
            .globals
            .get(&name)
            .copied()
            .or_else(|| self.builtin(name))
        {
            Some(v) => {
                self.heap.incref(v);
                Ok(v)
            }
            None => self.undefined_name(name),
        }
    }

    pub(in crate::python) fn load_name(&mut self, name: Sym) -> R<Value> {
        let frame = self.frames.last().expect("a frame");
        if let Some(ns) = frame.class_namespaces.last()
            && let Some((_, v)) = ns.iter().rev().find(|(n, _)| *n == name)
        {
            let v = *v;
            self.heap.incref(v);
            return Ok(v);
        }
        let found = match self.scope_of(name) {
            Some(NameScope::Local(slot)) => match frame.locals.get(slot) {
                Some(v) => Some(v),
                None => return self.unbound_local(name),
            },
            Some(NameScope::Cell) | Some(NameScope::Free) => {
                let cell = frame.cells.get(&name).copied();
                match cell.map(|c| self.heap.kind(c)) {
                    Some(ObjKind::Cell(Some(v))) => Some(*v),
                    _ => return self.unbound_free(name),
                }
            }
            Some(NameScope::Global) | None => {
                // Class bodies and module code also see their frame's cells (a class inside a function).
                if frame.code.is_some() && !frame.class_namespaces.is_empty() {
                    if let Some(v) = self.local_by_name(frame, name) {
                        Some(v)
                    } else if let Some(ObjKind::Cell(Some(v))) =
                        frame.cells.get(&name).map(|c| self.heap.kind(*c))
                    {
                        Some(*v)
                    } else {
                        self.globals.get(&name).copied()
                    }
                } else {
                    self.globals.get(&name).copied()
                }
            }
        };
        let v = match found.or_else(|| self.builtin(name)) {
            Some(v) => v,
            None => return self.undefined_name(name),
        };
        self.heap.incref(v);
        Ok(v)
    }

    // The errors of `load_name`, out of line so that a successful load (every name a
    // workload reads) does not pay for formatting them.

    #[cold]
    #[inline(never)]
    fn unbound_local(&self, name: Sym) -> R<Value> {
        self.error(format!(
            "UnboundLocalError: local variable '{}' referenced before assignment",
            self.names.name(name)
        ))
    }

    #[cold]
    #[inline(never)]
    fn unbound_free(&self, name: Sym) -> R<Value> {
        self.error(format!(
            "NameError: free variable '{}' referenced before assignment",
            self.names.name(name)
        ))
    }

    #[cold]
    #[inline(never)]
    fn undefined_name(&self, name: Sym) -> R<Value> {
        if crate::python::builtin_conversions::is_python_builtin(self.names.name(name))
            && !self.builtin_missing_in_version(self.names.name(name))
        {
            let text = format!("the builtin `{}`", self.names.name(name));
            return self.unsupported(text);
        }
        self.error(format!(
            "NameError: name '{}' is not defined",
            self.names.name(name)
        ))
    }

    /// Binds a name in the current scope, taking over the reference; drops the old value.
    pub(in crate::python) fn store_name(&mut self, name: Sym, value: Value) {
        let scope = self.scope_of(name);
        let frame = self.frames.last_mut().expect("a frame");
        let old = if let Some(ns) = frame.class_namespaces.last_mut() {
            match ns.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                None => {
                    ns.push((name, value));
                    None
                }
            }
        } else {
            match scope {
                Some(NameScope::Local(slot)) => frame.locals.set(slot, value),
                Some(NameScope::Cell) | Some(NameScope::Free) => {
                    let cell = frame.cells.get(&name).copied();
                    match cell {
                        Some(c) => match self.heap.kind_mut(c) {
                            ObjKind::Cell(slot) => slot.replace(value),
                            _ => None,
                        },
                        None => None,
                    }
                }
                Some(NameScope::Global) | None => self.globals.insert(name, value),
            }
        };
        if let Some(old) = old {
            self.heap.decref(old);
        }
    }

    /// A compiled `StoreFast`: binds the running frame's local in `slot`, taking over the
    /// reference; the value it replaces is released after the store, as by `store_name`.
    #[inline]
    pub(in crate::python) fn store_fast(&mut self, slot: u32, value: Value) {
        let frame = self.frames.last_mut().expect("a frame");
        if let Some(old) = frame.locals.set(slot, value) {
            self.heap.decref(old);
        }
    }

    /// A compiled `DeleteFast`: unbinds the running frame's local in `slot` (the error of
    /// `delete_name` when it is unbound).
    pub(in crate::python) fn delete_fast(&mut self, slot: u32, name: Sym) -> R<()> {
        let frame = self.frames.last_mut().expect("a frame");
        match frame.locals.take(slot) {
            Some(v) => {
                self.heap.decref(v);
                Ok(())
            }
            None => self.error(format!(
                "NameError: name '{}' is not defined",
                self.names.name(name)
            )),
        }
    }

    fn delete_name(&mut self, name: Sym) -> R<()> {
        match self.take_name(name) {
            Some(v) => {
                self.heap.decref(v);
                Ok(())
            }
            None => self.error(format!(
                "NameError: name '{}' is not defined",
                self.names.name(name)
            )),
        }
    }

    /// Unbinds a name in the current scope and hands its reference to the caller.
    pub(in crate::python) fn take_name(&mut self, name: Sym) -> Option<Value> {
        let scope = self.scope_of(name);
        let frame = self.frames.last_mut().expect("a frame");
        if let Some(ns) = frame.class_namespaces.last_mut() {
            return ns
                .iter()
                .position(|(n, _)| *n == name)
                .map(|i| ns.remove(i).1);
        }
        match scope {
            Some(NameScope::Local(slot)) => frame.locals.take(slot),
            Some(NameScope::Cell) | Some(NameScope::Free) => {
                match frame.cells.get(&name).copied() {
                    Some(c) => match self.heap.kind_mut(c) {
                        ObjKind::Cell(slot) => slot.take(),
                        _ => None,
                    },
                    None => None,
                }
            }
            Some(NameScope::Global) | None => self.globals.remove(&name),
        }
    }

    // ----- targets --------------------------------------------------------------------------

    pub(in crate::python) fn store(&mut self, target: &'a Expr, value: Value) -> R<()> {
        match target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.store_name(sym, value);
                Ok(())
            }
            Expr::Attribute(a) => {
                let obj = match self.eval(&a.value) {
                    Ok(o) => o,
                    Err(e) => {
                        self.heap.decref(value);
                        return Err(e);
                    }
                };
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let r = self.set_attr(obj, attr, value);
                self.heap.decref(obj);
                r
            }
            Expr::Subscript(s) => {
                let obj = self
                    .eval(&s.value)
                    .inspect_err(|_| self.heap.decref(value))?;
                natives::store_evaluating_index(self, obj, &s.slice, value)
            }
            Expr::Tuple(t) => self.unpack(&t.elts, value),
            Expr::List(t) => self.unpack(&t.elts, value),
            _ => {
                self.heap.decref(value);
                self.at(target);
                self.unsupported("this assignment target")
            }
        }
    }

    fn unpack(&mut self, targets: &'a [Expr], value: Value) -> R<()> {
        let items = self.unpack_items(targets, value)?;
        if let Some(star) = targets.iter().position(Expr::is_starred_expr) {
            return self.unpack_starred(targets, star, items);
        }
        let items = self.exact_items(targets.len(), items)?;
        for (t, v) in targets.iter().zip(items) {
            self.store(t, v)?;
        }
        Ok(())
    }

    /// The items of `value` (owned, released) for unpacking into `targets` (none starred),
    /// exactly as many as there are targets (`UNPACK_SEQUENCE`'s error otherwise).
    pub(in crate::python) fn unpack_exact(
        &mut self,
        targets: &[Expr],
        value: Value,
    ) -> R<Vec<Value>> {
        let items = self.unpack_items(targets, value)?;
        self.exact_items(targets.len(), items)
    }

    fn exact_items(&mut self, targets: usize, items: Vec<Value>) -> R<Vec<Value>> {
        if items.len() != targets {
            let n = items.len();
            self.heap.decref_all(items);
            return self.error(format!(
                "ValueError: expected {targets} values to unpack, got {n}"
            ));
        }
        Ok(items)
    }

    /// The items an unpacking of `value` (owned, released) reads.
    fn unpack_items(&mut self, targets: &[Expr], value: Value) -> R<Vec<Value>> {
        crate::python::return_types::unpack_iterator(self, value);
        let starred = targets.iter().any(Expr::is_starred_expr);
        if !starred && self.heap.unpack_sequence(targets.as_ptr() as usize, value) {
            self.collection_due();
        }
        let items = match value {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items)
                | ObjKind::List(items)
                | ObjKind::StructSeq { items, .. }
                | ObjKind::NamedTuple { items, .. } => {
                    let items = items.clone();
                    for v in &items {
                        self.heap.incref(*v);
                    }
                    self.heap.decref(value);
                    items
                }
                // Any other iterable (`images, labels = zip(*batch)`) is read to its end,
                // as CPython's `UNPACK_SEQUENCE` does.
                _ => {
                    let read = self.collect_items(value);
                    self.heap.decref(value);
                    read?
                }
            },
            Value::Str(text) => self.unpack_str(text),
            _ => return self.error("TypeError: cannot unpack a non-sequence"),
        };
        Ok(items)
    }

    pub(super) fn delete(&mut self, target: &'a Expr) -> R<()> {
        self.at(target);
        match target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.delete_name(sym)
            }
            Expr::Attribute(a) => {
                let obj = self.eval(&a.value)?;
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let old = self.take_attr(obj, attr);
                self.heap.decref(obj);
                match old {
                    Some(v) => {
                        self.heap.decref(v);
                        Ok(())
                    }
                    None => self.error(format!("AttributeError: {}", self.names.name(attr))),
                }
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                natives::del_evaluating_index(self, obj, &s.slice)
            }
            Expr::Tuple(t) => {
                for e in &t.elts {
                    self.delete(e)?;
                }
                Ok(())
            }
            _ => self.unsupported("this `del` target"),
        }
    }
}
