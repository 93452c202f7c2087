//! User `__del__`: PEP 442's `tp_finalize` for instances of classes that define it. When an
//! instance's count reaches zero its `__del__` runs first, at most once per object; the
//! object is resurrected (one reference, owned by the heap's pending list) until the
//! interpreter has run it, and is freed when that reference goes unless `__del__` stored
//! it somewhere (resurrection).

use super::{Heap, ObjId, ObjKind, Sym};

/// Which instances' finalizers already ran, and the name to look for.
#[derive(Debug, Default)]
pub struct InstanceFinalizers {
    /// The interned `__del__`, if the workload mentions it at all (otherwise no class can
    /// define one, and dropping an instance checks nothing).
    pub del_sym: Option<Sym>,
    /// Live instances whose `__del__` already ran (by object slot; forgotten on free).
    finalized: rustc_hash::FxHashSet<u32>,
}

impl Heap {
    /// Whether dropping `id` must first run its `__del__`: an instance whose class (or a
    /// base) defines one, not yet finalized.
    pub(super) fn needs_instance_finalizer(&self, id: ObjId) -> bool {
        let Some(sym) = self.instance_finalizers.del_sym else {
            return false;
        };
        let Some(ObjKind::Instance { class, .. }) =
            self.objects[id.0 as usize].as_ref().map(|o| &o.kind)
        else {
            return false;
        };
        if self.instance_finalizers.finalized.contains(&id.0) {
            return false;
        }
        let mut class = Some(*class);
        while let Some(c) = class {
            let ObjKind::Class(cls) = self.kind(c) else {
                return false;
            };
            if cls.attrs.iter().any(|(name, _)| *name == sym) {
                return true;
            }
            class = cls.base;
        }
        false
    }

    /// Marks `id` finalized and queues its `__del__`, handing the queue one reference.
    pub(super) fn queue_instance_finalizer(&mut self, id: ObjId) {
        self.instance_finalizers.finalized.insert(id.0);
        self.pending_finalizers.push(id);
    }

    /// Forgets the finalized mark of a freed object (its slot will be reused).
    pub(super) fn instance_freed(&mut self, id: ObjId) {
        if !self.instance_finalizers.finalized.is_empty() {
            self.instance_finalizers.finalized.remove(&id.0);
        }
    }
}
