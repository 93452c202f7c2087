//! Calls of builtin types that CPython makes through `tp_call` on older releases: `type_call`
//! takes its positional arguments as a tuple, so such a call allocates an argument tuple
//! (from the tuple free list when it has one) that is freed when the call returns. Each type
//! gained a vectorcall entry point (`PyVectorcall`, bpo-37207) in the release given here,
//! from which it is called without that tuple.
//!
//! Measured with `gc.get_count()` around a kept call right after `gc.collect()` (free lists
//! empty) on 3.8.18, 3.9.18, 3.10.13 and 3.11.7: `range(3)`, `range(1, 3)`, `list(xs)` and
//! `tuple(xs)` count one more on 3.8 than on 3.9; `float(3)` and `bool(3)` one more on 3.9 than
//! on 3.10 (and on 3.8). This matters for the schedule: on 3.8 the `range()` of a `for` loop
//! leaves a 1-tuple on the free list that the first call in the loop then takes.

use crate::scenario::PyVersion;

/// A builtin type whose call the model runs natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinTypeCall {
    Range,
    List,
    Tuple,
    Float,
    Bool,
}

impl BuiltinTypeCall {
    /// The first minor release in which the type has a vectorcall entry point (measured;
    /// the 3.9 ones are CPython's bpo-37207 changes to `Objects/rangeobject.c`,
    /// `listobject.c` and `tupleobject.c`).
    fn first_vectorcall_minor(self) -> u8 {
        match self {
            BuiltinTypeCall::Range | BuiltinTypeCall::List | BuiltinTypeCall::Tuple => 9,
            BuiltinTypeCall::Float | BuiltinTypeCall::Bool => 10,
        }
    }

    /// Whether a call of this type packs its positional arguments in a tuple on `version`.
    pub fn packs_arguments(self, version: PyVersion) -> bool {
        version.minor < self.first_vectorcall_minor()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(minor: u8) -> PyVersion {
        PyVersion {
            minor,
            patch: None,
            free_threaded: false,
        }
    }

    #[test]
    fn range_packs_its_arguments_only_before_3_9_and_float_before_3_10() {
        assert!(BuiltinTypeCall::Range.packs_arguments(version(8)));
        assert!(!BuiltinTypeCall::Range.packs_arguments(version(9)));
        assert!(BuiltinTypeCall::Float.packs_arguments(version(9)));
        assert!(!BuiltinTypeCall::Float.packs_arguments(version(10)));
    }
}
