//! Weak references (`weakref.ref`) and finalizers (`weakref.finalize`): which objects
//! they point at, without owning them. When a target is deallocated, by reference counting
//! or by the collector freeing its cycle, its references are cleared (calling one then
//! gives `None`) and those with something to run (a callback, a finalizer) are queued in
//! [`WeakRegistry::pending`], each with a reference the interpreter gives back after
//! running it.

use super::{Heap, ObjId, ObjKind, Value, WrapperKind};
use rustc_hash::FxHashMap;

#[derive(Debug, Default)]
pub struct WeakRegistry {
    /// target → its weak references and finalizers, oldest first.
    by_target: FxHashMap<u32, Vec<ObjId>>,
    /// weak reference or finalizer → its target, while the target lives.
    target_of: FxHashMap<u32, ObjId>,
    /// References and finalizers whose target died, with work to run (owned references).
    pub pending: Vec<ObjId>,
}

impl Heap {
    /// Points the weak reference or finalizer `weak` at `target`.
    pub fn register_weak(&mut self, weak: ObjId, target: ObjId) {
        self.weak.by_target.entry(target.0).or_default().push(weak);
        self.weak.target_of.insert(weak.0, target);
    }

    /// What `weak` points at, while it lives.
    pub fn weak_target(&self, weak: ObjId) -> Option<ObjId> {
        self.weak.target_of.get(&weak.0).copied()
    }

    /// The plain reference (no callback) to `target` already made, which CPython hands out
    /// again instead of making another.
    pub fn basic_weak_ref(&self, target: ObjId) -> Option<ObjId> {
        self.weak
            .by_target
            .get(&target.0)?
            .iter()
            .copied()
            .find(|r| {
                matches!(&self.get(*r).kind,
                ObjKind::Wrapper(WrapperKind::WeakRef, items) if items.first().is_none_or(|c| *c == Value::None))
            })
    }

    /// Unregisters `weak` (a finalizer detached or run).
    pub fn unregister_weak(&mut self, weak: ObjId) {
        if let Some(target) = self.weak.target_of.remove(&weak.0)
            && let Some(list) = self.weak.by_target.get_mut(&target.0)
        {
            list.retain(|r| *r != weak);
            if list.is_empty() {
                self.weak.by_target.remove(&target.0);
            }
        }
    }

    /// A dying object's part in the registry: as a target, its references are cleared and
    /// those with work queued; as a reference, it is forgotten.
    pub(super) fn weak_object_dies(&mut self, id: ObjId) {
        if self.weak.target_of.is_empty() {
            return;
        }
        self.unregister_weak(id);
        let Some(refs) = self.weak.by_target.remove(&id.0) else {
            return;
        };
        for r in refs {
            self.weak.target_of.remove(&r.0);
            // A reference dying in the same cascade runs nothing.
            let Some(obj) = self.objects[r.0 as usize].as_ref() else {
                continue;
            };
            match &obj.kind {
                // (A reference the collector already cleared has no items left.)
                ObjKind::Wrapper(WrapperKind::WeakRef, items)
                    if items.first().is_some_and(|c| *c != Value::None) =>
                {
                    self.incref(Value::Obj(r));
                    self.weak.pending.push(r);
                }
                // The registry's reference to the finalizer goes to the queue.
                ObjKind::Wrapper(WrapperKind::Finalize, _) => self.weak.pending.push(r),
                _ => {}
            }
        }
    }
}
