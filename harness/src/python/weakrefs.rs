//! `weakref.ref` and `weakref.finalize`, which users reach for when they hunt a leak: a
//! reference that does not keep its target, and a function run when the target dies (by
//! reference counting or when the collector frees its cycle).
//!
//! Counted as CPython counts them (measured with `gc.get_count()` on 3.8 – 3.15): a
//! reference is one GC object, and `weakref.ref(x)` without a callback hands out the one
//! already made for `x`; a finalizer is three (the `finalize` object, its `_Info` record
//! and a reference with a callback), two of which go when it runs or is detached, plus its
//! argument tuple when it has arguments. The registry owns each live finalizer, and the
//! finalizer owns its function and arguments: a finalizer whose function closes over its
//! own target keeps the target alive (the documented pitfall).
//!
//! Callbacks and finalizers run when the statement in which their target died ends
//! (CPython runs them at once, inside the deallocation).

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

/// The finalizer's `_Info` record and its reference with a callback, counted without
/// being modelled as objects.
const FINALIZER_INTERNALS: u64 = 2;

impl<'a> Interpreter<'a> {
    /// The target `v` as a weakly referenceable object, or CPython's `TypeError`.
    fn weak_target_of(&self, v: Value) -> R<ObjId> {
        if let Value::Obj(id) = v
            && matches!(
                self.heap.kind(id),
                ObjKind::Tensor(_)
                    | ObjKind::Instance { .. }
                    | ObjKind::Function(_)
                    | ObjKind::Class(_)
                    | ObjKind::BoundMethod { .. }
                    | ObjKind::Set { .. }
                    | ObjKind::Generator(_)
                    | ObjKind::Deque { .. }
                    | ObjKind::Wrapper(WrapperKind::Partial, _)
            )
        {
            return Ok(id);
        }
        let t = self.type_name_of(v);
        self.error(format!(
            "TypeError: cannot create weak reference to '{t}' object"
        ))
    }

    /// `weakref.ref(obj, callback=None)`.
    pub(in crate::python) fn new_weak_ref(&mut self, p: &[Value]) -> R<Value> {
        let (target, callback) = match p {
            [t] => (*t, Value::None),
            [t, c] => (*t, *c),
            _ => return self.error("TypeError: ref() takes 1 or 2 arguments"),
        };
        let target = self.weak_target_of(target)?;
        if callback == Value::None
            && let Some(existing) = self.heap.basic_weak_ref(target)
        {
            self.heap.incref(Value::Obj(existing));
            return Ok(Value::Obj(existing));
        }
        self.heap.incref(callback);
        let r = self.alloc(ObjKind::Wrapper(WrapperKind::WeakRef, vec![callback]));
        self.heap.register_weak(r, target);
        Ok(Value::Obj(r))
    }

    /// `weakref.finalize(obj, func, *args)`.
    pub(in crate::python) fn new_finalizer(
        &mut self,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        let [target, func, args @ ..] = p else {
            return self.error("TypeError: finalize() takes at least 2 arguments");
        };
        if !kw.is_empty() {
            return self.unsupported("keyword arguments of weakref.finalize");
        }
        let target = self.weak_target_of(*target)?;
        self.heap.incref(*func);
        for &a in args {
            self.heap.incref(a);
        }
        let args = if args.is_empty() {
            Value::None
        } else {
            Value::Obj(self.alloc(ObjKind::Tuple(args.to_vec())))
        };
        let f = self.alloc(ObjKind::Wrapper(WrapperKind::Finalize, vec![*func, args]));
        self.count_untracked_allocations(FINALIZER_INTERNALS);
        self.heap.register_weak(f, target);
        // The registry's reference.
        self.heap.incref(Value::Obj(f));
        Ok(Value::Obj(f))
    }

    /// Calling a reference (its target or `None`) or a finalizer (runs it once, returning
    /// what its function returns; `None` once dead).
    pub(in crate::python) fn call_weak(&mut self, id: ObjId, kind: WrapperKind) -> R<Value> {
        if kind == WrapperKind::WeakRef {
            return Ok(match self.heap.weak_target(id) {
                Some(t) => {
                    self.heap.incref(Value::Obj(t));
                    Value::Obj(t)
                }
                None => Value::None,
            });
        }
        if self.heap.weak_target(id).is_none() {
            return Ok(Value::None);
        }
        self.heap.unregister_weak(id);
        let result = self.run_finalizer(id);
        // The registry's reference; the caller holds another.
        self.heap.decref_id(id);
        result
    }

    /// `finalizer.alive`.
    pub(in crate::python) fn finalizer_alive(&self, id: ObjId) -> Value {
        Value::Bool(self.heap.weak_target(id).is_some())
    }

    /// Runs a finalizer's function once, dropping its function and arguments.
    fn run_finalizer(&mut self, id: ObjId) -> R<Value> {
        let ObjKind::Wrapper(_, items) = self.heap.kind_mut(id) else {
            unreachable!("a finalizer")
        };
        let (func, args) = (items[0], items[1]);
        items[0] = Value::None;
        items[1] = Value::None;
        for _ in 0..FINALIZER_INTERNALS {
            self.free_loop_iterator();
        }
        let mut call_args = Vec::new();
        if let Value::Obj(t) = args
            && let ObjKind::Tuple(items) = self.heap.kind(t)
        {
            call_args = items.clone();
        }
        for &a in &call_args {
            self.heap.incref(a);
        }
        let result = self.call(func, call_args, Vec::new());
        self.heap.decref(func);
        self.heap.decref(args);
        result
    }

    /// Runs the callbacks and finalizers whose targets died, oldest first.
    pub(in crate::python) fn run_weak_callbacks(&mut self) -> R<()> {
        while !self.heap.weak.pending.is_empty() {
            let pending = std::mem::take(&mut self.heap.weak.pending);
            let mut pending = pending.into_iter();
            while let Some(r) = pending.next() {
                let result = match self.heap.kind(r) {
                    // An entry of a weak container: the entry goes.
                    ObjKind::Wrapper(WrapperKind::WeakRef, items) if items.len() == 2 => {
                        self.weak_entry_died(r);
                        Ok(Value::None)
                    }
                    ObjKind::Wrapper(WrapperKind::WeakRef, items) => {
                        let callback = items[0];
                        self.heap.incref(callback);
                        self.heap.incref(Value::Obj(r));
                        let out = self.call(callback, vec![Value::Obj(r)], Vec::new());
                        self.heap.decref(callback);
                        out
                    }
                    _ => self.run_finalizer(r),
                };
                self.heap.decref_id(r);
                match result {
                    Ok(v) => self.heap.decref(v),
                    Err(e) => {
                        let rest: Vec<ObjId> = pending.collect();
                        for r in rest {
                            self.heap.decref_id(r);
                        }
                        return Err(e);
                    }
                }
            }
        }
        Ok(())
    }
}
