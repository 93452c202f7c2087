//! The recording half of the Rust API: a [`Tracker`] turns a Rust program's own device
//! allocations into a [`Timeline`], with the caller's source location and an optional label
//! as the allocation site, and iteration marks from [`Tracker::iteration`].

use std::panic::Location;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rustc_hash::FxHashMap;

use crate::allocator::{AllocatorEvent, OutOfMemory};
use crate::timeline::{Action, Frame, OomReport, Recorder, StackId, Timeline};

/// Where an allocation was made: the caller's file and line (`#[track_caller]`) and the label
/// given to it, which reports print as `file:line in label`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Site {
    pub location: &'static Location<'static>,
    pub label: Option<&'static str>,
}

impl Site {
    /// Identity of the site for the stack cache: a call site's `Location` is one static, so
    /// its address (with the label's) identifies it without hashing the file name.
    fn key(&self) -> (usize, usize) {
        let label = self
            .label
            .map_or(0, |l| l.as_ptr() as usize ^ (l.len() << 48));
        (self.location as *const Location<'static> as usize, label)
    }

    /// The caller's location (through every `#[track_caller]` function above).
    #[track_caller]
    pub fn caller(label: Option<&'static str>) -> Site {
        Site {
            location: Location::caller(),
            label,
        }
    }
}

/// The name a site's frame gets when no label is given.
const UNLABELLED: &str = "<rust>";

/// Records allocation events into a timeline. Cheap to clone (clones share the timeline) and
/// usable from several threads.
#[derive(Clone)]
pub struct Tracker {
    state: Arc<Mutex<State>>,
}

struct State {
    recorder: Recorder,
    /// Interned stacks by site, so that a hot allocation site costs one hash lookup.
    stacks: FxHashMap<(usize, usize), StackId>,
    allocated: u64,
    reserved: u64,
    /// Live allocations: address → the bytes counted as allocated.
    live: FxHashMap<u64, u64>,
    next_iteration: u32,
    /// Whether an out-of-memory error ended the open iteration early.
    oom_in_iteration: bool,
}

impl Tracker {
    /// A tracker for a device of `capacity` bytes (reports print it; nothing is enforced).
    pub fn new(capacity: u64) -> Tracker {
        Tracker {
            state: Arc::new(Mutex::new(State {
                recorder: Recorder::new(capacity),
                stacks: FxHashMap::default(),
                allocated: 0,
                reserved: 0,
                live: FxHashMap::default(),
                next_iteration: 0,
                oom_in_iteration: false,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `body` as the next iteration: allocated and reserved bytes at its start and end
    /// become the iteration marks that `steady_state` and `leak_per_iteration` read. Nested
    /// calls run inside the outer iteration.
    pub fn iteration<R>(&self, body: impl FnOnce() -> R) -> R {
        let opened = {
            let mut state = self.lock();
            if state.recorder.iteration().is_some() {
                false
            } else {
                let (iteration, allocated, reserved) =
                    (state.next_iteration, state.allocated, state.reserved);
                state.next_iteration += 1;
                state.oom_in_iteration = false;
                state
                    .recorder
                    .begin_iteration(iteration, allocated, reserved);
                true
            }
        };
        let result = body();
        if opened {
            let mut state = self.lock();
            let (allocated, reserved, live) =
                (state.allocated, state.reserved, state.live.len() as u64);
            let completed = !state.oom_in_iteration;
            state
                .recorder
                .end_iteration(allocated, reserved, live, completed);
        }
        result
    }

    /// A copy of the timeline recorded so far.
    pub fn timeline(&self) -> Timeline {
        self.lock().recorder.snapshot()
    }

    /// Bytes currently allocated through this tracker.
    pub fn allocated_bytes(&self) -> u64 {
        self.lock().allocated
    }

    /// A device allocation handed straight to the caller (no caching): the segment and the
    /// block are the same memory.
    pub fn record_pass_through_alloc(&self, addr: u64, size: u64, site: Site) {
        let mut state = self.lock();
        let stack = state.stack(site);
        state.reserved += size;
        state.record(Action::SegmentAlloc, addr, size, stack, None);
        state.allocated += size;
        state.live.insert(addr, size);
        state.record(Action::Alloc, addr, size, stack, None);
    }

    /// The free of a pass-through allocation; an address never recorded is ignored.
    pub fn record_pass_through_free(&self, addr: u64, site: Site) {
        let mut state = self.lock();
        let Some(size) = state.live.remove(&addr) else {
            return;
        };
        let stack = state.stack(site);
        state.allocated -= size;
        state.record(Action::FreeRequested, addr, size, stack, None);
        state.record(Action::FreeCompleted, addr, size, stack, None);
        state.reserved -= size;
        state.record(Action::SegmentFree, addr, size, stack, None);
    }

    /// Events of a caching allocator, with its allocated and reserved bytes after them.
    pub(crate) fn record_model_events(
        &self,
        events: &[AllocatorEvent],
        site: Site,
        allocated: u64,
        reserved: u64,
    ) {
        let mut state = self.lock();
        let stack = state.stack(site);
        for event in events {
            state.recorder.record(
                event.action,
                event.addr,
                event.size,
                event.stream,
                event.device_free,
                stack,
                allocated,
                reserved,
                None,
            );
        }
        state.allocated = allocated;
        state.reserved = reserved;
    }

    /// An out-of-memory error the driver gave a pass-through allocation: an `oom` event and
    /// the timeline's outcome.
    pub fn record_oom(&self, requested: u64, message: String, device_free: u64, site: Site) {
        let mut state = self.lock();
        let stack = state.stack(site);
        state.record(Action::Oom, 0, requested, stack, Some(device_free));
        state.oom_outcome(requested, message, stack);
    }

    /// The caching allocator's out-of-memory error (its `oom` event is already recorded).
    pub(crate) fn record_model_oom(&self, oom: &OutOfMemory, site: Site) {
        let mut state = self.lock();
        let stack = state.stack(site);
        state.oom_outcome(oom.requested, oom.message.clone(), stack);
    }
}

impl State {
    fn stack(&mut self, site: Site) -> StackId {
        if let Some(&id) = self.stacks.get(&site.key()) {
            return id;
        }
        let frame = Frame {
            file: site.location.file().replace('\\', "/").into(),
            line: site.location.line(),
            name: site.label.unwrap_or(UNLABELLED).into(),
        };
        let id = self.recorder.stacks().intern(vec![frame]);
        self.stacks.insert(site.key(), id);
        id
    }

    fn oom_outcome(&mut self, requested: u64, message: String, stack: StackId) {
        let iteration = self.recorder.iteration();
        self.oom_in_iteration |= iteration.is_some();
        self.recorder.oom(OomReport {
            iteration,
            requested_bytes: requested,
            message,
            stack,
        });
    }

    fn record(
        &mut self,
        action: Action,
        addr: u64,
        size: u64,
        stack: StackId,
        device_free: Option<u64>,
    ) {
        let (allocated, reserved) = (self.allocated, self.reserved);
        self.recorder.record(
            action,
            addr,
            size,
            0,
            device_free,
            stack,
            allocated,
            reserved,
            None,
        );
    }
}
