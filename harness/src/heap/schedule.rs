//! Where the heap decides that a collection is due and which one runs: the generational
//! collector's generation choice, the 3.14.0 – 3.14.4 incremental collector's increments, or a
//! free-threaded build's full collections. The interpreter asks [`Heap::due_collection`] when
//! the counter has passed its threshold and runs [`Heap::run_collection`]; everything that
//! differs between the collectors stays behind these two calls.

use super::free_threaded::FreeThreadedState;
use super::incremental::IncrementalState;
use super::profile::Collector;
use super::{CollectionOutcome, CycleHit, Heap};

/// The per-collector state that the generation counts do not hold.
#[derive(Debug, Clone)]
pub enum CollectorState {
    /// 3.8 – 3.13, 3.14.5+, 3.15. `outside_objects`: long-lived objects of the interpreter and
    /// its imports that the model does not hold (torch's), part of `long_lived_total` after
    /// every full collection.
    Generational {
        outside_objects: u64,
    },
    Incremental(IncrementalState),
    FreeThreaded(FreeThreadedState),
}

impl CollectorState {
    /// The state at the workload's start. `long_lived_total` counts objects that exist before
    /// the workload (the model holds none of them individually); `count0` is the gen-0 count.
    pub fn new(collector: Collector, long_lived_total: u64, count0: u64) -> CollectorState {
        match collector {
            Collector::Generational => CollectorState::Generational {
                outside_objects: long_lived_total,
            },
            Collector::Incremental => {
                CollectorState::Incremental(IncrementalState::new(long_lived_total))
            }
            Collector::FreeThreaded {
                negative_count_fixed,
            } => {
                let mut state = FreeThreadedState::new(long_lived_total, negative_count_fixed);
                state.shared = i64::try_from(count0).unwrap_or(i64::MAX);
                CollectorState::FreeThreaded(state)
            }
        }
    }
}

impl Heap {
    /// The automatic collection a scheduled (or, up to 3.11, an immediate) trigger runs, as the
    /// generation number `gc.callbacks` will report; `None` when none runs after all.
    pub fn due_collection(&self) -> Option<u8> {
        match &self.schedule {
            CollectorState::Generational { .. } => self.select_generation(),
            // `_Py_RunGC` always asks for generation 1, one increment (gc.c, `_Py_RunGC`).
            CollectorState::Incremental(_) => self.enabled.then_some(1),
            CollectorState::FreeThreaded(state) => state.should_collect(self).then_some(0),
        }
    }

    /// Runs the collection `gc.collect(generation)` (or the automatic one numbered so) asks
    /// for, under the release's collector.
    pub fn run_collection(
        &mut self,
        generation: u8,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        self.gc_callbacks_phase();
        let outcome = self.run_collector(generation, on_garbage_tensor);
        self.gc_callbacks_phase();
        outcome
    }

    fn run_collector(
        &mut self,
        generation: u8,
        on_garbage_tensor: impl FnMut(&Heap, &CycleHit),
    ) -> CollectionOutcome {
        match &self.schedule {
            CollectorState::Generational { outside_objects } => {
                let outside = *outside_objects;
                let outcome = self.collect(generation, on_garbage_tensor);
                if generation == 2 {
                    // `long_lived_total` is the size of the oldest generation after a full
                    // collection: the interpreter's own objects are in it too.
                    self.long_lived_total += outside;
                }
                outcome
            }
            CollectorState::Incremental(_) => match generation {
                0 => self.incremental_young(on_garbage_tensor),
                1 => self.incremental_increment(on_garbage_tensor),
                _ => self.incremental_full(on_garbage_tensor),
            },
            CollectorState::FreeThreaded(_) => {
                self.free_threaded_collect(generation, on_garbage_tensor)
            }
        }
    }
}
