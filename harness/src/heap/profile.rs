//! Per-version rules of CPython's collector and object inventory (3.8 – 3.13), as measured
//! and read in the CPython sources (see `reference/cpython-gc.md`).

use crate::scenario::PyVersion;

/// Free-list capacities, the same in 3.8 – 3.13.
pub const DICT_FREE_LIST: u32 = 80;
pub const LIST_FREE_LIST: u32 = 80;
/// Per tuple size, for sizes 1 – 19.
pub const TUPLE_FREE_LIST: u32 = 2000;
/// Frames (≤ 3.10) beyond each code object's zombie frame.
pub const FRAME_FREE_LIST: u32 = 200;

/// When an allocation past threshold 0 runs the collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// 3.8 – 3.11: synchronously, inside the allocation (`_PyObject_GC_Alloc` / `_Link`).
    InsideAllocation,
    /// 3.12+: the allocation sets the eval breaker; the collection runs at the next check,
    /// modelled as the next statement boundary (CPython checks on backward jumps and calls,
    /// so the real point can be up to a statement later or earlier: ±1 iteration).
    NextStatement,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GcProfile {
    pub version: PyVersion,
    /// `gc.get_threshold()` defaults.
    pub thresholds: [u64; 3],
    pub trigger: Trigger,
    /// ≤ 3.10: an instance's attributes live in a separate `__dict__` dict object.
    pub instance_dict_object: bool,
    /// ≤ 3.10: frames are GC objects. Each code object keeps one "zombie" frame for reuse,
    /// so only its first call (and calls while that frame is busy, beyond the frame free
    /// list) allocate one.
    pub frame_objects: bool,
    /// 3.8 keeps a free list of bound-method objects; creating a class leaves one there
    /// (the `__init_subclass__` lookup), counted once.
    pub method_free_list: bool,
}

impl GcProfile {
    pub fn for_version(version: PyVersion) -> GcProfile {
        let minor = version.minor;
        GcProfile {
            version,
            thresholds: if minor >= 13 {
                [2000, 10, 10]
            } else {
                [700, 10, 10]
            },
            trigger: if minor >= 12 {
                Trigger::NextStatement
            } else {
                Trigger::InsideAllocation
            },
            instance_dict_object: minor <= 10,
            frame_objects: minor <= 10,
            method_free_list: minor == 8,
        }
    }
}
