//! The free lists that serve allocations without moving the generation-0 counter, and the
//! bookkeeping of a deallocation that may go onto one (`PyObject_GC_Del`).

use super::{CollectorState, Heap, ObjKind, WrapperKind};

/// A free list that serves allocations without moving the generation-0 counter.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FreeList {
    pub(crate) len: u32,
    pub(crate) capacity: u32,
}

impl FreeList {
    pub(crate) fn new(capacity: u32) -> Self {
        FreeList { len: 0, capacity }
    }
    /// An allocation: true when it was served from the list.
    pub(crate) fn pop(&mut self) -> bool {
        if self.len > 0 {
            self.len -= 1;
            true
        } else {
            false
        }
    }
    /// A deallocation: true when the object went onto the list.
    pub(crate) fn push(&mut self) -> bool {
        if self.len < self.capacity {
            self.len += 1;
            true
        } else {
            false
        }
    }
}

/// Which free list (if any) serves an object kind.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FreeListKind {
    Dict,
    List,
    Tuple(usize),
    /// 3.8's bound-method free list (none from 3.9 on: capacity 0).
    Method,
    /// 3.14+: `list_iterator` and `tuple_iterator` (`seq_iter_free.rs`).
    ListIter,
    TupleIter,
    /// 3.14+: builtin-method objects (`seq_iter_free.rs`).
    CFunction,
    /// `async_generator_asend` objects (`ag_asend_freelist`, 80 on 3.8 – 3.15).
    AsyncGenASend,
}

/// Capacity of the `async_generator_asend` free list (`_PyAsyncGen_MAXFREELIST` in
/// `Objects/genobject.c`, `Py_async_gen_asends_MAXFREELIST` from 3.13).
pub(crate) const ASYNC_GEN_ASEND_FREE_LIST: u32 = 80;

impl Heap {
    pub(crate) fn free_list_kind(&self, kind: &ObjKind) -> Option<FreeListKind> {
        match kind {
            ObjKind::Wrapper(WrapperKind::SeqIter, items) => self.seq_iter_free_list(items),
            ObjKind::Dict(_) => Some(FreeListKind::Dict),
            ObjKind::List(_) => Some(FreeListKind::List),
            ObjKind::Tuple(items) if (1..20).contains(&items.len()) => {
                Some(FreeListKind::Tuple(items.len()))
            }
            ObjKind::BoundMethod { .. } => Some(FreeListKind::Method),
            ObjKind::Wrapper(WrapperKind::AsyncGenASend, _) => Some(FreeListKind::AsyncGenASend),
            _ => None,
        }
    }

    pub(crate) fn free_list(&mut self, kind: FreeListKind) -> &mut FreeList {
        match kind {
            FreeListKind::Dict => &mut self.dict_free,
            FreeListKind::List => &mut self.list_free,
            FreeListKind::Tuple(n) => &mut self.tuple_free[n],
            FreeListKind::Method => &mut self.method_free,
            FreeListKind::ListIter => &mut self.list_iter_free,
            FreeListKind::TupleIter => &mut self.tuple_iter_free,
            FreeListKind::CFunction => &mut self.cfunction_free,
            FreeListKind::AsyncGenASend => &mut self.asyncgen_asend_free,
        }
    }

    /// `PyObject_GC_Del`: the counter drops unless the object went onto a free list.
    pub(crate) fn note_gc_del(&mut self, free_list: Option<FreeListKind>) {
        if let Some(kind) = free_list
            && self.free_list(kind).push()
        {
            return;
        }
        if matches!(self.schedule, CollectorState::FreeThreaded(_)) {
            return self.free_threaded_deallocation();
        }
        self.counts[0] = self.counts[0].saturating_sub(1);
    }

    /// Fills every free list, as in a process that has been running a while.
    pub fn fill_free_lists(&mut self) {
        for list in [
            &mut self.dict_free,
            &mut self.list_free,
            &mut self.frame_free,
            &mut self.method_free,
        ]
        .into_iter()
        .chain(self.tuple_free.iter_mut().skip(1))
        {
            list.len = list.capacity;
        }
    }

    /// Empties every free list, as a full collection does (`clear_freelists`).
    pub fn clear_free_lists(&mut self) {
        self.dict_free.len = 0;
        self.list_free.len = 0;
        for t in &mut self.tuple_free {
            t.len = 0;
        }
        self.frame_free.len = 0;
        self.method_free.len = 0;
        self.list_iter_free.len = 0;
        self.tuple_iter_free.len = 0;
        self.cfunction_free.len = 0;
        self.asyncgen_asend_free.len = 0;
    }

    /// A bound method the model does not keep (one a class statement creates and drops):
    /// counted unless 3.8's free list serves it, then returned to that list.
    pub fn count_temporary_method(&mut self) -> bool {
        let due = !self.method_free.pop() && self.count_raw_allocations(1);
        self.note_gc_del(Some(FreeListKind::Method));
        due
    }
}
