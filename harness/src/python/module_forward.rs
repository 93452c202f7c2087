//! Calling a module: native layers' forward passes (`nn.Linear`, the losses) and user
//! subclasses' `forward`, with the functional forms they share.

use super::amp::CastPolicy;
use super::autograd::{self, Save};
use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, GradFlow};

impl Interpreter<'_> {
    /// `module(x)`: a native layer's forward, or the subclass's `forward`.
    pub(super) fn call_module(
        &mut self,
        module: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let ObjKind::Instance { class, .. } = self.heap.kind(module) else {
            return self.error("TypeError: object is not callable");
        };
        let class = *class;
        if self.torch_class(class) == Some(TorchClass::Function) {
            // `Function.__call__` (`torch/autograd/function.py`).
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return self.error("RuntimeError: Legacy autograd function with non-static forward method is deprecated. Please use new-style autograd function with static forward method. (Example: https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)");
        }
        self.call_module_with_hooks(module, args, kwargs, |it, args, kwargs| {
            let forward = it.names.intern_static("forward");
            if let Some(f) = it.class_lookup(class, forward) {
                it.heap.incref(f);
                it.heap.incref(Value::Obj(module));
                let mut all = vec![Value::Obj(module)];
                all.extend(args);
                let r = it.call(f, all, kwargs);
                it.heap.decref(f);
                return r;
            }
            let own = it.torch_class(class);
            if let Some(
                kind @ (TorchClass::MultiheadAttention
                | TorchClass::TransformerEncoderLayer
                | TorchClass::TransformerEncoder),
            ) = own
            {
                let result = if kind == TorchClass::MultiheadAttention {
                    it.multihead_forward(module, &args, &kwargs)
                } else {
                    it.transformer_forward(module, kind, &args, &kwargs)
                };
                it.heap.decref_all(args);
                it.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                return result;
            }
            let result = it.native_forward(module, class, &args);
            it.heap.decref_all(args);
            it.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            result
        })
    }

    pub(super) fn native_forward(
        &mut self,
        module: ObjId,
        class: ObjId,
        args: &[Value],
    ) -> R<Value> {
        match self.torch_class(class) {
            Some(TorchClass::Linear) => {
                let w = self.sym("weight");
                let b = self.sym("bias");
                let weight = self.get_attr(Value::Obj(module), w)?;
                let bias = self.get_attr(Value::Obj(module), b)?;
                let r = match args.first() {
                    Some(&x) => self.linear(x, weight, bias),
                    None => self.error("TypeError: forward() missing input"),
                };
                self.heap.decref(weight);
                self.heap.decref(bias);
                r
            }
            Some(TorchClass::ReLU) => match args.first() {
                Some(&x) if self.module_flag(module, "inplace")? => {
                    self.activation_in_place(x, "relu_")
                }
                Some(&Value::Obj(x)) => super::natives::tensor_unary(self, x, "relu"),
                _ => self.error("TypeError: ReLU expects a tensor"),
            },
            Some(TorchClass::Identity) => match args.first() {
                Some(&x) => {
                    self.heap.incref(x);
                    Ok(x)
                }
                None => self.error("TypeError: forward() missing input"),
            },
            Some(TorchClass::Dropout) => {
                let (p, training) = (self.sym("p"), self.sym("training"));
                let prob = self.get_attr(Value::Obj(module), p)?;
                let prob = super::natives::float_of(prob).unwrap_or(0.5);
                // `training` is set by `train()`/`eval()`; a new module trains.
                let training = match self
                    .attr_values(module)
                    .into_iter()
                    .find(|(k, _)| *k == training)
                {
                    Some((_, v)) => self.truth(v)?,
                    None => true,
                };
                let inplace = self.module_flag(module, "inplace")?;
                match args.first() {
                    Some(&x) if inplace => self.dropout_in_place(x, prob, training),
                    Some(&x) => self.dropout(x, prob, training),
                    None => self.error("TypeError: forward() missing input"),
                }
            }
            Some(TorchClass::MseLoss) => match args {
                [a, b] => self.mse_loss(*a, *b),
                _ => self.error("TypeError: MSELoss expects input and target"),
            },
            Some(TorchClass::CrossEntropyLoss) => match args {
                [a, b] => {
                    let r = self.sym("reduction");
                    let w = self.sym("weight");
                    let reduction = self.get_attr(Value::Obj(module), r)?;
                    let weight = self.get_attr(Value::Obj(module), w)?;
                    let parsed = self.reduction_of(reduction);
                    let result = match parsed {
                        Ok(red) => self.cross_entropy(*a, *b, weight, red),
                        Err(e) => Err(e),
                    };
                    self.heap.decref(reduction);
                    self.heap.decref(weight);
                    result
                }
                _ => self.error("TypeError: CrossEntropyLoss expects input and target"),
            },
            Some(TorchClass::Embedding) => {
                let w = self.sym("weight");
                let weight = self.get_attr(Value::Obj(module), w)?;
                let r = match args.first() {
                    Some(&x) => self.embedding(x, weight),
                    None => self.error("TypeError: forward() missing input"),
                };
                self.heap.decref(weight);
                r
            }
            Some(TorchClass::Lstm) => {
                self.recurrent_forward(module, super::recurrent::CellKind::Lstm, args)
            }
            Some(kind @ (TorchClass::LstmCell | TorchClass::GruCell | TorchClass::RnnCell)) => {
                self.recurrent_cell_forward(module, kind, args)
            }
            Some(TorchClass::Gru) => {
                self.recurrent_forward(module, super::recurrent::CellKind::Gru, args)
            }
            Some(TorchClass::Rnn) => {
                let kind = self.rnn_nonlinearity(module)?;
                self.recurrent_forward(module, kind, args)
            }
            Some(TorchClass::Sequential) => {
                let mut x = match args.first() {
                    Some(&x) => x,
                    None => return self.error("TypeError: forward() missing input"),
                };
                self.heap.incref(x);
                for (_, m) in self.attr_values(module) {
                    if self.instance_torch_class(m).is_none_or(|k| !k.is_module()) {
                        continue;
                    }
                    self.heap.incref(m);
                    let r = self.call(m, vec![x], Vec::new());
                    self.heap.decref(m);
                    x = r?;
                }
                Ok(x)
            }
            Some(
                kind @ (TorchClass::LayerNorm | TorchClass::BatchNorm1d | TorchClass::BatchNorm2d),
            ) => self.norm_forward(module, kind, args),
            Some(
                kind @ (TorchClass::Conv1d
                | TorchClass::Conv2d
                | TorchClass::MaxPool2d
                | TorchClass::AdaptiveAvgPool2d
                | TorchClass::Flatten),
            ) => self.spatial_forward(module, kind, args),
            Some(
                kind @ (TorchClass::L1Loss
                | TorchClass::NllLoss
                | TorchClass::BceLoss
                | TorchClass::BceWithLogitsLoss
                | TorchClass::SmoothL1Loss),
            ) => self.loss_module_forward(module, kind, args),
            Some(kind @ (TorchClass::KlDivLoss | TorchClass::Softplus)) => {
                self.more_module_forward(module, kind, args)
            }
            Some(TorchClass::GroupNorm) => self.group_norm_forward(module, args),
            Some(TorchClass::Unflatten) => self.unflatten_forward(module, args),
            Some(TorchClass::DistributedDataParallel) => self.ddp_forward(module, args),
            Some(kind) if kind.is_activation_module() => {
                self.activation_forward(module, kind, args)
            }
            _ => self.error("NotImplementedError: Module has no forward"),
        }
    }

    /// `F.linear` with a bias: `AddmmBackward0` saves the input (when the weight needs a
    /// gradient) and the weight (when the input needs one); without one see
    /// `linear_without_bias`. A 3-d input goes through a 2-d view, and the
    /// result is a view of the 2-d product, as `at::linear` does.
    /// `F.linear` (`addmm`): on autocast's lower-precision list.
    pub(super) fn linear(&mut self, x: Value, weight: Value, bias: Value) -> R<Value> {
        let cast = self.autocast_inputs(&[x, weight, bias], CastPolicy::LowerPrecision)?;
        let r = self.linear_as_given(cast[0], cast[1], cast[2]);
        self.heap.decref_all(cast);
        r
    }

    fn linear_as_given(&mut self, x: Value, weight: Value, bias: Value) -> R<Value> {
        let (Some(xt), Some(wt)) = (self.tensor_data(x), self.tensor_data(weight)) else {
            return self.error("TypeError: linear expects tensors");
        };
        let k = *xt.shape.last().unwrap_or(&0);
        if wt.shape.len() != 2 || wt.shape[1] != k {
            // As `at::linear` reports it: the input flattened to 2-d times the weight transposed.
            let rows: i64 = xt.shape[..xt.shape.len().saturating_sub(1)]
                .iter()
                .product();
            let weight_t: Vec<i64> = wt.shape.iter().rev().copied().collect();
            return self.error(format!(
                "RuntimeError: {}",
                crate::torch::mat_mismatch(&[rows, k], &weight_t)
            ));
        }
        if bias == Value::None {
            return self.linear_without_bias(x, weight);
        }
        let rows: i64 = xt.shape[..xt.shape.len().saturating_sub(1)]
            .iter()
            .product();
        let out_features = wt.shape[0];
        let recorded = self.grad_enabled
            && [x, weight, bias]
                .iter()
                .any(|&v| autograd::requires_grad(self, v));
        let category = if recorded {
            Category::Activation
        } else {
            Category::Temporary
        };
        let mut inputs = vec![x, weight];
        if bias != Value::None {
            inputs.push(bias);
        }
        if xt.shape.len() <= 2 {
            let mut shape = xt.shape.clone();
            if let Some(last) = shape.last_mut() {
                *last = out_features;
            }
            let out = self.new_tensor_as(shape, xt.dtype, xt.device, None, category)?;
            autograd::record(
                self,
                out,
                super::autograd::row("linear").node,
                GradFlow::Compute,
                &inputs,
                &[Save::InputIf(0, 1), Save::InputIf(1, 0)],
            );
            return Ok(out);
        }
        let flat = self.new_tensor_as(
            vec![rows, out_features],
            xt.dtype,
            xt.device,
            None,
            category,
        )?;
        autograd::record(
            self,
            flat,
            super::autograd::row("linear").node,
            GradFlow::Compute,
            &inputs,
            &[Save::InputIf(0, 1), Save::InputIf(1, 0)],
        );
        let mut shape = xt.shape.clone();
        if let Some(last) = shape.last_mut() {
            *last = out_features;
        }
        let Value::Obj(flat_id) = flat else {
            return Ok(flat);
        };
        let storage = self.tensor_data(flat).map(|t| t.storage);
        let out = match storage {
            Some(st) => self.new_tensor_as(
                shape,
                xt.dtype,
                xt.device,
                Some((st, Some(flat_id))),
                category,
            )?,
            None => return Ok(flat),
        };
        autograd::record(
            self,
            out,
            super::autograd::row("view").node,
            GradFlow::PassThrough,
            &[flat],
            &[],
        );
        self.heap.decref(flat);
        Ok(out)
    }

    /// `reduction=`: `None` (not given) means `'mean'`.
    pub(super) fn reduction_of(&self, v: Value) -> R<super::layers::Reduction> {
        match v {
            Value::None => Ok(super::layers::Reduction::Mean),
            Value::Str(s) => match super::layers::Reduction::parse(self.names.name(s)) {
                Some(r) => Ok(r),
                None => self.error(format!(
                    "ValueError: {} is not a valid value for reduction",
                    self.names.name(s)
                )),
            },
            _ => self.error("TypeError: reduction must be a string"),
        }
    }

    /// `F.mse_loss`: on autocast's float32 list.
    pub(super) fn mse_loss(&mut self, a: Value, b: Value) -> R<Value> {
        let cast = self.autocast_inputs(&[a, b], CastPolicy::Float32)?;
        let r = self.mse_loss_as_given(cast[0], cast[1]);
        self.heap.decref_all(cast);
        r
    }

    fn mse_loss_as_given(&mut self, a: Value, b: Value) -> R<Value> {
        let Some(t) = self.tensor_data(a) else {
            return self.error("TypeError: mse_loss expects tensors");
        };
        let out = self.new_tensor_as(vec![], t.dtype, t.device, None, Category::Activation)?;
        autograd::record(
            self,
            out,
            super::autograd::row("mse_loss").node,
            GradFlow::Compute,
            &[a, b],
            &[Save::Input(0), Save::Input(1)],
        );
        Ok(out)
    }

    pub(super) fn tensor_data(&self, v: Value) -> Option<crate::torch::TensorData> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => Some(t.clone()),
                _ => None,
            },
            _ => None,
        }
    }
}
