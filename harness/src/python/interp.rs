//! The evaluator: statements and expressions over the object heap.
//!
//! Reference counting follows CPython's discipline: every evaluated expression yields a
//! *new reference*, which the consumer either stores (handing the reference over) or drops.
//! Allocation goes through [`Interpreter::alloc`], which counts the object for the
//! collector and runs (≤ 3.11) or schedules (≥ 3.12) a collection when one is due.

use super::natives::{self, Native};
use super::scope::{Body, Codes, NameScope, analyze, intern_identifiers, symbol};
use super::small_map::SmallMap;
use super::{Interner, SourceMap};
use crate::allocator::{
    AllocatorConfig, AllocatorEvent, CachingAllocator, DeviceMemory, SimulatedDevice,
};
use crate::error::{Error, InputErrorKind};
use crate::heap::{
    Attrs, Class, CycleHit, Edge, Function, GcProfile, Heap, ObjId, ObjKind, Sym, Trigger, Value,
};
use crate::scenario::{GcStartState, PyVersion};
use crate::timeline::{
    CycleReport, Frame as StackFrame, GcEvent, OomReport, Recorder, StackId, Timeline,
};
use crate::torch::{Category, DeviceKind, Dtype, Storage, StorageId, Storages, TensorData};
use ruff_python_ast::{self as ast, CmpOp, Expr, Operator, Stmt, UnaryOp};
use ruff_text_size::Ranged;
use rustc_hash::FxHashMap;
use std::rc::Rc;

/// Python calls nested deeper than this raise `RecursionError`, as CPython's default limit.
const RECURSION_LIMIT: usize = 1000;

/// Nesting of expression evaluation (calls included) beyond which a workload is rejected,
/// so that the interpreter's recursion stays within its thread's stack.
const MAX_EVAL_DEPTH: u32 = 50_000;

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
    locals: SmallMap<Sym, Value>,
    /// Cells of this frame's cell variables and of its free variables.
    cells: SmallMap<Sym, ObjId>,
    /// Namespaces of class bodies being executed in this frame (innermost last).
    class_namespaces: Vec<Vec<(Sym, Value)>>,
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
    stack_cache: FxHashMap<Vec<(u32, u32)>, StackId>,
    /// Offset of the construct being evaluated, for error locations.
    pub(super) offset: u32,
    /// The keyword arguments of the call being dispatched and their offsets, so that a
    /// refused keyword is reported at the argument.
    pub(super) call_keywords: Vec<(Sym, u32)>,
    loop_depth: u32,
    iteration_loop_seen: bool,
    pub(super) device_storages_alive: u64,
    /// ≤ 3.10: for each code object, whether it has a zombie frame and whether a call (or
    /// a frame object that outlived its call) is using it.
    frames_of_code: FxHashMap<u32, (bool, bool)>,
    /// Class statements whose body has run once (≤ 3.10: its frame is kept as a zombie).
    class_bodies_run: rustc_hash::FxHashSet<usize>,
    /// Classes that already have a subclass registry.
    classes_with_subclasses: rustc_hash::FxHashSet<ObjId>,
    method_free_list_primed: bool,
    eval_depth: u32,
    /// Formatted reference paths by the shape of the path.
    builtin_cache: FxHashMap<Sym, Option<Value>>,
    module_attr_cache: FxHashMap<(crate::heap::NativeId, Sym), Option<Value>>,
    described_hits: FxHashMap<Vec<SignatureStep>, (Rc<str>, Rc<str>)>,
    /// Device tensors freed by the collector, aggregated by path, tensor and site, in
    /// first-seen order: the index into `cycle_totals` (count, first iteration).
    cycle_tally: FxHashMap<CycleKey, usize>,
    cycle_totals: Vec<(u64, Option<u32>)>,
    sym_init: Sym,
    /// Autograd's grad mode (`torch.no_grad()` turns it off).
    pub(super) grad_enabled: bool,
    pub(super) torch_classes: super::torchlib::TorchClasses,
    /// Custom Function ctx → its node (weak; checked on use).
    pub(super) ctx_nodes: FxHashMap<ObjId, ObjId>,
    /// `(rank, world_size)` after `dist.init_process_group`.
    pub(super) process_group: Option<(i64, i64)>,
    pub(super) budget: super::budget::Budget,
    pub(super) data_depth: super::depth::DepthGuard,
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
                locals: SmallMap::new(),
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
            stack_cache: FxHashMap::default(),
            offset: 0,
            call_keywords: Vec::new(),
            loop_depth: 0,
            iteration_loop_seen: false,
            device_storages_alive: 0,
            frames_of_code: FxHashMap::default(),
            class_bodies_run: Default::default(),
            classes_with_subclasses: Default::default(),
            method_free_list_primed: false,
            eval_depth: 0,
            builtin_cache: FxHashMap::default(),
            module_attr_cache: FxHashMap::default(),
            described_hits: FxHashMap::default(),
            cycle_tally: FxHashMap::default(),
            cycle_totals: Vec::new(),
            sym_init,
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
        let result = self.exec_block(self.module);
        self.release_dropped_storages(None);
        let end = match result {
            Ok(_) => RunEnd::Completed,
            Err(exc) => match *exc {
                Exc::Oom => RunEnd::OutOfMemory,
                Exc::Raised {
                    exception, offset, ..
                } => match self.uncaught(exception, offset) {
                    Ok(()) => RunEnd::OutOfMemory,
                    Err((kind, message, offset)) => {
                        return Err(Error::input(kind, self.map.location(offset), message));
                    }
                },
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
            self.recorder.cycle_report(CycleReport {
                holder_path: key.holder.to_string(),
                cycle: key.cycle.to_string(),
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
        self.recorder.finish()
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
            notes.push(
                "Device capacity is the total memory PyTorch reports; the CUDA context and other processes are not modelled.".into(),
            );
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
            // "does not support X" reads right whether X is singular or plural.
            message: format!("the workload model does not support {}", construct.into()),
            offset: self.offset,
        }))
    }

    pub(super) fn at(&mut self, node: &impl Ranged) {
        self.offset = node.range().start().to_u32();
    }

    // ----- allocation, collection ----------------------------------------------------------

    /// Allocates a GC-heap object (see the module documentation).
    pub(super) fn alloc(&mut self, kind: ObjKind) -> ObjId {
        if self.heap.count_allocation(&kind) {
            self.collection_due();
        }
        self.heap.insert(kind)
    }

    /// Counts `n` GC-heap objects the model does not keep individually.
    pub(super) fn count_untracked_allocations(&mut self, n: u64) {
        if self.heap.count_raw_allocations(n) {
            self.collection_due();
        }
    }

    /// A tuple that lives only for one C call (`type(name, bases, ns)`'s arguments):
    /// allocated, then freed onto its free list, so it moves the counter only when that free
    /// list is empty.
    fn temporary_tuple(&mut self, len: usize) {
        self.argument_tuple_begin(len);
        self.argument_tuple_end(len);
    }

    pub(super) fn collection_due(&mut self) {
        match self.heap.profile.trigger {
            Trigger::InsideAllocation => self.automatic_collection(),
            Trigger::NextStatement => self.heap.collection_scheduled = true,
        }
    }

    /// 3.12+: a scheduled collection runs where CPython checks its eval breaker: on entering
    /// a Python function (`RESUME`), on a loop's back edge (`JUMP_BACKWARD`) and after a call
    /// into C returns (`CALL`).
    fn eval_breaker(&mut self) {
        if self.heap.collection_scheduled {
            self.automatic_collection();
        }
    }

    fn automatic_collection(&mut self) {
        match self.heap.due_collection() {
            Some(generation) => {
                self.collect(generation, true);
            }
            None => self.heap.collection_scheduled = false,
        }
    }

    /// Runs one collection and records it; returns CPython's `collected`.
    pub(super) fn collect(&mut self, generation: u8, automatic: bool) -> u64 {
        self.release_dropped_storages(None);
        let event_index = self.recorder.events_len();
        let counts_before = self.heap.counts;
        let mut paths: FxHashMap<StorageId, (Rc<str>, Rc<str>)> = FxHashMap::default();
        let names = &self.names;
        let described = &mut self.described_hits;
        let outcome = self
            .heap
            .run_collection(generation, |heap, hit: &CycleHit| {
                if let ObjKind::Tensor(t) = heap.kind(hit.tensor)
                    && t.device == DeviceKind::Cuda
                {
                    // Paths repeat from iteration to iteration: format each shape once.
                    let text = described
                        .entry(hit_signature(heap, hit))
                        .or_insert_with(|| {
                            let (holder, cycle) = describe_hit(heap, names, hit);
                            (holder.into(), cycle.into())
                        })
                        .clone();
                    paths.insert(t.storage, text);
                }
            });
        let mut freed = Vec::new();
        self.release_dropped_storages(Some(&mut freed));
        let bytes_freed = freed.iter().map(|(_, s)| s.bytes).sum();
        let device_tensors_freed = freed.len() as u64;
        let iteration = self.recorder.iteration();
        for (id, storage) in freed {
            let (holder, cycle) = paths.remove(&id).unwrap_or_else(|| ("".into(), "".into()));
            let key = CycleKey {
                holder,
                cycle,
                dtype: storage.dtype,
                shape: storage.shape,
                category: storage.category,
                bytes: storage.bytes,
                site: storage.alloc_stack,
            };
            let next = self.cycle_tally.len();
            let index = *self.cycle_tally.entry(key).or_insert(next);
            if index == next {
                self.cycle_totals.push((0, iteration));
            }
            self.cycle_totals[index].0 += 1;
        }
        let line = self.frames.last().map(|f| f.line);
        self.recorder.gc_event(GcEvent {
            iteration: self.recorder.iteration(),
            generation: outcome.generation,
            automatic,
            objects_collected: outcome.collected,
            tensors_alive_before: outcome.tensors_before,
            tensors_alive_after: outcome.tensors_after,
            device_tensors_freed,
            bytes_freed,
            event_index,
            line,
            counts_before,
        });
        outcome.collected
    }

    // ----- device memory --------------------------------------------------------------------

    /// The current Python stack, innermost frame first, interned.
    pub(super) fn current_stack(&mut self) -> StackId {
        let key: Vec<(u32, u32)> = self
            .frames
            .iter()
            .rev()
            .map(|f| (f.name.0, f.line))
            .collect();
        if let Some(&id) = self.stack_cache.get(&key) {
            return id;
        }
        let frames = self
            .frames
            .iter()
            .rev()
            .map(|f| StackFrame {
                file: self.map.file().to_string(),
                line: f.line,
                name: self.names.name(f.name).to_string(),
            })
            .collect();
        let id = self.recorder.stacks().intern(frames);
        self.stack_cache.insert(key, id);
        id
    }

    fn record_events(&mut self, stack: StackId) {
        self.record_events_as(stack, None);
    }

    /// Records the pending allocator events; `category` labels their `Alloc` events.
    fn record_events_as(&mut self, stack: StackId, category: Option<Category>) {
        let stats = self.allocator.stats();
        let (allocated, reserved) = (stats.allocated_bytes, stats.reserved_bytes);
        // Events carry the totals after the whole call: allocator calls are atomic to the workload.
        for e in self.events.drain(..) {
            self.recorder.record(
                e.action,
                e.addr,
                e.size,
                e.stream,
                e.device_free,
                stack,
                allocated,
                reserved,
                category.filter(|_| e.action == crate::timeline::Action::Alloc),
            );
        }
    }

    /// Allocates `bytes` of device memory for a new storage.
    pub(super) fn device_malloc(&mut self, bytes: u64, category: Category) -> R<Option<u64>> {
        self.release_dropped_storages(None);
        if bytes == 0 {
            return Ok(None);
        }
        let stack = self.current_stack();
        let result = self.allocator.malloc(bytes, 0, &mut self.events);
        self.record_events_as(stack, Some(category));
        match result {
            Ok(addr) => Ok(Some(addr)),
            Err(oom) => {
                let report = OomReport {
                    iteration: self.recorder.iteration(),
                    requested_bytes: bytes,
                    message: oom.message,
                    stack,
                };
                // A handler may catch it: then it is not the run's outcome.
                if self.exc.handler_depth > 0 {
                    self.exc.pending_oom = Some(report);
                } else {
                    self.recorder.oom(report);
                }
                Err(Box::new(Exc::Oom))
            }
        }
    }

    pub(super) fn empty_cache(&mut self) {
        self.release_dropped_storages(None);
        let stack = self.current_stack();
        self.allocator.empty_cache(&mut self.events);
        self.record_events(stack);
    }

    /// Releases storages whose last tensor died; `freed` collects the device storages freed.
    fn release_dropped_storages(&mut self, mut freed: Option<&mut Vec<(StorageId, Storage)>>) {
        if self.heap.dropped_storage_refs.is_empty() {
            return;
        }
        let dropped = std::mem::take(&mut self.heap.dropped_storage_refs);
        let mut stack = None;
        for id in &dropped {
            let Some(storage) = self.storages.drop_ref(*id) else {
                continue;
            };
            if let Some(addr) = storage.addr {
                let stack = *stack.get_or_insert_with(|| self.current_stack());
                // Every device storage came from this allocator, so the address is known.
                let _ = self.allocator.free(addr, &mut self.events);
                self.record_events(stack);
                self.device_storages_alive -= 1;
                if let Some(f) = freed.as_deref_mut() {
                    f.push((*id, storage));
                }
            }
        }
        let mut dropped = dropped;
        dropped.clear();
        if self.heap.dropped_storage_refs.is_empty() {
            self.heap.dropped_storage_refs = dropped;
        }
    }

    /// Allocates a new storage for a tensor of `shape` on `device`.
    pub(super) fn new_storage(
        &mut self,
        shape: &[i64],
        dtype: Dtype,
        device: DeviceKind,
        category: Category,
    ) -> R<StorageId> {
        let bytes = match crate::torch::storage_nbytes(shape, dtype.element_size()) {
            Ok(b) => b,
            Err(e) => return self.error(e),
        };
        let addr = if device == DeviceKind::Cuda {
            self.device_malloc(bytes, category)?
        } else {
            None
        };
        if addr.is_some() {
            self.device_storages_alive += 1;
        }
        let alloc_stack = self.current_stack();
        Ok(self.storages.insert(Storage {
            bytes,
            addr,
            refs: 1,
            alloc_stack,
            dtype,
            shape: shape.into(),
            category,
            version: 0,
        }))
    }

    /// Creates a tensor object. With `share` it is a view or alias of an existing storage;
    /// otherwise a new storage is allocated on `device` (a factory's input data).
    pub(super) fn new_tensor(
        &mut self,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
        share: Option<(StorageId, Option<ObjId>)>,
    ) -> R<Value> {
        self.new_tensor_as(shape, dtype, device, share, Category::Input)
    }

    /// [`Interpreter::new_tensor`] with the memory category of a new storage.
    pub(super) fn new_tensor_as(
        &mut self,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
        share: Option<(StorageId, Option<ObjId>)>,
        category: Category,
    ) -> R<Value> {
        let (storage, base) = match share {
            Some((storage, base)) => {
                self.storages.add_ref(storage);
                if let Some(b) = base {
                    self.heap.incref(Value::Obj(b));
                }
                (storage, base)
            }
            None => (self.new_storage(&shape, dtype, device, category)?, None),
        };
        let id = self.alloc(ObjKind::Tensor(TensorData {
            storage,
            shape,
            dtype,
            device,
            base,
            requires_grad: false,
            grad_fn: None,
            grad: None,
            is_param: false,
            contiguous: true,
        }));
        Ok(Value::Obj(id))
    }

    // ----- iterations -----------------------------------------------------------------------

    fn open_iteration(&mut self, i: u32) {
        let s = self.allocator.stats();
        let (a, r) = (s.allocated_bytes, s.reserved_bytes);
        self.recorder.begin_iteration(i, a, r);
    }

    fn close_iteration(&mut self, completed: bool) {
        self.release_dropped_storages(None);
        let s = self.allocator.stats();
        let (a, r) = (s.allocated_bytes, s.reserved_bytes);
        let alive = self.device_storages_alive;
        if let Some(iteration) = self.recorder.iteration() {
            self.allocator.device_mut().iteration_ended(iteration, r);
        }
        self.recorder.end_iteration(a, r, alive, completed);
    }

    // ----- statements -----------------------------------------------------------------------

    pub(super) fn exec_block(&mut self, body: &'a [Stmt]) -> R<Flow> {
        for stmt in body {
            match self.exec(stmt)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn exec(&mut self, stmt: &'a Stmt) -> R<Flow> {
        let start = stmt.range().start().to_u32();
        self.offset = start;
        let line = self.map.file_line(start);
        if let Some(f) = self.frames.last_mut() {
            f.line = line;
        }
        self.budget_step()?;
        let flow = self.exec_inner(stmt)?;
        self.release_dropped_storages(None);
        Ok(flow)
    }

    fn exec_inner(&mut self, stmt: &'a Stmt) -> R<Flow> {
        match stmt {
            Stmt::Expr(e) => {
                let v = self.eval(&e.value)?;
                self.heap.decref(v);
            }
            Stmt::Assign(a) => self.exec_assign(a)?,
            Stmt::AugAssign(a) => self.exec_aug_assign(a)?,
            Stmt::AnnAssign(a) => {
                if let Some(value) = &a.value {
                    let v = self.eval(value)?;
                    self.store(&a.target, v)?;
                }
            }
            Stmt::Delete(d) => {
                for t in &d.targets {
                    self.delete(t)?;
                }
            }
            Stmt::Pass(_) | Stmt::Global(_) | Stmt::Nonlocal(_) => {}
            Stmt::Break(_) => return Ok(Flow::Break),
            Stmt::Continue(_) => return Ok(Flow::Continue),
            Stmt::Return(r) => {
                let v = match &r.value {
                    Some(e) => self.eval(e)?,
                    None => Value::None,
                };
                return Ok(Flow::Return(v));
            }
            Stmt::If(i) => {
                if self.eval_truth(&i.test)? {
                    return self.exec_block(&i.body);
                }
                for clause in &i.elif_else_clauses {
                    let taken = match &clause.test {
                        Some(test) => self.eval_truth(test)?,
                        None => true,
                    };
                    if taken {
                        return self.exec_block(&clause.body);
                    }
                }
            }
            Stmt::For(f) => return self.exec_for(f),
            Stmt::While(w) => return self.exec_while(w),
            Stmt::FunctionDef(d) => {
                let mut decorators = Vec::with_capacity(d.decorator_list.len());
                for dec in &d.decorator_list {
                    match self.decorator(&dec.expression) {
                        Ok(v) => decorators.push(v),
                        Err(e) => {
                            self.heap.decref_all(decorators);
                            return Err(e);
                        }
                    }
                }
                let code = self.codes.of_def(d);
                let f = match self.make_function(code, Some(&d.parameters)) {
                    Ok(f) => f,
                    Err(e) => {
                        self.heap.decref_all(decorators);
                        return Err(e);
                    }
                };
                self.at(d);
                let f = self.decorate(decorators, f)?;
                let name = self.names.intern(d.name.as_str());
                self.store_name(name, f);
            }
            Stmt::ClassDef(c) => self.exec_class(c)?,
            Stmt::Import(i) => {
                for alias in &i.names {
                    let full = alias.name.as_str();
                    let Some(module) = natives::module_named(full) else {
                        self.at(alias);
                        return self.unsupported(format!("importing `{full}`"));
                    };
                    let (bound, value) = match &alias.asname {
                        Some(a) => (a.as_str(), module),
                        None => {
                            let top = full.split('.').next().unwrap_or(full);
                            (top, natives::module_named(top).unwrap_or(module))
                        }
                    };
                    let sym = self.names.intern(bound);
                    self.store_name(sym, value);
                }
            }
            Stmt::ImportFrom(i) => {
                let module_name = i.module.as_ref().map(|m| m.as_str()).unwrap_or("");
                for alias in &i.names {
                    let full = format!("{module_name}.{}", alias.name.as_str());
                    let attr = self.names.intern(alias.name.as_str());
                    let value = natives::module_named(&full)
                        .or_else(|| {
                            natives::module_named(module_name)
                                .and_then(|m| self.torch_exception_attr(m, attr))
                        })
                        .or_else(|| {
                            natives::module_named(module_name)
                                .and_then(|m| self.module_attr(m, alias.name.as_str()))
                        });
                    let Some(value) = value else {
                        self.at(alias);
                        return self.unsupported(format!(
                            "importing `{}` from `{module_name}`",
                            alias.name.as_str()
                        ));
                    };
                    let bound = alias.asname.as_ref().unwrap_or(&alias.name);
                    let sym = self.names.intern(bound.as_str());
                    self.heap.incref(value);
                    self.store_name(sym, value);
                }
            }
            Stmt::Assert(a) => return self.exec_assert(a),
            Stmt::Raise(r) => return self.exec_raise(r),
            Stmt::With(w) => return self.exec_with(w),
            Stmt::Try(t) => return self.exec_try(t),
            Stmt::Match(_) => return self.unsupported("`match` statements"),
            Stmt::TypeAlias(_) => return self.unsupported("`type` aliases"),
            Stmt::IpyEscapeCommand(_) => return self.unsupported("IPython escape commands"),
        }
        Ok(Flow::Normal)
    }

    /// `tensor.grad_fn`: a custom Function's ctx, or a built-in node's Python object,
    /// created on first access and cached while it lives.
    pub(super) fn grad_fn_object(&mut self, node: Option<ObjId>) -> R<Value> {
        let Some(n) = node else {
            return Ok(Value::None);
        };
        let (ctx, cached) = match self.heap.kind(n) {
            ObjKind::GradNode(g) => (g.ctx, g.py_object),
            _ => (None, None),
        };
        if let Some(obj) = ctx.or(cached) {
            self.heap.incref(Value::Obj(obj));
            return Ok(Value::Obj(obj));
        }
        self.heap.incref(Value::Obj(n));
        let obj = self.alloc(ObjKind::GradFn { node: n });
        if let ObjKind::GradNode(g) = self.heap.kind_mut(n) {
            g.py_object = Some(obj);
        }
        Ok(Value::Obj(obj))
    }

    /// Nodes whose ctx is `ctx` (at most one).
    pub(super) fn nodes_owning(&self, ctx: ObjId) -> Vec<ObjId> {
        match self.ctx_nodes.get(&ctx) {
            Some(&n)
                if self.heap.is_alive(n)
                    && matches!(self.heap.kind(n), ObjKind::GradNode(g) if g.ctx == Some(ctx)) =>
            {
                vec![n]
            }
            _ => Vec::new(),
        }
    }

    /// Removes an instance attribute, returning it (owned).
    pub(super) fn take_instance_attr(&mut self, id: ObjId, name: Sym) -> Option<Value> {
        self.take_attr(Value::Obj(id), name)
    }

    fn exec_assign(&mut self, a: &'a ast::StmtAssign) -> R<()> {
        // `a, b = x, y` with up to three names is compiled without building a tuple.
        if let ([Expr::Tuple(targets)], Expr::Tuple(values)) = (a.targets.as_slice(), &*a.value)
            && targets.elts.len() == values.elts.len()
            && targets.elts.len() <= 3
            && !values.elts.iter().any(|e| matches!(e, Expr::Starred(_)))
            && !targets.elts.iter().any(|e| matches!(e, Expr::Starred(_)))
        {
            let mut vals = Vec::with_capacity(values.elts.len());
            for e in &values.elts {
                vals.push(self.eval(e)?);
            }
            for (t, v) in targets.elts.iter().zip(vals) {
                self.store(t, v)?;
            }
            return Ok(());
        }
        let v = self.eval(&a.value)?;
        for (i, target) in a.targets.iter().enumerate() {
            if i + 1 < a.targets.len() {
                self.heap.incref(v);
            }
            self.store(target, v)?;
        }
        Ok(())
    }

    fn exec_aug_assign(&mut self, a: &'a ast::StmtAugAssign) -> R<()> {
        match &*a.target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                let current = self.load_name(sym)?;
                let rhs = self.eval(&a.value)?;
                let result = self.binary(a.op, current, rhs, true)?;
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.store_name(sym, result);
            }
            Expr::Attribute(at) => {
                let obj = self.eval(&at.value)?;
                let attr = symbol(&at.attr.node_index, at.attr.as_str(), &mut self.names);
                let current = self.get_attr(obj, attr)?;
                let rhs = self.eval(&a.value)?;
                let result = self.binary(a.op, current, rhs, true)?;
                self.heap.decref(current);
                self.heap.decref(rhs);
                self.set_attr(obj, attr, result)?;
                self.heap.decref(obj);
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                let current = natives::subscript(self, obj, &s.slice)?;
                let rhs = self.eval(&a.value)?;
                let result = self.binary(a.op, current, rhs, true)?;
                self.heap.decref(current);
                self.heap.decref(rhs);
                natives::store_subscript(self, obj, &s.slice, result)?;
                self.heap.decref(obj);
            }
            _ => return self.unsupported("this augmented assignment target"),
        }
        Ok(())
    }

    fn exec_for(&mut self, f: &'a ast::StmtFor) -> R<Flow> {
        if f.is_async {
            return self.unsupported("`async for`");
        }
        let iterable = self.eval(&f.iter)?;
        let iterable = self.user_iter(iterable)?;
        let is_iteration_loop = self.loop_depth == 0 && !self.iteration_loop_seen;
        if is_iteration_loop {
            self.iteration_loop_seen = true;
        }
        self.loop_depth += 1;
        let result = self.run_for(f, iterable, is_iteration_loop);
        self.loop_depth -= 1;
        self.heap.decref(iterable);
        if is_iteration_loop && self.recorder.iteration().is_some() {
            self.close_iteration(false);
        }
        result
    }

    fn run_for(&mut self, f: &'a ast::StmtFor, iterable: Value, marks: bool) -> R<Flow> {
        let mut pass: u32 = 0;
        let mut index: usize = 0;
        while let Some(item) = self.next_item(iterable, index)? {
            index += 1;
            if marks {
                self.open_iteration(pass);
            }
            self.store(&f.target, item)?;
            let flow = self.exec_block(&f.body)?;
            if marks {
                self.close_iteration(true);
            }
            pass += 1;
            self.eval_breaker();
            match flow {
                Flow::Normal | Flow::Continue => {}
                Flow::Break => return Ok(Flow::Normal),
                ret @ Flow::Return(_) => return Ok(ret),
            }
        }
        self.exec_block(&f.orelse)
    }

    /// The `index`-th item of an iterable (a new reference), or `None` past the end.
    pub(super) fn next_item(&mut self, iterable: Value, index: usize) -> R<Option<Value>> {
        match iterable {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::List(items) | ObjKind::Tuple(items) => {
                    let item = items.get(index).copied();
                    if let Some(v) = item {
                        self.heap.incref(v);
                    }
                    Ok(item)
                }
                ObjKind::Dict(items) => {
                    let item = items.get(index).map(|(k, _)| *k);
                    if let Some(v) = item {
                        self.heap.incref(v);
                    }
                    Ok(item)
                }
                &ObjKind::Range { start, stop, step } => {
                    Ok(super::int_ops::range_item(start, stop, step, index as u64).map(Value::Int))
                }
                ObjKind::Instance { .. } => self.user_next(iterable),
                ObjKind::Wrapper(..) => self.lazy_next(id),
                other => {
                    let t = other.type_name();
                    self.error(format!(
                        "TypeError: '{t}' object is not iterable in the workload model"
                    ))
                }
            },
            _ => self.error("TypeError: object is not iterable"),
        }
    }

    fn exec_while(&mut self, w: &'a ast::StmtWhile) -> R<Flow> {
        let is_iteration_loop = self.loop_depth == 0 && !self.iteration_loop_seen;
        if is_iteration_loop {
            self.iteration_loop_seen = true;
        }
        self.loop_depth += 1;
        let result = (|| {
            let mut pass = 0u32;
            loop {
                self.at(&*w.test);
                if !self.eval_truth(&w.test)? {
                    break;
                }
                if is_iteration_loop {
                    self.open_iteration(pass);
                }
                let flow = self.exec_block(&w.body)?;
                if is_iteration_loop {
                    self.close_iteration(true);
                }
                pass += 1;
                self.eval_breaker();
                match flow {
                    Flow::Normal | Flow::Continue => {}
                    Flow::Break => return Ok(Flow::Normal),
                    ret @ Flow::Return(_) => return Ok(ret),
                }
            }
            self.exec_block(&w.orelse)
        })();
        self.loop_depth -= 1;
        if is_iteration_loop && self.recorder.iteration().is_some() {
            self.close_iteration(false);
        }
        result
    }

    fn exec_class(&mut self, c: &'a ast::StmtClassDef) -> R<()> {
        if !c.decorator_list.is_empty() {
            self.at(&c.decorator_list[0]);
            return self.unsupported("a class decorator");
        }
        let mut base = None;
        if let Some(args) = &c.arguments {
            if !args.keywords.is_empty() || args.args.len() > 1 {
                self.at(&**args);
                return self.unsupported("class keywords or multiple bases");
            }
            if let Some(b) = args.args.first() {
                let v = self.eval(b)?;
                match v {
                    Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Class(_)) => {
                        base = Some(id)
                    }
                    Value::Native(n) if Native::from_id(n) == Some(Native::Object) => {}
                    other => {
                        self.heap.decref(other);
                        self.at(b);
                        return self.unsupported("this base class");
                    }
                }
            }
        }
        self.class_statement_prologue(c);
        if let Some(f) = self.frames.last_mut() {
            f.class_namespaces.push(Vec::new());
        }
        let body = self.exec_block(&c.body);
        let namespace = self
            .frames
            .last_mut()
            .and_then(|f| f.class_namespaces.pop())
            .unwrap_or_default();
        if let Err(e) = body {
            self.heap.decref_all(namespace.into_iter().map(|(_, v)| v));
            return Err(e);
        }
        let name = self.names.intern(c.name.as_str());
        let class = self.alloc(ObjKind::Class(Class {
            name,
            base,
            attrs: namespace,
        }));
        self.class_statement_epilogue(base);
        self.store_name(name, Value::Obj(class));
        Ok(())
    }

    /// What a class statement allocates before its body runs (measured per version): the
    /// namespace dict (and up to 3.10 a second temporary dict), and up to 3.10 the frame of
    /// the class body, kept as its code object's zombie frame after the first run.
    fn class_statement_prologue(&mut self, c: &'a ast::StmtClassDef) {
        let dict = ObjKind::Dict(Vec::new());
        let temporary_dicts = if self.heap.profile.frame_objects {
            2
        } else {
            1
        };
        for _ in 0..temporary_dicts {
            self.count_shape(&dict);
        }
        if self.heap.profile.frame_objects && self.class_bodies_run.insert(c as *const _ as usize) {
            self.count_untracked_allocations(1);
        }
    }

    /// The rest of a class statement, around the type object itself: the `type(name, bases,
    /// ns)` argument tuple, the type's dict, MRO and bases tuples, the `__dict__` and
    /// `__weakref__` descriptors (only when the base has none), the base's subclass registry
    /// (a dict created on a class's first subclass, then a weak reference per subclass), and
    /// on 3.8 a bound method left on its free list. The temporary dicts go back to the free list.
    /// Together: 10 objects for a class with one method on 3.11 – 3.13, 12 on 3.9 – 3.10,
    /// 13 on 3.8 (cold free lists), as measured.
    fn class_statement_epilogue(&mut self, base: Option<ObjId>) {
        let dict = ObjKind::Dict(Vec::new());
        self.temporary_tuple(3);
        if self.heap.profile.method_free_list && !self.method_free_list_primed {
            self.method_free_list_primed = true;
            self.count_untracked_allocations(1);
        }
        let mro_len = {
            let mut n = 2;
            let mut cur = base;
            while let Some(b) = cur {
                n += 1;
                cur = match self.heap.kind(b) {
                    ObjKind::Class(k) => k.base,
                    _ => None,
                };
            }
            n
        };
        self.count_shape(&dict);
        self.count_shape(&ObjKind::Tuple(vec![Value::None; mro_len]));
        self.count_shape(&ObjKind::Tuple(vec![Value::None]));
        match base {
            None => {
                let descriptors = self.heap.profile.new_class_descriptors;
                if descriptors > 0 {
                    self.count_untracked_allocations(descriptors);
                }
            }
            Some(b) => {
                if self.classes_with_subclasses.insert(b) {
                    self.count_untracked_allocations(1);
                }
            }
        }
        self.count_untracked_allocations(1);
        let temporary_dicts = if self.heap.profile.frame_objects {
            2
        } else {
            1
        };
        for _ in 0..temporary_dicts {
            self.heap.count_deallocation(&dict);
        }
    }

    /// Counts an object of this shape (through its free list) that the model does not keep.
    fn count_shape(&mut self, kind: &ObjKind) {
        if self.heap.count_allocation(kind) {
            self.collection_due();
        }
    }

    // ----- functions ------------------------------------------------------------------------

    /// Creates a function object for `code`: defaults and the closure tuple are built first,
    /// as CPython's `MAKE_FUNCTION` receives them.
    fn make_function(&mut self, code: u32, params: Option<&'a ast::Parameters>) -> R<Value> {
        let mut defaults = Vec::new();
        if let Some(params) = params {
            for p in params
                .posonlyargs
                .iter()
                .chain(&params.args)
                .chain(&params.kwonlyargs)
            {
                if let Some(d) = &p.default {
                    defaults.push(self.eval(d)?);
                }
            }
        }
        let freevars = self.codes.get(code).freevars.clone();
        let closure = if freevars.is_empty() {
            None
        } else {
            let mut cells = Vec::with_capacity(freevars.len());
            for name in freevars {
                let cell = self.frames.last().and_then(|f| f.cells.get(&name).copied());
                let Some(cell) = cell else {
                    return self.error(format!(
                        "NameError: free variable '{}' has no cell",
                        self.names.name(name)
                    ));
                };
                self.heap.incref(Value::Obj(cell));
                cells.push(Value::Obj(cell));
            }
            Some(self.alloc(ObjKind::Tuple(cells)))
        };
        let name = self.codes.get(code).name;
        let f = self.alloc(ObjKind::Function(Function {
            code,
            name,
            closure,
            defaults,
        }));
        Ok(Value::Obj(f))
    }

    /// Calls any callable with owned arguments; returns a new reference.
    pub(super) fn call(
        &mut self,
        callee: Value,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        match callee {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Function(_) => self.call_function(id, args, kwargs),
                ObjKind::Class(_) => {
                    // Calling a class is a call into C (`type.__call__`).
                    let result = self.instantiate(id, args, kwargs);
                    self.eval_breaker();
                    result
                }
                ObjKind::BoundMethod { func, receiver } => {
                    let (func, receiver) = (*func, *receiver);
                    self.heap.incref(receiver);
                    let mut all = Vec::with_capacity(args.len() + 1);
                    all.push(receiver);
                    all.extend(args);
                    self.call_function(func, all, kwargs)
                }
                ObjKind::Instance { .. } if self.instance_torch_class(callee).is_some() => {
                    self.call_module(id, args, kwargs)
                }
                &ObjKind::Instance { class, .. } => self.call_instance(callee, class, args, kwargs),
                ObjKind::Wrapper(..) => self.call_wrapper(id, args, kwargs),
                other => {
                    let t = other.type_name();
                    self.heap.decref_all(args);
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    self.error(format!("TypeError: '{t}' object is not callable"))
                }
            },
            Value::Native(n) => {
                let result = natives::call(self, n, None, args, kwargs);
                self.eval_breaker();
                result
            }
            Value::BoundNative(n, p)
                if matches!(
                    Native::from_id(n),
                    Some(Native::PropertySetter | Native::PropertyGetter)
                ) && args.len() == 1
                    && kwargs.is_empty() =>
            {
                let method = if Native::from_id(n) == Some(Native::PropertySetter) {
                    "setter"
                } else {
                    "getter"
                };
                let f = args[0];
                self.property_method(p, method, f)
            }
            _ => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                self.error("TypeError: object is not callable")
            }
        }
    }

    fn call_function(
        &mut self,
        func: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let code = f.code;
        let bound = self.bind_arguments(func, args, kwargs)?;
        if self.codes.get(code).is_async {
            // Calling an `async def` only creates the coroutine; `await` runs it.
            self.heap.incref(Value::Obj(func));
            let coroutine = self.alloc(ObjKind::Coroutine {
                func,
                args: bound,
                done: false,
            });
            return Ok(Value::Obj(coroutine));
        }
        self.invoke(func, bound)
    }

    /// Matches arguments to parameters; returns the values in parameter order.
    fn bind_arguments(
        &mut self,
        func: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Vec<Value>> {
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let code_index = f.code;
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(code_index);
        let n = code.params.len();
        // The common call: every parameter given by position.
        if kwargs.is_empty()
            && args.len() == n
            && code.vararg.is_none()
            && code.kwarg.is_none()
            && code.params.iter().all(|p| !p.keyword_only)
        {
            return Ok(args);
        }
        self.bind_general(func, args, kwargs)
    }

    /// Runs a function body in a new frame with bound arguments (owned).
    fn invoke(&mut self, func: ObjId, bound: Vec<Value>) -> R<Value> {
        if self.frames.len() > RECURSION_LIMIT {
            self.heap.decref_all(bound);
            return self.error("RecursionError: maximum recursion depth exceeded");
        }
        let ObjKind::Function(f) = self.heap.kind(func) else {
            unreachable!("checked by caller")
        };
        let (code_index, closure) = (f.code, f.closure);
        let codes = std::rc::Rc::clone(&self.codes);
        let code = codes.get(code_index);
        let name = code.name;
        let line = self.frames.last().map_or(0, |f| f.line);
        let mut frame = Frame {
            code: Some(code_index),
            name,
            line,
            object: None,
            used_zombie: false,
            locals: SmallMap::new(),
            cells: SmallMap::new(),
            class_namespaces: Vec::new(),
        };
        let names = code
            .params
            .iter()
            .map(|p| p.name)
            .chain(code.vararg)
            .chain(code.kwarg);
        let mut args: SmallMap<Sym, Value> = names.zip(bound).collect();
        // Cells first (CPython's MAKE_CELL): a parameter that is a cell variable moves in.
        for &name in &code.cellvars {
            let contents = args.remove(&name);
            let cell = self.alloc(ObjKind::Cell(contents));
            frame.cells.insert(name, cell);
        }
        frame.locals = args;
        if let Some(tuple) = closure {
            for (i, &name) in code.freevars.iter().enumerate() {
                let cell = match self.heap.kind(tuple) {
                    ObjKind::Tuple(cells) => cells.get(i).copied(),
                    _ => None,
                };
                if let Some(Value::Obj(cell)) = cell {
                    self.heap.incref(Value::Obj(cell));
                    frame.cells.insert(name, cell);
                }
            }
        }
        let uses_zombie = self.enter_frame_object(code_index);
        frame.used_zombie = uses_zombie;
        // The frame holds the function alive while it runs.
        self.heap.incref(Value::Obj(func));
        self.frames.push(frame);
        self.eval_breaker();
        let result = match &code.body {
            Body::Def(d) => self.exec_block(&d.body).map(|flow| match flow {
                Flow::Return(v) => v,
                _ => Value::None,
            }),
            Body::Lambda(l) => self.eval(&l.body),
        };
        let result = result.map_err(|e| self.unwinding(e));
        let frame = self.frames.pop().expect("pushed above");
        match frame.object {
            // Its frame object settles the ≤ 3.10 frame bookkeeping when it is freed.
            Some(object) => self.retire_frame_object(object, frame.locals, frame.cells),
            None => {
                self.heap.decref_all(frame.locals.into_values());
                self.heap
                    .decref_all(frame.cells.into_values().map(Value::Obj));
                self.leave_frame_object(code_index, uses_zombie);
            }
        }
        self.heap.decref_id(func);
        result
    }

    /// ≤ 3.10 frame objects: the code object's zombie frame when it is free (allocated on
    /// the first call), otherwise one from the frame free list. Returns whether the zombie
    /// frame is used.
    fn enter_frame_object(&mut self, code: u32) -> bool {
        if !self.heap.profile.frame_objects {
            return false;
        }
        for returned in std::mem::take(&mut self.heap.zombie_frames_returned) {
            if let Some((_, in_use)) = self.frames_of_code.get_mut(&returned) {
                *in_use = false;
            }
        }
        let (has_zombie, in_use) = self.frames_of_code.entry(code).or_insert((false, false));
        if *in_use {
            if self.heap.count_frame_allocation() {
                self.collection_due();
            }
            return false;
        }
        *in_use = true;
        if !*has_zombie {
            *has_zombie = true;
            self.count_untracked_allocations(1);
        }
        true
    }

    fn leave_frame_object(&mut self, code: u32, used_zombie: bool) {
        if !self.heap.profile.frame_objects {
            return;
        }
        if !used_zombie {
            self.heap.release_frame();
        } else if let Some((_, in_use)) = self.frames_of_code.get_mut(&code) {
            *in_use = false;
        }
    }

    /// Runs an awaited coroutine to completion.
    pub(super) fn run_coroutine(&mut self, coroutine: ObjId) -> R<Value> {
        let ObjKind::Coroutine { func, args, done } = self.heap.kind_mut(coroutine) else {
            return self.error("TypeError: object can't be used in 'await' expression");
        };
        if *done {
            return self.error("RuntimeError: cannot reuse already awaited coroutine");
        }
        *done = true;
        let (func, args) = (*func, std::mem::take(args));
        self.invoke(func, args)
    }

    /// Calls a class: an argument tuple (CPython's `tp_call`), the instance, `__init__`.
    fn instantiate(
        &mut self,
        class: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        if self.is_exception_class(class) {
            let r = self.instantiate_exception(class, args, kwargs);
            self.eval_breaker();
            return r;
        }
        if let Some(v) = self.construct_torch(class, &args, &kwargs)? {
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return Ok(v);
        }
        let tuple_len = args.len();
        self.argument_tuple_begin(tuple_len);
        let attrs = if self.heap.profile.instance_dict_object {
            Attrs::Dict(None)
        } else {
            Attrs::Inline(Vec::new())
        };
        self.heap.incref(Value::Obj(class));
        let instance = self.alloc(ObjKind::Instance { class, attrs });
        match self.class_lookup(class, self.sym_init) {
            Some(Value::Obj(init)) if matches!(self.heap.kind(init), ObjKind::Function(_)) => {
                self.heap.incref(Value::Obj(instance));
                let mut all = Vec::with_capacity(args.len() + 1);
                all.push(Value::Obj(instance));
                all.extend(args);
                let result = match self.call_function(init, all, kwargs) {
                    Ok(r) => r,
                    Err(e) => {
                        self.heap.decref_id(instance);
                        return Err(e);
                    }
                };
                if result != Value::None {
                    self.heap.decref(result);
                    self.heap.decref_id(instance);
                    return self.error("TypeError: __init__() should return None");
                }
            }
            Some(_) => {
                self.heap.decref_id(instance);
                return self.unsupported("a non-function `__init__`");
            }
            None if !args.is_empty() || !kwargs.is_empty() => {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                self.heap.decref_id(instance);
                return self.error("TypeError: this class takes no arguments");
            }
            None => {}
        }
        self.argument_tuple_end(tuple_len);
        Ok(Value::Obj(instance))
    }

    /// A class call's argument tuple lives from before the instance exists until `__init__`
    /// returns (CPython's `type_call`); it is not kept as an object.
    fn argument_tuple_begin(&mut self, len: usize) {
        if len > 0 {
            self.count_shape(&ObjKind::Tuple(vec![Value::None; len]));
        }
    }

    fn argument_tuple_end(&mut self, len: usize) {
        if len > 0 {
            self.heap
                .count_deallocation(&ObjKind::Tuple(vec![Value::None; len]));
        }
    }

    /// Looks a name up in a class and its bases (borrowed value).
    pub(super) fn class_lookup(&self, class: ObjId, name: Sym) -> Option<Value> {
        let mut cur = Some(class);
        while let Some(c) = cur {
            let ObjKind::Class(cls) = self.heap.kind(c) else {
                return None;
            };
            if let Some((_, v)) = cls.attrs.iter().find(|(n, _)| *n == name) {
                return Some(*v);
            }
            cur = cls.base;
        }
        None
    }

    // ----- names ----------------------------------------------------------------------------

    fn scope_of(&self, name: Sym) -> Option<NameScope> {
        let frame = self.frames.last()?;
        let code = frame.code?;
        self.codes.get(code).scopes.get(&name).copied()
    }

    pub(super) fn load_name(&mut self, name: Sym) -> R<Value> {
        let frame = self.frames.last().expect("a frame");
        if let Some(ns) = frame.class_namespaces.last()
            && let Some((_, v)) = ns.iter().rev().find(|(n, _)| *n == name)
        {
            let v = *v;
            self.heap.incref(v);
            return Ok(v);
        }
        let found = match self.scope_of(name) {
            Some(NameScope::Local) => match frame.locals.get(&name) {
                Some(v) => Some(*v),
                None => {
                    return self.error(format!(
                        "UnboundLocalError: local variable '{}' referenced before assignment",
                        self.names.name(name)
                    ));
                }
            },
            Some(NameScope::Cell) | Some(NameScope::Free) => {
                let cell = frame.cells.get(&name).copied();
                match cell.map(|c| self.heap.kind(c)) {
                    Some(ObjKind::Cell(Some(v))) => Some(*v),
                    _ => {
                        return self.error(format!(
                            "NameError: free variable '{}' referenced before assignment",
                            self.names.name(name)
                        ));
                    }
                }
            }
            Some(NameScope::Global) | None => {
                // Class bodies and module code also see their frame's cells (a class inside a function).
                if frame.code.is_some() && !frame.class_namespaces.is_empty() {
                    if let Some(v) = frame.locals.get(&name) {
                        Some(*v)
                    } else if let Some(ObjKind::Cell(Some(v))) =
                        frame.cells.get(&name).map(|c| self.heap.kind(*c))
                    {
                        Some(*v)
                    } else {
                        self.globals.get(&name).copied()
                    }
                } else {
                    self.globals.get(&name).copied()
                }
            }
        };
        let v = match found.or_else(|| self.builtin(name)) {
            Some(v) => v,
            None => {
                return self.error(format!(
                    "NameError: name '{}' is not defined",
                    self.names.name(name)
                ));
            }
        };
        self.heap.incref(v);
        Ok(v)
    }

    /// Binds a name in the current scope, taking over the reference; drops the old value.
    pub(super) fn store_name(&mut self, name: Sym, value: Value) {
        let scope = self.scope_of(name);
        let frame = self.frames.last_mut().expect("a frame");
        let old = if let Some(ns) = frame.class_namespaces.last_mut() {
            match ns.iter_mut().find(|(n, _)| *n == name) {
                Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                None => {
                    ns.push((name, value));
                    None
                }
            }
        } else {
            match scope {
                Some(NameScope::Local) => frame.locals.insert(name, value),
                Some(NameScope::Cell) | Some(NameScope::Free) => {
                    let cell = frame.cells.get(&name).copied();
                    match cell {
                        Some(c) => match self.heap.kind_mut(c) {
                            ObjKind::Cell(slot) => slot.replace(value),
                            _ => None,
                        },
                        None => None,
                    }
                }
                Some(NameScope::Global) | None => self.globals.insert(name, value),
            }
        };
        if let Some(old) = old {
            self.heap.decref(old);
        }
    }

    fn delete_name(&mut self, name: Sym) -> R<()> {
        match self.take_name(name) {
            Some(v) => {
                self.heap.decref(v);
                Ok(())
            }
            None => self.error(format!(
                "NameError: name '{}' is not defined",
                self.names.name(name)
            )),
        }
    }

    /// Unbinds a name in the current scope and hands its reference to the caller.
    pub(super) fn take_name(&mut self, name: Sym) -> Option<Value> {
        let scope = self.scope_of(name);
        let frame = self.frames.last_mut().expect("a frame");
        if let Some(ns) = frame.class_namespaces.last_mut() {
            return ns
                .iter()
                .position(|(n, _)| *n == name)
                .map(|i| ns.remove(i).1);
        }
        match scope {
            Some(NameScope::Local) => frame.locals.remove(&name),
            Some(NameScope::Cell) | Some(NameScope::Free) => {
                match frame.cells.get(&name).copied() {
                    Some(c) => match self.heap.kind_mut(c) {
                        ObjKind::Cell(slot) => slot.take(),
                        _ => None,
                    },
                    None => None,
                }
            }
            Some(NameScope::Global) | None => self.globals.remove(&name),
        }
    }

    /// `[elt for target in iterable if cond ...]`, evaluated in place. The targets are the
    /// comprehension's own: the enclosing scope's bindings of those names come back after it.
    /// Up to 3.11 a comprehension is a function object created and dropped around the loop;
    /// from 3.12 it is inlined (PEP 709) and allocates none.
    fn eval_list_comprehension(&mut self, c: &'a ast::ExprListComp) -> R<Value> {
        let mut targets = Vec::new();
        for g in &c.generators {
            if g.is_async {
                self.at(g);
                return self.unsupported("`async for` in a comprehension");
            }
            collect_target_names(&g.target, &mut targets, &mut self.names);
        }
        let function = (self.heap.profile.version.minor <= 11).then(|| {
            ObjKind::Function(Function {
                code: 0,
                name: Sym(0),
                closure: None,
                defaults: Vec::new(),
            })
        });
        if let Some(f) = &function {
            self.count_shape(f);
        }
        let saved: Vec<(Sym, Option<Value>)> =
            targets.iter().map(|&n| (n, self.take_name(n))).collect();
        let list = self.alloc(ObjKind::List(Vec::new()));
        let result = self.comprehend(&c.generators, &c.elt, list);
        for (name, old) in saved {
            if let Some(inner) = self.take_name(name) {
                self.heap.decref(inner);
            }
            if let Some(v) = old {
                self.store_name(name, v);
            }
        }
        if let Some(f) = &function {
            self.heap.count_deallocation(f);
        }
        match result {
            Ok(()) => Ok(Value::Obj(list)),
            Err(e) => {
                self.heap.decref_id(list);
                Err(e)
            }
        }
    }

    fn comprehend(
        &mut self,
        generators: &'a [ast::Comprehension],
        elt: &'a Expr,
        list: ObjId,
    ) -> R<()> {
        self.comprehension_loop(generators, None, &mut |it| {
            let v = it.eval(elt)?;
            if let ObjKind::List(items) = it.heap.kind_mut(list) {
                items.push(v);
            }
            Ok(true)
        })
        .map(|_| ())
    }

    // ----- targets --------------------------------------------------------------------------

    pub(super) fn store(&mut self, target: &'a Expr, value: Value) -> R<()> {
        match target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.store_name(sym, value);
                Ok(())
            }
            Expr::Attribute(a) => {
                let obj = match self.eval(&a.value) {
                    Ok(o) => o,
                    Err(e) => {
                        self.heap.decref(value);
                        return Err(e);
                    }
                };
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let r = self.set_attr(obj, attr, value);
                self.heap.decref(obj);
                r
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                let r = natives::store_subscript(self, obj, &s.slice, value);
                self.heap.decref(obj);
                r
            }
            Expr::Tuple(t) => self.unpack(&t.elts, value),
            Expr::List(t) => self.unpack(&t.elts, value),
            _ => {
                self.heap.decref(value);
                self.at(target);
                self.unsupported("this assignment target")
            }
        }
    }

    fn unpack(&mut self, targets: &'a [Expr], value: Value) -> R<()> {
        let items = match value {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => items.clone(),
                _ => {
                    self.heap.decref(value);
                    return self
                        .error("TypeError: cannot unpack a non-sequence in the workload model");
                }
            },
            _ => return self.error("TypeError: cannot unpack a non-sequence"),
        };
        if items.len() != targets.len() {
            self.heap.decref(value);
            return self.error(format!(
                "ValueError: expected {} values to unpack, got {}",
                targets.len(),
                items.len()
            ));
        }
        for v in &items {
            self.heap.incref(*v);
        }
        self.heap.decref(value);
        for (t, v) in targets.iter().zip(items) {
            self.store(t, v)?;
        }
        Ok(())
    }

    fn delete(&mut self, target: &'a Expr) -> R<()> {
        self.at(target);
        match target {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.delete_name(sym)
            }
            Expr::Attribute(a) => {
                let obj = self.eval(&a.value)?;
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let old = self.take_attr(obj, attr);
                self.heap.decref(obj);
                match old {
                    Some(v) => {
                        self.heap.decref(v);
                        Ok(())
                    }
                    None => self.error(format!("AttributeError: {}", self.names.name(attr))),
                }
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                let r = natives::del_subscript(self, obj, &s.slice);
                self.heap.decref(obj);
                r
            }
            Expr::Tuple(t) => {
                for e in &t.elts {
                    self.delete(e)?;
                }
                Ok(())
            }
            _ => self.unsupported("this `del` target"),
        }
    }

    // ----- attributes -----------------------------------------------------------------------

    /// Borrowed attribute of an instance's own storage (not its class).
    fn instance_attr(&self, id: ObjId, name: Sym) -> Option<Value> {
        let ObjKind::Instance { attrs, .. } = self.heap.kind(id) else {
            return None;
        };
        match attrs {
            Attrs::Inline(items) => items.iter().find(|(n, _)| *n == name).map(|(_, v)| *v),
            Attrs::Dict(Some(d)) => match self.heap.kind(*d) {
                ObjKind::Dict(items) => items
                    .iter()
                    .find(|(k, _)| *k == Value::Str(name))
                    .map(|(_, v)| *v),
                _ => None,
            },
            Attrs::Dict(None) => None,
        }
    }

    /// `obj.name` (new reference).
    pub(super) fn get_attr(&mut self, obj: Value, name: Sym) -> R<Value> {
        match obj {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => {
                    let class = *class;
                    if let Some(v) = self.instance_attr(id, name) {
                        self.heap.incref(v);
                        return Ok(v);
                    }
                    match self.class_lookup(class, name) {
                        Some(Value::Obj(f))
                            if matches!(self.heap.kind(f), ObjKind::Function(_)) =>
                        {
                            // Materializing a method creates a bound-method object.
                            self.heap.incref(Value::Obj(f));
                            self.heap.incref(obj);
                            let m = self.alloc(ObjKind::BoundMethod {
                                func: f,
                                receiver: obj,
                            });
                            Ok(Value::Obj(m))
                        }
                        Some(v) if self.is_wrapper(v) => self.bind_class_attr(v, Some(obj), class),
                        Some(v) => {
                            self.heap.incref(v);
                            Ok(v)
                        }
                        None if self.names.name(name) == "saved_tensors"
                            && self.torch_class(class)
                                == Some(super::torchlib::TorchClass::FunctionCtx) =>
                        {
                            self.saved_tensors(id)
                        }
                        None => {
                            let cname = self.class_name(class);
                            self.error(format!(
                                "AttributeError: '{cname}' object has no attribute '{}'",
                                self.names.name(name)
                            ))
                        }
                    }
                }
                ObjKind::Class(_) => match self.class_lookup(id, name) {
                    Some(v) if self.is_wrapper(v) => self.bind_class_attr(v, None, id),
                    Some(v) => {
                        self.heap.incref(v);
                        Ok(v)
                    }
                    None => self.error(format!(
                        "AttributeError: type object has no attribute '{}'",
                        self.names.name(name)
                    )),
                },
                ObjKind::Tensor(_) => natives::tensor_attr(self, id, name),
                ObjKind::Exception(_) | ObjKind::Traceback(_) | ObjKind::Frame(_) => {
                    self.exception_object_attr(obj, id, name)
                }
                other => {
                    let t = other.type_name();
                    self.error(format!(
                        "AttributeError: '{t}' object has no attribute '{}'",
                        self.names.name(name)
                    ))
                }
            },
            Value::Module(m) => match self.cached_module_attr(m, name) {
                Some(v) => {
                    // Torch classes are heap objects: the caller owns a new reference.
                    self.heap.incref(v);
                    Ok(v)
                }
                None => {
                    let attr = self.names.name(name);
                    let hint = super::alternatives::for_module_attr(self, obj, attr);
                    self.unsupported(format!("`{}.{}`{hint}", natives::module_display(m), attr))
                }
            },
            other => natives::value_attr(self, other, name),
        }
    }

    /// A builtin by name, resolved once per name.
    fn builtin(&mut self, name: Sym) -> Option<Value> {
        if let Some(&v) = self.builtin_cache.get(&name) {
            return v;
        }
        let text = self.names.name_rc(name);
        let v = natives::builtin(&text)
            .or_else(|| self.builtin_exception(&text))
            .or_else(|| (&*text == "__name__").then(|| Value::Str(self.names.intern("__main__"))));
        self.builtin_cache.insert(name, v);
        v
    }

    /// [`Interpreter::module_attr`], resolved once per module and name.
    fn cached_module_attr(&mut self, m: crate::heap::NativeId, name: Sym) -> Option<Value> {
        if let Some(&v) = self.module_attr_cache.get(&(m, name)) {
            return v;
        }
        let v = self
            .torch_exception_attr(Value::Module(m), name)
            .or_else(|| self.module_attr(Value::Module(m), self.names.name(name)));
        self.module_attr_cache.insert((m, name), v);
        v
    }

    /// `module.attr`, including torch's classes (`torch.nn.Linear`).
    pub(super) fn module_attr(&self, m: Value, attr: &str) -> Option<Value> {
        use super::torchlib::TorchClass as C;
        let kind = match (natives::module_display_of(m), attr) {
            ("torch.nn", "Module") => C::Module,
            ("torch.nn", "Linear") => C::Linear,
            ("torch.nn", "ReLU") => C::ReLU,
            ("torch.nn", "Sequential") => C::Sequential,
            ("torch.nn", "MSELoss") => C::MseLoss,
            ("torch.nn", "Embedding") => C::Embedding,
            ("torch.nn", "LSTM") => C::Lstm,
            ("torch.nn", "GRU") => C::Gru,
            ("torch.nn", "CrossEntropyLoss") => C::CrossEntropyLoss,
            ("torch.autograd", "Function") => C::Function,
            ("torch.distributed", "P2POp") => C::P2POp,
            ("torch.optim", "SGD") => C::Sgd,
            ("torch.optim", "Adam") => C::Adam,
            ("torch.optim", "AdamW") => C::AdamW,
            ("torch.optim.lr_scheduler", name) => match C::scheduler_named(name) {
                Some(k) => k,
                None => return natives::module_attr(m, attr),
            },
            _ => return natives::module_attr(m, attr),
        };
        Some(self.torch_classes.id(kind))
    }

    /// `super().name(...)`: looked up after the class that defines the running method.
    fn call_super(
        &mut self,
        proxy: ObjId,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let self_sym = self.names.intern("__self__");
        let start_sym = self.names.intern("__thisclass__");
        let (Some(receiver), Some(Value::Obj(start))) = (
            self.instance_attr(proxy, self_sym),
            self.instance_attr(proxy, start_sym),
        ) else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let base = match self.heap.kind(start) {
            ObjKind::Class(c) => c.base,
            _ => None,
        };
        let found = base.and_then(|b| self.class_lookup(b, name));
        match found {
            Some(Value::Obj(f)) if matches!(self.heap.kind(f), ObjKind::Function(_)) => {
                self.heap.incref(receiver);
                let mut all = vec![receiver];
                all.extend(args);
                self.call_function(f, all, kwargs)
            }
            _ if self.names.name(name) == "__init__"
                && matches!(receiver, Value::Obj(r) if matches!(self.heap.kind(r), ObjKind::Exception(_))) =>
            {
                // `BaseException.__init__`: the arguments become `args`.
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                if let Value::Obj(r) = receiver {
                    self.exception_init(r, args);
                }
                Ok(Value::None)
            }
            _ => {
                // torch's own `__init__` (Module, Function): nothing the model tracks.
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                if self.names.name(name) == "__init__" {
                    Ok(Value::None)
                } else {
                    self.unsupported(format!("super().{}()", self.names.name(name)))
                }
            }
        }
    }

    /// `super()` in a method: a proxy (a GC object, as CPython's) for the running
    /// method's class and its first argument.
    pub(super) fn make_super(&mut self) -> R<Value> {
        let Some(frame) = self.frames.last() else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let Some(code) = frame.code else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let first = self.codes.get(code).params.first().map(|p| p.name);
        // The first argument is a local, or a cell when a closure of the method uses it.
        let receiver = first.and_then(|n| {
            frame.locals.get(&n).copied().or_else(|| {
                match frame.cells.get(&n).map(|c| self.heap.kind(*c)) {
                    Some(ObjKind::Cell(Some(v))) => Some(*v),
                    _ => None,
                }
            })
        });
        let Some(receiver) = receiver else {
            return self.error("RuntimeError: super(): no arguments");
        };
        let class = match self.heap.kind(receiver.obj().unwrap_or(ObjId(0))) {
            ObjKind::Instance { class, .. } => class,
            ObjKind::Exception(e) => &e.class,
            _ => return self.error("RuntimeError: super(): __class__ cell not found"),
        };
        // The class that defines the running method: walk the receiver's MRO.
        let mut cur = Some(*class);
        let mut defining = *class;
        while let Some(c) = cur {
            let ObjKind::Class(cls) = self.heap.kind(c) else {
                break;
            };
            if cls.attrs.iter().any(|(_, v)| {
                matches!(v, Value::Obj(f) if matches!(self.heap.kind(*f), ObjKind::Function(func) if func.code == code))
            }) {
                defining = c;
                break;
            }
            cur = cls.base;
        }
        self.super_proxy(defining, receiver)
    }

    /// `super(cls, obj)`: a proxy (a GC object, as CPython's) that looks names up after
    /// `cls` in `obj`'s class chain.
    pub(super) fn super_proxy(&mut self, defining: ObjId, receiver: Value) -> R<Value> {
        self.heap.incref(receiver);
        self.heap.incref(Value::Obj(defining));
        let proxy = self.new_torch_instance(
            super::torchlib::TorchClass::Super,
            vec![
                ("__self__", receiver),
                ("__thisclass__", Value::Obj(defining)),
            ],
        )?;
        Ok(Value::Obj(proxy))
    }

    pub(super) fn class_name(&self, class: ObjId) -> String {
        match self.heap.kind(class) {
            ObjKind::Class(c) => self.names.name(c.name).to_string(),
            _ => "object".to_string(),
        }
    }

    /// `obj.name = value`, taking over `value`.
    pub(super) fn set_attr(&mut self, obj: Value, name: Sym, value: Value) -> R<()> {
        let Value::Obj(id) = obj else {
            self.heap.decref(value);
            return self.error(format!(
                "AttributeError: cannot set attribute '{}' here",
                self.names.name(name)
            ));
        };
        let value = match self.heap.kind(id) {
            &ObjKind::Instance { class, .. } if self.properties_defined => {
                match self.set_through_property(obj, class, name, value)? {
                    Some(v) => v,
                    None => return Ok(()),
                }
            }
            _ => value,
        };
        match self.heap.kind(id) {
            ObjKind::Instance {
                attrs: Attrs::Dict(dict),
                ..
            } => {
                let dict = match *dict {
                    Some(d) => d,
                    None => {
                        // ≤ 3.10: the instance's `__dict__` appears on its first attribute store.
                        let d = self.alloc(ObjKind::Dict(Vec::new()));
                        if let ObjKind::Instance {
                            attrs: Attrs::Dict(slot),
                            ..
                        } = self.heap.kind_mut(id)
                        {
                            *slot = Some(d);
                        }
                        d
                    }
                };
                self.dict_set(dict, Value::Str(name), value);
                Ok(())
            }
            ObjKind::Instance {
                attrs: Attrs::Inline(_),
                ..
            } => {
                let old = match self.heap.kind_mut(id) {
                    ObjKind::Instance {
                        attrs: Attrs::Inline(items),
                        ..
                    } => match items.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                        None => {
                            items.push((name, value));
                            None
                        }
                    },
                    _ => None,
                };
                if let Some(old) = old {
                    self.heap.decref(old);
                }
                Ok(())
            }
            ObjKind::Class(_) => {
                let old = match self.heap.kind_mut(id) {
                    ObjKind::Class(c) => match c.attrs.iter_mut().find(|(n, _)| *n == name) {
                        Some(slot) => Some(std::mem::replace(&mut slot.1, value)),
                        None => {
                            c.attrs.push((name, value));
                            None
                        }
                    },
                    _ => None,
                };
                if let Some(old) = old {
                    self.heap.decref(old);
                }
                Ok(())
            }
            ObjKind::Tensor(_) => {
                let r = natives::set_tensor_attr(self, id, name, value);
                self.heap.decref(value);
                r
            }
            ObjKind::Exception(_) => self.set_exception_attr(id, name, value),
            other => {
                let t = other.type_name();
                self.heap.decref(value);
                self.error(format!(
                    "AttributeError: '{t}' object attribute '{}' is read-only",
                    self.names.name(name)
                ))
            }
        }
    }

    /// Removes an attribute from an instance; returns the old value (owned).
    fn take_attr(&mut self, obj: Value, name: Sym) -> Option<Value> {
        let Value::Obj(id) = obj else { return None };
        let dict = match self.heap.kind_mut(id) {
            ObjKind::Instance {
                attrs: Attrs::Inline(items),
                ..
            } => {
                let i = items.iter().position(|(n, _)| *n == name)?;
                return Some(items.remove(i).1);
            }
            ObjKind::Instance {
                attrs: Attrs::Dict(Some(d)),
                ..
            } => *d,
            _ => return None,
        };
        let ObjKind::Dict(items) = self.heap.kind_mut(dict) else {
            return None;
        };
        let i = items.iter().position(|(k, _)| *k == Value::Str(name))?;
        let (k, v) = items.remove(i);
        self.heap.decref(k);
        Some(v)
    }

    /// `d[key] = value` on a dict object, taking over `key` and `value`.
    pub(super) fn dict_set(&mut self, dict: ObjId, key: Value, value: Value) {
        self.heap.maintain_dict_tracking(dict, key);
        self.heap.maintain_dict_tracking(dict, value);
        let old = match self.heap.kind_mut(dict) {
            ObjKind::Dict(items) => match items.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => Some((key, std::mem::replace(&mut slot.1, value))),
                None => {
                    items.push((key, value));
                    None
                }
            },
            _ => None,
        };
        if let Some((dup_key, old)) = old {
            self.heap.decref(dup_key);
            self.heap.decref(old);
        }
    }

    // ----- expressions ----------------------------------------------------------------------

    pub(super) fn eval_truth(&mut self, e: &'a Expr) -> R<bool> {
        let v = self.eval(e)?;
        let t = self.truth(v);
        self.heap.decref(v);
        t
    }

    pub(super) fn truth(&mut self, v: Value) -> R<bool> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Str(s) => !self.names.name(s).is_empty(),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::List(items) | ObjKind::Tuple(items) => !items.is_empty(),
                ObjKind::Dict(items) => !items.is_empty(),
                ObjKind::Tensor(t) if t.numel() != 1 => {
                    return self.error("RuntimeError: Boolean value of Tensor with more than one value is ambiguous");
                }
                // A one-element tensor's truth needs its value, which the model does not compute.
                ObjKind::Tensor(_) => return self.unsupported("the truth value of a tensor"),
                _ => true,
            },
            _ => true,
        })
    }

    /// Evaluates an expression to a new reference.
    pub(crate) fn eval(&mut self, e: &'a Expr) -> R<Value> {
        self.eval_depth += 1;
        let result = if self.eval_depth > MAX_EVAL_DEPTH {
            self.at(e);
            self.unsupported(format!(
                "expressions and calls nested deeper than {MAX_EVAL_DEPTH} levels"
            ))
        } else {
            self.eval_expr(e)
        };
        self.eval_depth -= 1;
        result
    }

    fn eval_expr(&mut self, e: &'a Expr) -> R<Value> {
        match e {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.offset = n.range.start().to_u32();
                self.load_name(sym)
            }
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Ok(Value::Int(v)),
                    None => {
                        self.at(e);
                        self.unsupported("integers beyond 64 bits")
                    }
                },
                ast::Number::Float(f) => Ok(Value::Float(*f)),
                ast::Number::Complex { .. } => {
                    self.at(e);
                    self.unsupported("complex numbers")
                }
            },
            Expr::StringLiteral(s) => Ok(Value::Str(symbol(
                &s.node_index,
                s.value.to_str(),
                &mut self.names,
            ))),
            Expr::BooleanLiteral(b) => Ok(Value::Bool(b.value)),
            Expr::NoneLiteral(_) => Ok(Value::None),
            Expr::FString(f) => {
                self.at(e);
                self.eval_fstring(f)
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left)?;
                let r = self.eval(&b.right)?;
                self.at(e);
                let out = self.binary(b.op, l, r, false);
                self.heap.decref(l);
                self.heap.decref(r);
                out
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand)?;
                self.at(e);
                let out = self.unary(u.op, v);
                self.heap.decref(v);
                out
            }
            Expr::BoolOp(b) => {
                let mut last = Value::None;
                for (i, value) in b.values.iter().enumerate() {
                    let v = self.eval(value)?;
                    if i + 1 == b.values.len() {
                        return Ok(v);
                    }
                    let t = self.truth(v)?;
                    let short = match b.op {
                        ast::BoolOp::And => !t,
                        ast::BoolOp::Or => t,
                    };
                    if short {
                        return Ok(v);
                    }
                    self.heap.decref(v);
                    last = Value::None;
                }
                Ok(last)
            }
            Expr::Compare(c) => self.eval_compare(c),
            Expr::If(i) => {
                if self.eval_truth(&i.test)? {
                    self.eval(&i.body)
                } else {
                    self.eval(&i.orelse)
                }
            }
            Expr::Call(c) => self.eval_call(c),
            Expr::Attribute(a) => {
                let obj = self.eval(&a.value)?;
                self.at(e);
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let v = self.get_attr(obj, attr);
                self.heap.decref(obj);
                v
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                let v = natives::subscript(self, obj, &s.slice);
                self.heap.decref(obj);
                v
            }
            Expr::Tuple(t) => {
                // A tuple of constants is a constant of the code object: nothing is allocated.
                if t.elts.iter().all(is_constant) {
                    let mut items = Vec::with_capacity(t.elts.len());
                    for x in &t.elts {
                        items.push(self.eval(x)?);
                    }
                    return Ok(natives::constant_tuple(self, items));
                }
                let mut items = Vec::with_capacity(t.elts.len());
                for x in &t.elts {
                    items.push(self.eval(x)?);
                }
                Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
            }
            Expr::List(l) => {
                let mut items = Vec::with_capacity(l.elts.len());
                for x in &l.elts {
                    items.push(self.eval(x)?);
                }
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            Expr::Dict(d) => {
                let dict = self.alloc(ObjKind::Dict(Vec::new()));
                for item in &d.items {
                    let Some(key) = &item.key else {
                        self.at(&item.value);
                        return self.unsupported("`**` in a dict display");
                    };
                    let k = self.eval(key)?;
                    if !matches!(
                        k,
                        Value::Int(_) | Value::Str(_) | Value::Bool(_) | Value::None
                    ) {
                        self.heap.decref(k);
                        self.at(key);
                        return self.unsupported("dict keys other than ints and strings");
                    }
                    let v = self.eval(&item.value)?;
                    self.dict_set(dict, k, v);
                }
                Ok(Value::Obj(dict))
            }
            Expr::Lambda(l) => {
                let code = self.codes.of_lambda(l);
                self.make_function(code, l.parameters.as_deref())
            }
            Expr::Await(a) => {
                let v = self.eval(&a.value)?;
                self.at(e);
                let Value::Obj(id) = v else {
                    return self.error("TypeError: object can't be used in 'await' expression");
                };
                let r = self.run_coroutine(id);
                self.heap.decref(v);
                r
            }
            Expr::Named(n) => {
                let v = self.eval(&n.value)?;
                self.heap.incref(v);
                self.store(&n.target, v)?;
                Ok(v)
            }
            Expr::Starred(_) => {
                self.at(e);
                self.unsupported("`*` unpacking here")
            }
            Expr::Slice(_) => {
                self.at(e);
                self.unsupported("a slice outside a subscript")
            }
            Expr::ListComp(c) => {
                self.at(e);
                self.eval_list_comprehension(c)
            }
            Expr::DictComp(c) => {
                self.at(e);
                self.eval_dict_comprehension(c)
            }
            Expr::Generator(_) => {
                self.at(e);
                self.unsupported(
                    "a generator expression other than the argument of sum/any/all/min/max/list/tuple/sorted/str.join/torch.cat/torch.stack (needs the workload VM)",
                )
            }
            Expr::SetComp(_) => {
                self.at(e);
                self.unsupported("set comprehensions")
            }
            Expr::Set(_) => {
                self.at(e);
                self.unsupported("set displays")
            }
            Expr::Yield(_) | Expr::YieldFrom(_) => {
                self.at(e);
                self.unsupported("generators (`yield`)")
            }
            Expr::BytesLiteral(_) => {
                self.at(e);
                self.unsupported("bytes literals")
            }
            Expr::EllipsisLiteral(_) => {
                self.at(e);
                self.unsupported("`...` outside a subscript")
            }
            Expr::TString(_) => {
                self.at(e);
                self.unsupported("template strings")
            }
            Expr::IpyEscapeCommand(_) => {
                self.at(e);
                self.unsupported("IPython escape commands")
            }
        }
    }

    fn eval_call(&mut self, c: &'a ast::ExprCall) -> R<Value> {
        // `obj.method(...)` calls the method without creating a bound method (LOAD_METHOD).
        let (callee, receiver, method) = match &*c.func {
            Expr::Attribute(a) => {
                let recv = self.eval(&a.value)?;
                let name = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                (None, Some(recv), Some(name))
            }
            other => (Some(self.eval(other)?), None, None),
        };
        if let [Expr::Generator(g)] = &*c.arguments.args {
            let mut kwargs = Vec::new();
            for k in c.arguments.keywords.iter() {
                let Some(name) = &k.arg else {
                    self.at(k);
                    return self.unsupported("`**` unpacking with a generator argument");
                };
                let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
                kwargs.push((sym, self.eval(&k.value)?));
            }
            let receiver = receiver.zip(method);
            return self.call_with_generator(callee, receiver, g, kwargs);
        }
        let mut args = Vec::with_capacity(c.arguments.args.len());
        let mut kwargs = Vec::new();
        for a in c.arguments.args.iter() {
            match a {
                Expr::Starred(s) => {
                    let v = self.eval(&s.value)?;
                    let items = match v {
                        Value::Obj(id) => match self.heap.kind(id) {
                            ObjKind::Tuple(items) | ObjKind::List(items) => items.clone(),
                            _ => {
                                self.at(a);
                                return self.unsupported("`*` unpacking of this object");
                            }
                        },
                        _ => return self.unsupported("`*` unpacking of this value"),
                    };
                    for item in &items {
                        self.heap.incref(*item);
                    }
                    self.heap.decref(v);
                    args.extend(items);
                }
                _ => args.push(self.eval(a)?),
            }
        }
        for k in c.arguments.keywords.iter() {
            let Some(name) = &k.arg else {
                let mapping = self.eval(&k.value)?;
                self.at(k);
                let items = self.keyword_items(mapping);
                self.heap.decref(mapping);
                kwargs.extend(items?);
                continue;
            };
            let sym = symbol(&name.node_index, name.as_str(), &mut self.names);
            kwargs.push((sym, self.eval(&k.value)?));
        }
        self.at(c);
        self.call_keywords = c
            .arguments
            .keywords
            .iter()
            .filter_map(|k| {
                let name = k.arg.as_ref()?;
                Some((self.names.intern(name.as_str()), k.range().start().to_u32()))
            })
            .collect();
        match (callee, receiver, method) {
            (Some(f), _, _) => {
                let r = self.call(f, args, kwargs);
                self.heap.decref(f);
                r
            }
            (None, Some(recv), Some(name)) => {
                let r = self.call_method(recv, name, args, kwargs);
                self.heap.decref(recv);
                r
            }
            _ => unreachable!("callee or receiver is set"),
        }
    }

    /// `recv.name(args)`: a Python method is called directly with `recv` prepended.
    pub(super) fn call_method(
        &mut self,
        recv: Value,
        name: Sym,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        if let Value::Obj(id) = recv {
            match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => {
                    let class = *class;
                    if let Some(v) = self.instance_attr(id, name) {
                        self.heap.incref(v);
                        let r = self.call(v, args, kwargs);
                        self.heap.decref(v);
                        return r;
                    }
                    if let Some(kind) = self.torch_class(class) {
                        if kind == super::torchlib::TorchClass::Super {
                            return self.call_super(id, name, args, kwargs);
                        }
                        if self.class_lookup(class, name).is_none() {
                            let method = self.names.name(name).to_string();
                            let r = self.torch_method(id, kind, &method, &args, &kwargs);
                            self.heap.decref_all(args);
                            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                            return match r? {
                                Some(v) => Ok(v),
                                None => {
                                    self.unsupported(format!("method '{method}' of a torch object"))
                                }
                            };
                        }
                    }
                    return match self.class_lookup(class, name) {
                        Some(Value::Obj(f))
                            if matches!(self.heap.kind(f), ObjKind::Function(_)) =>
                        {
                            self.heap.incref(recv);
                            let mut all = Vec::with_capacity(args.len() + 1);
                            all.push(recv);
                            all.extend(args);
                            self.call_function(f, all, kwargs)
                        }
                        Some(v) => {
                            let bound = if self.is_wrapper(v) {
                                self.bind_class_attr(v, Some(recv), class)?
                            } else {
                                self.heap.incref(v);
                                v
                            };
                            let r = self.call(bound, args, kwargs);
                            self.heap.decref(bound);
                            r
                        }
                        None => {
                            let cname = self.class_name(class);
                            self.heap.decref_all(args);
                            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                            self.error(format!(
                                "AttributeError: '{cname}' object has no attribute '{}'",
                                self.names.name(name)
                            ))
                        }
                    };
                }
                ObjKind::Class(_)
                    if self.names.name(name) == "apply"
                        && self.torch_class(id) == Some(super::torchlib::TorchClass::Function) =>
                {
                    self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                    return self.custom_function_apply(id, args);
                }
                ObjKind::Class(_) => {
                    let f = self.get_attr(recv, name)?;
                    let r = self.call(f, args, kwargs);
                    self.heap.decref(f);
                    return r;
                }
                ObjKind::Exception(_) | ObjKind::Frame(_) => {
                    return self.call_exception_object_method(recv, id, name, args, kwargs);
                }
                _ => {}
            }
        }
        if let Value::Module(_) = recv {
            let f = self.get_attr(recv, name)?;
            let r = self.call(f, args, kwargs);
            self.heap.decref(f);
            return r;
        }
        let result = natives::call_method(self, recv, name, args, kwargs);
        self.eval_breaker();
        result
    }

    fn eval_compare(&mut self, c: &'a ast::ExprCompare) -> R<Value> {
        let mut left = self.eval(&c.left)?;
        for (op, right_expr) in c.ops.iter().zip(c.comparators.iter()) {
            let right = self.eval(right_expr)?;
            self.offset = c.range.start().to_u32();
            let result = self
                .compare(*op, left, right)
                .and_then(|ok| self.data_depth_checked(ok));
            self.heap.decref(left);
            let ok = match result {
                Ok(b) => b,
                Err(e) => {
                    self.heap.decref(right);
                    return Err(e);
                }
            };
            if !ok {
                self.heap.decref(right);
                return Ok(Value::Bool(false));
            }
            left = right;
        }
        self.heap.decref(left);
        Ok(Value::Bool(true))
    }

    fn compare(&mut self, op: CmpOp, l: Value, r: Value) -> R<bool> {
        use std::cmp::Ordering;
        let ordering = |a: Value, b: Value| -> Option<Ordering> {
            match (a, b) {
                (Value::Int(x), Value::Int(y)) => Some(x.cmp(&y)),
                (Value::Float(x), Value::Float(y)) => x.partial_cmp(&y),
                (Value::Int(x), Value::Float(y)) => (x as f64).partial_cmp(&y),
                (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(y as f64)),
                (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(&y)),
                (Value::Bool(x), Value::Int(y)) => Some((x as i64).cmp(&y)),
                (Value::Int(x), Value::Bool(y)) => Some(x.cmp(&(y as i64))),
                _ => None,
            }
        };
        let equal = |s: &Self, a: Value, b: Value| -> bool { s.values_equal(a, b) };
        Ok(match op {
            CmpOp::Is => l == r,
            CmpOp::IsNot => l != r,
            CmpOp::Eq | CmpOp::NotEq => {
                if self.is_tensor(l) || self.is_tensor(r) {
                    return self.unsupported("comparing tensors (values are not modelled)");
                }
                let eq = match self.user_predicate(l, "__eq__", r) {
                    Some(b) => b?,
                    None => equal(self, l, r),
                };
                if op == CmpOp::Eq { eq } else { !eq }
            }
            CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => {
                let Some(o) = ordering(l, r) else {
                    return self.error(
                        "TypeError: '<' not supported between these values in the workload model",
                    );
                };
                match op {
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::LtE => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                }
            }
            CmpOp::In | CmpOp::NotIn => {
                if let Some(found) = self.user_predicate(r, "__contains__", l) {
                    let found = found?;
                    return Ok(if op == CmpOp::In { found } else { !found });
                }
                let found = match r {
                    Value::Obj(id) => match self.heap.kind(id) {
                        ObjKind::List(items) | ObjKind::Tuple(items) => {
                            items.iter().any(|&v| equal(self, l, v))
                        }
                        ObjKind::Dict(items) => items.iter().any(|&(k, _)| equal(self, l, k)),
                        _ => return self.unsupported("`in` on this object"),
                    },
                    Value::Str(hay) => match l {
                        Value::Str(needle) => {
                            self.names.name(hay).contains(self.names.name(needle))
                        }
                        _ => {
                            return self
                                .error("TypeError: 'in <string>' requires string as left operand");
                        }
                    },
                    _ => return self.unsupported("`in` on this value"),
                };
                if op == CmpOp::In { found } else { !found }
            }
        })
    }

    /// `a == b` for values whose equality does not need tensor data: numbers, strings, and
    /// tuples, lists and `torch.Size` item by item (a `Size` equals a tuple of its dims).
    fn values_equal(&self, a: Value, b: Value) -> bool {
        let Some(_level) = self.data_depth.enter() else {
            return false;
        };
        let number = |v: Value| match v {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            Value::Bool(b) => Some(b as i64 as f64),
            _ => None,
        };
        if let (Some(x), Some(y)) = (number(a), number(b)) {
            return x == y;
        }
        let sequence = |v: Value| -> Option<(bool, Vec<Value>)> {
            let Value::Obj(id) = v else { return None };
            match self.heap.kind(id) {
                ObjKind::Tuple(items) => Some((false, items.clone())),
                ObjKind::List(items) => Some((true, items.clone())),
                ObjKind::Size(dims) => Some((false, dims.iter().map(|&d| Value::Int(d)).collect())),
                _ => None,
            }
        };
        let dict = |v: Value| -> Option<&Vec<(Value, Value)>> {
            match v {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Dict(items) => Some(items),
                    _ => None,
                },
                _ => None,
            }
        };
        if let (Some(x), Some(y)) = (dict(a), dict(b)) {
            return x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .any(|(k2, v2)| self.values_equal(*k, *k2) && self.values_equal(*v, *v2))
                });
        }
        match (a, b) {
            (Value::Str(x), Value::Str(y)) => self.names.name(x) == self.names.name(y),
            (Value::Obj(x), Value::Obj(y)) if x == y => true,
            _ => match (sequence(a), sequence(b)) {
                (Some((list_a, xs)), Some((list_b, ys))) => {
                    list_a == list_b
                        && xs.len() == ys.len()
                        && xs.iter().zip(&ys).all(|(&x, &y)| self.values_equal(x, y))
                }
                _ => a == b,
            },
        }
    }

    pub(super) fn is_tensor(&self, v: Value) -> bool {
        matches!(v, Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Tensor(_)))
    }

    fn unary(&mut self, op: UnaryOp, v: Value) -> R<Value> {
        Ok(match (op, v) {
            (UnaryOp::Not, v) => Value::Bool(!self.truth(v)?),
            (UnaryOp::USub, Value::Int(i)) => match i.checked_neg() {
                Some(n) => Value::Int(n),
                None => return self.unsupported("integers beyond 64 bits"),
            },
            (UnaryOp::USub, Value::Float(f)) => Value::Float(-f),
            (UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => v,
            (UnaryOp::Invert, Value::Int(i)) => Value::Int(!i),
            (_, Value::Obj(id)) if matches!(self.heap.kind(id), ObjKind::Tensor(_)) => {
                return natives::tensor_unary(self, id, "neg");
            }
            _ => return self.error("TypeError: bad operand type for unary operator"),
        })
    }

    /// Binary operator on borrowed operands; `in_place` for augmented assignment.
    pub(super) fn binary(&mut self, op: Operator, l: Value, r: Value, in_place: bool) -> R<Value> {
        if self.is_tensor(l) || self.is_tensor(r) {
            return natives::tensor_binary(self, op, l, r, in_place);
        }
        if let (Operator::Mod, Value::Str(fmt)) = (op, l) {
            return self.percent_format(fmt, r);
        }
        natives::scalar_binary(self, op, l, r)
    }

    fn eval_fstring(&mut self, f: &'a ast::ExprFString) -> R<Value> {
        let mut out = String::new();
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(l) => out.push_str(&l.value),
                ast::FStringPart::FString(fs) => {
                    for element in fs.elements.iter() {
                        match element {
                            ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                            ast::InterpolatedStringElement::Interpolation(i) => {
                                let v = self.eval(&i.expression)?;
                                out.push_str(&self.display(v));
                                self.heap.decref(v);
                            }
                        }
                    }
                }
            }
        }
        Ok(Value::Str(self.names.intern(&out)))
    }

    /// `str(v)` as far as the model knows values.
    pub(super) fn display(&self, v: Value) -> String {
        match v {
            Value::None => "None".into(),
            Value::Bool(b) => if b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format!("{f:?}"),
            Value::Str(s) => self.names.name(s).to_string(),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => {
                    format!("tensor({}, device='{}')", t.describe(), t.device.name())
                }
                ObjKind::Instance { class, .. } => format!("<{} object>", self.class_name(*class)),
                ObjKind::Exception(_) => self.exception_text(id),
                other => format!("<{}>", other.type_name()),
            },
            Value::Dtype(d) => format!("torch.{}", d.name()),
            Value::Device(d) => format!("device(type='{}')", d.name()),
            Value::Native(_) | Value::Module(_) | Value::BoundNative(..) => "<built-in>".into(),
        }
    }
}

/// Names a `for` target binds (`i`, `(k, v)`).
fn collect_target_names(target: &Expr, out: &mut Vec<Sym>, names: &mut Interner) {
    match target {
        Expr::Name(n) => out.push(symbol(&n.node_index, n.id.as_str(), names)),
        Expr::Tuple(t) => t
            .elts
            .iter()
            .for_each(|e| collect_target_names(e, out, names)),
        Expr::List(t) => t
            .elts
            .iter()
            .for_each(|e| collect_target_names(e, out, names)),
        _ => {}
    }
}

fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_) => true,
        Expr::UnaryOp(u) => {
            matches!(u.op, UnaryOp::USub) && matches!(&*u.operand, Expr::NumberLiteral(_))
        }
        Expr::Tuple(t) => t.elts.iter().all(is_constant),
        _ => false,
    }
}

/// What the collector's report aggregates device tensors by.
#[derive(PartialEq, Eq, Hash)]
struct CycleKey {
    holder: Rc<str>,
    cycle: Rc<str>,
    dtype: Dtype,
    shape: Box<[i64]>,
    category: crate::torch::Category,
    bytes: u64,
    site: StackId,
}

/// One step of a hit's path, compared cheaply: the object's label (class or function name,
/// or its kind) and the edge (a role is compared by the address of its static text).
type SignatureStep = (u8, u32, std::mem::Discriminant<ObjKind>, u8, u64);

/// The shape of a hit's paths, to format each shape once.
fn hit_signature(heap: &Heap, hit: &CycleHit) -> Vec<SignatureStep> {
    let step = |id: ObjId, edge: Edge| -> SignatureStep {
        let kind = heap.kind(id);
        let (tag, name) = match kind {
            ObjKind::Instance { class, .. } => match heap.kind(*class) {
                ObjKind::Class(c) => (0, c.name.0),
                _ => (1, 0),
            },
            ObjKind::Function(f) => (2, f.name.0),
            ObjKind::Class(c) => (3, c.name.0),
            _ => (4, 0),
        };
        let (edge_tag, edge_value) = match edge {
            Edge::Attr(s) => (0, u64::from(s.0)),
            Edge::Key(s) => (1, u64::from(s.0)),
            Edge::Index(i) => (2, u64::from(i)),
            Edge::Role(r) => (3, r.as_ptr() as u64),
        };
        (
            tag,
            name,
            std::mem::discriminant(kind),
            edge_tag,
            edge_value,
        )
    };
    let mut out: Vec<SignatureStep> = hit.holder_path.iter().map(|&(o, e)| step(o, e)).collect();
    // A step no object can produce separates the holder path from the cycle.
    if let Some(&(first, _)) = hit.holder_path.first() {
        out.push((
            u8::MAX,
            0,
            std::mem::discriminant(heap.kind(first)),
            u8::MAX,
            0,
        ));
    }
    out.extend(hit.cycle.iter().map(|&(o, e)| step(o, e)));
    out
}

/// Renders a cycle hit as `Node.tensor` and `Node.link → Node.link → Node`.
fn describe_hit(heap: &Heap, names: &Interner, hit: &CycleHit) -> (String, String) {
    let label = |id: ObjId| -> String {
        match heap.kind(id) {
            ObjKind::Instance { class, .. } => match heap.kind(*class) {
                ObjKind::Class(c) => names.name(c.name).to_string(),
                _ => "object".into(),
            },
            ObjKind::Function(f) => format!("function {}", names.name(f.name)),
            ObjKind::Class(c) => format!("class {}", names.name(c.name)),
            other => other.type_name().to_string(),
        }
    };
    let edge = |e: Edge| -> String {
        match e {
            Edge::Attr(s) => format!(".{}", names.name(s)),
            Edge::Key(s) => format!("['{}']", names.name(s)),
            Edge::Index(i) => format!("[{i}]"),
            Edge::Role(r) => format!(".{r}"),
        }
    };
    // Steps, with an instance's `__dict__` folded into plain attribute access.
    let steps = |path: &[(ObjId, Edge)]| -> Vec<String> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < path.len() {
            let (obj, e) = path[i];
            if e == Edge::Role("__dict__")
                && let Some(&(_, Edge::Key(k))) = path.get(i + 1)
            {
                out.push(format!("{}.{}", label(obj), names.name(k)));
                i += 2;
                continue;
            }
            out.push(format!("{}{}", label(obj), edge(e)));
            i += 1;
        }
        out
    };
    let holder = steps(&hit.holder_path).join(" → ");
    let cycle = if hit.cycle.is_empty() {
        String::new()
    } else {
        let mut parts = steps(&hit.cycle);
        parts.push(label(hit.cycle[0].0));
        parts.join(" → ")
    };
    (holder, cycle)
}
