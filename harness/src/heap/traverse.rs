//! What the collector sees of an object (`tp_traverse`) and what a dying or cleared object
//! lets go of (`tp_clear`, deallocation).

use super::{Attrs, Heap, ObjId, ObjKind, Object, Sym, Value, exception_objects};

/// A labelled reference, for reference paths in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Edge {
    Attr(Sym),
    Key(Sym),
    Index(u32),
    Role(&'static str),
}

impl Heap {
    /// The references of `id` that CPython's `tp_traverse` visits, with a label for reports
    /// (attribute name, index, or role). References the collector cannot see (a view's base
    /// tensor, held by C++) are not listed: they make their target a root.
    pub fn traverse(&self, id: ObjId, mut visit: impl FnMut(ObjId, Edge)) {
        let mut value = |v: Value, edge: Edge| {
            if let Value::Obj(c) | Value::BoundNative(_, c) = v {
                visit(c, edge);
            }
        };
        match &self.get(id).kind {
            ObjKind::Instance { class, attrs } => {
                value(Value::Obj(*class), Edge::Role("__class__"));
                match attrs {
                    Attrs::Inline(items) => {
                        for (name, v) in items {
                            value(*v, Edge::Attr(*name));
                        }
                    }
                    Attrs::Dict(Some(d)) => value(Value::Obj(*d), Edge::Role("__dict__")),
                    Attrs::Dict(None) => {}
                }
            }
            ObjKind::Class(c) => {
                if let Some(b) = c.base {
                    value(Value::Obj(b), Edge::Role("__base__"));
                }
                if self.class_self_reference(id) {
                    value(Value::Obj(id), Edge::Role("__mro__"));
                }
                for (name, v) in &c.attrs {
                    value(*v, Edge::Attr(*name));
                }
            }
            ObjKind::Function(f) => {
                if let Some(c) = f.closure {
                    value(Value::Obj(c), Edge::Role("__closure__"));
                }
                for d in &f.defaults {
                    value(*d, Edge::Role("__defaults__"));
                }
                if let Some(d) = f.dict {
                    value(Value::Obj(d), Edge::Role("__dict__"));
                }
            }
            ObjKind::Cell(v) => {
                if let Some(v) = v {
                    value(*v, Edge::Role("cell_contents"));
                }
            }
            ObjKind::Tuple(items) | ObjKind::List(items) => {
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
            ObjKind::Dict(items) => {
                if let Some(f) = self.dict_flavours.get(&id.0) {
                    value(f.factory, Edge::Role("default_factory"));
                }
                for (k, v) in items {
                    value(*k, Edge::Role("key"));
                    let edge = match k {
                        Value::Str(s) => Edge::Key(*s),
                        _ => Edge::Role("value"),
                    };
                    value(*v, edge);
                }
            }
            ObjKind::BoundMethod { func, receiver } => {
                value(Value::Obj(*func), Edge::Role("__func__"));
                value(*receiver, Edge::Role("__self__"));
            }
            ObjKind::Future(f) => f.traverse(&mut value),
            ObjKind::Tensor(t) => {
                t.traverse(&mut value);
                // THPVariable_traverse visits a custom Function's ctx (the PyNode's object)
                // when this tensor is the node's only owner.
                if let Some(node) = t.grad_fn
                    && let Some(Object {
                        kind: ObjKind::GradNode(n),
                        refcount: 1,
                        ..
                    }) = self.objects[node.0 as usize].as_ref()
                    && let Some(ctx) = n.ctx
                {
                    value(Value::Obj(ctx), Edge::Role("grad_fn"));
                }
            }
            ObjKind::GradFn { .. } => {}
            ObjKind::GradNode(_) | ObjKind::CppHandle { .. } => {}
            ObjKind::Range { .. } | ObjKind::Size(_) => {}
            ObjKind::Exception(e) => exception_objects::traverse_exception(e, &mut value),
            ObjKind::Traceback(t) => exception_objects::traverse_traceback(t, &mut value),
            ObjKind::Frame(f) => exception_objects::traverse_frame(f, &mut value),
            ObjKind::Generator(g) => g.traverse(&mut value),
            ObjKind::Wrapper(_, items) => {
                for v in items {
                    value(*v, Edge::Role("__func__"));
                }
            }
            ObjKind::Deque { items, .. } => {
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
            ObjKind::Set { table, .. } => {
                for v in table.items() {
                    value(v, Edge::Role("set item"));
                }
            }
            ObjKind::StructSeq { ty, items } => {
                for (field, v) in ty.fields.iter().zip(items) {
                    value(*v, Edge::Role(field));
                }
            }
            ObjKind::NamedTuple { class, items } => {
                value(Value::Obj(*class), Edge::Role("__class__"));
                for (i, v) in items.iter().enumerate() {
                    value(*v, Edge::Index(i as u32));
                }
            }
        }
    }

    /// `tp_clear`: drops the references an object holds so that a garbage cycle falls
    /// apart; returns them for the caller to release.
    pub fn clear_references(&mut self, id: ObjId) -> Vec<Value> {
        let mut out = Vec::new();
        self.clear_references_into(id, &mut out);
        out
    }

    /// [`Heap::clear_references`] appending to `out`.
    pub fn clear_references_into(&mut self, id: ObjId, out: &mut Vec<Value>) {
        // Only a class can hold one: no hash lookup for the rest.
        if matches!(self.get(id).kind, ObjKind::Class(_)) && self.take_class_self_reference(id) {
            out.push(Value::Obj(id));
        }
        match &mut self.get_mut(id).kind {
            ObjKind::Instance { attrs, .. } => match attrs {
                Attrs::Inline(items) => out.extend(items.drain(..).map(|(_, v)| v)),
                Attrs::Dict(d) => out.extend(d.take().map(Value::Obj)),
            },
            ObjKind::Class(c) => {
                out.extend(c.attrs.drain(..).map(|(_, v)| v));
                out.extend(c.base.take().map(Value::Obj));
            }
            ObjKind::Function(f) => {
                out.extend(f.closure.take().map(Value::Obj));
                out.append(&mut f.defaults);
                out.extend(f.dict.take().map(Value::Obj));
            }
            ObjKind::Cell(v) => out.extend(v.take()),
            // Tuples have no `tp_clear`: they keep their items (and their size, which picks
            // their free list) until a referrer's clearing frees them.
            ObjKind::Tuple(_) => {}
            ObjKind::List(items) => out.append(items),
            ObjKind::Dict(items) => {
                for (k, v) in items.drain(..) {
                    out.push(k);
                    out.push(v);
                }
            }
            // A bound method's references are cleared when it is deallocated.
            ObjKind::BoundMethod { .. } => {}
            ObjKind::Future(f) => f.clear(out),
            ObjKind::Tensor(t) => t.clear_python_references(out),
            ObjKind::GradFn { .. } | ObjKind::GradNode(_) | ObjKind::CppHandle { .. } => {}
            ObjKind::Range { .. } | ObjKind::Size(_) => {}
            ObjKind::Exception(e) => exception_objects::clear_exception(e, out),
            ObjKind::Traceback(t) => exception_objects::clear_traceback(t, out),
            ObjKind::Frame(f) => exception_objects::clear_frame(f, out),
            ObjKind::Generator(g) => g.clear_frame(out),
            ObjKind::Wrapper(_, items) => out.append(items),
            ObjKind::Deque { items, .. } => out.append(items),
            ObjKind::Set { table, .. } => out.append(&mut table.drain()),
            // Like a tuple, a struct sequence has no `tp_clear`.
            ObjKind::StructSeq { .. } | ObjKind::NamedTuple { .. } => {}
        }
        if let Some(f) = self.dict_flavours.get_mut(&id.0) {
            out.push(std::mem::replace(&mut f.factory, Value::None));
        }
    }
}

/// Moves the references a dying object owns into `out` (all of them, visible to the
/// collector or not) and queues a tensor's storage for release.
pub(crate) fn owned_references(
    kind: ObjKind,
    out: &mut Vec<ObjId>,
    dropped_storage_refs: &mut Vec<crate::torch::StorageId>,
    tensors_alive: &mut u64,
) {
    let mut push = |v: Value| {
        if let Value::Obj(id) | Value::BoundNative(_, id) = v {
            out.push(id);
        }
    };
    match kind {
        ObjKind::Instance { class, attrs } => {
            push(Value::Obj(class));
            match attrs {
                Attrs::Inline(items) => items.into_iter().for_each(|(_, v)| push(v)),
                Attrs::Dict(d) => d.into_iter().for_each(|d| push(Value::Obj(d))),
            }
        }
        ObjKind::Class(c) => {
            c.attrs.into_iter().for_each(|(_, v)| push(v));
            c.base.into_iter().for_each(|b| push(Value::Obj(b)));
        }
        ObjKind::Function(f) => {
            f.closure.into_iter().for_each(|c| push(Value::Obj(c)));
            f.defaults.into_iter().for_each(&mut push);
            f.dict.into_iter().for_each(|d| push(Value::Obj(d)));
        }
        ObjKind::Cell(v) => v.into_iter().for_each(&mut push),
        ObjKind::Tuple(items) | ObjKind::List(items) => items.into_iter().for_each(&mut push),
        ObjKind::Dict(items) => items.into_iter().for_each(|(k, v)| {
            push(k);
            push(v);
        }),
        ObjKind::BoundMethod { func, receiver } => {
            push(Value::Obj(func));
            push(receiver);
        }
        ObjKind::Future(f) => f.references(&mut push),
        ObjKind::Tensor(t) => {
            *tensors_alive -= 1;
            t.release(&mut push, dropped_storage_refs);
        }
        ObjKind::GradNode(n) => n.release(&mut push, dropped_storage_refs),
        ObjKind::GradFn { node } => push(Value::Obj(node)),
        ObjKind::CppHandle { held, .. } => held.into_iter().for_each(&mut push),
        ObjKind::Range { .. } | ObjKind::Size(_) => {}
        ObjKind::Exception(e) => exception_objects::exception_references(*e, &mut push),
        ObjKind::Traceback(t) => exception_objects::traceback_references(t, &mut push),
        ObjKind::Frame(f) => exception_objects::frame_references(*f, &mut push),
        ObjKind::Generator(g) => g.references(&mut push),
        ObjKind::Wrapper(_, items) => items.into_iter().for_each(&mut push),
        ObjKind::Deque { items, .. } => items.into_iter().for_each(&mut push),
        ObjKind::Set { table, .. } => table.items().for_each(&mut push),
        ObjKind::StructSeq { items, .. } => items.into_iter().for_each(&mut push),
        ObjKind::NamedTuple { class, items } => {
            push(Value::Obj(class));
            items.into_iter().for_each(&mut push);
        }
    }
}
