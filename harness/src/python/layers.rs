//! Layers whose C++ forward builds several graph nodes at once: `nn.Embedding` and
//! `cross_entropy` (the recurrent layers are in `recurrent.rs`). Their intermediates never
//! get Python objects (they are [`Internal`] tensors): only storages, saved by the nodes
//! that need them.
//!
//! # What they save (PyTorch's `derivatives.yaml`)
//!
//! | op                     | nodes                                | saves                                          |
//! |------------------------|--------------------------------------|------------------------------------------------|
//! | `embedding`            | `EmbeddingBackward0`                 | the indices (backward allocates a weight-sized gradient) |
//! | `cross_entropy`        | `LogSoftmaxBackward0`                | the log-softmax output `[N, C]`                |
//! |                        | `NllLossBackward0`                   | that same output, the target, the class weights, `total_weight` (a scalar output) |

use super::autograd::{self, Internal, Save};
use super::interp::{Interpreter, R};
use crate::heap::Value;
use crate::torch::{Category, GradFlow, Saved};

/// `reduction=` of a loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reduction {
    Mean,
    Sum,
    None,
}

impl Reduction {
    pub(super) fn parse(text: &str) -> Option<Reduction> {
        match text {
            "mean" => Some(Reduction::Mean),
            "sum" => Some(Reduction::Sum),
            "none" => Some(Reduction::None),
            _ => None,
        }
    }
}

impl Interpreter<'_> {
    /// `F.embedding(indices, weight)`: an output row per index; `EmbeddingBackward0`
    /// saves the indices.
    pub(super) fn embedding(&mut self, indices: Value, weight: Value) -> R<Value> {
        let (Some(idx), Some(w)) = (self.tensor_data(indices), self.tensor_data(weight)) else {
            return self.error("TypeError: embedding expects tensors");
        };
        if idx.dtype.is_floating() {
            return self.error(format!(
                "RuntimeError: Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got {} instead (while checking arguments for embedding)",
                idx.dtype.name()
            ));
        }
        if w.shape.len() != 2 {
            return self.error("RuntimeError: 'weight' must be 2-D");
        }
        if idx.device != w.device {
            return self.error(format!(
                "RuntimeError: Expected all tensors to be on the same device, but found at least two devices, {} and {}!",
                w.device.name(),
                idx.device.name()
            ));
        }
        let mut shape = idx.shape.clone();
        shape.push(w.shape[1]);
        let category = self.output_category(&[weight]);
        let out = self.new_tensor_as(shape, w.dtype, w.device, None, category)?;
        autograd::record(
            self,
            out,
            "EmbeddingBackward0",
            GradFlow::Compute,
            &[weight, indices],
            &[Save::Input(1)],
        );
        Ok(out)
    }

    /// An op result's category: an activation when autograd records the op.
    pub(super) fn output_category(&self, inputs: &[Value]) -> Category {
        if self.grad_enabled && inputs.iter().any(|&v| autograd::requires_grad(self, v)) {
            Category::Activation
        } else {
            Category::Temporary
        }
    }

    /// `F.cross_entropy(input, target)` with class-index targets: `log_softmax` over the
    /// class dimension, then `nll_loss`, both in C++.
    /// On autocast's float32 list: a half-precision input is cast up first.
    pub(super) fn cross_entropy(
        &mut self,
        input: Value,
        target: Value,
        weight: Value,
        reduction: Reduction,
    ) -> R<Value> {
        let cast = self.autocast_inputs(&[input, weight], super::amp::CastPolicy::Float32)?;
        let r = self.cross_entropy_as_given(cast[0], target, cast[1], reduction);
        self.heap.decref_all(cast);
        r
    }

    fn cross_entropy_as_given(
        &mut self,
        input: Value,
        target: Value,
        weight: Value,
        reduction: Reduction,
    ) -> R<Value> {
        let (Some(x), Some(t)) = (self.tensor_data(input), self.tensor_data(target)) else {
            return self.error("TypeError: cross_entropy expects input and target tensors");
        };
        let class_dim = usize::from(x.shape.len() > 1);
        let mut expected = x.shape.clone();
        if !expected.is_empty() {
            expected.remove(class_dim);
        }
        let probabilities = t.shape == x.shape && t.dtype.is_floating();
        if !probabilities && t.shape != expected {
            return self.error(format!(
                "ValueError: Expected input batch_size ({}) to match target batch_size ({}).",
                x.shape.first().copied().unwrap_or(1),
                t.shape.first().copied().unwrap_or(1)
            ));
        }
        let recording = self.grad_enabled && autograd::requires_grad(self, input);
        let category = if recording {
            Category::Activation
        } else {
            Category::Temporary
        };
        let x_in = Internal::of(self, input);
        let mut log_probs = Internal::new(self, x.shape.clone(), x.dtype, x.device, category)?;
        if recording && let Some(x_in) = &x_in {
            let edge = x_in.edge(self);
            let saved = log_probs.saved(self);
            log_probs.node = Some(autograd::new_node(
                self,
                "LogSoftmaxBackward0",
                GradFlow::Compute,
                vec![edge],
                vec![saved],
            ));
        }
        if let Some(x_in) = x_in {
            x_in.release(self);
        }
        let out_shape = match reduction {
            Reduction::None => expected,
            Reduction::Mean | Reduction::Sum => Vec::new(),
        };
        let mut loss = Internal::new(self, out_shape.clone(), x.dtype, x.device, category)?;
        let total_weight = Internal::new(self, Vec::new(), x.dtype, x.device, category)?;
        if recording {
            let edge = log_probs.edge(self);
            let mut saved = vec![log_probs.saved(self)];
            for v in [target, weight] {
                if let Value::Obj(id) = v
                    && self.tensor_data(v).is_some()
                {
                    self.heap.incref(v);
                    saved.push(Saved::Tensor(id));
                }
            }
            saved.push(total_weight.saved(self));
            let name = if probabilities {
                "SumBackward1"
            } else {
                "NllLossBackward0"
            };
            loss.node = Some(autograd::new_node(
                self,
                name,
                GradFlow::Compute,
                vec![edge],
                saved,
            ));
        }
        total_weight.release(self);
        log_probs.release(self);
        loss.expose(self, out_shape)
    }
}
