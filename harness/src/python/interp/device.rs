//! Device memory: allocator calls, storages and tensors, stack attribution of
//! allocator events, and the iteration markers of the timeline.

use super::{Exc, Interpreter, R};
use crate::allocator::DeviceMemory;
use crate::heap::{ObjId, ObjKind, Value};
use crate::timeline::{Frame as StackFrame, OomReport, StackId};
use crate::torch::{Category, DeviceKind, Dtype, Storage, StorageId, TensorData};

impl<'a> Interpreter<'a> {
    // ----- device memory --------------------------------------------------------------------

    /// The current Python stack, innermost frame first, interned.
    pub(in crate::python) fn current_stack(&mut self) -> StackId {
        let (node, known) = (self.stack_cache).find(self.frames.iter().map(|f| (f.name.0, f.line)));
        if let Some(id) = known {
            return id;
        }
        let frames = self
            .frames
            .iter()
            .rev()
            .map(|f| StackFrame {
                file: self.map.file().into(),
                line: f.line,
                name: self.names.name(f.name).into(),
            })
            .collect();
        let id = self.recorder.stacks().intern(frames);
        self.stack_cache.remember(node, id);
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

    /// Allocates `bytes` of device memory for a new storage made at `stack` (the current
    /// stack: the caller has it already, for the storage).
    pub(in crate::python) fn device_malloc(
        &mut self,
        bytes: u64,
        category: Category,
        stack: StackId,
    ) -> R<Option<u64>> {
        self.release_dropped_storages(None);
        if bytes == 0 {
            return Ok(None);
        }
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

    pub(in crate::python) fn empty_cache(&mut self) {
        self.release_dropped_storages(None);
        let stack = self.current_stack();
        self.allocator.empty_cache(&mut self.events);
        self.record_events(stack);
    }

    /// Releases storages whose last tensor died; `freed` collects the device storages freed.
    pub(in crate::python) fn release_dropped_storages(
        &mut self,
        mut freed: Option<&mut Vec<(StorageId, Storage)>>,
    ) {
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
    pub(in crate::python) fn new_storage(
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
        // Found once: the frames do not change while the storage is allocated.
        let alloc_stack = self.current_stack();
        let addr = if device == DeviceKind::Cuda {
            self.device_malloc(bytes, category, alloc_stack)?
        } else {
            None
        };
        if addr.is_some() {
            self.device_storages_alive += 1;
        }
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
    pub(in crate::python) fn new_tensor(
        &mut self,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
        share: Option<(StorageId, Option<ObjId>)>,
    ) -> R<Value> {
        self.new_tensor_as(shape, dtype, device, share, Category::Input)
    }

    /// [`Interpreter::new_tensor`] with the memory category of a new storage.
    pub(in crate::python) fn new_tensor_as(
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
            output_nr: 0,
            grad: None,
            is_param: false,
            contiguous: true,
            backward_hooks: None,
            cpp_hook_dict: None,
            post_acc_hooks: None,
            cpp_post_acc_hooks: None,
        }));
        Ok(Value::Obj(id))
    }

    // ----- iterations -----------------------------------------------------------------------

    pub(in crate::python) fn open_iteration(&mut self, i: u32) {
        let s = self.allocator.stats();
        let (a, r) = (s.allocated_bytes, s.reserved_bytes);
        self.recorder.begin_iteration(i, a, r);
    }

    pub(in crate::python) fn close_iteration(&mut self, completed: bool) {
        self.release_dropped_storages(None);
        let s = self.allocator.stats();
        let (a, r) = (s.allocated_bytes, s.reserved_bytes);
        let alive = self.device_storages_alive;
        if let Some(iteration) = self.recorder.iteration() {
            self.allocator.device_mut().iteration_ended(iteration, r);
        }
        self.recorder.end_iteration(a, r, alive, completed);
    }
}
