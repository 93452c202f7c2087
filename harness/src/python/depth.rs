//! A depth guard for walks over the workload's own data (comparing nested lists, converting
//! them to tensors): a self-referential list (`x = []; x.append(x)`) or one nested a million
//! deep must end in CPython's `RecursionError`, located, never in a stack overflow.
//!
//! The guard lives in a `Cell` so that walks borrowing the interpreter immutably can use it;
//! a walk that goes too deep stops and leaves the guard tripped, and the statement that
//! started it raises the error ([`DepthGuard::take_tripped`]).

use std::cell::Cell;

/// CPython's default recursion limit, which also bounds C-level recursion in comparisons.
pub(super) const DATA_RECURSION_LIMIT: u32 = 1000;

#[derive(Debug, Default)]
pub(super) struct DepthGuard {
    depth: Cell<u32>,
    tripped: Cell<bool>,
}

/// One level of a walk; leaving it (drop) goes back up.
pub(super) struct Level<'g>(&'g DepthGuard);

impl Drop for Level<'_> {
    fn drop(&mut self) {
        self.0.depth.set(self.0.depth.get() - 1);
    }
}

impl DepthGuard {
    /// Enters one level, or `None` (and trips the guard) past the limit.
    pub(super) fn enter(&self) -> Option<Level<'_>> {
        if self.tripped.get() || self.depth.get() >= DATA_RECURSION_LIMIT {
            self.tripped.set(true);
            return None;
        }
        self.depth.set(self.depth.get() + 1);
        Some(Level(self))
    }

    /// Whether a walk went too deep since the last call; resets the guard.
    pub(super) fn take_tripped(&self) -> bool {
        self.tripped.replace(false)
    }
}

impl super::Interpreter<'_> {
    /// `value`, or the `RecursionError` of a walk that went too deep while computing it.
    pub(super) fn data_depth_checked<T>(&self, value: T) -> super::interp::R<T> {
        if self.data_depth.take_tripped() {
            return self.error("RecursionError: maximum recursion depth exceeded in comparison");
        }
        Ok(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nest(guard: &DepthGuard, n: u32) -> bool {
        let Some(_level) = guard.enter() else {
            return false;
        };
        n == 0 || nest(guard, n - 1)
    }

    #[test]
    fn walks_past_the_limit_trip_the_guard_once() {
        let guard = DepthGuard::default();
        assert!(nest(&guard, DATA_RECURSION_LIMIT - 1));
        assert!(!guard.take_tripped());
        assert!(!nest(&guard, DATA_RECURSION_LIMIT));
        assert!(guard.take_tripped());
        assert!(!guard.take_tripped());
        assert!(nest(&guard, 3), "usable again after the error");
    }
}
