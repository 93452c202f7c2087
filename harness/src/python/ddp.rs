//! `torch.nn.parallel.DistributedDataParallel` in one process: what its construction
//! allocates on the device, as `torch/nn/parallel/distributed.py` and
//! `torch/csrc/distributed/c10d/reducer.cpp` do it.
//!
//! Construction, in PyTorch's order:
//!
//! 1. `_sync_module_states` broadcasts the parameters from rank 0 (`dist._broadcast_coalesced`
//!    with a 250 MiB buffer): the tensors are grouped by [`assign_buckets`] with the one
//!    limit 250 MiB, and each group of more than one tensor is flattened into a new tensor
//!    of the group's bytes (`flatten_dense_tensors` is a `cat`; one tensor is a view). At
//!    most two groups are in flight: the third's flattening waits for the first to finish
//!    and free. These are the construction's temporaries.
//! 2. `_ddp_init_helper` assigns the reducer's buckets with [`assign_buckets`] over the
//!    parameters that require grad, in registration order: limits `[sys.maxsize]` (one
//!    bucket per dtype and device) unless `find_unused_parameters=True` without
//!    `static_graph`, then `[dist._DEFAULT_FIRST_BUCKET_BYTES (1 MiB), bucket_cap_mb MiB]`
//!    (only `[bucket_cap_mb MiB]` when `bucket_cap_mb` is given). The list is reversed (the
//!    gradients of the last layers are ready first) and `Reducer::initialize_buckets`
//!    allocates each bucket's flat gradient buffer (`at::empty` of its bytes) in that
//!    order. The buffers live as long as the DDP object (its `reducer`).
//!
//! The bucket rule (`compute_bucket_assignment_by_size`): tensors are taken in order, each
//! added to the open bucket of its (dtype, device); when that bucket's bytes reach the
//! current limit it is closed and the next limit (the last one repeats) applies to that
//! key; open buckets are closed at the end, and the buckets are sorted by their smallest
//! index.
//!
//! Forward runs the wrapped module (`.module`). `no_sync()` is a context manager. Backward:
//! with `gradient_as_bucket_view=False` (the default) the reducer copies each gradient into
//! its bucket view and back after the all-reduce (`copy_grad_to_bucket`, in place: no
//! allocation), so the model adds nothing there. Not modelled, and said so: the buckets'
//! rebuild after the first iteration (the same bytes regrouped in gradient-ready order by
//! `[1 MiB, bucket_cap_mb]`: the total allocated is unchanged, the blocks differ), buffers
//! in the construction broadcast, and `gradient_as_bucket_view=True` (gradients as views
//! of the buckets), which is refused.

use super::interp::{Interpreter, R};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, DeviceKind, Dtype};

/// `dist._DEFAULT_FIRST_BUCKET_BYTES`.
pub(crate) const FIRST_BUCKET_BYTES: u64 = 1024 * 1024;
/// `bucket_cap_mb`'s default, 25 MiB.
const DEFAULT_CAP_MB: f64 = 25.0;
/// `_sync_module_states`' `broadcast_bucket_size`: 250 MiB.
const BROADCAST_BUCKET_BYTES: u64 = 250 * 1024 * 1024;

/// A bucket being filled for one (dtype, device): its indices, bytes, and the position of
/// its current size limit.
struct OpenBucket {
    key: (Dtype, DeviceKind),
    indices: Vec<usize>,
    size: u64,
    limit: usize,
}

/// `compute_bucket_assignment_by_size`: indices into `tensors` (each `(dtype, device,
/// bytes)`) per bucket, sorted by smallest index (module docs).
pub(crate) fn assign_buckets(
    tensors: &[(Dtype, DeviceKind, u64)],
    limits: &[u64],
) -> Vec<Vec<usize>> {
    let mut open: Vec<OpenBucket> = Vec::new();
    let mut result: Vec<Vec<usize>> = Vec::new();
    for (i, &(dtype, device, bytes)) in tensors.iter().enumerate() {
        let pos = match open.iter().position(|b| b.key == (dtype, device)) {
            Some(p) => p,
            None => {
                open.push(OpenBucket {
                    key: (dtype, device),
                    indices: Vec::new(),
                    size: 0,
                    limit: 0,
                });
                open.len() - 1
            }
        };
        let b = &mut open[pos];
        b.indices.push(i);
        b.size += bytes;
        if b.size >= limits[b.limit] {
            result.push(std::mem::take(&mut b.indices));
            b.size = 0;
            if b.limit + 1 < limits.len() {
                b.limit += 1;
            }
        }
    }
    result.extend(
        open.into_iter()
            .map(|b| b.indices)
            .filter(|i| !i.is_empty()),
    );
    result.sort_by_key(|b| b[0]);
    result
}

impl Interpreter<'_> {
    /// `DistributedDataParallel(module, ...)` (module docs).
    pub(super) fn construct_ddp(&mut self, args: &[Value], kwargs: &[(Sym, Value)]) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let module = match arg(self, 0, "module") {
            Some(m)
                if self
                    .instance_torch_class(m)
                    .is_some_and(TorchClass::is_module) =>
            {
                m
            }
            _ => {
                return self.error(
                    "TypeError: DistributedDataParallel.__init__() missing 1 required positional argument: 'module'",
                );
            }
        };
        let flag = |it: &mut Self, name: &str, i: usize| -> R<bool> {
            match constructor_arg(it, args, kwargs, i, name) {
                Some(v) => it.truth(v),
                None => Ok(false),
            }
        };
        // Positional order of `__init__`: module, device_ids, output_device, dim,
        // broadcast_buffers, process_group, bucket_cap_mb, find_unused_parameters,
        // check_reduction, gradient_as_bucket_view, static_graph.
        let find_unused = flag(self, "find_unused_parameters", 7)?;
        let as_view = flag(self, "gradient_as_bucket_view", 9)?;
        let static_graph = flag(self, "static_graph", 10)?;
        let cap_mb = match arg(self, 6, "bucket_cap_mb") {
            None | Some(Value::None) => None,
            Some(v) => match super::natives::float_of(v) {
                Some(f) => Some(f),
                None => return self.error("TypeError: bucket_cap_mb must be a number"),
            },
        };
        if self.process_group.is_none() {
            return self.error(
                "ValueError: Default process group has not been initialized, please make sure to call init_process_group.",
            );
        }
        if as_view {
            return self.unsupported(
                "DistributedDataParallel(gradient_as_bucket_view=True): gradients as views of the reducer's buckets",
            );
        }
        let Value::Obj(mid) = module else {
            unreachable!("a module is an object")
        };
        let mut all = Vec::new();
        self.module_parameters(mid, &mut all);
        let params: Vec<ObjId> = all
            .into_iter()
            .filter(|&p| {
                self.tensor_data(Value::Obj(p))
                    .is_some_and(|t| t.requires_grad)
            })
            .collect();
        if params.is_empty() {
            return self.error(
                "RuntimeError: DistributedDataParallel is not needed when a module doesn't have any parameter that requires a gradient.",
            );
        }
        let meta: Vec<(Dtype, DeviceKind, u64)> = params
            .iter()
            .map(|&p| {
                let t = self.tensor_data(Value::Obj(p)).expect("a parameter");
                let bytes = t.numel() * t.dtype.element_size();
                (t.dtype, t.device, bytes)
            })
            .collect();
        self.ddp_broadcast(&meta)?;
        let cap = (cap_mb.unwrap_or(DEFAULT_CAP_MB) * 1024.0 * 1024.0) as u64;
        let limits: Vec<u64> = if static_graph || !find_unused {
            vec![u64::MAX]
        } else if cap_mb.is_none() {
            vec![FIRST_BUCKET_BYTES, cap]
        } else {
            vec![cap]
        };
        let mut buckets = assign_buckets(&meta, &limits);
        buckets.reverse();
        let mut held = Vec::with_capacity(buckets.len());
        for b in &buckets {
            let (dtype, device, _) = meta[b[0]];
            let numel: u64 = b.iter().map(|&i| meta[i].2 / dtype.element_size()).sum();
            match self.new_tensor_as(vec![numel as i64], dtype, device, None, Category::Gradient) {
                Ok(t) => held.push(t),
                Err(e) => {
                    self.heap.decref_all(held);
                    return Err(e);
                }
            }
        }
        // The C++ reducer (a pybind object, not a GC object) owns the bucket buffers.
        let reducer = Value::Obj(self.heap.insert_uncounted(ObjKind::CppHandle {
            type_name: "Reducer",
            held,
        }));
        self.heap.incref(module);
        self.new_torch_instance(
            TorchClass::DistributedDataParallel,
            vec![("module", module), ("reducer", reducer)],
        )
    }

    /// `_sync_module_states`' `broadcast_coalesced`: the flattened groups, two in flight.
    fn ddp_broadcast(&mut self, meta: &[(Dtype, DeviceKind, u64)]) -> R<()> {
        let groups = assign_buckets(meta, &[BROADCAST_BUCKET_BYTES]);
        let mut in_flight: std::collections::VecDeque<Value> = Default::default();
        let mut result = Ok(());
        for g in groups.iter().filter(|g| g.len() > 1) {
            if in_flight.len() >= 2 {
                let done = in_flight.pop_front().expect("two in flight");
                self.heap.decref(done);
            }
            let (dtype, device, _) = meta[g[0]];
            let numel: u64 = g.iter().map(|&i| meta[i].2 / dtype.element_size()).sum();
            match self.new_tensor_as(vec![numel as i64], dtype, device, None, Category::Temporary) {
                Ok(t) => in_flight.push_back(t),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        self.heap.decref_all(in_flight);
        result
    }

    /// `DistributedDataParallel.forward`: the wrapped module's.
    pub(super) fn ddp_forward(&mut self, ddp: ObjId, args: &[Value]) -> R<Value> {
        let s = self.sym("module");
        let module = self.get_attr(Value::Obj(ddp), s)?;
        for &a in args {
            self.heap.incref(a);
        }
        let r = self.call(module, args.to_vec(), Vec::new());
        self.heap.decref(module);
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three `Linear(512, 512)` (weights 1 MiB, biases 2 KiB): with limits `[1 MiB, 1 MiB]`
    /// `dist._compute_bucket_assignment_by_size` gives `[[0], [1, 2], [3, 4], [5]]`, with one
    /// unbounded limit `[[0, 1, 2, 3, 4, 5]]` (a published torch 2.2.2 run of the function).
    #[test]
    fn bucket_assignment_matches_pytorchs_on_three_linears() {
        let (f, c) = (Dtype::Float32, DeviceKind::Cuda);
        let ps: Vec<(Dtype, DeviceKind, u64)> = [1048576, 2048, 1048576, 2048, 1048576, 2048]
            .into_iter()
            .map(|b| (f, c, b))
            .collect();
        assert_eq!(
            assign_buckets(&ps, &[FIRST_BUCKET_BYTES, 1024 * 1024]),
            vec![vec![0], vec![1, 2], vec![3, 4], vec![5]]
        );
        assert_eq!(
            assign_buckets(&ps, &[u64::MAX]),
            vec![vec![0, 1, 2, 3, 4, 5]]
        );
    }

    /// Each (dtype, device) has its own open bucket and its own limit position; the result
    /// is sorted by each bucket's smallest index.
    #[test]
    fn buckets_never_mix_dtypes_and_are_sorted_by_first_index() {
        let c = DeviceKind::Cuda;
        let ps = [
            (Dtype::Float16, c, 2 << 20),
            (Dtype::Float32, c, 512),
            (Dtype::Float16, c, 512),
            (Dtype::Float32, c, 2 << 20),
        ];
        assert_eq!(
            assign_buckets(&ps, &[FIRST_BUCKET_BYTES, 25 << 20]),
            vec![vec![0], vec![1, 3], vec![2]]
        );
    }
}
