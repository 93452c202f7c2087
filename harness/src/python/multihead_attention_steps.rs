//! The steps of `F.multi_head_attention_forward` after the module's checks (the table in
//! `multihead_attention.rs`): flattening and projecting the inputs, the extra keys of
//! `add_bias_kv`/`add_zero_attn`, the attention itself and the output projection.

use super::autograd::{self, Internal};
use super::interp::{Interpreter, R};
use super::multihead_attention::MhaConfig;
use crate::heap::Value;
use crate::torch::Category;

/// Sequence lengths, batch, embedding and heads.
pub(super) struct MhaDims {
    pub(super) l: i64,
    pub(super) s: i64,
    pub(super) n: i64,
    pub(super) e: i64,
    pub(super) h: i64,
}

/// A view of `t` with another shape (same storage and history).
fn view(it: &mut Interpreter<'_>, t: &Internal, shape: Vec<i64>) -> Internal {
    let mut v = t.share(it);
    v.shape = shape;
    v
}

impl Interpreter<'_> {
    /// The input flattened to `[rows, features]` for a projection: a view, or with
    /// `batch_first` the copy `reshape` makes of the transposed input.
    pub(super) fn mha_flat_input(
        &mut self,
        x: Value,
        batch_first: bool,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let Some(t) = Internal::of(self, x) else {
            return self.error("TypeError: expected a tensor");
        };
        let rows: i64 = t.shape[..t.shape.len() - 1].iter().product();
        let features = t.shape.last().copied().unwrap_or(0);
        if !batch_first {
            let v = view(self, &t, vec![rows, features]);
            t.release(self);
            return Ok(v);
        }
        let copy = self.mha_copy(&t, vec![rows, features], recording, category);
        t.release(self);
        copy
    }

    /// `.contiguous()` / `reshape` of a non-contiguous view: a copy (`CloneBackward0`
    /// saves nothing).
    pub(super) fn mha_copy(
        &mut self,
        t: &Internal,
        shape: Vec<i64>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let mut out = Internal::new(self, shape, t.dtype, t.device, category)?;
        if recording && t.requires_grad() {
            let edges = vec![t.edge(self)];
            let row = autograd::row("clone");
            out.node = Some(autograd::new_node(
                self,
                row.node,
                row.flow,
                edges,
                Vec::new(),
            ));
        }
        Ok(out)
    }

    /// A projection whose output is split into `parts` heads-ready tensors through one
    /// `unflatten(...).transpose(...).contiguous()` copy (the packed in-projection), or
    /// used as it is (`parts == 1`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn mha_project(
        &mut self,
        x: &Internal,
        w: &Internal,
        rows: std::ops::Range<i64>,
        b: Option<&Internal>,
        parts: i64,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let cols = w.shape.get(1).copied().unwrap_or(0);
        let w = view(self, w, vec![rows.end - rows.start, cols]);
        let b = b.map(|b| view(self, b, vec![rows.end - rows.start]));
        let proj = self.cell_linear(x, &w, b.as_ref(), recording, category);
        w.release(self);
        if let Some(b) = b {
            b.release(self);
        }
        let proj = proj?;
        if parts == 1 {
            return Ok(proj);
        }
        let shape = proj.shape.clone();
        let copy = self.mha_copy(&proj, shape, recording, category);
        proj.release(self);
        self.release_dropped_storages(None);
        copy
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn mha_steps(
        &mut self,
        held: &mut [Option<Internal>],
        inputs: [Value; 3],
        cfg: &MhaConfig,
        d: &MhaDims,
        dropout: f64,
        need_weights: bool,
        recording: bool,
        category: Category,
        masks: &mut super::attention_masks::MhaMasks,
    ) -> R<(Internal, Option<Internal>)> {
        let [query, key, value] = inputs;
        let e = d.e;
        let hd = e / d.h;
        let bias = held[4].as_ref().map(|b| b.share(self));
        let packed = held[0].as_ref().map(|w| w.share(self));
        let mut locals: Vec<Internal> = bias.into_iter().collect();
        let bias = (!locals.is_empty()).then_some(0);
        // The in-projection: q, k, v as [rows, E] tensors (views of a packed copy or
        // three projections).
        let xq = self.mha_flat_input(query, cfg.batch_first, recording, category)?;
        let (q, k, v) = match packed {
            Some(w) if query == key && key == value => {
                let b = bias.map(|i| &locals[i]);
                let b = b.map(|b| b.share(self));
                let copy = self.mha_project(&xq, &w, 0..3 * e, b.as_ref(), 3, recording, category);
                w.release(self);
                if let Some(b) = b {
                    b.release(self);
                }
                xq.release(self);
                let copy = copy?;
                let parts = (
                    view(self, &copy, vec![d.l * d.n, e]),
                    view(self, &copy, vec![d.s * d.n, e]),
                    view(self, &copy, vec![d.s * d.n, e]),
                );
                copy.release(self);
                parts
            }
            Some(w) if key == value => {
                let bq = bias.map(|i| locals[i].share(self));
                let q = self.mha_project(&xq, &w, 0..e, bq.as_ref(), 1, recording, category);
                xq.release(self);
                let xk = self.mha_flat_input(key, cfg.batch_first, recording, category)?;
                let kv = self.mha_project(&xk, &w, e..3 * e, bq.as_ref(), 2, recording, category);
                xk.release(self);
                w.release(self);
                if let Some(b) = bq {
                    b.release(self);
                }
                let (q, kv) = (q?, kv?);
                let parts = (
                    q,
                    view(self, &kv, vec![d.s * d.n, e]),
                    view(self, &kv, vec![d.s * d.n, e]),
                );
                kv.release(self);
                parts
            }
            other => {
                let weights: Vec<Internal> = match other {
                    Some(w) => {
                        let ws = (0..3).map(|_| w.share(self)).collect();
                        w.release(self);
                        ws
                    }
                    None => (1..4)
                        .filter_map(|i| held[i].as_ref().map(|w| w.share(self)))
                        .collect(),
                };
                if weights.len() != 3 {
                    xq.release(self);
                    for w in weights {
                        w.release(self);
                    }
                    return self.error("RuntimeError: the in-projection weights are missing");
                }
                let b = bias.map(|i| locals[i].share(self));
                let mut out = Vec::new();
                let mut failure = None;
                for (i, x) in [query, key, value].into_iter().enumerate() {
                    let flat = if i == 0 {
                        Ok(xq.share(self))
                    } else {
                        self.mha_flat_input(x, cfg.batch_first, recording, category)
                    };
                    match flat.and_then(|f| {
                        let r = self.mha_project(
                            &f,
                            &weights[i],
                            0..e,
                            b.as_ref(),
                            1,
                            recording,
                            category,
                        );
                        f.release(self);
                        r
                    }) {
                        Ok(p) => out.push(p),
                        Err(err) => {
                            failure = Some(err);
                            break;
                        }
                    }
                }
                xq.release(self);
                for w in weights {
                    w.release(self);
                }
                if let Some(b) = b {
                    b.release(self);
                }
                if let Some(err) = failure {
                    for p in out {
                        p.release(self);
                    }
                    return Err(err);
                }
                let v = out.pop();
                let k = out.pop();
                let q = out.pop();
                match (q, k, v) {
                    (Some(q), Some(k), Some(v)) => (q, k, v),
                    _ => return self.error("RuntimeError: the in-projection failed"),
                }
            }
        };
        for t in locals.drain(..) {
            t.release(self);
        }
        self.release_dropped_storages(None);
        let (k, v, d) = self.mha_extra_keys(held, [k, v], cfg, d, recording, category)?;
        let d = &d;
        let mask_dims = super::attention_masks::MaskDims {
            l: d.l,
            s: d.s,
            n: d.n,
            h: d.h,
        };
        if let Err(e) = self.mha_merge_masks(masks, &mask_dims) {
            for t in [q, k, v] {
                t.release(self);
            }
            return Err(e);
        }
        let heads = d.n * d.h;
        let (attn, weights) = if need_weights {
            let q_h = view(self, &q, vec![heads, d.l, hd]);
            let k_h = view(self, &k, vec![heads, hd, d.s]);
            let v_h = view(self, &v, vec![heads, d.s, hd]);
            for t in [q, k, v] {
                t.release(self);
            }
            locals.extend([k_h, v_h]);
            let q_scaled = self.scalar_mul(&q_h, vec![heads, d.l, hd], recording, category);
            // `q` (a view of the projection) is a local until the function returns.
            let q_scaled = match q_scaled {
                Ok(t) => t,
                Err(err) => {
                    q_h.release(self);
                    return Err(err);
                }
            };
            locals.push(q_scaled);
            locals.push(q_h);
            let scores = self.attention_bmm(
                &locals[2],
                &locals[0],
                vec![heads, d.l, d.s],
                recording,
                category,
            )?;
            // `baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))` with a mask.
            if masks.attn.is_some() {
                super::attention_masks::rename_node(self, &scores, autograd::row("baddbmm").node);
            }
            let probs = self.softmax_of_scores(scores, recording, category)?;
            let weights = if dropout > 0.0 {
                self.internal_dropout(probs, dropout, recording, category)?
            } else {
                probs
            };
            let attn = self.attention_bmm(
                &weights,
                &locals[1],
                vec![heads, d.l, hd],
                recording,
                category,
            );
            let attn = match attn {
                Ok(a) => a,
                Err(err) => {
                    weights.release(self);
                    return Err(err);
                }
            };
            (attn, Some(weights))
        } else {
            let shapes = super::attention::SdpaShapes {
                query: vec![d.n, d.h, d.l, hd],
                key_t: vec![d.n, d.h, hd, d.s],
                scores: vec![d.n, d.h, d.l, d.s],
                output: vec![d.n, d.h, d.l, hd],
                causal: vec![d.l, d.s],
                mask: self.mha_sdpa_mask(masks, &mask_dims),
                dtype: q.dtype,
                device: q.device,
                recording,
                category,
            };
            let args = super::attention::SdpaArgs {
                query: Value::None,
                key: Value::None,
                value: Value::None,
                attn_mask: Value::None,
                dropout_p: dropout,
                is_causal: masks.is_causal && masks.attn.is_none(),
            };
            // `q`, `k`, `v` stay locals of the function until it returns.
            for t in [&q, &k, &v] {
                let kept = t.share(self);
                locals.push(kept);
            }
            let (out, probs) = self.sdpa_run([q, k, v], &args, shapes)?;
            probs.release(self);
            (out, None)
        };
        // `attn_output.transpose(0, 1).contiguous()` (`permute(2, 0, 1, 3)` after SDPA).
        let copy = self.mha_copy(&attn, vec![d.l * d.n, e], recording, category);
        attn.release(self);
        self.release_dropped_storages(None);
        let copy = copy?;
        let (out_w, out_b) = (held[5].take(), held[6].take());
        let y = match &out_w {
            Some(w) => self.cell_linear(&copy, w, out_b.as_ref(), recording, category),
            None => self.error("RuntimeError: out_proj.weight is missing"),
        };
        for t in [out_w, out_b].into_iter().flatten() {
            t.release(self);
        }
        copy.release(self);
        for t in locals.drain(..) {
            t.release(self);
        }
        match y {
            Ok(y) => Ok((y, weights)),
            Err(err) => {
                if let Some(w) = weights {
                    w.release(self);
                }
                Err(err)
            }
        }
    }

    /// `add_bias_kv` and `add_zero_attn`: `k` and `v` each get one more key row per
    /// option, by a `cat` that copies them (see the module's table); returns them with the
    /// new source length.
    pub(super) fn mha_extra_keys(
        &mut self,
        held: &[Option<Internal>],
        [k, v]: [Internal; 2],
        cfg: &MhaConfig,
        d: &MhaDims,
        recording: bool,
        category: Category,
    ) -> R<(Internal, Internal, MhaDims)> {
        let mut s = d.s;
        let (mut k, mut v) = (k, v);
        let biases = [held.get(7), held.get(8)].map(|b| b.and_then(Option::as_ref));
        if let [Some(bk), Some(bv)] = biases {
            let (bk, bv) = (bk.share(self), bv.share(self));
            let rows = (s + 1) * d.n;
            let k2 = self.mha_append(k, Some(&bk), vec![1, d.n, d.e], rows, recording, category);
            bk.release(self);
            let k2 = match k2 {
                Ok(t) => t,
                Err(e) => {
                    bv.release(self);
                    v.release(self);
                    return Err(e);
                }
            };
            let v2 = self.mha_append(v, Some(&bv), vec![1, d.n, d.e], rows, recording, category);
            bv.release(self);
            (k, v) = match v2 {
                Ok(t) => (k2, t),
                Err(e) => {
                    k2.release(self);
                    return Err(e);
                }
            };
            s += 1;
        }
        if cfg.zero_attn {
            let hd = d.e / d.h;
            let rows = (s + 1) * d.n;
            let k2 =
                match self.mha_append(k, None, vec![d.n * d.h, 1, hd], rows, recording, category) {
                    Ok(t) => t,
                    Err(e) => {
                        v.release(self);
                        return Err(e);
                    }
                };
            (k, v) =
                match self.mha_append(v, None, vec![d.n * d.h, 1, hd], rows, recording, category) {
                    Ok(t) => (k2, t),
                    Err(e) => {
                        k2.release(self);
                        return Err(e);
                    }
                };
            s += 1;
        }
        let dims = MhaDims {
            l: d.l,
            s,
            n: d.n,
            e: d.e,
            h: d.h,
        };
        Ok((k, v, dims))
    }

    /// `cat([t, extra])` with `extra` of `extra_shape`: `bias.repeat(...)` (with its
    /// `RepeatBackward0`) or, without a bias, `torch.zeros(...)`; the result has `rows`
    /// rows of `t`'s width. `t` and the extra tensor are dropped (nothing saves them).
    pub(super) fn mha_append(
        &mut self,
        t: Internal,
        bias: Option<&Internal>,
        extra_shape: Vec<i64>,
        rows: i64,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let mut extra = match Internal::new(self, extra_shape, t.dtype, t.device, category) {
            Ok(x) => x,
            Err(e) => {
                t.release(self);
                return Err(e);
            }
        };
        if let Some(b) = bias
            && recording
            && b.requires_grad()
        {
            let row = autograd::row("repeat");
            let edges = vec![b.edge(self)];
            extra.node = Some(autograd::new_node(
                self,
                row.node,
                row.flow,
                edges,
                Vec::new(),
            ));
        }
        let width = t.shape.last().copied().unwrap_or(0);
        let out = Internal::new(self, vec![rows, width], t.dtype, t.device, category);
        let out = out.map(|mut out| {
            if recording && (t.requires_grad() || extra.requires_grad()) {
                let row = autograd::row("cat");
                let edges = vec![t.edge(self), extra.edge(self)];
                out.node = Some(autograd::new_node(
                    self,
                    row.node,
                    row.flow,
                    edges,
                    Vec::new(),
                ));
            }
            out
        });
        t.release(self);
        extra.release(self);
        self.release_dropped_storages(None);
        out
    }
}
