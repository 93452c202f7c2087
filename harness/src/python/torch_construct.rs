//! Calling a torch class the model constructs natively (`nn.Linear(4, 8)`,
//! `optim.Adam(params)`): checks its keywords and builds the instance with the attributes
//! PyTorch's `__init__` sets (the class registry is `torchlib.rs`).

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, Sym, Value};

impl Interpreter<'_> {
    /// Calls a torch class (`nn.Linear(4, 8)`, `optim.Adam(params)`): `None` when `class` is
    /// not one the model constructs natively.
    pub(super) fn construct_torch(
        &mut self,
        class: ObjId,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Option<Value>> {
        let Some(kind) = self.torch_classes.kind_of(class) else {
            return Ok(None);
        };
        if !matches!(
            kind,
            TorchClass::Function
                | TorchClass::FunctionCtx
                | TorchClass::Super
                | TorchClass::RemovableHandle
                | TorchClass::BackwardHook
                // `nn.Identity(*args, **kwargs)` ignores its arguments.
                | TorchClass::Identity
        ) {
            let name = self.class_name(class);
            super::keywords::check(self, &name, Some(super::keywords::for_class(kind)), kwargs)?;
        }
        let kw = |it: &Self, name: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == name)
                .map(|(_, v)| *v)
        };
        let v = match kind {
            TorchClass::Linear => {
                let (Some(Value::Int(fan_in)), Some(Value::Int(fan_out))) =
                    (args.first().copied(), args.get(1).copied())
                else {
                    return self.error("TypeError: Linear(in_features, out_features)");
                };
                let has_bias = match kw(self, "bias").or(args.get(2).copied()) {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                let (device, dtype) = self.factory_kwargs(kwargs);
                let w = self.new_parameter(vec![fan_out, fan_in], dtype, device)?;
                let b = if has_bias {
                    self.new_parameter(vec![fan_out], dtype, device)?
                } else {
                    Value::None
                };
                self.new_torch_instance(kind, vec![("weight", w), ("bias", b)])?
            }
            TorchClass::MseLoss | TorchClass::Module | TorchClass::Identity => {
                self.new_torch_instance(kind, vec![])?
            }
            TorchClass::ReLU => {
                let inplace = match kw(self, "inplace").or(args.first().copied()) {
                    Some(v) => self.truth(v)?,
                    None => false,
                };
                self.new_torch_instance(kind, vec![("inplace", Value::Bool(inplace))])?
            }
            TorchClass::Dropout => {
                let p = match kw(self, "p").or(args.first().copied()) {
                    Some(v) => v,
                    None => Value::Float(0.5),
                };
                let Some(prob) = super::natives::float_of(p) else {
                    return self.error("TypeError: Dropout(p): p must be a number");
                };
                super::dropout::check_probability(self, prob)?;
                let inplace = match kw(self, "inplace").or(args.get(1).copied()) {
                    Some(v) => self.truth(v)?,
                    None => false,
                };
                self.new_torch_instance(
                    kind,
                    vec![("p", Value::Float(prob)), ("inplace", Value::Bool(inplace))],
                )?
            }
            TorchClass::CrossEntropyLoss => {
                let reduction = kw(self, "reduction").unwrap_or(Value::None);
                let weight = kw(self, "weight").unwrap_or(Value::None);
                self.heap.incref(reduction);
                self.heap.incref(weight);
                self.new_torch_instance(kind, vec![("reduction", reduction), ("weight", weight)])?
            }
            TorchClass::Embedding => {
                let (Some(Value::Int(count)), Some(Value::Int(dim))) =
                    (args.first().copied(), args.get(1).copied())
                else {
                    return self.error("TypeError: Embedding(num_embeddings, embedding_dim)");
                };
                let (device, dtype) = self.factory_kwargs(kwargs);
                let w = self.new_parameter(vec![count, dim], dtype, device)?;
                self.new_torch_instance(kind, vec![("weight", w)])?
            }
            TorchClass::Lstm | TorchClass::Gru | TorchClass::Rnn => {
                self.construct_recurrent(kind, args, kwargs)?
            }
            TorchClass::LstmCell | TorchClass::GruCell | TorchClass::RnnCell => {
                self.construct_recurrent_cell(kind, args, kwargs)?
            }
            TorchClass::Sequential => {
                let names: Vec<String> = (0..args.len()).map(|i| i.to_string()).collect();
                let mut attrs = Vec::new();
                for (i, &m) in args.iter().enumerate() {
                    self.heap.incref(m);
                    attrs.push((names[i].as_str(), m));
                }
                self.new_torch_instance(kind, attrs)?
            }
            TorchClass::P2POp => {
                let [op, tensor, peer, ..] = args else {
                    return self.error("TypeError: P2POp(op, tensor, peer)");
                };
                for v in [*op, *tensor, *peer] {
                    self.heap.incref(v);
                }
                self.new_torch_instance(
                    kind,
                    vec![("op", *op), ("tensor", *tensor), ("peer", *peer)],
                )?
            }
            k @ (TorchClass::Sgd
            | TorchClass::Adam
            | TorchClass::AdamW
            | TorchClass::RmsProp
            | TorchClass::Adagrad) => self.construct_optimizer(k, args, kwargs)?,
            k if k.is_scheduler() => self.construct_scheduler(k, args, kwargs)?,
            TorchClass::ModuleList => {
                let items = match kw(self, "modules").or(args.first().copied()) {
                    None | Some(Value::None) => Vec::new(),
                    Some(v) => self.iterable_items(v)?,
                };
                self.new_module_list(kind, &items)?
            }
            TorchClass::ModuleDict => {
                let source = kw(self, "modules").or(args.first().copied());
                self.new_module_dict(source.filter(|v| *v != Value::None))?
            }
            TorchClass::LayerNorm | TorchClass::BatchNorm1d | TorchClass::BatchNorm2d => {
                self.construct_norm(kind, args, kwargs)?
            }
            TorchClass::Conv1d
            | TorchClass::Conv2d
            | TorchClass::MaxPool2d
            | TorchClass::AdaptiveAvgPool2d
            | TorchClass::Flatten => self.construct_spatial(kind, args, kwargs)?,
            TorchClass::L1Loss
            | TorchClass::NllLoss
            | TorchClass::BceLoss
            | TorchClass::BceWithLogitsLoss
            | TorchClass::SmoothL1Loss => self.new_loss_module(kind, kwargs)?,
            TorchClass::GradScaler => self.construct_grad_scaler(args, kwargs)?,
            TorchClass::KlDivLoss | TorchClass::Softplus => {
                self.construct_more_module(kind, args, kwargs)?
            }
            TorchClass::GroupNorm => self.construct_group_norm(args, kwargs)?,
            TorchClass::LeakyRelu
            | TorchClass::Silu
            | TorchClass::Elu
            | TorchClass::Hardtanh
            | TorchClass::Relu6
            | TorchClass::Gelu
            | TorchClass::Tanh
            | TorchClass::Sigmoid
            | TorchClass::Mish
            | TorchClass::Hardswish
            | TorchClass::Softmax
            | TorchClass::LogSoftmax
            | TorchClass::Softmin => self.construct_activation(kind, args, kwargs)?,
            TorchClass::Unflatten => self.construct_unflatten(args, kwargs)?,
            TorchClass::DistributedDataParallel => self.construct_ddp(args, kwargs)?,
            TorchClass::Dataset
            | TorchClass::IterableDataset
            | TorchClass::TensorDataset
            | TorchClass::Subset
            | TorchClass::DataLoader => self.construct_data(kind, args, kwargs)?,
            TorchClass::MultiheadAttention => self.construct_multihead_attention(args, kwargs)?,
            TorchClass::TransformerEncoderLayer => self.construct_encoder_layer(args, kwargs)?,
            TorchClass::TransformerEncoder => self.construct_encoder(args, kwargs)?,
            TorchClass::ParameterList | TorchClass::ParameterDict => {
                self.construct_parameter_container(kind, args, kwargs)?
            }
            TorchClass::Function
            | TorchClass::FunctionCtx
            | TorchClass::Super
            | TorchClass::RemovableHandle
            | TorchClass::BackwardHook
            | TorchClass::DataLoaderIter => {
                return Ok(None);
            }
            // The schedulers, listed once in `TorchClass::is_scheduler`, were taken by
            // the guarded arm above; nothing else reaches here.
            _ => return Ok(None),
        };
        Ok(Some(Value::Obj(v)))
    }
}
