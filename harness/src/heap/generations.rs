//! The generation lists: tracked objects in intrusive doubly linked lists, one per generation,
//! as CPython links them through the GC header.

use super::{Heap, NO_LINK, ObjId, UNTRACKED};

/// One generation's intrusive list head and counters.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Generation {
    pub(crate) head: u32,
    pub(crate) tail: u32,
    pub(crate) len: u64,
}

impl Generation {
    pub(crate) const EMPTY: Generation = Generation {
        head: NO_LINK,
        tail: NO_LINK,
        len: 0,
    };
}

impl Heap {
    pub fn track(&mut self, id: ObjId, generation: u8) {
        let tail = self.generations[generation as usize].tail;
        {
            let o = self.get_mut(id);
            debug_assert_eq!(o.generation, UNTRACKED);
            o.generation = generation;
            o.prev = tail;
            o.next = NO_LINK;
        }
        if tail == NO_LINK {
            self.generations[generation as usize].head = id.0;
        } else {
            self.get_mut(ObjId(tail)).next = id.0;
        }
        let g = &mut self.generations[generation as usize];
        g.tail = id.0;
        g.len += 1;
    }

    pub fn untrack(&mut self, id: ObjId) {
        let (generation, prev, next) = {
            let o = self.get(id);
            (o.generation, o.prev, o.next)
        };
        if generation == UNTRACKED {
            return;
        }
        self.unlink(id, generation, prev, next);
        let o = self.get_mut(id);
        o.generation = UNTRACKED;
        o.prev = NO_LINK;
        o.next = NO_LINK;
    }

    pub(crate) fn unlink(&mut self, _id: ObjId, generation: u8, prev: u32, next: u32) {
        if prev == NO_LINK {
            self.generations[generation as usize].head = next;
        } else {
            self.get_mut(ObjId(prev)).next = next;
        }
        if next == NO_LINK {
            self.generations[generation as usize].tail = prev;
        } else {
            self.get_mut(ObjId(next)).prev = prev;
        }
        self.generations[generation as usize].len -= 1;
    }

    /// Members of a generation, oldest first.
    pub fn generation_members(&self, generation: u8) -> Vec<ObjId> {
        let mut out = Vec::with_capacity(self.generations[generation as usize].len as usize);
        let mut cur = self.generations[generation as usize].head;
        while cur != NO_LINK {
            out.push(ObjId(cur));
            cur = self.get(ObjId(cur)).next;
        }
        out
    }

    /// The object's index in the collection under way, if it is in the examined set.
    pub(crate) fn collect_index(&self, id: ObjId) -> Option<usize> {
        let i = self.get(id).collect_index;
        (i != NO_LINK).then_some(i as usize)
    }

    pub(crate) fn set_collect_index(&mut self, id: ObjId, index: u32) {
        self.get_mut(id).collect_index = index;
    }

    /// Moves a tracked object to another generation (promotion, `gc.freeze()`).
    pub fn move_to_generation(&mut self, id: ObjId, generation: u8) {
        if self.get(id).generation == generation {
            return;
        }
        self.untrack(id);
        self.track(id, generation);
    }
}
