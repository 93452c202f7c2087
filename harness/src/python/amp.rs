//! Automatic mixed precision: `torch.autocast` regions. Inside an enabled region the ops on
//! PyTorch's lower-precision list cast their floating CUDA inputs to the region's dtype, and
//! those on the float32 list cast theirs up to float32, before running. A cast of a leaf that
//! requires grad (a weight) is cached until the outermost region exits, so one low-precision
//! copy per weight stays alive through the forward pass; any other cast is a fresh tensor
//! (a `ToCopyBackward0` node when it requires grad). Ops on neither list run unchanged.

use super::autograd;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use crate::torch::{Category, DeviceKind, Dtype, GradFlow, StorageId};

/// The autocast state of the CUDA device type (`at::autocast`'s thread-locals).
#[derive(Default)]
pub(crate) struct AutocastState {
    /// The cast dtype while a region is enabled.
    enabled: Option<Dtype>,
    /// How many `autocast` regions are open, enabled or not.
    nesting: u32,
    /// `cached_casts`: weight → its low-precision copy (owned), cleared when the outermost
    /// region exits. The storage guards against a freed weight's id being reused.
    cache: Vec<(ObjId, StorageId, Value)>,
}

/// Which autocast list an op is on.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum CastPolicy {
    /// `mm`, `matmul`, `linear`, `addmm`, `bmm`, the convolutions: run in the region's dtype.
    LowerPrecision,
    /// `exp`, `log`, the losses, `layer_norm`, ...: inputs cast to float32.
    Float32,
    /// `softmax`, `log_softmax`, `sum`, ... (`fp32_set_opt_dtype`): run with
    /// `dtype=torch.float32`, so a half input gives a float32 result without a cast copy.
    Float32Output,
}

/// The autocast list (CUDA, `aten/src/ATen/autocast_mode.cpp`) of an op that the model runs
/// through a shared path (`tensor_unary`, the convolutions); the layers and losses with
/// their own code name their policy there.
pub(super) fn policy_of(op: &str) -> Option<CastPolicy> {
    match op {
        "conv1d" | "conv2d" | "linear" | "matmul" | "mm" | "bmm" | "addmm" => {
            Some(CastPolicy::LowerPrecision)
        }
        "exp" | "log" | "log2" | "log10" | "log1p" | "expm1" | "reciprocal" | "rsqrt" | "acos"
        | "asin" | "cosh" | "sinh" | "tan" | "erfinv" | "softplus" | "pow" => {
            Some(CastPolicy::Float32)
        }
        "softmax" | "log_softmax" | "sum" | "prod" | "cumsum" | "cumprod" => {
            Some(CastPolicy::Float32Output)
        }
        _ => None,
    }
}

/// The manager's items: its dtype, whether enabled, and the state it replaced (set on
/// `__enter__`, restored on `__exit__`).
const DTYPE: usize = 0;
const ENABLED: usize = 1;
const PREVIOUS: usize = 2;

impl Interpreter<'_> {
    /// `torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)`, or with
    /// `cuda_only` `torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)`.
    pub(super) fn new_autocast(
        &mut self,
        positional: &[Value],
        keywords: [Option<Value>; 4],
        cuda_only: bool,
    ) -> R<Value> {
        let [device_type, dtype_kw, enabled_kw, cache_enabled] = keywords;
        let mut positional = positional.iter().copied();
        if !cuda_only {
            let device = device_type.or_else(|| positional.next());
            match device {
                Some(Value::Str(s)) if self.names.name(s) == "cuda" => {}
                Some(Value::Str(_)) => {
                    return self.unsupported("torch.autocast on a device type other than \"cuda\"");
                }
                _ => {
                    return self.error(
                        "TypeError: autocast.__init__() missing 1 required positional argument: 'device_type'",
                    );
                }
            }
        }
        let (first, second) = if cuda_only {
            let enabled = positional.next();
            (positional.next(), enabled)
        } else {
            let dtype = positional.next();
            (dtype, positional.next())
        };
        let dtype = match dtype_kw.or(first) {
            None | Some(Value::None) => Dtype::Float16,
            Some(Value::Dtype(d)) if matches!(d, Dtype::Float16 | Dtype::BFloat16) => d,
            Some(_) => {
                return self.error(
                    "RuntimeError: In CUDA autocast, but the target dtype is not supported: expected torch.float16 or torch.bfloat16",
                );
            }
        };
        let enabled = match enabled_kw.or(second) {
            Some(v) => self.truth(v)?,
            None => true,
        };
        if let Some(c) = cache_enabled
            && c != Value::None
            && !self.truth(c)?
        {
            return self.unsupported("autocast(cache_enabled=False)");
        }
        Ok(self.new_wrapper(
            WrapperKind::Autocast,
            vec![Value::Dtype(dtype), Value::Bool(enabled), Value::None],
        ))
    }

    /// Whether `v` is an autocast manager.
    pub(super) fn is_autocast(&self, v: Value) -> bool {
        matches!(v, Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Wrapper(WrapperKind::Autocast, _)))
    }

    /// `autocast.__enter__`: notes the state it replaces, enables (or disables) casting and
    /// deepens the nesting.
    pub(super) fn autocast_enter(&mut self, manager: ObjId) {
        let previous = match self.autocast.enabled {
            Some(d) => Value::Dtype(d),
            None => Value::None,
        };
        let ObjKind::Wrapper(WrapperKind::Autocast, items) = self.heap.kind_mut(manager) else {
            return;
        };
        items[PREVIOUS] = previous;
        let enabled = match (items[ENABLED], items[DTYPE]) {
            (Value::Bool(true), Value::Dtype(d)) => Some(d),
            _ => None,
        };
        self.autocast.enabled = enabled;
        self.autocast.nesting += 1;
    }

    /// `autocast.__exit__`: the outermost region's exit frees the cached casts; the state
    /// the region replaced comes back.
    pub(super) fn autocast_exit(&mut self, manager: ObjId) {
        self.autocast.nesting = self.autocast.nesting.saturating_sub(1);
        if self.autocast.nesting == 0 {
            let cache = std::mem::take(&mut self.autocast.cache);
            self.heap
                .decref_all(cache.into_iter().map(|(_, _, cast)| cast));
        }
        if let ObjKind::Wrapper(WrapperKind::Autocast, items) = self.heap.kind(manager) {
            self.autocast.enabled = match items[PREVIOUS] {
                Value::Dtype(d) => Some(d),
                _ => None,
            };
        }
    }

    /// The inputs an op on `policy`'s list runs on (owned, one per input): each floating
    /// CUDA tensor not of the target dtype is cast (float64 is left alone, as PyTorch's
    /// `is_eligible` does), anything else is passed through with a new reference.
    pub(super) fn autocast_inputs(
        &mut self,
        inputs: &[Value],
        policy: CastPolicy,
    ) -> R<Vec<Value>> {
        let target = match (self.autocast.enabled, policy) {
            (Some(d), CastPolicy::LowerPrecision) => Some(d),
            (Some(_), CastPolicy::Float32) => Some(Dtype::Float32),
            (Some(_), CastPolicy::Float32Output) | (None, _) => None,
        };
        let mut out = Vec::with_capacity(inputs.len());
        for &v in inputs {
            let cast = match target {
                Some(d) => self.autocast_cast(v, d, policy),
                None => Ok(None),
            };
            match cast {
                Ok(Some(c)) => out.push(c),
                Ok(None) => {
                    self.heap.incref(v);
                    out.push(v);
                }
                Err(e) => {
                    self.heap.decref_all(out);
                    return Err(e);
                }
            }
        }
        Ok(out)
    }

    /// The result dtype of an `fp32_set_opt_dtype` op on `v`: float32 inside an enabled
    /// region for an eligible (CUDA, lower-precision floating) input, else unchanged.
    pub(super) fn autocast_float32_output(&self, v: Value) -> Option<Dtype> {
        self.autocast.enabled?;
        let t = self.tensor_data(v)?;
        let eligible = t.device == DeviceKind::Cuda
            && t.dtype.is_floating()
            && !matches!(t.dtype, Dtype::Float64 | Dtype::Float32);
        eligible.then_some(Dtype::Float32)
    }

    /// `cached_cast`: `v` cast to `dtype` (owned), or `None` when it needs no cast.
    fn autocast_cast(&mut self, v: Value, dtype: Dtype, policy: CastPolicy) -> R<Option<Value>> {
        let Some(t) = self.tensor_data(v) else {
            return Ok(None);
        };
        let eligible = t.device == DeviceKind::Cuda
            && t.dtype.is_floating()
            && t.dtype != Dtype::Float64
            && t.dtype != dtype;
        if !eligible {
            return Ok(None);
        }
        let Value::Obj(id) = v else { return Ok(None) };
        // Only casts down to the region's dtype of float32 leaves that require grad are cached.
        let cacheable = policy == CastPolicy::LowerPrecision
            && t.dtype == Dtype::Float32
            && t.requires_grad
            && t.grad_fn.is_none()
            && t.base.is_none();
        if cacheable
            && let Some(&(_, _, cast)) = self
                .autocast
                .cache
                .iter()
                .find(|(src, storage, _)| *src == id && *storage == t.storage)
        {
            self.heap.incref(cast);
            return Ok(Some(cast));
        }
        let category = if self.grad_enabled && t.requires_grad {
            Category::Activation
        } else {
            Category::Temporary
        };
        let cast = self.new_tensor_as(t.shape.clone(), dtype, t.device, None, category)?;
        autograd::record(self, cast, "ToCopyBackward0", GradFlow::Compute, &[v], &[]);
        if cacheable {
            self.heap.incref(cast);
            self.autocast.cache.push((id, t.storage, cast));
        }
        Ok(Some(cast))
    }
}
