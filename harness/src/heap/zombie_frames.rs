//! ≤ 3.10 frame objects: each code object's one "zombie" frame and the shared frame free
//! list, as `_PyFrame_New_NoTrack` and `frame_dealloc` use them (Objects/frameobject.c,
//! v3.8.18 – v3.10.13).
//!
//! Where a dying frame goes does not depend on where it came from: it is parked as its code's
//! zombie frame when that slot is empty (`co->co_zombieframe == NULL`), else it goes onto the
//! free list (200 frames), else it is freed and the counter drops. A call takes its code's
//! zombie frame when one is parked, else a frame from the free list, else a new, counted one
//! (see [`Heap::take_frame`] for a code's first call).
//! This matters when frame objects outlive their calls (a stored traceback holds them): the
//! first of them to die refills the zombie slot, whichever frame that slot served.

use super::{FrameRelease, Heap};

impl Heap {
    /// A call of `code` gets its frame object (≤ 3.10). Returns whether a collection is due.
    ///
    /// Approximation: a code's first call is counted as a new frame even when the free list
    /// could serve it (CPython's `frame_alloc` would take a free-list frame). Serving it from
    /// the list matches the calibration as well but changes the default (full free lists)
    /// outcome of `scenarios/awaitable_callback.yaml` on 3.10; which one CPython with torch
    /// shows there was not measured, so the earlier rule stays.
    pub fn take_frame(&mut self, code: u32) -> bool {
        if self.parked_zombie_frames.remove(&code) {
            return false;
        }
        if self.frame_codes_seen.insert(code) {
            return self.count_raw_allocations(1);
        }
        self.count_frame_allocation()
    }

    /// A frame object of `code` is freed (≤ 3.10): parked, or onto the free list, or freed.
    pub fn release_frame_of(&mut self, code: u32) {
        if !self.parked_zombie_frames.insert(code) {
            self.release_frame();
        }
    }

    /// A frame object not served by its code's zombie frame: from the frame free list, or
    /// counted. Returns whether a collection is due.
    pub fn count_frame_allocation(&mut self) -> bool {
        if self.frame_free.pop() {
            return false;
        }
        self.count_raw_allocations(1)
    }

    /// Such a frame is released onto the frame free list (or really freed).
    pub fn release_frame(&mut self) {
        if !self.frame_free.push() {
            self.counts[0] = self.counts[0].saturating_sub(1);
        }
    }

    /// A frame object that outlived its call is freed.
    pub(super) fn release_frame_object(&mut self, release: FrameRelease) {
        match release {
            FrameRelease::Counted => self.note_gc_del(None),
            FrameRelease::Zombie { code } => self.release_frame_of(code),
            FrameRelease::FreeList => self.release_frame(),
        }
    }
}
