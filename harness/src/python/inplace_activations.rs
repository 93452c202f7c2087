//! In-place activations and dropout: `F.relu(x, inplace=True)`, `torch.relu_`,
//! `nn.ReLU(inplace=True)`, `F.leaky_relu(..., inplace=True)`, `F.silu(..., inplace=True)`,
//! `F.dropout(..., inplace=True)` and `nn.Dropout(inplace=True)`.
//!
//! They write into their input, so they follow the in-place rules of `inplace.rs` (version
//! counter, leaf error, history rebased onto the op's node) and allocate no result. What the
//! node keeps differs by op, from `derivatives.yaml`:
//!
//! - `relu_` and `leaky_relu_` (`ReluBackward0`, `LeakyReluBackward1`) read the result: the
//!   node saves the written tensor's data itself, no new bytes;
//! - `silu_` has no entry of its own and takes `silu`'s formula, which reads `self`: the
//!   generated code saves a clone of `self` taken before the write (the same bytes as the
//!   out-of-place op's result);
//! - `dropout_` is ATen's `_dropout_impl<inplace=true>` (`Dropout.cpp`), never the fused
//!   kernel: a noise tensor like the input (`empty_like`, `bernoulli_`, `div_`), or a 0-dim
//!   zero when `p == 1`, then `input.mul_(noise)`; `MulBackward0` saves the noise while the
//!   graph lives, and the noise is freed at once when no graph is recorded.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

impl Interpreter<'_> {
    /// A module's boolean attribute read at forward time (`self.inplace`), false when unset.
    pub(super) fn module_flag(&mut self, module: crate::heap::ObjId, name: &str) -> R<bool> {
        let key = self.sym(name);
        match self
            .attr_values(module)
            .into_iter()
            .find(|(k, _)| *k == key)
        {
            Some((_, v)) => self.truth(v),
            None => Ok(false),
        }
    }

    /// `input.<method>()` for an in-place activation (`relu_`, `leaky_relu_`, `silu_`).
    pub(super) fn activation_in_place(&mut self, input: Value, method: &str) -> R<Value> {
        match input {
            Value::Obj(id) if self.is_tensor(input) => super::inplace::apply(self, id, method, &[]),
            _ => self.error(format!(
                "TypeError: {method}(): argument 'input' must be Tensor, not {}",
                self.type_name_of(input)
            )),
        }
    }

    /// `dropout_(input, p, train)` as ATen runs it.
    pub(super) fn dropout_in_place(&mut self, input: Value, p: f64, training: bool) -> R<Value> {
        super::dropout::check_probability(self, p)?;
        let t = match input {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => Some((id, t.clone())),
                _ => None,
            },
            _ => None,
        };
        let Some((id, t)) = t else {
            return self.error(format!(
                "TypeError: dropout_(): argument 'input' must be Tensor, not {}",
                self.type_name_of(input)
            ));
        };
        if !training || p == 0.0 || t.numel() == 0 {
            self.heap.incref(input);
            return Ok(input);
        }
        let shape = if p == 1.0 {
            Vec::new()
        } else {
            t.shape.clone()
        };
        let noise = super::natives::op_output(self, shape, t.dtype, t.device, &[input])?;
        let result = super::inplace::apply(self, id, "mul_", &[noise]);
        self.heap.decref(noise);
        result
    }
}
