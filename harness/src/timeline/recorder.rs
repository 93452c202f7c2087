//! Builds a [`Timeline`] while a source runs: stamps each allocator event with the stack and
//! iteration it happened in, keeps iteration marks, and aggregates cycle reports.

use super::{
    Action, Category, CycleReport, GcEvent, IterationMark, MemoryEvent, OomReport, StackId,
    Timeline,
};

#[derive(Default)]
pub struct Recorder {
    timeline: Timeline,
    /// Index of the open iteration's mark.
    open: Option<usize>,
}

impl Recorder {
    pub fn new(device_capacity: u64) -> Recorder {
        Recorder {
            timeline: Timeline {
                device_capacity,
                ..Timeline::default()
            },
            ..Recorder::default()
        }
    }

    /// The iteration under way, if any.
    pub fn iteration(&self) -> Option<u32> {
        self.open.map(|i| self.timeline.iterations[i].iteration)
    }

    /// How many iterations have begun so far.
    pub fn iterations_begun(&self) -> u32 {
        self.timeline.iterations.len() as u32
    }

    /// Bytes held by the records so far (counted in a run's memory budget: a loop of many
    /// cheap iterations grows these, not the object heap).
    pub fn record_bytes(&self) -> u64 {
        let t = &self.timeline;
        (t.events.capacity() * std::mem::size_of::<MemoryEvent>()
            + t.iterations.capacity() * std::mem::size_of::<IterationMark>()
            + t.gc_events.capacity() * std::mem::size_of::<GcEvent>()) as u64
    }

    pub fn events_len(&self) -> usize {
        self.timeline.events.len()
    }

    pub fn stacks(&mut self) -> &mut super::StackTable {
        &mut self.timeline.stacks
    }

    #[allow(clippy::too_many_arguments)]
    pub fn record(
        &mut self,
        action: Action,
        addr: u64,
        size: u64,
        stream: u32,
        device_free: Option<u64>,
        stack: StackId,
        allocated: u64,
        reserved: u64,
        category: Option<Category>,
    ) {
        let iteration = self.iteration();
        if let Some(i) = self.open {
            let mark = &mut self.timeline.iterations[i];
            mark.peak_allocated = mark.peak_allocated.max(allocated);
        }
        self.timeline.events.push(MemoryEvent {
            action,
            addr,
            size,
            stream,
            stack,
            iteration,
            allocated,
            reserved,
            device_free,
            category,
        });
    }

    /// Re-labels the live allocation at `addr` (a gradient buffer that became `.grad`):
    /// its latest `Alloc` event gets `category`.
    pub fn relabel_allocation(&mut self, addr: u64, category: Category) {
        if let Some(event) = self
            .timeline
            .events
            .iter_mut()
            .rev()
            .find(|e| e.addr == addr && e.action == Action::Alloc)
        {
            event.category = Some(category);
        }
    }

    pub fn begin_iteration(&mut self, iteration: u32, allocated: u64, reserved: u64) {
        self.timeline.iterations.push(IterationMark {
            iteration,
            first_event: self.timeline.events.len(),
            allocated_at_start: allocated,
            reserved_at_start: reserved,
            allocated_at_end: allocated,
            reserved_at_end: reserved,
            peak_allocated: allocated,
            device_tensors_at_end: 0,
            completed: false,
        });
        self.open = Some(self.timeline.iterations.len() - 1);
    }

    /// Closes the open iteration (`completed` false when an error cut it short).
    pub fn end_iteration(
        &mut self,
        allocated: u64,
        reserved: u64,
        device_tensors: u64,
        completed: bool,
    ) {
        if let Some(i) = self.open.take() {
            let mark = &mut self.timeline.iterations[i];
            mark.allocated_at_end = allocated;
            mark.reserved_at_end = reserved;
            mark.device_tensors_at_end = device_tensors;
            mark.completed = completed;
        }
    }

    pub fn gc_event(&mut self, event: GcEvent) {
        self.timeline.gc_events.push(event);
    }

    /// Adds an aggregated cycle report (sources aggregate identical paths themselves).
    pub fn cycle_report(&mut self, report: CycleReport) {
        self.timeline.cycle_reports.push(report);
    }

    pub fn oom(&mut self, report: OomReport) {
        self.timeline.oom = Some(report);
    }

    pub fn approximation(&mut self, note: impl Into<String>) {
        self.timeline.approximations.push(note.into());
    }

    /// The timeline so far (an open iteration stays open in the copy).
    pub fn snapshot(&self) -> Timeline {
        self.timeline.clone()
    }

    pub fn finish(self) -> Timeline {
        self.timeline
    }
}
