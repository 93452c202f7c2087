//! The evaluator: statements and expressions over the object heap.
//!
//! Reference counting follows CPython's discipline: every evaluated expression yields a
//! *new reference*, which the consumer either stores (handing the reference over) or drops.
//! Allocation goes through [`Interpreter::alloc`], which counts the object for the
//! collector and runs (≤ 3.11) or schedules (≥ 3.12) a collection when one is due.

mod attributes;
mod calls;
mod classes;
mod collection;
mod comprehensions;
mod device;
mod expressions;
mod locals;
mod names;
mod starred;
mod statements;
mod uncaught_traceback;

pub(in crate::python) use expressions::is_constant;
pub(in crate::python) use locals::Locals;

use collection::{CycleKey, CyclePathTexts, SignatureStep};

use super::natives;
use super::scope::{Codes, analyze, intern_identifiers};
use super::small_map::SmallMap;
use super::{Interner, SourceMap};
use crate::allocator::{
    AllocatorConfig, AllocatorEvent, CachingAllocator, DeviceMemory, SimulatedDevice,
};
use crate::error::{Error, InputErrorKind};
use crate::heap::{GcProfile, Heap, ObjId, Sym, Trigger, Value};
use crate::scenario::{GcStartState, PyVersion};
use crate::timeline::{CycleReport, Recorder, Timeline};
use crate::torch::Storages;
use ruff_python_ast::Stmt;
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Python calls nested deeper than this raise `RecursionError`, as CPython's default limit.
pub(super) const RECURSION_LIMIT: usize = 1000;

/// Nesting of expression evaluation (calls included) beyond which a workload is rejected,
/// so that the interpreter's recursion stays within its thread's stack.
pub(super) const MAX_EVAL_DEPTH: u32 = 50_000;

/// Why evaluation stopped early.
pub enum Exc {
    /// A workload error (or unsupported construct) at a byte offset of the workload.
    Error {
        kind: InputErrorKind,
        message: String,
        offset: u32,
    },
    /// `torch.OutOfMemoryError`, which ends the run.
    Oom,
    /// A Python exception in flight (an owned reference), with the depth of the frame that
    /// last added a traceback entry and where it was raised.
    Raised {
        exception: ObjId,
        tb_depth: Option<usize>,
        offset: u32,
    },
}

pub type R<T> = Result<T, Box<Exc>>;

/// How a run ended when it did not fail with an input error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnd {
    Completed,
    OutOfMemory,
}

pub(super) enum Flow {
    Normal,
    Return(Value),
    Break,
    Continue,
}

/// One Python call frame.
pub(super) struct Frame {
    /// Index into the code table; `None` for the module level.
    pub(super) code: Option<u32>,
    pub(super) name: Sym,
    /// File line of the statement being executed.
    pub(super) line: u32,
    /// Its frame object, once something took the frame (see `frames.rs`).
    pub(super) object: Option<ObjId>,
    /// ≤ 3.10: whether the call uses its code object's zombie frame.
    pub(super) used_zombie: bool,
    /// Its plain locals by slot (`Code::varnames`); empty for module and class-body code.
    pub(in crate::python) locals: Locals,
    /// Cells of this frame's cell variables and of its free variables.
    pub(in crate::python) cells: SmallMap<Sym, ObjId>,
    /// Namespaces of class bodies being executed in this frame (innermost last).
    pub(in crate::python) class_namespaces: Vec<Vec<(Sym, Value)>>,
}

/// The workload interpreter with its heap, device and timeline.
pub struct Interpreter<'a> {
    pub heap: Heap,
    pub names: Interner,
    /// Shared so that a call can read its code while the interpreter changes.
    pub(super) codes: std::rc::Rc<Codes<'a>>,
    map: SourceMap<'a>,
    module: &'a [Stmt],
    globals: FxHashMap<Sym, Value>,
    pub(super) frames: Vec<Frame>,
    pub(super) exc: super::exceptions::ExceptionState,
    /// Whether the workload made a `property` (only then can an attribute store run code).
    pub(super) properties_defined: bool,
    pub(super) stdlib: super::stdlib::StdlibState,
    /// The simulated device, or a real GPU (`device: cuda`).
    pub(super) allocator: CachingAllocator<Box<dyn DeviceMemory>>,
    pub(super) storages: Storages,
    pub(super) recorder: Recorder,
    events: Vec<AllocatorEvent>,
    stack_cache: crate::timeline::StackTrie,
    /// Offset of the construct being evaluated, for error locations.
    pub(super) offset: u32,
    /// The keyword arguments of the call being dispatched and their offsets, so that a
    /// refused keyword is reported at the argument.
    pub(super) call_keywords: Vec<(Sym, u32)>,
    pub(super) loop_depth: u32,
    pub(super) iteration_loop_seen: bool,
    /// The loop marked `# gpumem: measure` (python/measured_loop.rs), if any.
    pub(super) measured_loop: Option<crate::python::measured_loop::LoopKey>,
    /// The loops written in the module body itself (python/measured_loop.rs): when there
    /// are any, only they can be the default measured loop.
    pub(super) module_loops: Vec<crate::python::measured_loop::LoopKey>,
    pub(super) device_storages_alive: u64,
    /// The located traceback of an exception that ended the run (`uncaught_traceback.rs`).
    uncaught_traceback: Vec<String>,
    /// Class statements whose body has run once (≤ 3.10: its frame is kept as a zombie).
    class_bodies_run: rustc_hash::FxHashSet<usize>,
    /// The annotated names of a decorated class statement's body, while its decorators
    /// run (what `@dataclass` reads as `__annotations__`).
    pub(in crate::python) class_annotations: FxHashMap<ObjId, Vec<Sym>>,
    /// Classes that already have a subclass registry.
    classes_with_subclasses: rustc_hash::FxHashSet<ObjId>,
    pub(super) eval_depth: u32,
    builtin_cache: FxHashMap<Sym, Option<Value>>,
    pub(in crate::python) module_attr_cache: FxHashMap<(crate::heap::NativeId, Sym), Option<Value>>,
    /// Formatted reference paths (an index into `cycle_path_texts`) by the shape of the path.
    described_hits: FxHashMap<Vec<SignatureStep>, u32>,
    cycle_path_texts: CyclePathTexts,
    /// Each collection's freed storage → path, kept between collections to reuse its table.
    cycle_paths_scratch: FxHashMap<crate::torch::StorageId, u32>,
    /// Device tensors freed by the collector, aggregated by path, tensor and site, in
    /// first-seen order: the index into `cycle_totals` (count, first iteration).
    cycle_tally: FxHashMap<CycleKey, usize>,
    cycle_totals: Vec<(u64, Option<u32>)>,
    sym_init: Sym,
    /// ≤ 3.10: the code-object key (from `u32::MAX` down, apart from function code indexes)
    /// under which each comprehension's zombie frame is parked (`heap/zombie_frames.rs`).
    comprehension_codes: FxHashMap<usize, u32>,
    /// Autograd's grad mode (`torch.no_grad()` turns it off).
    pub(super) grad_enabled: bool,
    pub(super) torch_classes: super::torchlib::TorchClasses,
    /// Custom Function ctx → its node (weak; checked on use).
    pub(super) ctx_nodes: FxHashMap<ObjId, ObjId>,
    /// `(rank, world_size)` after `dist.init_process_group`.
    pub(super) process_group: Option<(i64, i64)>,
    pub(super) budget: super::budget::Budget,
    /// Compiled bodies of generator functions by code index (`vm/`).
    pub(super) vm_codes: FxHashMap<u32, Rc<super::vm::VmCode<'a>>>,
    /// Compiled plain function bodies, by code index (`vm/plain.rs`).
    pub(super) plain_codes: Vec<Option<Rc<super::vm::VmCode<'a>>>>,
    /// The loops of the plain bodies running (`vm/plain.rs`).
    pub(super) plain_loops: Vec<super::vm::PlainLoop>,
    /// The value stacks of the plain bodies running: kept return values and the exceptions
    /// their `except`/`finally` blocks handle (`vm/plain_try.rs`).
    pub(super) plain_slots: Vec<super::vm::PlainSlot>,
    /// The `try` handlers of the plain bodies running (`vm/plain_try.rs`).
    pub(super) plain_blocks: Vec<super::vm::PlainBlock>,
    /// Constant tuples by AST node address, kept for the run like `co_consts`.
    pub(super) constants: FxHashMap<usize, crate::heap::ObjId>,
    /// The asyncio event loop while `asyncio.run` runs (`vm/event_loop.rs`).
    pub(super) event_loop: Option<Box<super::vm::EventLoop>>,
    /// The iterable of the compiled `for` loop that marks the iterations, while it runs.
    pub(super) vm_iteration_loop: Option<Value>,
    /// Values the VM bound to expression nodes split at suspension points (`vm/split.rs`).
    pub(super) vm_substitutes: Vec<super::vm::Substitute>,
    /// Set by an async generator's `yield` as its frame suspends: the step that resumed
    /// it takes the value as the item of `__anext__()`, not as a value for the event loop.
    pub(super) async_gen_yielded: bool,
    pub(super) data_depth: super::depth::DepthGuard,
    /// `torch.autocast` regions and their cast cache (`amp.rs`).
    pub(in crate::python) autocast: super::amp::AutocastState,
    /// Emptied local-slot tables of returned calls, reused by later calls' frames so
    /// that a call does not allocate one (Rust memory only, not modelled objects).
    pub(super) spare_locals: Vec<Vec<Option<Value>>>,
    /// Emptied argument vectors of calls, reused by later calls (`interp/calls.rs`).
    pub(super) spare_args: Vec<Vec<Value>>,
    /// Emptied by-name local lists (what suspended generators keep), reused likewise.
    pub(super) spare_named: Vec<Vec<(Sym, Value)>>,
    /// Emptied cell lists of returned frames, reused like `spare_locals`.
    pub(super) spare_cells: Vec<Vec<(Sym, ObjId)>>,
    /// What the workload printed (`print_output.rs`), handed to the timeline at the end.
    pub(super) printed: super::print_output::Printed,
    /// Compiled class bodies, by the class statement's address (`vm/plain.rs`).
    pub(super) class_codes: FxHashMap<usize, Rc<super::vm::VmCode<'a>>>,
    /// The value stack of compiled expressions (`vm/eval_expr.rs`): their temporaries.
    pub(super) expr_stack: Vec<Value>,
}

impl<'a> Interpreter<'a> {
    pub fn new(
        module: &'a [Stmt],
        map: SourceMap<'a>,
        version: PyVersion,
        start: &GcStartState,
        device_capacity: u64,
    ) -> Interpreter<'a> {
        let device = Box::new(SimulatedDevice::new(device_capacity));
        Interpreter::with_device(module, map, version, start, device)
    }

    /// [`Interpreter::new`] on a given device (a real GPU for `device: cuda`).
    pub fn with_device(
        module: &'a [Stmt],
        map: SourceMap<'a>,
        version: PyVersion,
        start: &GcStartState,
        device: Box<dyn DeviceMemory>,
    ) -> Interpreter<'a> {
        let device_capacity = device.capacity();
        let mut names = Interner::default();
        let codes = std::rc::Rc::new(analyze(module, &mut names));
        intern_identifiers(module, &mut names);
        let mut heap = Heap::new(
            GcProfile::for_version(version),
            start.counts,
            start.long_lived_total,
        );
        if start.free_lists_full {
            heap.fill_free_lists();
        }
        heap.start_count_below_zero(start.count_below_zero);
        heap.gc_callbacks = start.gc_callbacks;
        heap.instance_finalizers.del_sym = names.lookup("__del__");
        let sym_init = names.intern("__init__");
        let module_name = names.intern("<module>");
        let torch_classes = super::torchlib::TorchClasses::create(&mut heap, &mut names);
        let mut interp = Interpreter {
            grad_enabled: true,
            torch_classes,
            ctx_nodes: FxHashMap::default(),
            process_group: None,
            budget: Default::default(),
            data_depth: Default::default(),
            autocast: Default::default(),
            vm_codes: FxHashMap::default(),
            plain_codes: Vec::new(),
            plain_loops: Vec::new(),
            plain_slots: Vec::new(),
            plain_blocks: Vec::new(),
            constants: FxHashMap::default(),
            event_loop: None,
            vm_iteration_loop: None,
            vm_substitutes: Vec::new(),
            async_gen_yielded: false,
            heap,
            names,
            codes,
            map,
            module,
            globals: FxHashMap::default(),
            frames: vec![Frame {
                code: None,
                name: module_name,
                line: 0,
                object: None,
                used_zombie: false,
                locals: Locals::default(),
                cells: SmallMap::new(),
                class_namespaces: Vec::new(),
            }],
            exc: Default::default(),
            properties_defined: false,
            stdlib: Default::default(),
            allocator: CachingAllocator::new(device, AllocatorConfig::default()),
            storages: Storages::default(),
            recorder: Recorder::new(device_capacity),
            events: Vec::new(),
            stack_cache: crate::timeline::StackTrie::default(),
            offset: 0,
            call_keywords: Vec::new(),
            loop_depth: 0,
            iteration_loop_seen: false,
            measured_loop: None,
            module_loops: Vec::new(),
            device_storages_alive: 0,
            uncaught_traceback: Vec::new(),
            class_bodies_run: Default::default(),
            class_annotations: FxHashMap::default(),
            classes_with_subclasses: Default::default(),
            eval_depth: 0,
            builtin_cache: FxHashMap::default(),
            module_attr_cache: FxHashMap::default(),
            described_hits: FxHashMap::default(),
            cycle_path_texts: CyclePathTexts::default(),
            cycle_paths_scratch: FxHashMap::default(),
            cycle_tally: FxHashMap::default(),
            cycle_totals: Vec::new(),
            sym_init,
            comprehension_codes: FxHashMap::default(),
            spare_locals: Vec::new(),
            spare_named: Vec::new(),
            spare_args: Vec::new(),
            spare_cells: Vec::new(),
            printed: Default::default(),
            class_codes: FxHashMap::default(),
            expr_stack: Vec::new(),
        };
        for (name, value) in natives::preloaded_globals() {
            let sym = interp.names.intern(name);
            interp.globals.insert(sym, value);
        }
        interp
    }

    /// Binds a module-level name (a `vary` variable) before the run.
    pub fn set_global(&mut self, name: &str, value: Value) {
        let sym = self.names.intern(name);
        if let Some(old) = self.globals.insert(sym, value) {
            self.heap.decref(old);
        }
    }

    /// Runs the workload to its end, or to an out-of-memory error.
    pub fn run(&mut self) -> Result<RunEnd, Error> {
        let result = self.run_module_body(self.module);
        self.release_dropped_storages(None);
        let end = match result {
            Ok(_) => RunEnd::Completed,
            Err(exc) => match *exc {
                Exc::Oom => RunEnd::OutOfMemory,
                Exc::Raised {
                    exception, offset, ..
                } => {
                    self.uncaught_traceback = self.located_traceback(exception);
                    match self.uncaught(exception, offset) {
                        Ok(()) => {
                            self.uncaught_traceback.clear();
                            RunEnd::OutOfMemory
                        }
                        Err((kind, message, offset)) => {
                            return Err(Error::input(kind, self.map.location(offset), message));
                        }
                    }
                }
                Exc::Error {
                    kind,
                    message,
                    offset,
                } => {
                    return Err(Error::input(kind, self.map.location(offset), message));
                }
            },
        };
        if self.recorder.iteration().is_some() {
            self.close_iteration(false);
        }
        Ok(end)
    }

    pub fn finish(mut self) -> Timeline {
        let mut tally: Vec<(CycleKey, usize)> =
            std::mem::take(&mut self.cycle_tally).into_iter().collect();
        tally.sort_by_key(|(_, index)| *index);
        for (key, index) in tally {
            let (count, first_iteration) = self.cycle_totals[index];
            let (holder, cycle) = self.cycle_path_texts.get(key.path);
            self.recorder.cycle_report(CycleReport {
                holder_path: holder.to_string(),
                cycle: cycle.to_string(),
                tensor: format!(
                    "{} ({})",
                    crate::torch::describe(key.dtype, &key.shape),
                    key.category.name()
                ),
                bytes_each: key.bytes,
                alloc_site: key.site,
                count,
                bytes_total: count * key.bytes,
                first_iteration,
            });
        }
        let approximations = self.approximations();
        for note in approximations {
            self.recorder.approximation(note);
        }
        let printed = std::mem::take(&mut self.printed);
        let mut timeline = self.recorder.finish();
        timeline.printed = printed;
        timeline
    }

    fn approximations(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.heap.profile.trigger == Trigger::NextStatement {
            notes.push(format!(
                "CPython {} runs a due collection at its next eval-breaker check; the model checks on function entry, loop back edges and after calls into C, which CPython also does, but not at every instruction that checks, so a collection can run a little later than in CPython (about one iteration).",
                self.heap.profile.version
            ));
        }
        // A real device's context and other processes are in its driver's figures.
        if !self.allocator.device().is_real() {
            // `device.context` is taken from the simulated device before the workload: what
            // the process uses beyond the allocator's segments.
            let device = self.allocator.device();
            let context = device
                .process_used_bytes()
                .saturating_sub(self.allocator.stats().reserved_bytes);
            notes.push(if context == 0 {
                "Device capacity is the total memory PyTorch reports; the CUDA context and other processes are not modelled.".into()
            } else {
                format!(
                    "Device capacity is the total memory PyTorch reports; the CUDA context is the scenario's `device.context` ({}), taken before the workload; other processes are not modelled.",
                    crate::units::torch_format_size(context)
                )
            });
        }
        notes
    }

    // ----- errors -------------------------------------------------------------------------

    pub(super) fn error<T>(&self, message: impl Into<String>) -> R<T> {
        Err(Box::new(Exc::Error {
            kind: InputErrorKind::Runtime,
            message: message.into(),
            offset: self.offset,
        }))
    }

    pub(super) fn unsupported<T>(&self, construct: impl Into<String>) -> R<T> {
        Err(Box::new(Exc::Error {
            kind: InputErrorKind::Unsupported,
            // Read as `unsupported: X`, as the static pass reports it.
            message: construct.into(),
            offset: self.offset,
        }))
    }

    pub(super) fn at(&mut self, node: &impl Ranged) {
        self.offset = node.range().start().to_u32();
    }
}
