//! `F.scaled_dot_product_attention` as ATen's math path runs it
//! (`aten/src/ATen/native/transformers/attention.cpp`, `_scaled_dot_product_attention_math`),
//! op by op, each op allocating its output and its node saving what `derivatives.yaml` says:
//!
//! | step                                   | allocates                       | saved for backward                  |
//! |----------------------------------------|---------------------------------|-------------------------------------|
//! | a boolean `attn_mask` is converted     | `zeros_like` float `[mask]` (and a `logical_not` bool temporary) | nothing (lives for the call) |
//! | `q * sqrt(scale)`                      | `[..., L, E]`                   | nothing (`MulBackward1`: a scalar)  |
//! | `is_causal`: `ones(L, S).tril()`, converted | bool `[L, S]` twice, float `[L, S]` | nothing (lives for the call) |
//! | `k.transpose(-2, -1) * sqrt(scale)`    | `[..., E, S]`                   | nothing                             |
//! | `matmul` (a `bmm`)                     | scores `[..., L, S]`            | both scaled operands (`BmmBackward0`) |
//! | `add_(mask)`                           | nothing (in place)              | nothing (`AddBackward0`)            |
//! | softmax over the last dim              | `[..., L, S]`; the scores are freed | its result                      |
//! | `dropout_p > 0` (always applied: SDPA has no training flag) | output `[..., L, S]`, bool mask | the mask (`NativeDropoutBackward0`) |
//! | `matmul(attn, v)`                      | `[..., L, Ev]`                  | `attn` and `v` (`BmmBackward0`)     |
//!
//! Without a recorded graph every intermediate is freed as soon as C++ drops it (the scaled
//! query lives until the call returns). On CUDA PyTorch picks the flash or memory-efficient
//! kernel when the inputs are eligible; those save only the output and a float32
//! `logsumexp` `[..., L]` (plus RNG state for dropout) instead of the `[L, S]` matrices.
//! They are not modelled: the run's notes say so.

use super::autograd::{self, Internal};
use super::interp::{Interpreter, R};
use crate::heap::Value;
use crate::torch::{Category, Dtype, GradFlow};

const MATH_PATH_NOTE: &str = "scaled_dot_product_attention runs PyTorch's math path (`_scaled_dot_product_attention_math`); on CUDA PyTorch picks the flash or memory-efficient kernel when the inputs are eligible, which save only the output and a float32 logsumexp `[..., L]` instead of the `[L, S]` attention matrices, so saved activations may be much smaller in PyTorch.";

/// The arguments of `scaled_dot_product_attention` (borrowed values).
pub(super) struct SdpaArgs {
    pub query: Value,
    pub key: Value,
    pub value: Value,
    pub attn_mask: Value,
    pub dropout_p: f64,
    pub is_causal: bool,
}

impl Interpreter<'_> {
    /// `F.scaled_dot_product_attention(...)`: the attention output.
    pub(super) fn scaled_dot_product_attention(&mut self, a: &SdpaArgs) -> R<Value> {
        let (out, attn) = self.sdpa_math(a)?;
        attn.release(self);
        let shape = out.shape.clone();
        let r = out.expose(self, shape);
        self.release_dropped_storages(None);
        r
    }

    /// The math path: the output and the attention weights (after dropout).
    pub(super) fn sdpa_math(&mut self, a: &SdpaArgs) -> R<(Internal, Internal)> {
        if !self.torch_classes.attention_noted {
            self.torch_classes.attention_noted = true;
            self.recorder.approximation(MATH_PATH_NOTE);
        }
        super::dropout::check_probability(self, a.dropout_p)?;
        let (Some(q), Some(k), Some(v)) = (
            self.tensor_data(a.query),
            self.tensor_data(a.key),
            self.tensor_data(a.value),
        ) else {
            return self.error(
                "TypeError: scaled_dot_product_attention(): query, key and value must be Tensors",
            );
        };
        let (qn, kn, vn) = (q.shape.len(), k.shape.len(), v.shape.len());
        if qn < 2 || kn < 2 || vn < 2 {
            return self.error("RuntimeError: scaled_dot_product_attention: query, key and value must be at least 2-D");
        }
        let (l, e) = (q.shape[qn - 2], q.shape[qn - 1]);
        let (s, ke) = (k.shape[kn - 2], k.shape[kn - 1]);
        let (vs, ev) = (v.shape[vn - 2], v.shape[vn - 1]);
        let batch = q.shape[..qn - 2].to_vec();
        if ke != e || vs != s || k.shape[..kn - 2] != batch[..] || v.shape[..vn - 2] != batch[..] {
            return self.error(format!(
                "RuntimeError: scaled_dot_product_attention: query {:?}, key {:?} and value {:?} do not match (key and value need query's batch dims, key query's last dim, value key's sequence length)",
                q.shape, k.shape, v.shape
            ));
        }
        if a.is_causal && a.attn_mask != Value::None {
            return self.error("RuntimeError: _scaled_dot_product_attention: Explicit attn_mask should not be set when is_causal=True");
        }
        if a.attn_mask != Value::None && !self.is_tensor(a.attn_mask) {
            return self.error("TypeError: attn_mask must be a Tensor or None");
        }
        let recording = self.grad_enabled
            && [a.query, a.key, a.value]
                .iter()
                .any(|&x| autograd::requires_grad(self, x));
        let category = if recording {
            Category::Activation
        } else {
            Category::Temporary
        };
        let (dtype, device) = (q.dtype, q.device);
        let with = |dims: &[i64]| -> Vec<i64> {
            let mut out = batch.clone();
            out.extend_from_slice(dims);
            out
        };
        let (Some(q_in), Some(k_in), Some(v_in)) = (
            Internal::of(self, a.query),
            Internal::of(self, a.key),
            Internal::of(self, a.value),
        ) else {
            return self.error("TypeError: scaled_dot_product_attention expects tensors");
        };
        let mask = Internal::of(self, a.attn_mask);
        self.sdpa_run(
            [q_in, k_in, v_in],
            a,
            SdpaShapes {
                query: with(&[l, e]),
                key_t: with(&[e, s]),
                scores: with(&[l, s]),
                output: with(&[l, ev]),
                causal: vec![l, s],
                mask,
                dtype,
                device,
                recording,
                category,
            },
        )
    }

    /// The math path on the C++ side of `q`, `k`, `v` (owned); `a`'s tensors are not read
    /// again, only its mask and settings.
    pub(super) fn sdpa_run(
        &mut self,
        qkv: [Internal; 3],
        a: &SdpaArgs,
        mut shapes: SdpaShapes,
    ) -> R<(Internal, Internal)> {
        let mut held: Vec<Internal> = shapes.mask.take().into_iter().collect();
        let r = self.sdpa_steps(a, &mut held, qkv, shapes);
        if r.is_err() {
            for t in held {
                t.release(self);
            }
            self.release_dropped_storages(None);
        }
        r
    }

    fn sdpa_steps(
        &mut self,
        a: &SdpaArgs,
        held: &mut Vec<Internal>,
        qkv: [Internal; 3],
        sh: SdpaShapes,
    ) -> R<(Internal, Internal)> {
        let (dtype, device, recording, category) = (sh.dtype, sh.device, sh.recording, sh.category);
        // `convert_boolean_attn_mask` (in the dispatcher, before the backend is chosen); the
        // caller's boolean mask is not referenced by C++ after it.
        if held.first().is_some_and(|m| m.dtype == Dtype::Bool) {
            let shape = held[0].shape.clone();
            let converted = self.float_mask_from_bool(shape, dtype, device)?;
            let given = std::mem::replace(&mut held[0], converted);
            given.release(self);
        }
        let has_mask = !held.is_empty();
        held.extend(qkv);
        let (q_i, k_i, v_i) = (held.len() - 3, held.len() - 2, held.len() - 1);
        // `query = query_ * sqrt(scale)`.
        let q_scaled = self.scalar_mul(&held[q_i], sh.query.clone(), recording, category)?;
        held.push(q_scaled);
        let qs_i = held.len() - 1;
        // `is_causal`: `ones(L, S, bool).tril()`, then converted to a float mask.
        if a.is_causal {
            let ones = Internal::new(
                self,
                sh.causal.clone(),
                Dtype::Bool,
                device,
                Category::Temporary,
            )?;
            let tril = Internal::new(
                self,
                sh.causal.clone(),
                Dtype::Bool,
                device,
                Category::Temporary,
            );
            ones.release(self);
            self.release_dropped_storages(None);
            let tril = tril?;
            held.push(tril);
            let converted = self.float_mask_from_bool(sh.causal.clone(), dtype, device)?;
            if let Some(t) = held.pop() {
                t.release(self);
            }
            self.release_dropped_storages(None);
            held.push(converted);
        }
        let mask_i =
            (has_mask || a.is_causal).then(|| if a.is_causal { held.len() - 1 } else { 0 });
        // `key.transpose(-2, -1) * sqrt(scale)`, a temporary of the full expression.
        let k_scaled = self.scalar_mul(&held[k_i], sh.key_t.clone(), recording, category)?;
        held.push(k_scaled);
        let ks_i = held.len() - 1;
        let mut scores = self.attention_bmm(
            &held[qs_i],
            &held[ks_i],
            sh.scores.clone(),
            recording,
            category,
        )?;
        if let Some(k_scaled) = held.pop() {
            k_scaled.release(self);
            self.release_dropped_storages(None);
        }
        // `attn.add_(mask)`: in place; `AddBackward0` saves nothing.
        if let Some(mi) = mask_i
            && recording
            && (scores.requires_grad() || held[mi].requires_grad())
        {
            let edges = vec![scores.edge(self), held[mi].edge(self)];
            let node = autograd::new_node(
                self,
                super::autograd::row("add").node,
                GradFlow::Split,
                edges,
                Vec::new(),
            );
            if let Some(old) = scores.node.replace(node) {
                self.heap.decref_id(old);
            }
        }
        // Softmax saves its result; the scores are freed when `attn` is reassigned.
        let probs = self.softmax_of_scores(scores, recording, category)?;
        let attn = if a.dropout_p > 0.0 {
            self.internal_dropout(probs, a.dropout_p, recording, category)?
        } else {
            probs
        };
        held.push(attn);
        let attn_i = held.len() - 1;
        let out = self.attention_bmm(&held[attn_i], &held[v_i], sh.output, recording, category)?;
        let attn = held.remove(attn_i);
        // The call's locals (scaled query, masks, the inputs' references) go at return.
        for t in held.drain(..) {
            t.release(self);
        }
        self.release_dropped_storages(None);
        Ok((out, attn))
    }

    /// ATen's `convert_boolean_attn_mask` of a boolean mask of `shape`: `zeros_like` in the
    /// attention's float `dtype` (returned), filled through a `logical_not` temporary that
    /// is freed at once.
    pub(super) fn float_mask_from_bool(
        &mut self,
        shape: Vec<i64>,
        dtype: Dtype,
        device: crate::torch::DeviceKind,
    ) -> R<Internal> {
        let converted = Internal::new(self, shape.clone(), dtype, device, Category::Temporary)?;
        match Internal::new(self, shape, Dtype::Bool, device, Category::Temporary) {
            Ok(not) => not.release(self),
            Err(e) => {
                converted.release(self);
                return Err(e);
            }
        }
        self.release_dropped_storages(None);
        Ok(converted)
    }

    /// Softmax over the last dim of `scores`, which it consumes: the result is a new tensor
    /// that `SoftmaxBackward0` saves; the scores are freed once the result exists.
    pub(super) fn softmax_of_scores(
        &mut self,
        scores: Internal,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let shape = scores.shape.clone();
        let mut probs = match Internal::new(self, shape, scores.dtype, scores.device, category) {
            Ok(p) => p,
            Err(e) => {
                scores.release(self);
                return Err(e);
            }
        };
        if recording && scores.requires_grad() {
            let edges = vec![scores.edge(self)];
            let saved = vec![probs.saved(self)];
            probs.node = Some(autograd::new_node(
                self,
                super::autograd::row("softmax").node,
                GradFlow::Compute,
                edges,
                saved,
            ));
        }
        scores.release(self);
        self.release_dropped_storages(None);
        Ok(probs)
    }

    /// `x * scalar` (or a transposed view of `x` times one): a new tensor of `shape`;
    /// `MulBackward1` keeps the scalar only.
    pub(super) fn scalar_mul(
        &mut self,
        x: &Internal,
        shape: Vec<i64>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let mut out = Internal::new(self, shape, x.dtype, x.device, category)?;
        if recording && x.requires_grad() {
            let edges = vec![x.edge(self)];
            out.node = Some(autograd::new_node(
                self,
                super::autograd::row("mul.Scalar").node,
                GradFlow::Compute,
                edges,
                Vec::new(),
            ));
        }
        Ok(out)
    }

    /// `matmul` of two batched operands (`bmm` on their flattened batch): `BmmBackward0`
    /// saves each operand when the other needs a gradient.
    pub(super) fn attention_bmm(
        &mut self,
        a: &Internal,
        b: &Internal,
        shape: Vec<i64>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let mut out = Internal::new(self, shape, a.dtype, a.device, category)?;
        if recording && (a.requires_grad() || b.requires_grad()) {
            let mut saved = Vec::new();
            if b.requires_grad() {
                saved.push(a.saved(self));
            }
            if a.requires_grad() {
                saved.push(b.saved(self));
            }
            let edges = vec![a.edge(self), b.edge(self)];
            out.node = Some(autograd::new_node(
                self,
                super::autograd::row("bmm").node,
                GradFlow::Compute,
                edges,
                saved,
            ));
        }
        Ok(out)
    }
}

/// Shapes and settings of one attention call.
pub(super) struct SdpaShapes {
    pub query: Vec<i64>,
    pub key_t: Vec<i64>,
    pub scores: Vec<i64>,
    pub output: Vec<i64>,
    pub causal: Vec<i64>,
    /// The `attn_mask` as C++ holds it (boolean or float), owned.
    pub mask: Option<Internal>,
    pub dtype: Dtype,
    pub device: crate::torch::DeviceKind,
    pub recording: bool,
    pub category: Category,
}
