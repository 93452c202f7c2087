//! Hand-built timelines for the tests of checks and reports: a tiny allocator that rounds to
//! 512 bytes, grows reserved memory in 2 MiB segments and never gives it back.

use crate::error::Location;
use crate::scenario::{
    ByteBound, Check, Comparison, Device, Expectation, GcStartState, PyVersion, PythonProfile,
    Scenario, VarValue, Variant, Workload,
};
use crate::timeline::{
    Action, CycleReport, Frame, GcEvent, IterationMark, MemoryEvent, OomReport, StackId, Timeline,
};
use std::collections::BTreeMap;

pub const FILE: &str = "scenarios/leaky.yaml";
const SEGMENT: u64 = 2 << 20;

pub fn frame(line: u32, name: &str) -> Frame {
    Frame {
        file: FILE.into(),
        line,
        name: name.into(),
    }
}

pub struct Builder {
    pub timeline: Timeline,
    live: BTreeMap<u64, u64>,
    next_addr: u64,
    allocated: u64,
    reserved: u64,
    iteration: Option<u32>,
    next_iteration: u32,
}

impl Builder {
    pub fn new(capacity: u64) -> Builder {
        Builder {
            timeline: Timeline {
                device_capacity: capacity,
                ..Timeline::default()
            },
            live: BTreeMap::new(),
            next_addr: 0x7f00_0000_0000,
            allocated: 0,
            reserved: 0,
            iteration: None,
            next_iteration: 0,
        }
    }

    fn stack(&mut self, line: u32) -> StackId {
        self.timeline.stacks.intern(vec![frame(line, "<module>")])
    }

    fn push(&mut self, action: Action, addr: u64, size: u64, stack: StackId) {
        self.timeline.events.push(MemoryEvent {
            action,
            addr,
            size,
            stream: 0,
            stack,
            iteration: self.iteration,
            allocated: self.allocated,
            reserved: self.reserved,
            device_free: None,
            category: None,
        });
        if let Some(mark) = self.timeline.iterations.last_mut()
            && Some(mark.iteration) == self.iteration
        {
            mark.peak_allocated = mark.peak_allocated.max(self.allocated);
        }
    }

    pub fn begin(&mut self) {
        let iteration = self.next_iteration;
        self.next_iteration += 1;
        self.iteration = Some(iteration);
        self.timeline.iterations.push(IterationMark {
            iteration,
            first_event: self.timeline.events.len(),
            allocated_at_start: self.allocated,
            reserved_at_start: self.reserved,
            allocated_at_end: self.allocated,
            reserved_at_end: self.reserved,
            peak_allocated: self.allocated,
            device_tensors_at_end: 0,
            completed: false,
        });
    }

    pub fn end(&mut self) {
        let (allocated, reserved, live) = (self.allocated, self.reserved, self.live.len());
        if let Some(mark) = self.timeline.iterations.last_mut() {
            mark.allocated_at_end = allocated;
            mark.reserved_at_end = reserved;
            mark.device_tensors_at_end = live as u64;
            mark.completed = true;
        }
        self.iteration = None;
    }

    /// Allocates `size` bytes from workload line `line`; returns the block's address.
    pub fn alloc_at(&mut self, size: u64, stack: StackId) -> u64 {
        let rounded = size.div_ceil(512) * 512;
        if self.allocated + rounded > self.reserved {
            let grow = (self.allocated + rounded - self.reserved).div_ceil(SEGMENT) * SEGMENT;
            self.reserved += grow;
            let addr = self.next_addr;
            self.push(Action::SegmentAlloc, addr, grow, stack);
        }
        let addr = self.next_addr;
        self.next_addr += rounded.max(512);
        self.allocated += rounded;
        self.live.insert(addr, rounded);
        self.push(Action::Alloc, addr, size, stack);
        addr
    }

    pub fn alloc(&mut self, size: u64, line: u32) -> u64 {
        let stack = self.stack(line);
        self.alloc_at(size, stack)
    }

    /// [`Builder::alloc`] whose event carries a memory category.
    pub fn alloc_as(&mut self, size: u64, line: u32, category: crate::timeline::Category) -> u64 {
        let addr = self.alloc(size, line);
        if let Some(event) = self.timeline.events.last_mut() {
            event.category = Some(category);
        }
        addr
    }

    pub fn free(&mut self, addr: u64) {
        if let Some(rounded) = self.live.remove(&addr) {
            self.allocated -= rounded;
            self.push(Action::FreeRequested, addr, rounded, StackId(0));
            self.push(Action::FreeCompleted, addr, rounded, StackId(0));
        }
    }

    /// A collection that frees `addrs` (device tensors held by cycles).
    pub fn gc(&mut self, generation: u8, automatic: bool, addrs: &[u64], line: u32) {
        let bytes: u64 = addrs.iter().filter_map(|a| self.live.get(a)).sum();
        let event_index = self.timeline.events.len();
        for &addr in addrs {
            self.free(addr);
        }
        self.timeline.gc_events.push(GcEvent {
            iteration: self.iteration,
            iterations_begun: self.timeline.iterations.len() as u32,
            generation,
            automatic,
            objects_collected: addrs.len() as u64 * 2,
            tensors_alive_before: 10,
            tensors_alive_after: 10 - addrs.len().min(10) as u64,
            device_tensors_freed: addrs.len() as u64,
            bytes_freed: bytes,
            event_index,
            line: Some(line),
            counts_before: [0, 0, 0],
        });
    }

    pub fn oom(&mut self, requested: u64, line: u32) {
        let stack = self.stack(line);
        let message = format!(
            "CUDA out of memory. Tried to allocate {}.",
            crate::units::torch_format_size(requested)
        );
        self.push(Action::Oom, 0, requested.div_ceil(512) * 512, stack);
        self.timeline.oom = Some(OomReport {
            iteration: self.iteration,
            requested_bytes: requested,
            message,
            stack,
        });
    }

    pub fn cycle_report(&mut self, count: u64, bytes_each: u64, line: u32) {
        let alloc_site = self.stack(line);
        self.timeline.cycle_reports.push(CycleReport {
            holder_path: "Node.tensor".to_string(),
            cycle: "Node -[link]-> Node -[link]-> Node".to_string(),
            tensor: "float32[67108864]".to_string(),
            bytes_each,
            alloc_site,
            count,
            bytes_total: count * bytes_each,
            first_iteration: Some(0),
        });
    }

    pub fn finish(self) -> Timeline {
        self.timeline
    }
}

/// A timeline whose iteration `i` ends with `ends[i]` bytes allocated (one block held per
/// iteration, the previous one freed).
pub fn with_boundaries(ends: &[u64]) -> Timeline {
    let mut b = Builder::new(80 << 30);
    let mut held = None;
    for &end in ends {
        b.begin();
        let addr = b.alloc(end, 7);
        if let Some(old) = held.replace(addr) {
            b.free(old);
        }
        b.end();
    }
    b.finish()
}

pub fn expectation(check: Check, line: u32) -> Expectation {
    Expectation {
        check,
        location: Location::new(FILE, line, 5),
    }
}

pub fn bound(op: Comparison, bytes: u64) -> ByteBound {
    ByteBound { op, bytes }
}

pub fn scenario() -> Scenario {
    Scenario {
        file: FILE.to_string(),
        name: "leaky".to_string(),
        about: "A test scenario.".to_string(),
        device: device(),
        python: python(),
        vary: vec![(
            "gc_every".to_string(),
            vec![VarValue::Int(0), VarValue::Int(100)],
        )],
        workload: Workload {
            source: "pass\n".to_string(),
            first_line: 6,
            indent: 2,
        },
        replay: None,
        expect: Vec::new(),
        limits: Default::default(),
        allocator: String::new(),
    }
}

pub fn variant() -> Variant {
    Variant {
        values: vec![
            ("gc_every".to_string(), VarValue::Int(100)),
            ("mode".to_string(), VarValue::Str("eager".to_string())),
        ],
        device: device(),
        python: python(),
    }
}

fn device() -> Device {
    Device {
        preset: Some("h100-80gb".to_string()),
        capacity: 80 << 30,
        context: 0,
    }
}

fn python() -> PythonProfile {
    PythonProfile {
        version: PyVersion::minor(11),
        start: GcStartState {
            counts: [0, 0, 0],
            long_lived_total: 0,
            free_lists_full: false,
            count_below_zero: 0,
            gc_callbacks: 0,
        },
        start_given: false,
    }
}
