//! Automatic mixed precision: `torch.autocast` regions. Inside an enabled region the ops on
//! PyTorch's lower-precision list cast their floating CUDA inputs to the region's dtype, and
//! those on the float32 list cast theirs up to float32, before running. A cast of a leaf that
//! requires grad (a weight) is cached until the outermost region exits, so one low-precision
//! copy per weight stays alive through the forward pass; any other cast is a fresh tensor
//! (a `ToCopyBackward0` node when it requires grad). The promote ops (`cat`, `stack`) cast
//! their narrower inputs to the widest type among them; `binary_cross_entropy` is refused.
//! Ops on no list run unchanged.

use super::autograd;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use crate::torch::{Category, DeviceKind, Dtype, StorageId};

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
    /// `set_autocast_cache_enabled(False)`: set by `autocast(cache_enabled=False)` for its
    /// region, so each op casts its weights anew (the copy dies with the op's graph).
    cache_disabled: bool,
}

/// Which autocast list an op is on.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum CastPolicy {
    /// `mm`, `matmul`, `linear`, `addmm`, `bmm`, the convolutions: run in the region's dtype.
    LowerPrecision,
    /// `exp`, `log`, `pow`, the losses, `layer_norm`, ...: inputs cast to float32.
    Float32,
    /// `softmax`, `log_softmax`, `sum`, ... (`fp32_set_opt_dtype`): run with
    /// `dtype=torch.float32`, so a half input gives a float32 result without a cast copy.
    Float32Output,
    /// `cat`, `stack` (`promote`): every eligible input cast to the widest floating type
    /// among them and the region's dtype.
    Promote,
    /// `binary_cross_entropy` (`banned`): refused inside an enabled region.
    Banned,
}

/// Every op the model runs (the autograd table's rows and the layers and losses with their
/// own code) with its CUDA autocast list in `aten/src/ATen/autocast_mode.cpp`; `None`: on
/// no list, it runs in its inputs' dtypes (in-place ops are never cast). A unit test checks
/// that every row of the autograd table is here, so a new op needs a decision.
pub(super) const OP_POLICIES: &[(&str, Option<CastPolicy>)] = {
    use CastPolicy::*;
    &[
        // lower_precision_fp
        ("conv1d", Some(LowerPrecision)),
        ("conv2d", Some(LowerPrecision)),
        ("convolution", Some(LowerPrecision)),
        ("linear", Some(LowerPrecision)),
        ("matmul", Some(LowerPrecision)),
        ("mm", Some(LowerPrecision)),
        ("bmm", Some(LowerPrecision)),
        ("addmm", Some(LowerPrecision)),
        // fp32
        ("exp", Some(Float32)),
        ("log", Some(Float32)),
        ("log2", Some(Float32)),
        ("log10", Some(Float32)),
        ("log1p", Some(Float32)),
        ("expm1", Some(Float32)),
        ("reciprocal", Some(Float32)),
        ("rsqrt", Some(Float32)),
        ("acos", Some(Float32)),
        ("asin", Some(Float32)),
        ("cosh", Some(Float32)),
        ("sinh", Some(Float32)),
        ("tan", Some(Float32)),
        ("erfinv", Some(Float32)),
        ("softplus", Some(Float32)),
        ("logsumexp", Some(Float32)),
        ("where", None),
        // index_put is on autocast's promote list; `t[mask] = v` writes in place (never cast).
        ("index_put_", None),
        ("pow", Some(Float32)),
        ("layer_norm", Some(Float32)),
        ("mse_loss", Some(Float32)),
        ("cross_entropy", Some(Float32)),
        ("nll_loss", Some(Float32)),
        ("l1_loss", Some(Float32)),
        ("smooth_l1_loss", Some(Float32)),
        ("binary_cross_entropy_with_logits", Some(Float32)),
        // fp32_set_opt_dtype
        ("softmax", Some(Float32Output)),
        ("log_softmax", Some(Float32Output)),
        ("sum", Some(Float32Output)),
        ("sum_dim", Some(Float32Output)),
        ("prod", Some(Float32Output)),
        ("cumsum", Some(Float32Output)),
        ("cumprod", Some(Float32Output)),
        // promote
        ("cat", Some(Promote)),
        ("stack", Some(Promote)),
        // banned
        ("binary_cross_entropy", Some(Banned)),
        // on no list
        ("add", None),
        ("sub", None),
        ("mul", None),
        ("mul_scalar", None),
        ("div", None),
        ("div_scalar", None),
        ("relu", None),
        ("sigmoid", None),
        ("tanh", None),
        ("sqrt", None),
        ("abs", None),
        ("clamp", None),
        ("gelu", None),
        ("neg", None),
        ("leaky_relu", None),
        ("silu", None),
        ("mean", None),
        ("mean_dim", None),
        ("clone", None),
        ("to", None),
        ("view", None),
        ("split", None),
        ("split_with_sizes", None),
        ("repeat", None),
        ("embedding", None),
        ("adaptive_avg_pool2d", None),
        ("setitem", None),
        // kl_div (its composite's ops run on the float32 casts), its xlogy (on no list),
        // linalg_vector_norm (fp32_set_opt_dtype), addcmul (promote).
        ("kl_div", Some(Float32)),
        ("xlogy", None),
        ("linalg_vector_norm", Some(Float32Output)),
        ("addcmul", Some(Promote)),
        ("group_norm", Some(Float32)),
        ("elu", None),
        ("hardtanh", None),
        ("mish", None),
        ("hardswish", None),
        // Rows of the autograd table for ops whose nodes the layers build themselves.
        ("batch_norm", None),
        ("dropout", None),
        ("max_pool2d", None),
        ("baddbmm", Some(LowerPrecision)),
        ("mul.Scalar", None),
        ("t", None),
        ("unsafe_view", None),
        ("unbind", None),
        ("max_dim", None),
        ("min_dim", None),
        ("max", None),
        ("min", None),
        ("lstm_cell", Some(LowerPrecision)),
        ("gru_cell", Some(LowerPrecision)),
        ("addcdiv", Some(Promote)),
        ("maximum", None),
        ("minimum", None),
        ("sort", None),
        ("sort_stable", None),
        ("topk", None),
        ("as_strided", None),
        // remainder and index are on no autocast list.
        ("remainder.Scalar", None),
        ("remainder", None),
        ("index", None),
        // Views run in their input's dtype: on no autocast list.
        ("permute", None),
        ("transpose", None),
        ("expand", None),
        ("squeeze", None),
        ("squeeze_dim", None),
        ("unsqueeze", None),
        ("slice", None),
        ("select", None),
        ("alias", None),
        // pointwise_math.rs (log10, log2, log1p, expm1, rsqrt, reciprocal and cumprod are
        // listed above); atan2 is on the promote list.
        ("exp2", None),
        ("sign", None),
        ("floor", None),
        ("ceil", None),
        ("round", None),
        ("round_decimals", None),
        ("trunc", None),
        ("clamp_min", None),
        ("clamp_max", None),
        ("flip", None),
        ("roll", None),
        ("tril", None),
        ("triu", None),
        ("hypot", None),
        ("atan2", Some(Promote)),
        ("logaddexp", None),
        ("lerp", None),
        ("lerp_tensor", None),
        ("index_select", None),
    ]
};

/// The autocast list of `op` (see [`OP_POLICIES`]); in-place ops (`add_`, ...) are on none.
pub(super) fn policy_of(op: &str) -> Option<CastPolicy> {
    OP_POLICIES
        .iter()
        .find(|(name, _)| *name == op)
        .and_then(|(_, p)| *p)
}

/// `binary_cross_entropy_banned`'s message.
const BANNED_MESSAGE: &str = "RuntimeError: torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast.\nMany models use a sigmoid layer right before the binary cross entropy layer.\nIn this case, combine the two layers using torch.nn.functional.binary_cross_entropy_with_logits\nor torch.nn.BCEWithLogitsLoss.  binary_cross_entropy_with_logits and BCEWithLogits are\nsafe to autocast.";

/// The manager's items: its dtype, whether enabled, and the state it replaced (set on
/// `__enter__`, restored on `__exit__`).
const DTYPE: usize = 0;
const ENABLED: usize = 1;
const PREVIOUS: usize = 2;
/// The manager's `cache_enabled` and the cache setting its region replaced.
const CACHE: usize = 3;
const PREVIOUS_CACHE: usize = 4;

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
        // `None` means the current setting (`is_autocast_cache_enabled()`), read on entry.
        let cache = match cache_enabled {
            Some(c) if c != Value::None => Value::Bool(self.truth(c)?),
            _ => Value::None,
        };
        Ok(self.new_wrapper(
            WrapperKind::Autocast,
            vec![
                Value::Dtype(dtype),
                Value::Bool(enabled),
                Value::None,
                cache,
                Value::None,
            ],
        ))
    }

    /// Whether `v` is an autocast manager, or another torch manager that only sets and
    /// restores autograd state (`saved_tensors_hooks`, entered and left the same way).
    pub(super) fn is_autocast(&self, v: Value) -> bool {
        matches!(v, Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Wrapper(WrapperKind::Autocast | WrapperKind::SavedTensorsHooks, _)))
    }

    /// `autocast.__enter__`: notes the state it replaces, enables (or disables) casting and
    /// deepens the nesting.
    pub(super) fn autocast_enter(&mut self, manager: ObjId) {
        if matches!(
            self.heap.kind(manager),
            ObjKind::Wrapper(WrapperKind::SavedTensorsHooks, _)
        ) {
            return self.saved_hooks_enter(manager);
        }
        let previous = match self.autocast.enabled {
            Some(d) => Value::Dtype(d),
            None => Value::None,
        };
        let ObjKind::Wrapper(WrapperKind::Autocast, items) = self.heap.kind_mut(manager) else {
            return;
        };
        items[PREVIOUS] = previous;
        let was_disabled = self.autocast.cache_disabled;
        items[PREVIOUS_CACHE] = Value::Bool(!was_disabled);
        let cache_disabled = match items[CACHE] {
            Value::Bool(on) => !on,
            _ => was_disabled,
        };
        let enabled = match (items[ENABLED], items[DTYPE]) {
            (Value::Bool(true), Value::Dtype(d)) => Some(d),
            _ => None,
        };
        self.autocast.enabled = enabled;
        self.autocast.cache_disabled = cache_disabled;
        self.autocast.nesting += 1;
    }

    /// `autocast.__exit__`: the outermost region's exit frees the cached casts; the state
    /// the region replaced comes back.
    pub(super) fn autocast_exit(&mut self, manager: ObjId) {
        if matches!(
            self.heap.kind(manager),
            ObjKind::Wrapper(WrapperKind::SavedTensorsHooks, _)
        ) {
            return self.saved_hooks_exit();
        }
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
            self.autocast.cache_disabled = items[PREVIOUS_CACHE] == Value::Bool(false);
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
            (Some(d), CastPolicy::Promote) => Some(self.autocast_promoted(d, inputs)),
            (Some(_), CastPolicy::Banned) => return self.error(BANNED_MESSAGE),
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

    /// `promote_type`: the region's dtype promoted with each eligible input's (float16 with
    /// bfloat16 gives float32, as `at::promote_types` does).
    fn autocast_promoted(&self, region: Dtype, inputs: &[Value]) -> Dtype {
        let mut current = region;
        for &v in inputs {
            let Some(t) = self.tensor_data(v) else {
                continue;
            };
            if t.device != DeviceKind::Cuda || !t.dtype.is_floating() || t.dtype == Dtype::Float64 {
                continue;
            }
            current = match (current, t.dtype) {
                (a, b) if a == b => a,
                (Dtype::Float16, Dtype::BFloat16) | (Dtype::BFloat16, Dtype::Float16) => {
                    Dtype::Float32
                }
                (a, b) => Dtype::promote(a, b),
            };
        }
        current
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
        let cacheable = !self.autocast.cache_disabled
            && policy == CastPolicy::LowerPrecision
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
        autograd::record_op(self, cast, "to", &[v]);
        if cacheable {
            self.heap.incref(cast);
            self.autocast.cache.push((id, t.storage, cast));
        }
        Ok(Some(cast))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_op_of_the_autograd_table_has_an_autocast_decision() {
        for rule in crate::torch::OP_RULES {
            let in_place = rule.op.ends_with('_');
            assert!(
                in_place || OP_POLICIES.iter().any(|(name, _)| *name == rule.op),
                "op {} has no autocast policy in OP_POLICIES",
                rule.op
            );
        }
    }

    #[test]
    fn each_list_holds_the_ops_of_autocast_mode_cpp() {
        let on = |p: CastPolicy| -> Vec<&str> {
            OP_POLICIES
                .iter()
                .filter(|(_, q)| *q == Some(p))
                .map(|(n, _)| *n)
                .collect()
        };
        assert_eq!(
            on(CastPolicy::Promote),
            ["cat", "stack", "addcmul", "addcdiv", "atan2"]
        );
        assert_eq!(on(CastPolicy::Banned), ["binary_cross_entropy"]);
        for op in [
            "pow",
            "layer_norm",
            "nll_loss",
            "l1_loss",
            "smooth_l1_loss",
            "mse_loss",
            "cross_entropy",
            "binary_cross_entropy_with_logits",
            "exp",
            "log",
        ] {
            assert_eq!(policy_of(op), Some(CastPolicy::Float32), "{op}");
        }
        for op in ["sum", "sum_dim", "softmax", "log_softmax"] {
            assert_eq!(policy_of(op), Some(CastPolicy::Float32Output), "{op}");
        }
        for op in ["mean", "relu", "gelu", "add", "mul", "embedding"] {
            assert_eq!(policy_of(op), None, "{op}");
        }
        let mut names: Vec<&str> = OP_POLICIES.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OP_POLICIES.len(), "an op is listed twice");
    }
}
