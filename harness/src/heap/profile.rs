//! Per-version rules of CPython's collector and object inventory (3.8 – 3.15, the 3.14.0 –
//! 3.14.4 incremental collector, free-threaded builds), as measured and read in the CPython
//! sources (see `reference/cpython-gc.md`).

use crate::scenario::PyVersion;

/// Free-list capacities, the same in 3.8 – 3.13.
pub const DICT_FREE_LIST: u32 = 80;
pub const LIST_FREE_LIST: u32 = 80;
/// Per tuple size, for sizes 1 – 19.
pub const TUPLE_FREE_LIST: u32 = 2000;
/// 3.8's bound-method free list (`PyMethod_MAXFREELIST` in `Objects/classobject.c`); its
/// effect measured: dropping n ≤ 256 bound methods leaves `gc.get_count()[0]` unchanged
/// on 3.8.18 and lowers it by n on 3.9.18, and a full collection empties it.
pub const METHOD_FREE_LIST: u32 = 256;
/// 3.14+'s bound-method free list (`Py_pymethodobjects_MAXFREELIST` in
/// `Include/internal/pycore_freelist_state.h`); measured on 3.14.10 and 3.15.2: dropping 30
/// bound methods after a full collection leaves `gc.get_count()[0]` 20 higher than on
/// 3.13.0, and a loop that makes and drops 60 a pass counts 40 of them.
pub const METHOD_FREE_LIST_314: u32 = 20;
/// 3.14+'s free lists of `list_iterator` and `tuple_iterator` objects, one each
/// (`Py_list_iters_MAXFREELIST` / `Py_tuple_iters_MAXFREELIST` in
/// `Include/internal/pycore_freelist_state.h`). Measured on 3.14.10 and 3.15.2: after a full
/// collection a dropped `iter(xs)` leaves `gc.get_count()[0]` unchanged and the next one is
/// not counted; dropping 20 lowers it by 10 (3.13.0: by 20).
pub const SEQ_ITER_FREE_LIST_314: u32 = 10;
/// 3.14+'s free list of builtin-method objects (`Py_pycfunctionobject_MAXFREELIST`, same
/// header): what binding a C method such as `list.__reversed__` makes.
pub const CFUNCTION_FREE_LIST_314: u32 = 16;
/// 3.8's (`PyCFunction_MAXFREELIST` in `Objects/methodobject.c`; removed in 3.9 with the
/// bound-method one).
pub const CFUNCTION_FREE_LIST: u32 = 256;
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

/// Which collector a release ships.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collector {
    /// Three generations: 3.8 – 3.13, and again from 3.14.5 and in 3.15.
    Generational,
    /// 3.14.0 – 3.14.4: a young generation and two old spaces scanned in increments
    /// (see `heap/incremental.rs`).
    Incremental,
    /// Free-threaded builds: every collection is full (see `heap/free_threaded.rs`).
    /// `negative_count_fixed`: the release carries the gh-142048 fix (CPython PR #142051),
    /// which keeps the shared count from going below zero.
    FreeThreaded { negative_count_fixed: bool },
}

impl Collector {
    pub fn for_version(version: PyVersion) -> Collector {
        if version.free_threaded {
            // PR #142051 was merged on 2025-12-02 and backported to 3.13 (#142167) and 3.14;
            // the first releases cut after it are 3.13.11 and 3.14.2 (inferred from the
            // merge and release dates, not read in a release's source).
            let first_fixed = if version.minor == 13 { 11 } else { 2 };
            return Collector::FreeThreaded {
                negative_count_fixed: version.patch.is_none_or(|p| p >= first_fixed),
            };
        }
        match (version.minor, version.patch) {
            (14, Some(patch)) if patch <= 4 => Collector::Incremental,
            _ => Collector::Generational,
        }
    }
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
    /// 3.8 and 3.14+ keep a free list of method objects (see [`METHOD_FREE_LIST`]); creating
    /// a class takes one from it and leaves it there (the `__init_subclass__` lookup). On
    /// 3.14.10 a class statement right after a full collection costs one more than on 3.13.0
    /// and not once the free lists are warm (measured); the model keeps that temporary on
    /// the bound-method free list.
    pub method_free_list: bool,
    /// Capacity of the bound-method free list: [`METHOD_FREE_LIST`] on 3.8, none on 3.9 –
    /// 3.13, [`METHOD_FREE_LIST_314`] from 3.14 on.
    pub method_free_list_capacity: u32,
    /// Capacity of each of the list-iterator and tuple-iterator free lists: none up to 3.13,
    /// [`SEQ_ITER_FREE_LIST_314`] from 3.14.
    pub seq_iter_free_list_capacity: u32,
    /// Capacity of the builtin-method free list: [`CFUNCTION_FREE_LIST`] on 3.8, none on
    /// 3.9 – 3.13, [`CFUNCTION_FREE_LIST_314`] from 3.14.
    pub cfunction_free_list_capacity: u32,
    /// 3.15's virtual iterators: a `for` loop (or comprehension) over a list or tuple makes
    /// no iterator object (measured: `gc.get_count()` inside the body equals before the loop
    /// on 3.15.2; on 3.14.10 the loop's `list_iterator` comes from its free list).
    pub virtual_loop_iterators: bool,
    /// Objects a class statement without a base class creates for its `__dict__` and
    /// `__weakref__` descriptors: 2 up to 3.14, none on 3.15 (measured on 3.15.2).
    pub new_class_descriptors: u64,
    /// A new class's dict stays tracked by the collector even when it holds only atomic
    /// values (strings): 3.14+. Up to 3.13 such a dict (a class with a base or `__slots__ =
    /// ()` and no methods) is untracked and not among the garbage when the class dies
    /// (measured on 3.8.18 – 3.15.2: `gc.collect()` after dropping such a class returns 3 up
    /// to 3.13, 4 from 3.14; `tests/gc_schedule_classes.rs`).
    pub class_dict_always_tracked: bool,
    /// 3.13+ (not free-threaded 3.13: `ENABLE_SPECIALIZATION` is off with `Py_GIL_DISABLED`;
    /// 3.14 specializes `CALL` there too, `ENABLE_SPECIALIZATION_FT`, read not measured): from a call site's second
    /// run, a call of a plain class whose `__init__` is a simple Python function is
    /// specialized into `CALL_ALLOC_AND_ENTER_INIT` (Python/specialize.c
    /// `specialize_class_call`, Python/bytecodes.c), which pushes `__init__`'s frame without
    /// `type_call`'s argument tuple. The per-site warm-up is `call_sites.rs`. Measured with a
    /// loop that keeps a 1-tuple a pass (draining that free list) and calls a one-argument
    /// class: [3, 1, 1, …] a pass on 3.12.1 and 3.13.5t, [3, 0, 0, …] on 3.13.0, 3.14.10, 3.15.2.
    pub class_call_without_tuple: bool,
    /// 3.13 only: `specialize_class_call` also requires `__init__` to take exactly the passed
    /// arguments (`co_argcount == nargs + 1`, no defaults used) and instances with a managed
    /// dict (no `__slots__` without `__dict__`). 3.14 dropped both checks (its
    /// `_CREATE_INIT_FRAME` binds defaults). Measured: an `__init__(self, x, y=2)` called with
    /// one argument, and a `__slots__` class, keep the tuple on 3.13.0 and not on 3.14.10 or
    /// 3.15.2.
    pub class_call_checks_arguments: bool,
    /// The order a call makes its cell variables' cells in. Up to 3.10
    /// `_PyEval_EvalCodeWithName` (Python/ceval.c) walks `co_cellvars`, sorted by name; from
    /// 3.11 the `MAKE_CELL` prefix walks the fast locals (`compute_localsplus_info`,
    /// Python/compile.c): cells that are parameters at their parameter's place, then the
    /// others by name. Measured with a closure whose `callback` cell sorts before its `t`
    /// parameter (`gc_schedule_frames.rs`).
    pub cells_in_localsplus_order: bool,
    /// 3.12: a collection that finds a started generator suspended at a `yield` in its
    /// garbage closes it by throwing `GeneratorExit` into it (Objects/genobject.c
    /// `gen_close`; 3.13 skips the throw when the `yield` is outside any `try`, the
    /// `RESUME_OPARG_DEPTH1_MASK` check). The exception's traceback takes the generator's
    /// frame, and clearing that frame while the traceback holds it (`take_ownership`,
    /// Objects/frameobject.c) links `f_back` to the frame that was running when the
    /// collection began, which gets a frame object. That object is allocated during the
    /// collection, whose own frees bring the count back to 0 after it, and freed when its
    /// frame returns: one less in the count then. Measured on 3.12.1 (a collection at the
    /// `RESUME` of a constructor that makes a generator: the count drops by one when the
    /// constructor returns, in the collection's iteration only; `gc_schedule_frames.rs`). Not on
    /// 3.11.7, measured the same way (why not was not looked into); up to 3.10 every frame
    /// already has its object.
    pub generator_close_takes_running_frame: bool,
    /// 3.12 and 3.13: `close()` of a generator never started only marks it finished and
    /// keeps its frame (released when the generator is cleared or freed); other versions
    /// release the frame. Measured: an unstarted generator whose frame holds a list holding
    /// it counts 2 in `gc.collect()` on 3.12.1/3.13.0, 0 on 3.8.18-3.11.7 and 3.14.10/3.15.2
    /// (its finalizer freed the cycle; `vm_generator_silent_close.rs`).
    pub generator_close_keeps_unstarted_frame: bool,
    /// Up to 3.10 `super` has no vectorcall (added in 3.11, CPython PR #31687, bpo-46921), so
    /// the `super(type, type)` call of a class statement's `init_subclass` (Objects/typeobject.c,
    /// at the end of `type_new`) packs its two arguments in a temporary 2-tuple, which goes
    /// back to the 2-tuple free list. Measured right after a class statement that followed
    /// `gc.collect()`: a new `(i, i)` is not counted on 3.8.18 – 3.10.13 and is counted on
    /// 3.11.7 – 3.15.2, and a third new `{}` is counted on every release (two dicts on the
    /// free list, not three): the model used to count this tuple as a second temporary dict.
    pub init_subclass_super_tuple: bool,
    /// Up to 3.8, when a finalizer run by a collection made any of the unreachable set
    /// reachable again, the whole set survives that collection (`check_garbage` fails and
    /// `gc_list_merge(&unreachable, old)`), finalized members included, and a later collection
    /// frees what is still garbage; 3.9 frees what is still unreachable in the same
    /// collection (bpo-38379, `handle_resurrected_objects`). Measured: a resurrecting
    /// `__del__` beside three other cycles makes `gc.collect()` return 0 then 4 on 3.8.18, 4
    /// then 0 on 3.9.18 (`heap_finalizer_timing.rs`).
    pub resurrection_keeps_unreachable: bool,
    pub collector: Collector,
}

impl GcProfile {
    pub fn for_version(version: PyVersion) -> GcProfile {
        let minor = version.minor;
        let collector = Collector::for_version(version);
        GcProfile {
            version,
            // `gc.get_threshold()`: measured on 3.8 – 3.13 (pyenv), 3.14.10 and 3.15.2
            // (fetched builds); 3.14.0 – 3.14.4 from `pycore_runtime_init.h` (young 2000,
            // old[0] 10, old[1] 0).
            thresholds: match collector {
                Collector::Incremental => [2000, 10, 0],
                _ if minor >= 13 => [2000, 10, 10],
                _ => [700, 10, 10],
            },
            trigger: if minor >= 12 {
                Trigger::NextStatement
            } else {
                Trigger::InsideAllocation
            },
            instance_dict_object: minor <= 10,
            frame_objects: minor <= 10,
            method_free_list: minor == 8 || minor >= 14,
            method_free_list_capacity: match minor {
                8 => METHOD_FREE_LIST,
                14.. => METHOD_FREE_LIST_314,
                _ => 0,
            },
            seq_iter_free_list_capacity: if minor >= 14 {
                SEQ_ITER_FREE_LIST_314
            } else {
                0
            },
            cfunction_free_list_capacity: match minor {
                8 => CFUNCTION_FREE_LIST,
                14.. => CFUNCTION_FREE_LIST_314,
                _ => 0,
            },
            virtual_loop_iterators: minor >= 15,
            new_class_descriptors: if minor >= 15 { 0 } else { 2 },
            class_dict_always_tracked: minor >= 14,
            class_call_without_tuple: minor >= 14 || (minor == 13 && !version.free_threaded),
            class_call_checks_arguments: minor == 13,
            cells_in_localsplus_order: minor >= 11,
            generator_close_takes_running_frame: minor == 12,
            generator_close_keeps_unstarted_frame: minor == 12 || minor == 13,
            init_subclass_super_tuple: minor <= 10,
            resurrection_keeps_unreachable: minor <= 8,
            collector,
        }
    }
}
