//! `nn.MultiheadAttention` (`torch/nn/modules/activation.py`) and the forward of
//! `F.multi_head_attention_forward` (`torch/nn/functional.py`), op by op:
//!
//! | step                                           | allocates                         | saved for backward |
//! |------------------------------------------------|-----------------------------------|--------------------|
//! | `batch_first`: the in-projection's `reshape` of the transposed input | a copy `[L·N, E]` per distinct input | by the projection's `mm` |
//! | in-projection, self-attention (`query is key is value`): `linear(x, in_proj_weight, in_proj_bias)` | `[L, N, 3E]`, then its `unflatten(...).transpose(...).contiguous()` copy `[3, L, N, E]` (the first is freed) | the input (`AddmmBackward0`); `q`, `k`, `v` are views of the copy |
//! | `key is value` only: `q` alone, then `k`/`v` packed as above (`[2, S, N, E]`) | | |
//! | otherwise (or `kdim`/`vdim` given): three `linear`s | `[L, N, E]`, `[S, N, E]`, `[S, N, E]` | each input |
//! | `need_weights=True`: `q * sqrt(1/hd)`          | `[N·h, L, hd]`                    | by the `bmm`       |
//! | `bmm(q_scaled, k.transpose(-2, -1))`           | scores `[N·h, L, S]`              | `q_scaled`, `k`    |
//! | softmax                                        | `[N·h, L, S]` (scores freed)      | its result         |
//! | dropout (`dropout > 0` and training)           | output and a bool mask            | the mask           |
//! | `bmm(weights, v)`                              | `[N·h, L, hd]`                    | the weights, `v`   |
//! | `need_weights=False`: `scaled_dot_product_attention` (see `attention.rs`) | as there | as there |
//! | `transpose(0, 1).contiguous()` (`permute(...)` for SDPA) | a copy `[L·N, E]`; the attention output is freed | by `out_proj`'s `addmm` |
//! | `out_proj`                                     | `[L·N, E]` (viewed `[L, N, E]`)   |                    |
//! | `average_attn_weights`: `mean(dim=1)`          | `[N, L, S]` (else a `[N, h, L, S]` view) | nothing  |
//!
//! Masks (`key_padding_mask`, `attn_mask`, `is_causal`): see `attention_masks.rs`.
//! Unbatched (2-D) inputs run the batched path on `unsqueeze`d views with a batch of one and
//! `squeeze` the results, as `multi_head_attention_forward` does.
//! `add_bias_kv`: parameters `bias_k`/`bias_v` `[1, 1, E]`; after the in-projection
//! `k = cat([k, bias_k.repeat(1, N, 1)])` (and `v`): a `[1, N, E]` repeat, freed once the
//! cat `[(S+1)·N, E]` copied it, which replaces `k` (`RepeatBackward0` and `CatBackward0`
//! keep sizes only). `add_zero_attn`: after the heads split, `k = cat([k, zeros(N·h, 1, hd)],
//! dim=1)` (and `v`): one more key again. Either with a mask is refused as unsupported (the
//! masks' `pad(..., (0, 1))` is not modelled). The fast path (`torch._native_multi_head_attention`, taken
//! in eval mode without grad for batch-first self-attention) is not modelled: the run's
//! notes say so when its conditions hold.

use super::autograd::{self, Internal};
use super::interp::{Interpreter, R};
use super::multihead_attention_steps::MhaDims;
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, GradFlow};

const FAST_PATH_NOTE: &str = "nn.MultiheadAttention in eval mode without grad with batch_first=True and query is key is value: PyTorch may take its fused fast path (torch._native_multi_head_attention), which allocates different intermediates; the model runs the Python path.";

/// What the forward reads from the module.
pub(super) struct MhaConfig {
    pub(super) embed_dim: i64,
    pub(super) heads: i64,
    pub(super) dropout: f64,
    pub(super) batch_first: bool,
    pub(super) training: bool,
    /// `add_zero_attn`: a zero key and value appended per head.
    pub(super) zero_attn: bool,
}

impl Interpreter<'_> {
    /// `nn.MultiheadAttention(embed_dim, num_heads, dropout=0.0, bias=True,
    /// add_bias_kv=False, add_zero_attn=False, kdim=None, vdim=None, batch_first=False)`.
    pub(super) fn construct_multihead_attention(
        &mut self,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let (Some(Value::Int(embed_dim)), Some(Value::Int(heads))) =
            (arg(self, 0, "embed_dim"), arg(self, 1, "num_heads"))
        else {
            return self
                .error("TypeError: MultiheadAttention(embed_dim, num_heads): integers expected");
        };
        if embed_dim <= 0 || heads <= 0 {
            return self.error(format!(
                "ValueError: embed_dim and num_heads must be greater than 0, got embed_dim={embed_dim} and num_heads={heads} instead"
            ));
        }
        if embed_dim % heads != 0 {
            return self.error("AssertionError: embed_dim must be divisible by num_heads");
        }
        let dropout = match arg(self, 2, "dropout") {
            None => 0.0,
            Some(v) => match super::natives::float_of(v) {
                Some(f) => f,
                None => return self.error("TypeError: dropout must be a number"),
            },
        };
        let flag = |it: &mut Self, i: usize, name: &str, default: bool| -> R<bool> {
            match arg(it, i, name) {
                Some(v) => it.truth(v),
                None => Ok(default),
            }
        };
        let bias = flag(self, 3, "bias", true)?;
        let add_bias_kv = flag(self, 4, "add_bias_kv", false)?;
        let add_zero_attn = flag(self, 5, "add_zero_attn", false)?;
        let dim_of = |it: &Self, i: usize, name: &str| -> R<i64> {
            match arg(it, i, name) {
                None | Some(Value::None) => Ok(embed_dim),
                Some(Value::Int(d)) => Ok(d),
                Some(_) => it.error(format!("TypeError: {name} must be an integer")),
            }
        };
        let (kdim, vdim) = (dim_of(self, 6, "kdim")?, dim_of(self, 7, "vdim")?);
        let batch_first = flag(self, 8, "batch_first", false)?;
        let (device, dtype) = self.factory_kwargs(kwargs);
        let mut attrs: Vec<(String, Value)> = vec![
            ("embed_dim".into(), Value::Int(embed_dim)),
            ("kdim".into(), Value::Int(kdim)),
            ("vdim".into(), Value::Int(vdim)),
            ("num_heads".into(), Value::Int(heads)),
            ("dropout".into(), Value::Float(dropout)),
            ("batch_first".into(), Value::Bool(batch_first)),
            ("head_dim".into(), Value::Int(embed_dim / heads)),
        ];
        let same_dims = kdim == embed_dim && vdim == embed_dim;
        attrs.push(("_qkv_same_embed_dim".into(), Value::Bool(same_dims)));
        if same_dims {
            let w = self.new_parameter(vec![3 * embed_dim, embed_dim], dtype, device)?;
            attrs.push(("in_proj_weight".into(), w));
        } else {
            for (name, d) in [
                ("q_proj_weight", embed_dim),
                ("k_proj_weight", kdim),
                ("v_proj_weight", vdim),
            ] {
                let w = self.new_parameter(vec![embed_dim, d], dtype, device)?;
                attrs.push((name.into(), w));
            }
            attrs.push(("in_proj_weight".into(), Value::None));
        }
        let b = if bias {
            self.new_parameter(vec![3 * embed_dim], dtype, device)?
        } else {
            Value::None
        };
        attrs.push(("in_proj_bias".into(), b));
        let out_w = self.new_parameter(vec![embed_dim, embed_dim], dtype, device)?;
        let out_b = if bias {
            self.new_parameter(vec![embed_dim], dtype, device)?
        } else {
            Value::None
        };
        let out_proj =
            self.new_torch_instance(TorchClass::Linear, vec![("weight", out_w), ("bias", out_b)])?;
        attrs.push(("out_proj".into(), Value::Obj(out_proj)));
        for name in ["bias_k", "bias_v"] {
            let b = if add_bias_kv {
                self.new_parameter(vec![1, 1, embed_dim], dtype, device)?
            } else {
                Value::None
            };
            attrs.push((name.into(), b));
        }
        attrs.push(("add_zero_attn".into(), Value::Bool(add_zero_attn)));
        let borrowed: Vec<(&str, Value)> = attrs.iter().map(|(n, v)| (n.as_str(), *v)).collect();
        self.new_torch_instance(TorchClass::MultiheadAttention, borrowed)
    }

    /// `mha(query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
    /// average_attn_weights=True, is_causal=False)`: `(attn_output, attn_weights or None)`.
    pub(super) fn multihead_forward(
        &mut self,
        module: ObjId,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Value> {
        self.multihead_forward_of(module, args, kwargs, false)
    }

    /// The forward; `unbatched` when called again on the `unsqueeze`d views of 2-D inputs
    /// (`batch_first` then does not apply, as in PyTorch).
    fn multihead_forward_of(
        &mut self,
        module: ObjId,
        args: &[Value],
        kwargs: &[(Sym, Value)],
        unbatched: bool,
    ) -> R<Value> {
        super::keywords::check(
            self,
            "MultiheadAttention.forward",
            Some(&[
                "query",
                "key",
                "value",
                "key_padding_mask",
                "need_weights",
                "attn_mask",
                "average_attn_weights",
                "is_causal",
            ]),
            kwargs,
        )?;
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let (Some(query), Some(key), Some(value)) = (
            arg(self, 0, "query"),
            arg(self, 1, "key"),
            arg(self, 2, "value"),
        ) else {
            return self.error("TypeError: forward() missing query, key or value");
        };
        let key_padding_mask = arg(self, 3, "key_padding_mask").unwrap_or(Value::None);
        let attn_mask = arg(self, 5, "attn_mask").unwrap_or(Value::None);
        let is_causal = match arg(self, 7, "is_causal") {
            Some(v) => self.truth(v)?,
            None => false,
        };
        let need_weights = match arg(self, 4, "need_weights") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let average = match arg(self, 6, "average_attn_weights") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let int = |it: &mut Self, name: &str| -> R<i64> {
            let s = it.sym(name);
            match it.get_attr(Value::Obj(module), s)? {
                Value::Int(i) => Ok(i),
                Value::Bool(b) => Ok(i64::from(b)),
                other => {
                    it.heap.decref(other);
                    it.error(format!("TypeError: {name} must be an integer"))
                }
            }
        };
        let cfg = MhaConfig {
            embed_dim: int(self, "embed_dim")?,
            heads: int(self, "num_heads")?,
            dropout: self.module_float(module, "dropout")?,
            batch_first: int(self, "batch_first")? != 0 && !unbatched,
            training: self.module_training(module)?,
            zero_attn: int(self, "add_zero_attn")? != 0,
        };
        let (Some(q), Some(k), Some(v)) = (
            self.tensor_data(query),
            self.tensor_data(key),
            self.tensor_data(value),
        ) else {
            return self.error("TypeError: query, key and value must be tensors");
        };
        let (q_dims, k_dims, v_dims) = (q.shape.len(), k.shape.len(), v.shape.len());
        if q_dims == 2 && !unbatched {
            if k_dims != 2 || v_dims != 2 {
                return self.error(format!(
                    "AssertionError: For unbatched (2-D) `query`, expected `key` and `value` to be 2-D but found {k_dims}-D and {v_dims}-D tensors respectively"
                ));
            }
            let inputs = [query, key, value, key_padding_mask, attn_mask];
            return self.multihead_unbatched(module, inputs, need_weights, average, is_causal);
        }
        if q_dims != 3 {
            return self.error(format!(
                "AssertionError: query should be unbatched 2D or batched 3D tensor but received {q_dims}-D query tensor"
            ));
        }
        if k_dims != 3 || v_dims != 3 {
            return self.error(format!(
                "AssertionError: For batched (3-D) `query`, expected `key` and `value` to be 3-D but found {k_dims}-D and {v_dims}-D tensors respectively"
            ));
        }
        let (l, n) = if cfg.batch_first {
            (q.shape[1], q.shape[0])
        } else {
            (q.shape[0], q.shape[1])
        };
        let s = if cfg.batch_first {
            k.shape[1]
        } else {
            k.shape[0]
        };
        if q.shape[2] != cfg.embed_dim {
            return self.error(format!(
                "AssertionError: was expecting embedding dimension of {}, but got {}",
                cfg.embed_dim, q.shape[2]
            ));
        }
        let self_attention = query == key && key == value;
        if !cfg.training && !self.grad_enabled && cfg.batch_first && self_attention {
            self.recorder.approximation(FAST_PATH_NOTE);
        }
        let bias_kv = {
            let s = self.sym("bias_k");
            let b = self.get_attr(Value::Obj(module), s)?;
            self.heap.decref(b);
            b != Value::None
        };
        if (bias_kv || cfg.zero_attn)
            && (key_padding_mask != Value::None || attn_mask != Value::None)
        {
            return self.unsupported(
                "nn.MultiheadAttention(add_bias_kv=True / add_zero_attn=True) with attn_mask or key_padding_mask",
            );
        }
        let masks = self.mha_masks(
            key_padding_mask,
            attn_mask,
            is_causal,
            need_weights,
            q.dtype,
        )?;
        let params = match self.mha_params(module) {
            Ok(p) => p,
            Err(e) => {
                masks.release(self);
                return Err(e);
            }
        };
        let recording = self.grad_enabled
            && ([query, key, value]
                .iter()
                .any(|&x| autograd::requires_grad(self, x))
                || params.iter().flatten().any(Internal::requires_grad));
        let category = if recording {
            Category::Activation
        } else {
            Category::Temporary
        };
        let dims = MhaDims {
            l,
            s,
            n,
            e: cfg.embed_dim,
            h: cfg.heads,
        };
        let dropout = if cfg.training { cfg.dropout } else { 0.0 };
        let mut held = params;
        let mut masks = masks;
        let r = self.mha_steps(
            &mut held,
            [query, key, value],
            &cfg,
            &dims,
            dropout,
            need_weights,
            recording,
            category,
            &mut masks,
        );
        for t in held.into_iter().flatten() {
            t.release(self);
        }
        self.release_dropped_storages(None);
        let (out, weights) = match r {
            Ok(r) => r,
            Err(e) => {
                masks.release(self);
                return Err(e);
            }
        };
        let out_shape = if cfg.batch_first {
            vec![n, l, cfg.embed_dim]
        } else {
            vec![l, n, cfg.embed_dim]
        };
        let out = out.expose(self, out_shape)?;
        let weights = match weights {
            None => Value::None,
            Some(w) => {
                // `add_bias_kv` / `add_zero_attn` lengthen the keys inside the call.
                let s = w.shape.last().copied().unwrap_or(s);
                let shape = if average {
                    vec![n, l, s]
                } else {
                    vec![n, cfg.heads, l, s]
                };
                let w = if average {
                    let mut mean = Internal::new(self, shape.clone(), w.dtype, w.device, category)?;
                    if recording && w.requires_grad() {
                        let edges = vec![w.edge(self)];
                        mean.node = Some(autograd::new_node(
                            self,
                            autograd::row("mean_dim").node,
                            GradFlow::Compute,
                            edges,
                            Vec::new(),
                        ));
                    }
                    w.release(self);
                    mean
                } else {
                    w
                };
                w.expose(self, shape)?
            }
        };
        // The call's locals, the masks among them, go when it returns.
        masks.release(self);
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![out, weights]))))
    }

    /// `multi_head_attention_forward` on 2-D inputs: `query`, `key`, `value` are
    /// `unsqueeze(1)`d (views; with their `UnsqueezeBackward0` nodes when they require
    /// grad), `key_padding_mask` `unsqueeze(0)`d, the batched path runs with a batch of
    /// one, and the results are `squeeze(1)`d (output) and `squeeze(0)`d (weights).
    fn multihead_unbatched(
        &mut self,
        module: ObjId,
        [query, key, value, key_padding_mask, attn_mask]: [Value; 5],
        need_weights: bool,
        average: bool,
        is_causal: bool,
    ) -> R<Value> {
        let mut views = Vec::new();
        let mut failed = None;
        for (t, dim) in [(query, 1), (key, 1), (value, 1), (key_padding_mask, 0)] {
            if t == Value::None {
                views.push(Value::None);
                continue;
            }
            // `query is key` must stay true of the views for the packed projection.
            if let Some(i) = [query, key, value].iter().position(|&x| x == t)
                && i < views.len()
            {
                let same = views[i];
                self.heap.incref(same);
                views.push(same);
                continue;
            }
            let name = self.sym("unsqueeze");
            self.heap.incref(t);
            let r = self.call_method(t, name, vec![Value::Int(dim)], Vec::new());
            self.heap.decref(t);
            match r {
                Ok(v) => views.push(v),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failed {
            self.heap.decref_all(views);
            return Err(e);
        }
        let args = vec![
            views[0],
            views[1],
            views[2],
            views[3],
            Value::Bool(need_weights),
            attn_mask,
            Value::Bool(average),
            Value::Bool(is_causal),
        ];
        let r = self.multihead_forward_of(module, &args, &[], true);
        self.heap.decref_all(views);
        let pair = r?;
        let items = match pair.obj().map(|p| self.heap.kind(p)) {
            Some(ObjKind::Tuple(items)) => items.clone(),
            _ => return Ok(pair),
        };
        let mut out = Vec::new();
        for (v, dim) in items.into_iter().zip([1, 0]) {
            if v == Value::None {
                out.push(Value::None);
                continue;
            }
            let name = self.sym("squeeze");
            self.heap.incref(v);
            let r = self.call_method(v, name, vec![Value::Int(dim)], Vec::new());
            self.heap.decref(v);
            match r {
                Ok(s) => out.push(s),
                Err(e) => {
                    self.heap.decref_all(out);
                    self.heap.decref(pair);
                    return Err(e);
                }
            }
        }
        self.heap.decref(pair);
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(out))))
    }

    /// in_proj_weight (or q/k/v_proj_weight), in_proj_bias, out_proj.weight, out_proj.bias.
    fn mha_params(&mut self, module: ObjId) -> R<Vec<Option<Internal>>> {
        let mut out = Vec::new();
        for name in [
            "in_proj_weight",
            "q_proj_weight",
            "k_proj_weight",
            "v_proj_weight",
            "in_proj_bias",
        ] {
            let s = self.sym(name);
            let present = self.attr_values(module).iter().any(|(k, _)| *k == s);
            if !present {
                out.push(None);
                continue;
            }
            let v = self.get_attr(Value::Obj(module), s)?;
            out.push(Internal::of(self, v));
            self.heap.decref(v);
        }
        let s = self.sym("out_proj");
        let proj = self.get_attr(Value::Obj(module), s)?;
        for name in ["weight", "bias"] {
            let s = self.sym(name);
            let v = self.get_attr(proj, s)?;
            out.push(Internal::of(self, v));
            self.heap.decref(v);
        }
        self.heap.decref(proj);
        for name in ["bias_k", "bias_v"] {
            let s = self.sym(name);
            let v = self.get_attr(Value::Obj(module), s)?;
            out.push(Internal::of(self, v));
            self.heap.decref(v);
        }
        Ok(out)
    }
}
