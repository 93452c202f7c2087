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
//! | `linear` without bias  | `TBackward0` (`weight.t()`), `MmBackward0`; 3-d input: `ViewBackward0` before, `UnsafeViewBackward0` after | `mm`'s `self` (the 2-d input) if the weight needs a gradient, `mat2` (the transposed weight, no bytes) if the input does |

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
            super::autograd::row("embedding").node,
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
                super::autograd::row("log_softmax").node,
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
                super::autograd::row("sum_dim").node
            } else {
                super::autograd::row("nll_loss").node
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

    /// `F.linear` without a bias: `at::linear` runs `matmul(input, weight.t())` (the fused
    /// `addmm` needs a bias). `weight.t()` is a view (`TBackward0`); a 1-d or 2-d input goes to
    /// `mm` (`MmBackward0`); a 3-d or deeper input is folded as `matmul` folds it: reshaped to
    /// 2-d (a view, `ViewBackward0`, or a contiguous copy when it is not contiguous), `mm`,
    /// then `_unsafe_view` back (`UnsafeViewBackward0`, an alias without a base).
    pub(super) fn linear_without_bias(&mut self, x: Value, weight: Value) -> R<Value> {
        let (Some(xt), Some(wt)) = (self.tensor_data(x), self.tensor_data(weight)) else {
            return self.error("TypeError: linear expects tensors");
        };
        let (out_features, k) = (wt.shape[0], wt.shape[1]);
        let category = self.output_category(&[x, weight]);
        let weight_t = self.alias(
            weight,
            vec![k, out_features],
            true,
            super::autograd::row("t").node,
        )?;
        let rows: i64 = xt.shape[..xt.shape.len().saturating_sub(1)]
            .iter()
            .product();
        let folded = if xt.shape.len() <= 2 {
            self.heap.incref(x);
            x
        } else if xt.contiguous {
            self.alias(x, vec![rows, k], true, super::autograd::row("view").node)?
        } else {
            // `reshape` of a non-viewable tensor: `_unsafe_view(clone())`.
            let copy = self.new_tensor_as(xt.shape.clone(), xt.dtype, xt.device, None, category)?;
            autograd::record(
                self,
                copy,
                super::autograd::row("clone").node,
                GradFlow::PassThrough,
                &[x],
                &[],
            );
            let flat = self.alias(
                copy,
                vec![rows, k],
                false,
                super::autograd::row("unsafe_view").node,
            );
            self.heap.decref(copy);
            flat?
        };
        let mut shape = xt.shape.clone();
        if let Some(last) = shape.last_mut() {
            *last = out_features;
        }
        let product_shape = if xt.shape.len() <= 2 {
            shape.clone()
        } else {
            vec![rows, out_features]
        };
        let product = self.new_tensor_as(product_shape, xt.dtype, xt.device, None, category);
        if let Ok(p) = product {
            autograd::record(
                self,
                p,
                super::autograd::row("matmul").node,
                GradFlow::Compute,
                &[folded, weight_t],
                &[Save::InputIf(0, 1), Save::InputIf(1, 0)],
            );
        }
        self.heap.decref(folded);
        self.heap.decref(weight_t);
        let product = product?;
        if xt.shape.len() <= 2 {
            return Ok(product);
        }
        let out = self.alias(
            product,
            shape,
            false,
            super::autograd::row("unsafe_view").node,
        );
        self.heap.decref(product);
        out
    }

    /// A tensor on `source`'s storage with `shape`, recorded as `node` over `source`: a view
    /// (its `_base` set) or, for `_unsafe_view`, an alias without a base.
    fn alias(
        &mut self,
        source: Value,
        shape: Vec<i64>,
        is_view: bool,
        node: &'static str,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(source) else {
            return self.error("TypeError: expected a tensor");
        };
        let base = match (is_view, source) {
            (true, Value::Obj(id)) => Some(t.base.unwrap_or(id)),
            _ => None,
        };
        let out = self.new_tensor(shape, t.dtype, t.device, Some((t.storage, base)))?;
        autograd::record(self, out, node, GradFlow::PassThrough, &[source], &[]);
        Ok(out)
    }
}
