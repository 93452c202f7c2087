//! The introspection half of `gc`: `get_objects`, `get_referrers`, `get_referents` and
//! `is_tracked`, the functions users write leak hunts with (`for obj in gc.get_objects():
//! if torch.is_tensor(obj): ...`). They read the model's generation lists and `tp_traverse`
//! edges, so what they see is what the collector sees: tracked objects only, in CPython's
//! order (youngest generation first, oldest member first within each), and the lists they
//! return hold real references, keeping every object in them alive while they live.

use super::interp::{Interpreter, R};
use super::natives::Args;
use crate::heap::{Attrs, ObjId, ObjKind, UNTRACKED, Value, WrapperKind};

/// CPython's `NUM_GENERATIONS`: the generations `get_objects` and `get_referrers` walk (the
/// permanent one of `gc.freeze()` is not among them).
const GENERATIONS: u8 = 3;

impl<'a> Interpreter<'a> {
    /// `gc.get_objects(generation=None)`: a new list of every tracked object (of one
    /// generation if given). As `gc_get_objects_impl`, the list is made first (an allocation
    /// that may run a collection) and is left out of itself.
    pub(super) fn gc_get_objects(&mut self, a: &Args) -> R<Value> {
        if a.pos.len() > 1 {
            return self.error(format!(
                "TypeError: get_objects() takes at most 1 argument ({} given)",
                a.pos.len()
            ));
        }
        // Argument Clinic turns `None` into -1, so -1 also means every generation.
        let generations = match a.pos.first().copied().or(a.kw(self, "generation")) {
            None | Some(Value::None) | Some(Value::Int(-1)) => 0..GENERATIONS,
            Some(Value::Int(g)) if g < 0 => {
                return self.error("ValueError: generation parameter cannot be negative");
            }
            Some(Value::Int(g)) if g >= GENERATIONS as i64 => {
                return self.error(
                    "ValueError: generation parameter must be less than the number of available generations (3)",
                );
            }
            Some(Value::Int(g)) => g as u8..g as u8 + 1,
            Some(v) => {
                let ty = self.type_name_of(v);
                return self.error(format!(
                    "TypeError: argument should be integer or None, not '{ty}'"
                ));
            }
        };
        let list = self.alloc(ObjKind::List(Vec::new()));
        let mut items = Vec::new();
        for generation in generations {
            for id in self.heap.generation_members(generation) {
                if id != list {
                    items.push(Value::Obj(id));
                }
            }
        }
        self.fill_list(list, items);
        Ok(Value::Obj(list))
    }

    /// `gc.get_referrers(*objs)`: every tracked object (generations 0-2, youngest first)
    /// whose `tp_traverse` visits one of `objs`, each once. Objects the model keeps without
    /// identity (ints, strings, floats) are refused: CPython answers by identity, which the
    /// model cannot reproduce for them.
    pub(super) fn gc_get_referrers(&mut self, a: &Args) -> R<Value> {
        if !a.kw.is_empty() {
            return self.error("TypeError: get_referrers() takes no keyword arguments");
        }
        let mut targets = Vec::with_capacity(a.pos.len());
        for &v in &a.pos {
            match v {
                Value::Obj(id) => targets.push(id),
                Value::None | Value::Bool(_) => {}
                other => {
                    let ty = self.type_name_of(other);
                    return self.unsupported(format!(
                        "gc.get_referrers of a `{ty}` (the model gives such values no identity)"
                    ));
                }
            }
        }
        let list = self.alloc(ObjKind::List(Vec::new()));
        let mut items = Vec::new();
        for generation in 0..GENERATIONS {
            for id in self.heap.generation_members(generation) {
                if id == list {
                    continue;
                }
                let mut refers = false;
                self.heap
                    .traverse(id, |child, _| refers |= targets.contains(&child));
                if refers {
                    items.push(Value::Obj(id));
                }
            }
        }
        self.fill_list(list, items);
        Ok(Value::Obj(list))
    }

    /// `gc.get_referents(*objs)`: what each GC object argument's `tp_traverse` visits, in
    /// its order (a list or tuple from its last item to its first, a dict's values in
    /// insertion order, keys after each value unless all keys are strings); arguments that
    /// are not GC objects add nothing. Kinds whose referents the model does not all keep
    /// (a function's code and globals, a class's dict and MRO, a tensor's C++ side) are
    /// refused rather than answered in part.
    pub(super) fn gc_get_referents(&mut self, a: &Args) -> R<Value> {
        if !a.kw.is_empty() {
            return self.error("TypeError: get_referents() takes no keyword arguments");
        }
        let mut items = Vec::new();
        for &v in &a.pos {
            match v {
                Value::Obj(id) => self.referents_of(id, &mut items)?,
                Value::BoundNative(_, receiver) => items.push(Value::Obj(receiver)),
                Value::Native(_) | Value::Module(_) => {
                    let ty = self.type_name_of(v);
                    return self.unsupported(format!(
                        "gc.get_referents of a `{ty}` (the model keeps no module dict or names for it)"
                    ));
                }
                _ => {}
            }
        }
        for &v in &items {
            self.heap.incref(v);
        }
        Ok(Value::Obj(self.alloc(ObjKind::List(items))))
    }

    /// `gc.is_tracked(obj)`: whether the collector watches `obj` (an untracked tuple of
    /// atoms, a dict holding no container, a `range` and every atom are not).
    pub(super) fn gc_is_tracked(&mut self, a: &Args) -> R<Value> {
        let [v] = a.pos.as_slice() else {
            return self.error(format!(
                "TypeError: is_tracked() takes exactly one argument ({} given)",
                a.pos.len()
            ));
        };
        Ok(Value::Bool(match *v {
            Value::Obj(id) => self.heap.get(id).generation != UNTRACKED,
            // Builtin functions, bound builtin methods and modules are GC objects, tracked
            // from creation.
            Value::Native(_) | Value::BoundNative(..) | Value::Module(_) => true,
            _ => false,
        }))
    }

    /// Appends what `id`'s `tp_traverse` visits, in CPython's order.
    fn referents_of(&mut self, id: ObjId, out: &mut Vec<Value>) -> R<()> {
        let kind = self.heap.kind(id);
        match kind {
            ObjKind::List(items) | ObjKind::Tuple(items) => out.extend(items.iter().rev()),
            ObjKind::Deque { items, .. } => out.extend(items.iter().copied()),
            ObjKind::Dict(entries) => {
                if let Some(f) = self.heap.dict_flavour(id) {
                    out.push(f.factory);
                }
                let string_keys = entries.iter().all(|(k, _)| matches!(k, Value::Str(_)));
                for &(k, v) in entries {
                    out.push(v);
                    if !string_keys {
                        out.push(k);
                    }
                }
            }
            ObjKind::Set { table, .. } => out.extend(table.items()),
            ObjKind::Cell(content) => out.extend(*content),
            ObjKind::BoundMethod { func, receiver } => {
                out.extend([Value::Obj(*func), *receiver]);
            }
            ObjKind::Instance { class, attrs } => {
                // `subtype_traverse`: the instance's values (≥ 3.11, inline) or its
                // `__dict__` (≤ 3.10), then its heap type.
                match attrs {
                    Attrs::Inline(values) => out.extend(values.iter().map(|(_, v)| *v)),
                    Attrs::Dict(dict) => out.extend(dict.map(Value::Obj)),
                }
                out.push(Value::Obj(*class));
            }
            // A bound builtin method (`lst.append`): `meth_traverse` visits its `__self__`
            // (the module is NULL for methods of builtin types).
            ObjKind::Wrapper(WrapperKind::BuiltinMethod, items) => out.extend(items.first()),
            ObjKind::Range { .. } | ObjKind::GradNode(_) | ObjKind::CppHandle { .. } => {}
            _ => {
                let ty = self.type_name_of(Value::Obj(id));
                return self.unsupported(format!(
                    "gc.get_referents of a `{ty}` (the model does not keep all of its references)"
                ));
            }
        }
        Ok(())
    }

    /// Stores `items` (borrowed) in the empty list `list`, each with a new reference.
    fn fill_list(&mut self, list: ObjId, items: Vec<Value>) {
        for &v in &items {
            self.heap.incref(v);
        }
        if let ObjKind::List(slot) = self.heap.kind_mut(list) {
            *slot = items;
        }
    }
}
