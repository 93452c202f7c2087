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
//!
//! Measured the same way on 3.8.18 – 3.15.2 (`tests/gc_schedule_free_lists.rs`): `int('3')`
//! counts one up to 3.12 and none from 3.13, `str(3)` one up to 3.11 and none from 3.12 (neither
//! result is a GC object, so that one is the argument tuple); `set(xs)` and `frozenset(xs)`
//! count one more on 3.8 than on 3.9. `reversed`, `map` and `filter` count one more up to 3.9
//! than on 3.10, `enumerate` one more up to 3.10 than on 3.11, and `zip(a, b)` counts six on
//! every release (the zip, its two iterators, its iterator tuple and its cached result tuple:
//! five, and the packed arguments).

use crate::scenario::PyVersion;

/// A builtin type whose call the model runs natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BuiltinTypeCall {
    Range,
    List,
    Tuple,
    Float,
    Bool,
    Int,
    Str,
    Set,
    FrozenSet,
    Reversed,
    Map,
    Filter,
    Enumerate,
    /// `zip` has no vectorcall on any supported release.
    Zip,
}

impl BuiltinTypeCall {
    /// The first minor release in which the type has a vectorcall entry point (measured;
    /// the 3.9 ones are CPython's bpo-37207 changes to `Objects/rangeobject.c`,
    /// `listobject.c` and `tupleobject.c`).
    fn first_vectorcall_minor(self) -> u8 {
        use BuiltinTypeCall as T;
        match self {
            T::Range | T::List | T::Tuple | T::Set | T::FrozenSet => 9,
            T::Float | T::Bool | T::Reversed | T::Map | T::Filter => 10,
            T::Enumerate => 11,
            T::Str => 12,
            T::Int => 13,
            T::Zip => u8::MAX,
        }
    }

    /// Whether a call of this type packs its positional arguments in a tuple on `version`.
    pub fn packs_arguments(self, version: PyVersion) -> bool {
        version.minor < self.first_vectorcall_minor()
    }

    /// Whether a call with keywords (`keywords`) goes through `tp_call` on `version`, packing
    /// its positional arguments in a tuple and its keywords in a dict (`_PyObject_MakeTpCall`).
    /// `int`'s and `str`'s vectorcalls take no keywords and hand such a call to `tp_call`
    /// (measured: `int('3', base=10)` counts 2 on 3.8.18 – 3.15.2); `enumerate`'s takes
    /// `start`, and the other types' take none at all.
    pub fn packs_call(self, version: PyVersion, keywords: bool) -> bool {
        self.packs_arguments(version)
            || (keywords && matches!(self, BuiltinTypeCall::Int | BuiltinTypeCall::Str))
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

    #[test]
    fn int_packs_up_to_3_12_str_up_to_3_11_enumerate_up_to_3_10_and_zip_always() {
        assert!(BuiltinTypeCall::Int.packs_arguments(version(12)));
        assert!(!BuiltinTypeCall::Int.packs_arguments(version(13)));
        assert!(BuiltinTypeCall::Str.packs_arguments(version(11)));
        assert!(!BuiltinTypeCall::Str.packs_arguments(version(12)));
        assert!(BuiltinTypeCall::Enumerate.packs_arguments(version(10)));
        assert!(!BuiltinTypeCall::Enumerate.packs_arguments(version(11)));
        assert!(BuiltinTypeCall::Zip.packs_arguments(version(15)));
    }

    #[test]
    fn int_and_str_calls_with_keywords_go_through_tp_call_on_every_release() {
        assert!(BuiltinTypeCall::Int.packs_call(version(15), true));
        assert!(!BuiltinTypeCall::Int.packs_call(version(15), false));
        assert!(BuiltinTypeCall::Str.packs_call(version(13), true));
        assert!(!BuiltinTypeCall::Enumerate.packs_call(version(11), true));
        assert!(BuiltinTypeCall::Enumerate.packs_call(version(10), true));
    }
}
