//! `nn.TransformerEncoderLayer` and `nn.TransformerEncoder` (`torch/nn/modules/transformer.py`).
//!
//! Both are Python modules in PyTorch; their memory is that of the modules they call, so
//! the forward here calls the same submodules in the same order, and every intermediate is
//! dropped when Python would drop it (at once, not at the end of the statement):
//!
//! ```text
//! norm_first=False: x = norm1(x + dropout1(self_attn(x, x, x, need_weights=False)[0]))
//!                   x = norm2(x + dropout2(linear2(dropout(activation(linear1(x))))))
//! norm_first=True:  x = x + dropout1(self_attn(norm1(x), ..., need_weights=False)[0])
//!                   x = x + dropout2(linear2(dropout(activation(linear1(norm2(x))))))
//! ```
//!
//! `TransformerEncoder` deep-copies the layer `num_layers` times into `layers` (a
//! `ModuleList`: the parameters are multiplied) and runs them in order, then `norm`.
//! The fast path (`torch._transformer_encoder_layer_fwd`, and the nested-tensor
//! conversion of padded batches), which PyTorch takes in eval mode without grad under
//! further conditions, is not modelled: the Python path runs, and the run's notes say so
//! when the basic conditions hold. Masks (`src_mask`, `src_key_padding_mask`,
//! `is_causal=True`) are refused as unsupported, as `nn.MultiheadAttention`'s are.

use super::interp::{Interpreter, R};
use super::natives::{tensor_binary, tensor_unary};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, Sym, Value};
use ruff_python_ast::Operator;

const FAST_PATH_NOTE: &str = "nn.TransformerEncoderLayer/TransformerEncoder in eval mode without grad: PyTorch may take its fused fast path (torch._transformer_encoder_layer_fwd, nested tensors for padded batches), which allocates different intermediates; the model runs the Python path.";

impl Interpreter<'_> {
    /// `nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=2048, dropout=0.1,
    /// activation='relu', layer_norm_eps=1e-5, batch_first=False, norm_first=False,
    /// bias=True)`: its submodules in PyTorch's order.
    pub(super) fn construct_encoder_layer(
        &mut self,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let (Some(Value::Int(d_model)), Some(Value::Int(nhead))) =
            (arg(self, 0, "d_model"), arg(self, 1, "nhead"))
        else {
            return self
                .error("TypeError: TransformerEncoderLayer(d_model, nhead): integers expected");
        };
        let ff = match arg(self, 2, "dim_feedforward") {
            None => 2048,
            Some(Value::Int(n)) => n,
            Some(_) => return self.error("TypeError: dim_feedforward must be an integer"),
        };
        let dropout = arg(self, 3, "dropout").unwrap_or(Value::Float(0.1));
        let activation = match arg(self, 4, "activation") {
            None => "relu".to_string(),
            Some(Value::Str(s)) => self.names.name(s).to_string(),
            Some(_) => {
                return self.unsupported(
                    "TransformerEncoderLayer(activation=<callable>); use 'relu' or 'gelu'",
                );
            }
        };
        if activation != "relu" && activation != "gelu" {
            return self.error(format!(
                "RuntimeError: activation should be relu/gelu, not {activation}"
            ));
        }
        let eps = arg(self, 5, "layer_norm_eps").unwrap_or(Value::Float(1e-5));
        let flag = |it: &mut Self, i: usize, name: &str, default: bool| -> R<bool> {
            match arg(it, i, name) {
                Some(v) => it.truth(v),
                None => Ok(default),
            }
        };
        let batch_first = flag(self, 6, "batch_first", false)?;
        let norm_first = flag(self, 7, "norm_first", false)?;
        let bias = flag(self, 8, "bias", true)?;
        let factory: Vec<(Sym, Value)> = kwargs
            .iter()
            .filter(|(k, _)| matches!(self.names.name(*k), "device" | "dtype"))
            .copied()
            .collect();
        let with = |it: &mut Self, extra: &[(&str, Value)]| -> Vec<(Sym, Value)> {
            let mut kw: Vec<(Sym, Value)> = extra.iter().map(|(n, v)| (it.sym(n), *v)).collect();
            kw.extend(factory.iter().copied());
            kw
        };
        let mut children: Vec<(&str, Value)> = Vec::new();
        let kw = with(
            self,
            &[
                ("dropout", dropout),
                ("bias", Value::Bool(bias)),
                ("batch_first", Value::Bool(batch_first)),
            ],
        );
        let attn = self.build_child(
            TorchClass::MultiheadAttention,
            &[Value::Int(d_model), Value::Int(nhead)],
            &kw,
        )?;
        children.push(("self_attn", attn));
        let kw = with(self, &[("bias", Value::Bool(bias))]);
        let linear1 = self.build_child(
            TorchClass::Linear,
            &[Value::Int(d_model), Value::Int(ff)],
            &kw,
        )?;
        children.push(("linear1", linear1));
        let drop = self.build_child(TorchClass::Dropout, &[dropout], &[])?;
        children.push(("dropout", drop));
        let linear2 = self.build_child(
            TorchClass::Linear,
            &[Value::Int(ff), Value::Int(d_model)],
            &kw,
        )?;
        children.push(("linear2", linear2));
        children.push(("norm_first", Value::Bool(norm_first)));
        let kw = with(self, &[("eps", eps), ("bias", Value::Bool(bias))]);
        for name in ["norm1", "norm2"] {
            let norm = self.build_child(TorchClass::LayerNorm, &[Value::Int(d_model)], &kw)?;
            children.push((name, norm));
        }
        for name in ["dropout1", "dropout2"] {
            let drop = self.build_child(TorchClass::Dropout, &[dropout], &[])?;
            children.push((name, drop));
        }
        let activation = Value::Str(self.names.intern(&activation));
        children.push(("activation", activation));
        children.push(("batch_first", Value::Bool(batch_first)));
        self.new_torch_instance(TorchClass::TransformerEncoderLayer, children)
    }

    /// `nn.TransformerEncoder(encoder_layer, num_layers, norm=None)`: `layers` holds
    /// `num_layers` deep copies of the layer.
    pub(super) fn construct_encoder(
        &mut self,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let (Some(layer), Some(Value::Int(count))) =
            (arg(self, 0, "encoder_layer"), arg(self, 1, "num_layers"))
        else {
            return self.error("TypeError: TransformerEncoder(encoder_layer, num_layers)");
        };
        if self.instance_torch_class(layer) != Some(TorchClass::TransformerEncoderLayer) {
            return self.unsupported(
                "TransformerEncoder of a layer other than nn.TransformerEncoderLayer",
            );
        }
        let mut copies = Vec::new();
        for _ in 0..count.max(0) {
            match self.deepcopy(layer) {
                Ok(c) => copies.push(c),
                Err(e) => {
                    self.heap.decref_all(copies);
                    return Err(e);
                }
            }
        }
        let layers = self.new_module_list(TorchClass::ModuleList, &copies);
        self.heap.decref_all(copies);
        let layers = layers?;
        let norm = arg(self, 2, "norm").unwrap_or(Value::None);
        self.heap.incref(norm);
        self.new_torch_instance(
            TorchClass::TransformerEncoder,
            vec![
                ("layers", Value::Obj(layers)),
                ("num_layers", Value::Int(count)),
                ("norm", norm),
            ],
        )
    }

    /// A submodule built as `nn.X(*args, **kwargs)` would build it.
    fn build_child(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Value> {
        let Value::Obj(class) = self.torch_classes.id(kind) else {
            return self.error("internal: missing torch class");
        };
        match self.construct_torch(class, args, kwargs)? {
            Some(v) => Ok(v),
            None => self.error("internal: the class is not constructed natively"),
        }
    }

    /// `layer(src, src_mask=None, src_key_padding_mask=None, is_causal=False)` and
    /// `encoder(src, mask=None, src_key_padding_mask=None, is_causal=None)`.
    pub(super) fn transformer_forward(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Value> {
        let (name, mask) = if kind == TorchClass::TransformerEncoder {
            ("TransformerEncoder.forward", "mask")
        } else {
            ("TransformerEncoderLayer.forward", "src_mask")
        };
        super::keywords::check(
            self,
            name,
            Some(&["src", mask, "src_key_padding_mask", "is_causal"]),
            kwargs,
        )?;
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let Some(src) = arg(self, 0, "src") else {
            return self
                .error("TypeError: forward() missing 1 required positional argument: 'src'");
        };
        let given_mask = arg(self, 1, mask).unwrap_or(Value::None);
        let given_kpm = arg(self, 2, "src_key_padding_mask").unwrap_or(Value::None);
        let is_causal = match arg(self, 3, "is_causal") {
            None | Some(Value::None) => None,
            Some(v) => Some(self.truth(v)?),
        };
        let Some(src_data) = self.tensor_data(src) else {
            return self.error("TypeError: src must be a Tensor");
        };
        // `_canonical_mask` of both (the key padding mask first), held by the forward's
        // locals until it returns.
        let kpm = self.canonical_mask_value(given_kpm, "src_key_padding_mask", src_data.dtype)?;
        let mask_value = match self.canonical_mask_value(given_mask, mask, src_data.dtype) {
            Ok(m) => m,
            Err(e) => {
                self.heap.decref(kpm);
                return Err(e);
            }
        };
        let masks = LayerMasks {
            mask: mask_value,
            key_padding: kpm,
            is_causal: is_causal.unwrap_or(false),
        };
        let r = self.transformer_forward_masked(module, kind, src, &masks, is_causal);
        self.heap.decref(masks.mask);
        self.heap.decref(masks.key_padding);
        self.release_dropped_storages(None);
        r
    }

    /// [`Interpreter::transformer_forward`] once the masks are canonical.
    fn transformer_forward_masked(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        src: Value,
        masks: &LayerMasks,
        is_causal: Option<bool>,
    ) -> R<Value> {
        if !self.module_training(module)?
            && !self.grad_enabled
            && !self.torch_classes.transformer_noted
        {
            self.torch_classes.transformer_noted = true;
            self.recorder.approximation(FAST_PATH_NOTE);
        }
        if kind == TorchClass::TransformerEncoderLayer {
            self.heap.incref(src);
            return self.encoder_layer_forward(module, src, masks);
        }
        let layers = self.child(module, "layers")?;
        let items: Vec<Value> = self
            .attr_values(match layers {
                Value::Obj(id) => id,
                _ => module,
            })
            .into_iter()
            .map(|(_, v)| v)
            .filter(|&v| self.instance_torch_class(v) == Some(TorchClass::TransformerEncoderLayer))
            .collect();
        // `is_causal = _detect_is_causal_mask(mask, is_causal, seq_len)`, the sequence length
        // read as the first layer's attention lays it out.
        let causal = self.encoder_is_causal(src, items.first().copied(), masks.mask, is_causal);
        let causal = match causal {
            Ok(c) => c,
            Err(e) => {
                self.heap.decref(layers);
                return Err(e);
            }
        };
        let masks = &LayerMasks {
            mask: masks.mask,
            key_padding: masks.key_padding,
            is_causal: causal,
        };
        self.heap.incref(src);
        let mut x = src;
        for layer in items {
            let Value::Obj(id) = layer else { continue };
            self.heap.incref(layer);
            let r = self.encoder_layer_forward(id, x, masks);
            self.heap.decref(layer);
            x = match r {
                Ok(v) => v,
                Err(e) => {
                    self.heap.decref(layers);
                    return Err(e);
                }
            };
        }
        self.heap.decref(layers);
        let norm = self.child(module, "norm")?;
        if norm == Value::None {
            return Ok(x);
        }
        let r = self.call(norm, vec![x], Vec::new());
        self.release_dropped_storages(None);
        r
    }

    /// `_detect_is_causal_mask` over `src`'s sequence length (`batch_first` read from the
    /// first layer's `self_attn`).
    fn encoder_is_causal(
        &mut self,
        src: Value,
        first_layer: Option<Value>,
        mask: Value,
        is_causal: Option<bool>,
    ) -> R<bool> {
        let batch_first = match first_layer {
            Some(Value::Obj(layer)) => {
                let attn = self.child(layer, "self_attn")?;
                let s = self.sym("batch_first");
                let v = self.get_attr(attn, s);
                self.heap.decref(attn);
                let v = v?;
                self.truth(v)?
            }
            _ => false,
        };
        let seq_len = self
            .tensor_data(src)
            .and_then(|t| t.shape.get(usize::from(batch_first)).copied())
            .unwrap_or(0);
        self.detect_is_causal_mask(mask, is_causal, seq_len)
    }

    fn child(&mut self, module: ObjId, name: &str) -> R<Value> {
        let s = self.sym(name);
        self.get_attr(Value::Obj(module), s)
    }

    /// Calls the submodule `name` on `x` (owned); `x` is dropped when the call returns.
    fn call_child(&mut self, module: ObjId, name: &str, x: Value) -> R<Value> {
        let m = self.child(module, name)?;
        let r = self.call(m, vec![x], Vec::new());
        self.heap.decref(m);
        self.release_dropped_storages(None);
        r
    }

    /// `a + b` (both owned, dropped after).
    fn residual_add(&mut self, a: Value, b: Value) -> R<Value> {
        let r = tensor_binary(self, Operator::Add, a, b, false);
        self.heap.decref(a);
        self.heap.decref(b);
        self.release_dropped_storages(None);
        r
    }

    fn encoder_layer_forward(&mut self, layer: ObjId, src: Value, masks: &LayerMasks) -> R<Value> {
        let norm_first = {
            let v = self.child(layer, "norm_first")?;
            self.truth(v)?
        };
        if norm_first {
            self.heap.incref(src);
            let normed = self.call_child(layer, "norm1", src)?;
            let sa = self.self_attention_block(layer, normed, masks)?;
            let x = self.residual_add(src, sa)?;
            self.heap.incref(x);
            let normed = self.call_child(layer, "norm2", x)?;
            let ff = self.feed_forward_block(layer, normed)?;
            self.residual_add(x, ff)
        } else {
            self.heap.incref(src);
            let sa = self.self_attention_block(layer, src, masks)?;
            let x = self.residual_add(src, sa)?;
            let x = self.call_child(layer, "norm1", x)?;
            self.heap.incref(x);
            let ff = self.feed_forward_block(layer, x)?;
            let x = self.residual_add(x, ff)?;
            self.call_child(layer, "norm2", x)
        }
    }

    /// `dropout1(self_attn(x, x, x, attn_mask=..., key_padding_mask=...,
    /// need_weights=False, is_causal=...)[0])`; `x` owned.
    fn self_attention_block(&mut self, layer: ObjId, x: Value, masks: &LayerMasks) -> R<Value> {
        let attn = self.child(layer, "self_attn")?;
        self.heap.incref(x);
        self.heap.incref(x);
        self.heap.incref(masks.mask);
        self.heap.incref(masks.key_padding);
        let kw = vec![
            (self.sym("attn_mask"), masks.mask),
            (self.sym("key_padding_mask"), masks.key_padding),
            (self.sym("need_weights"), Value::Bool(false)),
            (self.sym("is_causal"), Value::Bool(masks.is_causal)),
        ];
        let r = self.call(attn, vec![x, x, x], kw);
        self.heap.decref(attn);
        self.release_dropped_storages(None);
        let pair = r?;
        let first = self
            .iterable_items(pair)?
            .first()
            .copied()
            .unwrap_or(Value::None);
        self.heap.incref(first);
        self.heap.decref(pair);
        self.call_child(layer, "dropout1", first)
    }

    /// `dropout2(linear2(dropout(activation(linear1(x)))))`; `x` owned.
    fn feed_forward_block(&mut self, layer: ObjId, x: Value) -> R<Value> {
        let h = self.call_child(layer, "linear1", x)?;
        let act = self.child(layer, "activation")?;
        let op = match act {
            Value::Str(s) if self.names.name(s) == "gelu" => "gelu",
            _ => "relu",
        };
        let a = match h {
            Value::Obj(id) => tensor_unary(self, id, op),
            _ => self.error("TypeError: expected a tensor"),
        };
        self.heap.decref(h);
        self.release_dropped_storages(None);
        let a = a?;
        let d = self.call_child(layer, "dropout", a)?;
        let y = self.call_child(layer, "linear2", d)?;
        self.call_child(layer, "dropout2", y)
    }
}

/// The canonical masks a transformer forward hands to its layers (borrowed values).
struct LayerMasks {
    mask: Value,
    key_padding: Value,
    is_causal: bool,
}
