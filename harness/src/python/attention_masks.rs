//! The masks of `nn.MultiheadAttention` and `nn.TransformerEncoder(Layer)`, as
//! `torch/nn/modules/activation.py`, `torch/nn/modules/transformer.py` and
//! `F.multi_head_attention_forward` (`torch/nn/functional.py`) handle them:
//!
//! | step                                            | allocates                                  | lives            |
//! |-------------------------------------------------|--------------------------------------------|------------------|
//! | `_canonical_mask` of a boolean mask             | `zeros_like(mask, dtype=query.dtype)` filled in place | the caller's call |
//! | `is_causal` without `attn_mask`                 | nothing: PyTorch's `RuntimeError`          |                  |
//! | `is_causal`, no `key_padding_mask`, `need_weights=False` | nothing: `attn_mask` is dropped and SDPA builds its causal mask | |
//! | a 2-d `attn_mask`: `unsqueeze(0)`               | nothing (a view `[1, L, S]`)               |                  |
//! | `key_padding_mask.view(N, 1, 1, S).expand(-1, h, -1, -1).reshape(N·h, 1, S)` | a copy `[N·h, 1, S]` (a view when `h == 1`) | the function's call |
//! | merged into `attn_mask`: `attn_mask + key_padding_mask` | `[N·h, L, S]` (broadcast)           | the function's call |
//! | `need_weights=True`: `baddbmm(attn_mask, q, kᵀ)` | the scores, as `bmm` (`BaddbmmBackward0`) |                  |
//! | `need_weights=False`: `attn_mask.view(N, h, -1, S)` (or `unsqueeze(0)` of `[1, L, S]`) to SDPA | nothing (a view); SDPA adds it in place | |
//! | `TransformerEncoder`, `is_causal=None` with a mask: `_detect_is_causal_mask` | a float `[S, S]` causal mask, the bool comparison and its `all()`, freed at once | |
//!
//! `MultiheadAttention.forward` canonicalises both masks before calling the function, so a
//! converted mask lives until the module call returns even after the function rebinds its
//! name. The masks never require grad here (a mask that does is not given an edge).

use super::autograd::Internal;
use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use crate::torch::{Category, Dtype};

/// The masks of one attention call: the tensors the call's locals hold, and the
/// `is_causal` hint left after `multi_head_attention_forward`'s rules.
#[derive(Default)]
pub(super) struct MhaMasks {
    /// The mask the attention uses (after merging), if any.
    pub attn: Option<Internal>,
    /// The canonical key padding mask, until it is merged.
    pub key_padding: Option<Internal>,
    /// Everything else a local of the call holds until it returns.
    pub held: Vec<Internal>,
    pub is_causal: bool,
}

impl MhaMasks {
    pub(super) fn release(self, it: &mut Interpreter<'_>) {
        let all = self.attn.into_iter().chain(self.key_padding);
        for t in all.chain(self.held) {
            t.release(it);
        }
        it.release_dropped_storages(None);
    }
}

/// Sizes the masks are checked and merged against.
pub(super) struct MaskDims {
    pub l: i64,
    pub s: i64,
    pub n: i64,
    pub h: i64,
}

impl Interpreter<'_> {
    /// `F._canonical_mask`: `None` stays `None`; a boolean mask becomes a new float mask of
    /// `target` dtype (`zeros_like(...).masked_fill_(...)`, one allocation); a float mask is
    /// used as it is; any other dtype is PyTorch's `AssertionError`.
    pub(super) fn canonical_mask(
        &mut self,
        mask: Value,
        name: &str,
        target: Dtype,
    ) -> R<Option<Internal>> {
        if mask == Value::None {
            return Ok(None);
        }
        let Some(t) = self.tensor_data(mask) else {
            return self.error(format!(
                "TypeError: {name} must be a Tensor or None, not {}",
                self.type_name_of(mask)
            ));
        };
        if t.dtype == Dtype::Bool {
            return Internal::new(self, t.shape, target, t.device, Category::Temporary).map(Some);
        }
        if !t.dtype.is_floating() {
            return self.error(format!(
                "AssertionError: only bool and floating types of {name} are supported"
            ));
        }
        Ok(Internal::of(self, mask))
    }

    /// The head of `MultiheadAttention.forward` and `multi_head_attention_forward`: both masks
    /// canonicalised, the `is_causal` rules applied.
    pub(super) fn mha_masks(
        &mut self,
        key_padding_mask: Value,
        attn_mask: Value,
        is_causal: bool,
        need_weights: bool,
        target: Dtype,
    ) -> R<MhaMasks> {
        let mut masks = MhaMasks::default();
        let kpm = self.canonical_mask(key_padding_mask, "key_padding_mask", target)?;
        let attn = match self.canonical_mask(attn_mask, "attn_mask", target) {
            Ok(a) => a,
            Err(e) => {
                masks.held.extend(kpm);
                masks.release(self);
                return Err(e);
            }
        };
        if is_causal && attn.is_none() {
            masks.held.extend(kpm);
            masks.release(self);
            return self.error("RuntimeError: Need attn_mask if specifying the is_causal hint. You may use the Transformer module method `generate_square_subsequent_mask` to create this mask.");
        }
        masks.is_causal = is_causal;
        match (is_causal && kpm.is_none() && !need_weights, attn) {
            // The hint alone goes to SDPA; the module's local still holds the mask.
            (true, Some(a)) => masks.held.push(a),
            (_, a) => {
                if kpm.is_some() {
                    masks.is_causal = false;
                }
                masks.attn = a;
            }
        }
        masks.key_padding = kpm;
        Ok(masks)
    }

    /// After the in-projection: `attn_mask`'s shape checked (a 2-d one viewed `[1, L, S]`),
    /// the key padding mask checked, expanded per head and merged into it.
    pub(super) fn mha_merge_masks(&mut self, masks: &mut MhaMasks, d: &MaskDims) -> R<()> {
        let heads = d.n * d.h;
        if let Some(a) = masks.attn.as_mut() {
            let shape = a.shape.clone();
            match shape.len() {
                2 if shape == [d.l, d.s] => a.shape = vec![1, d.l, d.s],
                3 if shape == [heads, d.l, d.s] => {}
                2 | 3 => {
                    let want = if shape.len() == 2 {
                        format!("({}, {})", d.l, d.s)
                    } else {
                        format!("({heads}, {}, {})", d.l, d.s)
                    };
                    return self.error(format!(
                        "RuntimeError: The shape of the {}D attn_mask is torch.Size({shape:?}), but should be {want}.",
                        shape.len()
                    ));
                }
                k => {
                    return self.error(format!(
                        "RuntimeError: attn_mask's dimension {k} is not supported"
                    ));
                }
            }
        }
        let Some(kpm) = masks.key_padding.take() else {
            return Ok(());
        };
        if kpm.shape != [d.n, d.s] {
            let shape = kpm.shape.clone();
            masks.held.push(kpm);
            return self.error(format!(
                "AssertionError: expecting key_padding_mask shape of ({}, {}), but got torch.Size({shape:?})",
                d.n, d.s
            ));
        }
        // `view(N, 1, 1, S).expand(-1, h, -1, -1).reshape(N * h, 1, S)`: the expand is a
        // stride-0 view, so `reshape` copies unless there is a single head.
        let per_head = if d.h == 1 {
            let mut v = kpm.share(self);
            v.shape = vec![heads, 1, d.s];
            Ok(v)
        } else {
            Internal::new(
                self,
                vec![heads, 1, d.s],
                kpm.dtype,
                kpm.device,
                Category::Temporary,
            )
        };
        masks.held.push(kpm);
        let per_head = per_head?;
        let merged = match masks.attn.take() {
            None => per_head.share(self),
            Some(a) => {
                let shape = crate::torch::broadcast(&a.shape, &per_head.shape)
                    .unwrap_or_else(|_| vec![heads, d.l, d.s]);
                let sum = Internal::new(self, shape, a.dtype, a.device, Category::Temporary);
                masks.held.push(a);
                match sum {
                    Ok(m) => m,
                    Err(e) => {
                        masks.held.push(per_head);
                        return Err(e);
                    }
                }
            }
        };
        masks.held.push(per_head);
        masks.attn = Some(merged);
        Ok(())
    }

    /// The mask `multi_head_attention_forward` hands to SDPA: `[1, L, S]` unsqueezed, any
    /// other viewed `[N, h, -1, S]` (a new reference to the same bytes).
    pub(super) fn mha_sdpa_mask(&mut self, masks: &MhaMasks, d: &MaskDims) -> Option<Internal> {
        let a = masks.attn.as_ref()?;
        let mut v = a.share(self);
        v.shape = if a.shape.len() == 3 && a.shape[0] == 1 {
            vec![1, 1, d.l, d.s]
        } else {
            let rows = a.shape.get(1).copied().unwrap_or(d.l);
            vec![d.n, d.h, rows, d.s]
        };
        Some(v)
    }
}

/// Renames the node of `t` (`bmm` with a mask added is `baddbmm`).
pub(super) fn rename_node(it: &mut Interpreter<'_>, t: &Internal, name: &'static str) {
    if let Some(n) = t.node
        && let ObjKind::GradNode(node) = it.heap.kind_mut(n)
    {
        node.name = name;
    }
}

const CAUSAL_DETECTION_NOTE: &str = "TransformerEncoder(is_causal=None) with a mask: PyTorch's `_detect_is_causal_mask` compares the mask with a causal one; the model allocates and frees the comparison's tensors but cannot read values, so it treats the mask as not causal (pass is_causal=True to take the causal path).";

impl Interpreter<'_> {
    /// [`Interpreter::canonical_mask`] as the Python value the caller's local holds (owned).
    pub(super) fn canonical_mask_value(
        &mut self,
        mask: Value,
        name: &str,
        target: Dtype,
    ) -> R<Value> {
        if let Some(t) = self.tensor_data(mask)
            && t.dtype == Dtype::Bool
        {
            let shape = t.shape.clone();
            let converted =
                Internal::new(self, shape.clone(), target, t.device, Category::Temporary)?;
            return converted.expose(self, shape);
        }
        if let Some(m) = self.canonical_mask(mask, name, target)? {
            m.release(self);
        }
        self.heap.incref(mask);
        Ok(mask)
    }

    /// `_detect_is_causal_mask(mask, is_causal, size)` of `TransformerEncoder.forward`:
    /// `is_causal` when given; otherwise, with a mask, a causal `[size, size]` mask of the
    /// mask's dtype and, when the shapes agree, the bool comparison and its `all()`, freed at
    /// once. The values are not modelled: the answer is "not causal" (a note says so).
    pub(super) fn detect_is_causal_mask(
        &mut self,
        mask: Value,
        is_causal: Option<bool>,
        size: i64,
    ) -> R<bool> {
        if let Some(c) = is_causal {
            return Ok(c);
        }
        let Some(t) = self.tensor_data(mask) else {
            return Ok(false);
        };
        let causal = Internal::new(
            self,
            vec![size, size],
            t.dtype,
            t.device,
            Category::Temporary,
        )?;
        let mut temporaries = vec![causal];
        if t.shape == [size, size] {
            for shape in [vec![size, size], Vec::new()] {
                match Internal::new(self, shape, Dtype::Bool, t.device, Category::Temporary) {
                    Ok(x) => temporaries.push(x),
                    Err(e) => {
                        for x in temporaries {
                            x.release(self);
                        }
                        return Err(e);
                    }
                }
            }
        }
        for x in temporaries {
            x.release(self);
        }
        self.release_dropped_storages(None);
        if !self.torch_classes.causal_detection_noted {
            self.torch_classes.causal_detection_noted = true;
            self.recorder.approximation(CAUSAL_DETECTION_NOTE);
        }
        Ok(false)
    }
}
