//! Dropout (`F.dropout`, `torch.dropout`, `nn.Dropout`) and `nn.Identity`, for memory.
//!
//! ATen's `dropout` (`aten/src/ATen/native/Dropout.cpp`) returns its input itself when not
//! training or when `p == 0`: no bytes, the same tensor object. Training on a GPU with
//! `0 < p < 1` it takes the fused kernel, `native_dropout`, which returns the output (the
//! input's size and dtype) and a mask (`bool`, one byte per element). The node,
//! `NativeDropoutBackward0`, reads only the mask (`result1` in `derivatives.yaml`, the
//! ROCm/pytorch copy at 10b22ea5), so the mask lives while the graph does, and is freed at
//! once when no graph is recorded (`no_grad`, or an input that needs no gradient).

use super::autograd::{Outputs, build_node_with_results, requires_grad, row};
use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use crate::torch::{Category, Dtype};

impl Interpreter<'_> {
    /// `dropout(input, p, training)` as ATen runs it.
    pub(super) fn dropout(&mut self, input: Value, p: f64, training: bool) -> R<Value> {
        check_probability(self, p)?;
        let Some(t) = (match input {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        }) else {
            return self.error(format!(
                "TypeError: dropout(): argument 'input' must be Tensor, not {}",
                self.type_name_of(input)
            ));
        };
        if !training || p == 0.0 || t.numel() == 0 {
            self.heap.incref(input);
            return Ok(input);
        }
        let output = self.new_tensor_as(
            t.shape.clone(),
            t.dtype,
            t.device,
            None,
            Category::Activation,
        )?;
        let mask = self.new_storage(&t.shape, Dtype::Bool, t.device, Category::Activation)?;
        if self.grad_enabled
            && requires_grad(self, input)
            && let Value::Obj(out) = output
        {
            // result1 (the mask), as the table's row says.
            let rule = row("dropout");
            let outputs = Outputs {
                first: Some(out),
                rest: &[mask],
            };
            let node = build_node_with_results(
                self,
                rule.node,
                rule.flow,
                (&[input], 1),
                rule.saves,
                outputs,
            );
            super::autograd::set_history(self, out, node);
        }
        // The node took a reference of its own to the mask it saves.
        self.heap.dropped_storage_refs.push(mask);
        Ok(output)
    }
}

/// PyTorch's check, in `F.dropout` and `nn.Dropout.__init__`.
pub(super) fn check_probability(it: &Interpreter<'_>, p: f64) -> R<()> {
    if !(0.0..=1.0).contains(&p) {
        return it.error(format!(
            "ValueError: dropout probability has to be between 0 and 1, but got {p}"
        ));
    }
    Ok(())
}
