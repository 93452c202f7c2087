//! `F.kl_div(input, target, reduction=..., log_target=...)` and `nn.KLDivLoss`.
//!
//! In current PyTorch `kl_div` is a composite (`aten/src/ATen/native/Loss.cpp`): each op it
//! runs records its own node, so the graph holds what those nodes save:
//!
//! | `log_target` | ops (in order)                                       | nodes and what they save |
//! |--------------|------------------------------------------------------|--------------------------|
//! | `False`      | `xlogy(target, target)`, `target * input`, `-`       | `XlogyBackward0` (only when the target requires grad: the target), `MulBackward0` (the target, for the input's gradient), `SubBackward0` (nothing) |
//! | `True`       | `exp(target)`, `target - input`, `*`                 | `ExpBackward0` (only when the target requires grad), `SubBackward0`, `MulBackward0` (`exp(target)`, for the difference's gradient) |
//!
//! then `apply_loss_reduction` (`mean()`/`sum()`, nothing for `'none'`). The two operand
//! results and the unreduced loss are temporaries of the broadcast shape. `F.kl_div` itself
//! (`torch/nn/functional.py`) maps `'batchmean'` to `'sum'` and divides the sum by
//! `input.size(0)` (a `DivBackward0` of a Python number), and warns once that `'mean'`
//! divides by every element. The function is on autocast's float32 list.

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::layers::Reduction;
use super::natives::{call_method, op_output, tensor_binary, tensor_unary};
use crate::heap::Value;
use crate::torch::{Dtype, broadcast};
use ruff_python_ast::Operator;

/// `F.kl_div`'s reductions: the loss reductions and `'batchmean'`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum KlReduction {
    Plain(Reduction),
    BatchMean,
}

/// `F.kl_div`'s warning for `reduction='mean'` (the message in our words, its gist kept).
const MEAN_WARNING: &str = "PyTorch warns: UserWarning: reduction: 'mean' divides the total loss by both the batch size and the support size; 'batchmean' divides only by the batch size, as the KL divergence's definition does ('mean' will behave like 'batchmean' in a future release)";

impl Interpreter<'_> {
    /// Reads `reduction=` of `F.kl_div`/`nn.KLDivLoss` (default `'mean'`).
    pub(super) fn kl_reduction_of(&self, v: Value) -> R<KlReduction> {
        if let Value::Str(s) = v
            && self.names.name(s) == "batchmean"
        {
            return Ok(KlReduction::BatchMean);
        }
        self.reduction_of(v).map(KlReduction::Plain)
    }

    /// `F.kl_div(input, target, reduction, log_target)`: autocast's float32 list, then the
    /// composite.
    pub(super) fn kl_div(
        &mut self,
        input: Value,
        target: Value,
        reduction: KlReduction,
        log_target: bool,
    ) -> R<Value> {
        if reduction == KlReduction::Plain(Reduction::Mean) {
            self.recorder.approximation(MEAN_WARNING.to_string());
        }
        let cast = self.autocast_inputs(&[input, target], CastPolicy::Float32)?;
        let r = self.kl_div_as_given(cast[0], cast[1], reduction, log_target);
        self.heap.decref_all(cast);
        r
    }

    fn kl_div_as_given(
        &mut self,
        input: Value,
        target: Value,
        reduction: KlReduction,
        log_target: bool,
    ) -> R<Value> {
        let (Some(x), Some(t)) = (self.tensor_data(input), self.tensor_data(target)) else {
            return self.error("TypeError: kl_div(): input and target must be tensors");
        };
        if !x.dtype.is_floating() || !t.dtype.is_floating() {
            return self.error("RuntimeError: kl_div: Integral inputs not supported.");
        }
        let batch = x.shape.first().copied();
        let (first, second, combine) = if log_target {
            let Value::Obj(tid) = target else {
                unreachable!()
            };
            let e = tensor_unary(self, tid, "exp")?;
            let d = match tensor_binary(self, Operator::Sub, target, input, false) {
                Ok(d) => d,
                Err(err) => {
                    self.heap.decref(e);
                    return Err(err);
                }
            };
            (e, d, Operator::Mult)
        } else {
            let xl = self.xlogy(target, target)?;
            let m = match tensor_binary(self, Operator::Mult, target, input, false) {
                Ok(m) => m,
                Err(err) => {
                    self.heap.decref(xl);
                    return Err(err);
                }
            };
            (xl, m, Operator::Sub)
        };
        let out = tensor_binary(self, combine, first, second, false);
        self.heap.decref(first);
        self.heap.decref(second);
        let out = out?;
        let method = match reduction {
            KlReduction::Plain(Reduction::None) => return Ok(out),
            KlReduction::Plain(Reduction::Mean) => "mean",
            KlReduction::Plain(Reduction::Sum) | KlReduction::BatchMean => "sum",
        };
        let name = self.sym(method);
        let reduced = call_method(self, out, name, Vec::new(), Vec::new());
        self.heap.decref(out);
        let reduced = reduced?;
        match (reduction, batch) {
            // `reduced / input.size()[0]` unless the input is 0-dim.
            (KlReduction::BatchMean, Some(n)) => {
                let r = tensor_binary(self, Operator::Div, reduced, Value::Int(n), false);
                self.heap.decref(reduced);
                r
            }
            _ => Ok(reduced),
        }
    }

    /// `torch.xlogy(self, other)`: a new tensor of the broadcast shape and promoted dtype;
    /// `XlogyBackward0` reads both operands.
    pub(super) fn xlogy(&mut self, a: Value, b: Value) -> R<Value> {
        let (Some(x), Some(y)) = (self.tensor_data(a), self.tensor_data(b)) else {
            return self.error("TypeError: xlogy(): arguments must be tensors");
        };
        let shape = match broadcast(&x.shape, &y.shape) {
            Ok(shape) => shape,
            Err(message) => return self.error(format!("RuntimeError: {message}")),
        };
        let mut dtype = Dtype::promote(x.dtype, y.dtype);
        if !dtype.is_floating() {
            // `xlogy` is a float op: integral operands give the default float type.
            dtype = Dtype::Float32;
        }
        let out = op_output(self, shape, dtype, x.device, &[a, b])?;
        let rule = crate::torch::op_rule("xlogy").expect("xlogy is in the autograd table");
        autograd::record(self, out, rule.node, rule.flow, &[a, b], rule.saves);
        Ok(out)
    }
}
