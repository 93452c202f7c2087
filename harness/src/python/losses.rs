//! Losses beyond `mse_loss`/`cross_entropy`, in module and function form: `nll_loss`,
//! `l1_loss`, `smooth_l1_loss`, `binary_cross_entropy(_with_logits)`.
//!
//! # What they save (PyTorch's `derivatives.yaml` and `aten/src/ATen/native/Loss.cpp`)
//!
//! | op                                  | node(s)                                     | saves |
//! |-------------------------------------|---------------------------------------------|-------|
//! | `nll_loss_forward`                  | `NllLossBackward0`                          | `self`, `target`, `weight` and `total_weight` (its second result, a scalar) |
//! | `l1_loss` (composite)               | `SubBackward0`, `AbsBackward0`, `MeanBackward0`/`SumBackward0` | the difference `input - target` (by `AbsBackward0`) |
//! | `smooth_l1_loss`                    | `SmoothL1LossBackward0`                     | `self`, `target` |
//! | `binary_cross_entropy`              | `BinaryCrossEntropyBackward0`               | `self`, `target`, `weight` |
//! | `binary_cross_entropy_with_logits`  | `BinaryCrossEntropyWithLogitsBackward0`     | `self`, `target`, `weight`, `pos_weight` |
//!
//! The single-node rows are in [`crate::torch::OP_RULES`]. With a `mean`/`sum` reduction,
//! the fused kernels write the unreduced loss into a temporary of the input's shape and
//! reduce it; the model allocates and frees that temporary (the `with_logits` composite
//! makes a few such temporaries in PyTorch; one is modelled).

use super::autograd;
use super::interp::{Interpreter, R};
use super::layers::Reduction;
use crate::heap::Value;
use crate::torch::Category;

impl Interpreter<'_> {
    /// A fused loss kernel over `operands` (input, target, then optional weights): the
    /// autograd-table row `op` says what its node saves.
    pub(super) fn fused_loss(
        &mut self,
        op: &'static str,
        operands: &[Value],
        reduction: Reduction,
    ) -> R<Value> {
        // `smooth_l1_loss`, `binary_cross_entropy_with_logits`: autocast's float32 list;
        // `binary_cross_entropy` is banned there.
        let policy = super::amp::policy_of(op).unwrap_or(super::amp::CastPolicy::Float32);
        let cast = self.autocast_inputs(operands, policy)?;
        let r = self.fused_loss_as_given(op, &cast, reduction);
        self.heap.decref_all(cast);
        r
    }

    fn fused_loss_as_given(
        &mut self,
        op: &'static str,
        operands: &[Value],
        reduction: Reduction,
    ) -> R<Value> {
        let (Some(x), Some(t)) = (self.tensor_data(operands[0]), self.tensor_data(operands[1]))
        else {
            return self.error(format!(
                "TypeError: {op}(): input and target must be tensors"
            ));
        };
        if op.starts_with("binary_cross_entropy") && t.shape != x.shape {
            let size = |s: &[i64]| {
                let items: Vec<String> = s.iter().map(i64::to_string).collect();
                if items.len() == 1 {
                    format!("torch.Size([{}])", items[0])
                } else {
                    format!("torch.Size([{}])", items.join(", "))
                }
            };
            return self.error(format!(
                "ValueError: Target size ({}) must be the same as input size ({})",
                size(&t.shape),
                size(&x.shape)
            ));
        }
        let Some(rule) = crate::torch::op_rule(op) else {
            return self.error(format!("internal: no autograd row for {op}"));
        };
        let category = self.output_category(operands);
        let out_shape = match reduction {
            Reduction::None => x.shape.clone(),
            Reduction::Mean | Reduction::Sum => {
                // The unreduced loss, reduced into the result and freed.
                let tmp = self.new_storage(&x.shape, x.dtype, x.device, Category::Temporary)?;
                self.heap.dropped_storage_refs.push(tmp);
                Vec::new()
            }
        };
        let out = self.new_tensor_as(out_shape, x.dtype, x.device, None, category)?;
        autograd::record(self, out, rule.node, rule.flow, operands, rule.saves);
        Ok(out)
    }

    /// `F.l1_loss`: `(input - target).abs()`, then the reduction, as ATen composes it
    /// (on autocast's float32 list: the composite runs on float32 casts).
    pub(super) fn l1_loss(
        &mut self,
        input: Value,
        target: Value,
        reduction: Reduction,
    ) -> R<Value> {
        let cast = self.autocast_inputs(&[input, target], super::amp::CastPolicy::Float32)?;
        let r = self.l1_loss_as_given(cast[0], cast[1], reduction);
        self.heap.decref_all(cast);
        r
    }

    fn l1_loss_as_given(&mut self, input: Value, target: Value, reduction: Reduction) -> R<Value> {
        if self.tensor_data(input).is_none() || self.tensor_data(target).is_none() {
            return self.error("TypeError: l1_loss(): input and target must be tensors");
        }
        let diff = super::natives::tensor_binary(
            self,
            ruff_python_ast::Operator::Sub,
            input,
            target,
            false,
        )?;
        let Value::Obj(diff_id) = diff else {
            return Ok(diff);
        };
        let abs = super::natives::tensor_unary(self, diff_id, "abs");
        self.heap.decref(diff);
        let abs = abs?;
        let method = match reduction {
            Reduction::None => return Ok(abs),
            Reduction::Mean => self.sym("mean"),
            Reduction::Sum => self.sym("sum"),
        };
        let r = super::natives::call_method(self, abs, method, Vec::new(), Vec::new());
        self.heap.decref(abs);
        r
    }

    /// `F.nll_loss(input, target, weight)`: `nll_loss_forward`, whose second result
    /// (`total_weight`, a scalar) the node keeps.
    pub(super) fn nll_loss(
        &mut self,
        input: Value,
        target: Value,
        weight: Value,
        reduction: Reduction,
    ) -> R<Value> {
        // Autocast's float32 list (the integer target is never cast).
        let cast =
            self.autocast_inputs(&[input, target, weight], super::amp::CastPolicy::Float32)?;
        let r = self.nll_loss_as_given(cast[0], cast[1], cast[2], reduction);
        self.heap.decref_all(cast);
        r
    }

    fn nll_loss_as_given(
        &mut self,
        input: Value,
        target: Value,
        weight: Value,
        reduction: Reduction,
    ) -> R<Value> {
        let (Some(x), Some(t)) = (self.tensor_data(input), self.tensor_data(target)) else {
            return self.error("TypeError: nll_loss(): input and target must be tensors");
        };
        if t.dtype.is_floating() {
            // ATen's scalar-type names.
            let found = match t.dtype {
                crate::torch::Dtype::Float16 => "Half",
                crate::torch::Dtype::Float64 => "Double",
                crate::torch::Dtype::BFloat16 => "BFloat16",
                _ => "Float",
            };
            return self.error(format!(
                "RuntimeError: expected scalar type Long but found {found}"
            ));
        }
        let batch = if x.shape.len() > 1 { x.shape[0] } else { 1 };
        let target_batch = t.shape.first().copied().unwrap_or(1);
        if x.shape.len() > 1 && batch != target_batch {
            return self.error(format!(
                "ValueError: Expected input batch_size ({batch}) to match target batch_size ({target_batch})."
            ));
        }
        let category = self.output_category(&[input, weight]);
        let out_shape = match reduction {
            Reduction::None => t.shape.clone(),
            Reduction::Mean | Reduction::Sum => Vec::new(),
        };
        let out = self.new_tensor_as(out_shape, x.dtype, x.device, None, category)?;
        let total_weight = self.new_storage(&[], x.dtype, x.device, category)?;
        let recorded = self.grad_enabled
            && [input, weight]
                .iter()
                .any(|&v| autograd::requires_grad(self, v));
        if let (true, Value::Obj(out_id)) = (recorded, out) {
            // self, target, weight and result1 (total_weight): the table's row.
            let rule = autograd::row("nll_loss");
            let outputs = autograd::Outputs {
                first: Some(out_id),
                rest: &[total_weight],
            };
            let node = autograd::build_node_with_results(
                self,
                rule.node,
                rule.flow,
                (&[input, target, weight], 3),
                rule.saves,
                outputs,
            );
            autograd::set_history(self, out_id, node);
        }
        // A recorded node took a reference of its own to total_weight.
        self.heap.dropped_storage_refs.push(total_weight);
        Ok(out)
    }

    /// `nn.L1Loss(reduction=...)`, `nn.NLLLoss(weight, ...)`, `nn.BCELoss(weight, ...)`,
    /// `nn.BCEWithLogitsLoss(weight, ..., pos_weight=...)`, `nn.SmoothL1Loss(...)`: the
    /// module holds its `reduction` and weight tensors (they stay alive with it).
    pub(super) fn new_loss_module(
        &mut self,
        kind: super::torchlib::TorchClass,
        kwargs: &[(crate::heap::Sym, Value)],
    ) -> R<crate::heap::ObjId> {
        if kwargs
            .iter()
            .any(|(k, _)| matches!(self.names.name(*k), "size_average" | "reduce"))
        {
            return self
                .unsupported("the deprecated size_average=/reduce= arguments; use reduction=");
        }
        let mut attrs: Vec<(&str, Value)> = Vec::new();
        for name in ["reduction", "weight", "pos_weight", "beta", "ignore_index"] {
            let v = kwargs
                .iter()
                .find(|(k, _)| self.names.name(*k) == name)
                .map_or(Value::None, |(_, v)| *v);
            self.heap.incref(v);
            attrs.push((name, v));
        }
        self.reduction_of(attrs[0].1)?;
        self.new_torch_instance(kind, attrs)
    }

    /// A loss module's forward: its function with the module's arguments.
    pub(super) fn loss_module_forward(
        &mut self,
        module: crate::heap::ObjId,
        kind: super::torchlib::TorchClass,
        args: &[Value],
    ) -> R<Value> {
        use super::torchlib::TorchClass as C;
        let [x, y] = args else {
            return self.error("TypeError: a loss expects input and target");
        };
        let mut held = Vec::new();
        for name in ["reduction", "weight", "pos_weight"] {
            let s = self.sym(name);
            held.push(self.get_attr(Value::Obj(module), s)?);
        }
        let r = match self.reduction_of(held[0]) {
            Err(e) => Err(e),
            Ok(red) => match kind {
                C::L1Loss => self.l1_loss(*x, *y, red),
                C::NllLoss => self.nll_loss(*x, *y, held[1], red),
                C::BceLoss => self.fused_loss("binary_cross_entropy", &[*x, *y, held[1]], red),
                C::BceWithLogitsLoss => self.fused_loss(
                    "binary_cross_entropy_with_logits",
                    &[*x, *y, held[1], held[2]],
                    red,
                ),
                _ => self.fused_loss("smooth_l1_loss", &[*x, *y], red),
            },
        };
        self.heap.decref_all(held);
        r
    }
}
