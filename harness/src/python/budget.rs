//! The budget of one workload run: steps, the model's own memory, and (when asked) seconds.
//!
//! Scenario files are untrusted input: `while True: pass` or `list(range(10**9))` must end
//! with a located error, not hang or exhaust the machine. The interpreter calls
//! [`Interpreter::budget_step`] where it executes a statement and on every pass of a loop or
//! comprehension, and [`Interpreter::budget_items`] / [`Interpreter::budget_bytes`] before it
//! materialises a large sequence or string in one go.
//!
//! Memory is the model's heap (objects, their item vectors, interned strings), measured from
//! the sizes of those objects, not the simulated GPU. Measuring walks the heap, so it is done
//! again only after as many steps as the last walk visited objects: its cost stays a constant
//! factor of the run's. Bulk allocations are charged before they happen on top of the last
//! measurement.

use super::Interpreter;
use super::interp::{Exc, R};
use crate::error::InputErrorKind;
use crate::heap::{ObjKind, Value};
use crate::scenario::Limits;
use std::time::{Duration, Instant};

/// Default step budget. The heaviest shipped scenario executes about 2.5 million steps; this
/// leaves a factor of over 100 (about a minute of a release build's time).
pub const DEFAULT_STEPS: u64 = 300_000_000;

/// Default memory budget for the model's own objects.
pub const DEFAULT_MEMORY: u64 = 2 << 30;

/// Fewest steps between two measurements of the heap.
const MIN_MEASURE_INTERVAL: u64 = 4096;

/// One run's budget and what it has used.
#[derive(Debug, Clone)]
pub struct Budget {
    steps_limit: u64,
    memory_limit: u64,
    deadline: Option<(Instant, f64)>,
    steps: u64,
    /// Steps after which [`Interpreter::budget_check`] runs next.
    next_check: u64,
    /// The heap's size at the last measurement plus what was charged since.
    bytes: u64,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::new(Limits::default())
    }
}

impl Budget {
    /// The budget of `limits`, defaults where a key is not given.
    pub fn new(limits: Limits) -> Budget {
        let steps_limit = limits.steps.unwrap_or(DEFAULT_STEPS);
        Budget {
            steps_limit,
            memory_limit: limits.memory.unwrap_or(DEFAULT_MEMORY),
            deadline: limits.seconds.map(|s| {
                let now = Instant::now();
                (now + Duration::from_secs_f64(s.min(1e9)), s)
            }),
            steps: 0,
            next_check: MIN_MEASURE_INTERVAL.min(steps_limit.saturating_add(1)),
            bytes: 0,
        }
    }

    /// Steps used so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }
}

impl Interpreter<'_> {
    /// Replaces the default budget (call before [`Interpreter::run`]).
    pub fn set_limits(&mut self, limits: Limits) {
        self.budget = Budget::new(limits);
        // The records count in the memory budget: a small budget keeps fewer of them in full
        // (an eighth of it at each end), so that a long run folds instead of failing.
        let retention = match (limits.records, limits.memory) {
            (Some(bytes), _) => Some(bytes),
            (None, Some(memory)) => Some((memory / 8).min(crate::timeline::HEAD_BYTES as u64)),
            (None, None) => None,
        };
        if let Some(bytes) = retention {
            let bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
            self.recorder.set_retention(bytes, bytes);
        }
    }

    /// Counts one step (a statement, a loop pass); checks the budget now and then.
    #[inline]
    pub(super) fn budget_step(&mut self) -> R<()> {
        self.budget.steps += 1;
        if self.budget.steps < self.budget.next_check {
            return Ok(());
        }
        self.budget_check()
    }

    /// About to create `count` item slots (a list, a tuple) at once: refuses when they would
    /// not fit in the memory budget. Charges nothing (the next measurement sees them).
    pub(super) fn budget_items(&self, count: u64) -> R<()> {
        self.budget_room(count.saturating_mul(std::mem::size_of::<Value>() as u64))
            .map(|_| ())
    }

    /// About to allocate `bytes` of the model's memory at once: refuses when they would not
    /// fit, else charges them until the next measurement.
    pub(super) fn budget_bytes(&mut self, bytes: u64) -> R<()> {
        self.budget.bytes = self.budget_room(bytes)?;
        Ok(())
    }

    /// The model's memory after allocating `bytes` more, or the budget error.
    fn budget_room(&self, bytes: u64) -> R<u64> {
        let total = self.budget.bytes.saturating_add(bytes);
        if total <= self.budget.memory_limit {
            return Ok(total);
        }
        // The last measurement may be stale (objects freed since): measure again first.
        let total = self.model_bytes().saturating_add(bytes);
        if total <= self.budget.memory_limit {
            return Ok(total);
        }
        self.budget_exceeded(
            format!(
                "{} of the model's memory exceeded (this step needs {} more)",
                crate::units::Bytes(self.budget.memory_limit),
                crate::units::Bytes(bytes)
            ),
            "memory",
        )
    }

    #[cold]
    fn budget_check(&mut self) -> R<()> {
        let b = &self.budget;
        if b.steps > b.steps_limit {
            let limit = b.steps_limit;
            return self.budget_exceeded(format!("{} steps exceeded", thousands(limit)), "steps");
        }
        if let Some((deadline, seconds)) = b.deadline
            && Instant::now() >= deadline
        {
            return self.budget_exceeded(format!("{seconds} seconds exceeded"), "seconds");
        }
        let (bytes, visited) = self.measure_heap();
        self.budget.bytes = bytes;
        let interval = visited.max(MIN_MEASURE_INTERVAL);
        self.budget.next_check = self
            .budget
            .steps
            .saturating_add(interval)
            .min(self.budget.steps_limit.saturating_add(1));
        if bytes > self.budget.memory_limit {
            let limit = self.budget.memory_limit;
            return self.budget_exceeded(
                format!(
                    "{} of the model's memory exceeded",
                    crate::units::Bytes(limit)
                ),
                "memory",
            );
        }
        Ok(())
    }

    fn budget_exceeded<T>(&self, what: String, key: &str) -> R<T> {
        let iteration = match self.recorder.iteration() {
            Some(i) => format!(" in iteration {i}"),
            None => String::new(),
        };
        Err(Box::new(Exc::Error {
            kind: InputErrorKind::Budget,
            message: format!("{what}{iteration}; raise limits.{key} if this is intended"),
            offset: self.offset,
        }))
    }

    /// The model's memory now.
    fn model_bytes(&self) -> u64 {
        self.measure_heap().0
    }

    /// Bytes of the live heap objects and interned strings, and how many objects were visited.
    fn measure_heap(&self) -> (u64, u64) {
        let mut bytes = self.names.total_bytes() + self.recorder.record_bytes();
        let mut visited = 0u64;
        for kind in self.heap.live_kinds() {
            visited += 1;
            bytes = bytes.saturating_add(object_bytes(kind));
        }
        (bytes, visited)
    }
}

/// The size of one heap object in the model: its node plus its item storage.
fn object_bytes(kind: &ObjKind) -> u64 {
    let slot = std::mem::size_of::<Value>() as u64;
    let node = std::mem::size_of::<ObjKind>() as u64 + 32;
    let items = match kind {
        ObjKind::Tuple(v) | ObjKind::List(v) | ObjKind::Deque { items: v, .. } => {
            v.capacity() as u64 * slot
        }
        ObjKind::Dict(v) => v.capacity() as u64 * 2 * slot,
        ObjKind::Size(d) => d.capacity() as u64 * 8,
        ObjKind::CppHandle { held, .. } => held.capacity() as u64 * slot,
        _ => 0,
    };
    node + items
}

/// `10000000` → `10,000,000`.
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(10_000_000), "10,000,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}
