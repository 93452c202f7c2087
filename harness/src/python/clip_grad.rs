//! `torch.nn.utils.clip_grad_norm_` and `clip_grad_value_`, as `torch/nn/utils/clip_grad.py`
//! runs them under `no_grad`:
//!
//! - `clip_grad_norm_`: no gradients → `torch.tensor(0.0)` (host memory). Otherwise one
//!   0-dim norm per gradient (`_foreach_norm`, or `vector_norm` each: the same tensors), their
//!   `stack` (`[n]`), and `vector_norm` of it: the 0-dim total norm it returns. The norms and
//!   the stack die when `_get_total_norm` returns. With `error_if_nonfinite`, `isnan`, `isinf`
//!   and `logical_or` of the total (0-dim bools, a host read). Then `_clip_grads_with_norm_`:
//!   `total + 1e-6`, `max_norm / that` (`__rtruediv__`: `reciprocal()` then `* max_norm`),
//!   `clamp(max=1.0)`, and the gradients multiplied in place (`_foreach_mul_` or `mul_` each:
//!   no bytes, each gradient's version bumped); those 0-dim temporaries die at its return.
//! - `clip_grad_value_`: `clamp_min_`/`clamp_max_` in place on each gradient: no bytes.
//!
//! The returned total norm has no graph (the gradients do not require grad): kept across
//! steps, it holds one 0-dim block each.

use super::interp::{Interpreter, R};
use super::natives::{Args, Native};
use crate::heap::Value;
use crate::torch::{Category, DeviceKind, Dtype};

impl Interpreter<'_> {
    /// `torch.nn.utils.clip_grad_norm_(parameters, max_norm, norm_type=2.0,
    /// error_if_nonfinite=False, foreach=None)` and `clip_grad_value_(parameters,
    /// clip_value, foreach=None)`.
    pub(super) fn clip_grad(&mut self, n: Native, a: &Args) -> R<Value> {
        let Some(params) = a.kw(self, "parameters").or(a.pos.first().copied()) else {
            return self.error("TypeError: missing required argument 'parameters' (pos 1)");
        };
        // A single tensor stands for a one-item list.
        let items = if self.is_tensor(params) {
            self.heap.incref(params);
            vec![params]
        } else {
            self.collect_items(params)?
        };
        let r = self.clip_grads_of(n, a, &items);
        self.heap.decref_all(items);
        r
    }

    fn clip_grads_of(&mut self, n: Native, a: &Args, items: &[Value]) -> R<Value> {
        let (bound, name) = if n == Native::ClipGradValue {
            ("clip_value", "clip_grad_value_")
        } else {
            ("max_norm", "clip_grad_norm_")
        };
        if a.kw(self, bound).or(a.pos.get(1).copied()).is_none() {
            return self.error(format!(
                "TypeError: {name}() missing 1 required positional argument: '{bound}'"
            ));
        }
        let grads: Vec<_> = items
            .iter()
            .filter_map(|&p| self.tensor_data(p))
            .filter_map(|t| t.grad)
            .filter_map(|g| self.tensor_data(Value::Obj(g)))
            .collect();
        if n == Native::ClipGradValue {
            for g in &grads {
                // `clamp_min_` then `clamp_max_`, in place.
                self.storages.bump_version(g.storage);
                self.storages.bump_version(g.storage);
            }
            return Ok(Value::None);
        }
        let error_if_nonfinite = match a.kw(self, "error_if_nonfinite").or(a.pos.get(3).copied()) {
            Some(v) => self.truth(v)?,
            None => false,
        };
        let Some(first) = grads.first() else {
            return self.new_tensor_as(
                vec![],
                Dtype::Float32,
                DeviceKind::Cpu,
                None,
                Category::Temporary,
            );
        };
        let (dtype, device) = (first.dtype, first.device);
        let scalar = |it: &mut Self, dtype: Dtype| {
            it.new_tensor_as(vec![], dtype, device, None, Category::Temporary)
        };
        let mut norms = Vec::with_capacity(grads.len());
        for g in &grads {
            norms.push(self.new_tensor_as(vec![], g.dtype, g.device, None, Category::Temporary)?);
        }
        let stacked = self.new_tensor_as(
            vec![norms.len() as i64],
            dtype,
            device,
            None,
            Category::Temporary,
        )?;
        let total = scalar(self, dtype)?;
        self.heap.decref(stacked);
        self.heap.decref_all(norms);
        if error_if_nonfinite {
            let isnan = scalar(self, Dtype::Bool)?;
            let isinf = scalar(self, Dtype::Bool)?;
            let either = scalar(self, Dtype::Bool)?;
            self.heap.decref_all(vec![isnan, isinf, either]);
        }
        let shifted = scalar(self, dtype)?;
        let reciprocal = scalar(self, dtype)?;
        let coef = scalar(self, dtype)?;
        self.heap.decref(reciprocal);
        self.heap.decref(shifted);
        let clamped = scalar(self, dtype)?;
        for g in &grads {
            self.storages.bump_version(g.storage);
        }
        self.heap.decref(clamped);
        self.heap.decref(coef);
        Ok(total)
    }
}
