//! 3.13+: the adaptive `CALL` instruction of each call site, as far as it decides whether a
//! class call makes `type_call`'s argument tuple.
//!
//! CPython quickens every `CALL` with a warm-up counter (`_PyCode_Quicken`, Python/specialize.c;
//! `adaptive_counter_warmup()`: value 1, backoff 1, `pycore_backoff.h`). The adaptive
//! instruction (`_SPECIALIZE_CALL`, Python/bytecodes.c) specializes when the counter's value is
//! zero and otherwise decrements it and runs the generic call, so a site's first run is generic
//! and its second specializes. A call of a plain class specializes into
//! `CALL_ALLOC_AND_ENTER_INIT` (`specialize_class_call`), which pushes `__init__`'s frame with
//! no argument tuple; success sets the cooldown counter (value 52, backoff 0), failure the
//! backoff counter (backoff + 1 up to 12, value 2^backoff − 1). A specialized site called with
//! another class (or a class whose version changed) misses its type-version guard and runs
//! the adaptive instruction again: generic call, counter decremented, so the 53rd miss
//! re-specializes for the class it sees.
//!
//! Measured (a loop keeping a 1-tuple a pass so the tuple free list is empty at the call,
//! `gc.get_count()` around `c = C(1)`): 3.13.0, 3.14.10 and 3.15.2 count [3, 0, 0, …] where
//! 3.12.1 counts [3, 1, 1, …]; a second run of the same function starts at 2 (the site stays
//! specialized); a site alternating two classes counts 1 on every miss until the 53rd miss
//! (pass 106) re-specializes it for the other class. Free-threaded 3.13 does not specialize
//! (`ENABLE_SPECIALIZATION` is off with `Py_GIL_DISABLED`): [3, 1, 1, …] on 3.13.5t.
//!
//! Only class calls are followed: a site that also calls functions or C callables keeps its
//! class-call state as if those calls were not there (approximation).

use super::ObjId;
use rustc_hash::FxHashMap;

/// `adaptive_counter_warmup()`.
const WARMUP: Counter = Counter {
    value: 1,
    backoff: 1,
};
/// `adaptive_counter_cooldown()`.
const COOLDOWN: Counter = Counter {
    value: 52,
    backoff: 0,
};
/// `MAX_BACKOFF` of the exponential backoff.
const MAX_BACKOFF: u8 = 12;

/// The adaptive counter in a `CALL`'s inline cache.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counter {
    value: u16,
    backoff: u8,
}

impl Counter {
    /// `adaptive_counter_backoff()`: the next wait doubles after each failed specialization.
    fn backoff(self) -> Counter {
        let backoff = (self.backoff + 1).min(MAX_BACKOFF);
        Counter {
            value: (1 << backoff) - 1,
            backoff,
        }
    }
}

/// One call site's cache: its counter and the class (and that class's version) it is
/// specialized for, if any.
#[derive(Debug, Clone, Copy)]
struct Site {
    counter: Counter,
    specialized_for: Option<(ObjId, u32)>,
}

/// The call sites of a run, keyed by the call expression's identity, and the version tag of
/// each class a site was specialized for (CPython's `tp_version_tag`).
#[derive(Debug, Default)]
pub struct CallSites {
    sites: FxHashMap<usize, Site>,
    class_versions: FxHashMap<u32, u32>,
    next_version: u32,
    /// The plain `CALL` (no `*`, no keywords) about to run, set by the call expression and
    /// taken by the call, so that a callee's own calls never see it.
    pending: Option<usize>,
}

impl CallSites {
    /// The next call is the plain `CALL` instruction at `site`.
    pub fn set_site(&mut self, site: usize) {
        self.pending = Some(site);
    }

    /// The call site of the call now starting, if it is a plain `CALL`.
    pub fn take_site(&mut self) -> Option<usize> {
        self.pending.take()
    }

    /// Runs the call instruction at `site` for a class call; `qualifies` is whether
    /// `specialize_class_call` would succeed for `class` with these arguments. Returns whether
    /// this call runs specialized (no argument tuple).
    pub fn class_call(&mut self, site: usize, class: ObjId, qualifies: bool) -> bool {
        let version = self.version_of(class);
        let entry = self.sites.entry(site).or_insert(Site {
            counter: WARMUP,
            specialized_for: None,
        });
        if entry.specialized_for == Some((class, version)) {
            return true;
        }
        if entry.counter.value > 0 {
            entry.counter.value -= 1;
            return false;
        }
        if qualifies {
            entry.counter = COOLDOWN;
            entry.specialized_for = Some((class, version));
            true
        } else {
            entry.counter = entry.counter.backoff();
            entry.specialized_for = None;
            false
        }
    }

    /// A class's attributes changed (`PyType_Modified`): its next call misses every site
    /// specialized for it.
    pub fn class_modified(&mut self, class: ObjId) {
        self.class_versions.remove(&class.0);
    }

    /// A class object was freed; its id may name another class later.
    pub fn class_gone(&mut self, class: ObjId) {
        self.class_versions.remove(&class.0);
    }

    fn version_of(&mut self, class: ObjId) -> u32 {
        let next = &mut self.next_version;
        *self.class_versions.entry(class.0).or_insert_with(|| {
            *next += 1;
            *next
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_specializes_on_its_second_run() {
        let mut sites = CallSites::default();
        let runs: Vec<bool> = (0..4)
            .map(|_| sites.class_call(7, ObjId(1), true))
            .collect();
        assert_eq!(runs, [false, true, true, true]);
    }

    #[test]
    fn a_site_alternating_two_classes_respecializes_at_the_53rd_miss() {
        let mut sites = CallSites::default();
        let (a, b) = (ObjId(1), ObjId(2));
        let runs: Vec<bool> = (0..140)
            .map(|i| sites.class_call(7, if i % 2 == 0 { a } else { b }, true))
            .collect();
        // Pass 0 warms up, pass 1 specializes for b; a misses on every even pass until the
        // 53rd miss (pass 106) specializes for a; then b misses.
        let changes: Vec<usize> = (2..140).filter(|&i| runs[i] != (i % 2 == 1)).collect();
        assert!(!runs[0]);
        assert_eq!(changes.first(), Some(&106), "{runs:?}");
        assert_eq!(changes.len(), 140 - 106);
    }

    #[test]
    fn a_failed_specialization_backs_off() {
        let mut sites = CallSites::default();
        // warm-up, fail (backoff 2: wait 3), then 3 generic runs, then try again.
        let runs: Vec<bool> = (0..6)
            .map(|i| sites.class_call(7, ObjId(1), i >= 5))
            .collect();
        assert_eq!(runs, [false, false, false, false, false, true]);
    }

    #[test]
    fn a_modified_or_new_class_misses() {
        let mut sites = CallSites::default();
        let c = ObjId(1);
        assert!(!sites.class_call(7, c, true));
        assert!(sites.class_call(7, c, true));
        sites.class_modified(c);
        assert!(!sites.class_call(7, c, true));
        sites.class_gone(c);
        assert!(!sites.class_call(7, c, true));
    }
}
