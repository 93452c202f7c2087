//! The Python-level parts of torch the workload model provides as classes: `nn.Module`
//! and its layers, `autograd.Function`, optimizers and `torch.distributed` point-to-point.
//!
//! Each is a class object created once when the interpreter starts (like torch's classes,
//! it exists before the workload runs and is never counted). Instances are ordinary
//! instances, so user subclasses work and the collector sees their attributes; the native
//! behaviour (a layer's forward, `optimizer.step`) is looked up by class.

use super::autograd::{self, BackwardOptions, Save};
use super::interp::{Interpreter, R};
use crate::heap::{Attrs, Class, ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, DeviceKind, Dtype, GradFlow, GradNode, InputEdge, Saved};

/// The torch classes the model implements natively.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TorchClass {
    Module,
    Linear,
    ReLU,
    Dropout,
    Identity,
    Sequential,
    MseLoss,
    Embedding,
    Lstm,
    Gru,
    CrossEntropyLoss,
    Function,
    FunctionCtx,
    Super,
    P2POp,
    Sgd,
    Adam,
    AdamW,
    RemovableHandle,
    LambdaLr,
    StepLr,
    MultiStepLr,
    CosineAnnealingLr,
    OneCycleLr,
    ReduceLrOnPlateau,
}

const ALL: &[(TorchClass, &str, Option<TorchClass>)] = &[
    (TorchClass::Module, "Module", None),
    (TorchClass::Linear, "Linear", Some(TorchClass::Module)),
    (TorchClass::ReLU, "ReLU", Some(TorchClass::Module)),
    (TorchClass::Dropout, "Dropout", Some(TorchClass::Module)),
    (TorchClass::Identity, "Identity", Some(TorchClass::Module)),
    (
        TorchClass::Sequential,
        "Sequential",
        Some(TorchClass::Module),
    ),
    (TorchClass::MseLoss, "MSELoss", Some(TorchClass::Module)),
    (TorchClass::Embedding, "Embedding", Some(TorchClass::Module)),
    (TorchClass::Lstm, "LSTM", Some(TorchClass::Module)),
    (TorchClass::Gru, "GRU", Some(TorchClass::Module)),
    (
        TorchClass::CrossEntropyLoss,
        "CrossEntropyLoss",
        Some(TorchClass::Module),
    ),
    (TorchClass::Function, "Function", None),
    (TorchClass::FunctionCtx, "BackwardCFunction", None),
    (TorchClass::Super, "super", None),
    (TorchClass::P2POp, "P2POp", None),
    (TorchClass::Sgd, "SGD", None),
    (TorchClass::Adam, "Adam", None),
    (TorchClass::AdamW, "AdamW", None),
    (TorchClass::RemovableHandle, "RemovableHandle", None),
    (TorchClass::LambdaLr, "LambdaLR", None),
    (TorchClass::StepLr, "StepLR", None),
    (TorchClass::MultiStepLr, "MultiStepLR", None),
    (TorchClass::CosineAnnealingLr, "CosineAnnealingLR", None),
    (TorchClass::OneCycleLr, "OneCycleLR", None),
    (TorchClass::ReduceLrOnPlateau, "ReduceLROnPlateau", None),
];

impl TorchClass {
    /// A class of `torch.optim.lr_scheduler`.
    pub(super) fn scheduler_named(name: &str) -> Option<TorchClass> {
        ALL.iter()
            .find(|(k, n, _)| *n == name && k.is_scheduler())
            .map(|(k, _, _)| *k)
    }

    pub(super) fn is_scheduler(self) -> bool {
        matches!(
            self,
            TorchClass::LambdaLr
                | TorchClass::StepLr
                | TorchClass::MultiStepLr
                | TorchClass::CosineAnnealingLr
                | TorchClass::OneCycleLr
                | TorchClass::ReduceLrOnPlateau
        )
    }

    /// An `nn.Module` the model implements natively (user subclasses of `nn.Module`
    /// report `Module`).
    pub(super) fn is_module(self) -> bool {
        matches!(
            self,
            TorchClass::Module
                | TorchClass::Linear
                | TorchClass::ReLU
                | TorchClass::Dropout
                | TorchClass::Identity
                | TorchClass::Sequential
                | TorchClass::MseLoss
                | TorchClass::Embedding
                | TorchClass::Lstm
                | TorchClass::Gru
                | TorchClass::CrossEntropyLoss
        )
    }
}

/// The class objects, created uncounted at start.
#[derive(Default)]
pub(super) struct TorchClasses {
    ids: Vec<(TorchClass, ObjId)>,
    /// The recurrent layers' approximation note was added to the timeline.
    pub(super) recurrent_noted: bool,
    /// PyTorch's `create_graph=True` warning was given.
    pub(super) create_graph_warned: bool,
    /// The last hook id handed out (`RemovableHandle.next_id`).
    pub(super) next_hook_id: i64,
}

impl TorchClasses {
    pub(super) fn create(heap: &mut crate::heap::Heap, names: &mut super::Interner) -> Self {
        let mut ids: Vec<(TorchClass, ObjId)> = Vec::new();
        for &(kind, name, base) in ALL {
            let base = base.and_then(|b| ids.iter().find(|(k, _)| *k == b).map(|(_, id)| *id));
            if let Some(b) = base {
                heap.incref(Value::Obj(b));
            }
            let id = heap.insert_uncounted(ObjKind::Class(Class {
                name: names.intern(name),
                base,
                attrs: Vec::new(),
            }));
            ids.push((kind, id));
        }
        TorchClasses {
            ids,
            recurrent_noted: false,
            create_graph_warned: false,
            next_hook_id: 0,
        }
    }

    pub(super) fn id(&self, kind: TorchClass) -> Value {
        self.ids
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(Value::None, |(_, id)| Value::Obj(*id))
    }

    fn kind_of(&self, class: ObjId) -> Option<TorchClass> {
        self.ids
            .iter()
            .find(|(_, id)| *id == class)
            .map(|(k, _)| *k)
    }
}

impl Interpreter<'_> {
    /// The nearest torch class in `class`'s chain.
    pub(super) fn torch_class(&self, class: ObjId) -> Option<TorchClass> {
        let mut cur = Some(class);
        while let Some(c) = cur {
            if let Some(k) = self.torch_classes.kind_of(c) {
                return Some(k);
            }
            cur = match self.heap.kind(c) {
                ObjKind::Class(cls) => cls.base,
                _ => None,
            };
        }
        None
    }

    pub(super) fn instance_torch_class(&self, v: Value) -> Option<TorchClass> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => self.torch_class(*class),
                _ => None,
            },
            _ => None,
        }
    }

    fn sym(&mut self, s: &str) -> Sym {
        self.names.intern(s)
    }

    /// A new instance of a torch class with attributes (owned values).
    pub(super) fn new_torch_instance(
        &mut self,
        kind: TorchClass,
        attrs: Vec<(&str, Value)>,
    ) -> R<ObjId> {
        let class = self.torch_classes.id(kind);
        self.heap.incref(class);
        let Value::Obj(class) = class else {
            return self.error("internal: missing torch class");
        };
        let a = if self.heap.profile.instance_dict_object {
            Attrs::Dict(None)
        } else {
            Attrs::Inline(Vec::new())
        };
        let inst = self.alloc(ObjKind::Instance { class, attrs: a });
        for (name, v) in attrs {
            let s = self.sym(name);
            self.set_attr(Value::Obj(inst), s, v)?;
        }
        Ok(inst)
    }

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
            TorchClass::ReLU | TorchClass::MseLoss | TorchClass::Module | TorchClass::Identity => {
                self.new_torch_instance(kind, vec![])?
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
                if let Some(v) = kw(self, "inplace").or(args.get(1).copied())
                    && self.truth(v)?
                {
                    return self.unsupported(
                        "nn.Dropout(inplace=True) (its noise tensor is not modelled); use inplace=False",
                    );
                }
                self.new_torch_instance(kind, vec![("p", Value::Float(prob))])?
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
            TorchClass::Lstm | TorchClass::Gru => self.construct_recurrent(kind, args, kwargs)?,
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
            TorchClass::Sgd | TorchClass::Adam | TorchClass::AdamW => {
                let Some(&params) = args.first() else {
                    return self.error("TypeError: the optimizer needs parameters");
                };
                let items = self.iterable_items(params)?;
                for &p in &items {
                    self.heap.incref(p);
                }
                let list = self.alloc(ObjKind::List(items));
                let state = self.alloc(ObjKind::Dict(Vec::new()));
                let momentum = match kw(self, "momentum") {
                    Some(v) => v,
                    None => Value::Float(0.0),
                };
                let weight_decay = match kw(self, "weight_decay") {
                    Some(v) => v,
                    None => Value::Float(0.0),
                };
                self.new_torch_instance(
                    kind,
                    vec![
                        ("params", Value::Obj(list)),
                        ("state", Value::Obj(state)),
                        ("momentum", momentum),
                        ("weight_decay", weight_decay),
                    ],
                )?
            }
            k if k.is_scheduler() => self.construct_scheduler(k, args, kwargs)?,
            TorchClass::Function
            | TorchClass::FunctionCtx
            | TorchClass::Super
            | TorchClass::RemovableHandle
            | TorchClass::LambdaLr
            | TorchClass::StepLr
            | TorchClass::MultiStepLr
            | TorchClass::CosineAnnealingLr
            | TorchClass::OneCycleLr
            | TorchClass::ReduceLrOnPlateau => {
                return Ok(None);
            }
        };
        Ok(Some(Value::Obj(v)))
    }

    /// `device=` and `dtype=` of a layer constructor (CPU and float32 by default).
    fn factory_kwargs(&self, kwargs: &[(Sym, Value)]) -> (DeviceKind, Dtype) {
        let kw = |name: &str| {
            kwargs
                .iter()
                .find(|(k, _)| self.names.name(*k) == name)
                .map(|(_, v)| *v)
        };
        let device = match kw("device") {
            Some(Value::Str(s)) if self.names.name(s).starts_with("cuda") => DeviceKind::Cuda,
            Some(Value::Device(d)) => d,
            Some(Value::Int(_)) => DeviceKind::Cuda,
            _ => DeviceKind::Cpu,
        };
        let dtype = match kw("dtype") {
            Some(Value::Dtype(d)) => d,
            _ => Dtype::Float32,
        };
        (device, dtype)
    }

    /// `nn.LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False)` and
    /// `nn.GRU(...)`: per layer `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`,
    /// `bias_hh_l{k}`, in PyTorch's order.
    fn construct_recurrent(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == name)
                .map(|(_, v)| *v)
                .or(args.get(i).copied())
        };
        let int = |it: &Self, v: Option<Value>, default: i64| -> R<i64> {
            match v {
                None => Ok(default),
                Some(Value::Int(i)) => Ok(i),
                Some(Value::Bool(b)) => Ok(i64::from(b)),
                Some(_) => it.error("TypeError: LSTM/GRU sizes must be integers"),
            }
        };
        let input_size = int(self, arg(self, 0, "input_size"), -1)?;
        let hidden_size = int(self, arg(self, 1, "hidden_size"), -1)?;
        let num_layers = int(self, arg(self, 2, "num_layers"), 1)?;
        let bias = int(self, arg(self, 3, "bias"), 1)? != 0;
        let batch_first = int(self, arg(self, 4, "batch_first"), 0)? != 0;
        if input_size < 0 || hidden_size <= 0 || num_layers < 1 {
            return self
                .error("TypeError: LSTM/GRU need input_size, hidden_size > 0 and num_layers >= 1");
        }
        if let Some(v) = arg(self, 6, "bidirectional")
            && self.truth(v)?
        {
            return self.unsupported("a bidirectional recurrent layer");
        }
        if let Some(v) = arg(self, 5, "dropout")
            && !matches!(v, Value::Int(0))
            && !matches!(v, Value::Float(f) if f == 0.0)
        {
            return self.unsupported("dropout between recurrent layers");
        }
        let (device, dtype) = self.factory_kwargs(kwargs);
        let gates = if kind == TorchClass::Lstm {
            super::layers::CellKind::Lstm.gates()
        } else {
            super::layers::CellKind::Gru.gates()
        };
        let mut names = Vec::new();
        let mut values = Vec::new();
        for l in 0..num_layers {
            let fan_in = if l == 0 { input_size } else { hidden_size };
            names.push(format!("weight_ih_l{l}"));
            values.push(self.new_parameter(vec![gates * hidden_size, fan_in], dtype, device)?);
            names.push(format!("weight_hh_l{l}"));
            values.push(self.new_parameter(
                vec![gates * hidden_size, hidden_size],
                dtype,
                device,
            )?);
            if bias {
                for prefix in ["bias_ih", "bias_hh"] {
                    names.push(format!("{prefix}_l{l}"));
                    values.push(self.new_parameter(vec![gates * hidden_size], dtype, device)?);
                }
            }
        }
        let mut attrs: Vec<(&str, Value)> = vec![
            ("input_size", Value::Int(input_size)),
            ("hidden_size", Value::Int(hidden_size)),
            ("num_layers", Value::Int(num_layers)),
            ("batch_first", Value::Bool(batch_first)),
        ];
        for (n, v) in names.iter().zip(values) {
            attrs.push((n.as_str(), v));
        }
        self.new_torch_instance(kind, attrs)
    }

    fn new_parameter(&mut self, shape: Vec<i64>, dtype: Dtype, device: DeviceKind) -> R<Value> {
        let v = self.new_tensor_as(shape, dtype, device, None, Category::Parameter)?;
        if let Value::Obj(id) = v
            && let ObjKind::Tensor(t) = self.heap.kind_mut(id)
        {
            t.requires_grad = true;
            t.is_param = true;
        }
        Ok(v)
    }

    /// Items of a list, tuple or (for `parameters()`) anything iterable here (new refs not taken).
    pub(super) fn iterable_items(&self, v: Value) -> R<Vec<Value>> {
        match v {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::List(items) | ObjKind::Tuple(items) => Ok(items.clone()),
                _ => self.error("TypeError: expected a list of tensors"),
            },
            _ => self.error("TypeError: expected a list of tensors"),
        }
    }

    /// Borrowed attribute values of an instance, in order.
    pub(super) fn attr_values(&self, id: ObjId) -> Vec<(Sym, Value)> {
        match self.heap.kind(id) {
            ObjKind::Instance { attrs, .. } => match attrs {
                Attrs::Inline(items) => items.clone(),
                Attrs::Dict(Some(d)) => match self.heap.kind(*d) {
                    ObjKind::Dict(items) => items
                        .iter()
                        .filter_map(|(k, v)| match k {
                            Value::Str(s) => Some((*s, *v)),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                },
                Attrs::Dict(None) => Vec::new(),
            },
            _ => Vec::new(),
        }
    }

    /// A module's parameters, depth first in attribute order (borrowed).
    pub(super) fn module_parameters(&self, module: ObjId, out: &mut Vec<ObjId>) {
        for (_, v) in self.attr_values(module) {
            let Value::Obj(o) = v else { continue };
            match self.heap.kind(o) {
                ObjKind::Tensor(t) if t.is_param && !out.contains(&o) => out.push(o),
                ObjKind::Instance { class, .. }
                    if self.torch_class(*class).is_some_and(TorchClass::is_module) =>
                {
                    self.module_parameters(o, out)
                }
                _ => {}
            }
        }
    }

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
        self.call_module_with_hooks(module, args, kwargs, |it, args, kwargs| {
            let forward = it.sym("forward");
            if let Some(f) = it.class_lookup(class, forward) {
                it.heap.incref(f);
                it.heap.incref(Value::Obj(module));
                let mut all = vec![Value::Obj(module)];
                all.extend(args);
                let r = it.call(f, all, kwargs);
                it.heap.decref(f);
                return r;
            }
            let result = it.native_forward(module, class, &args);
            it.heap.decref_all(args);
            it.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            result
        })
    }

    fn native_forward(&mut self, module: ObjId, class: ObjId, args: &[Value]) -> R<Value> {
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
                match args.first() {
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
                self.recurrent_forward(module, super::layers::CellKind::Lstm, args)
            }
            Some(TorchClass::Gru) => {
                self.recurrent_forward(module, super::layers::CellKind::Gru, args)
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
            _ => self.error("NotImplementedError: Module has no forward"),
        }
    }

    /// `F.linear`: `AddmmBackward0` saves the input (when the weight needs a gradient) and
    /// the weight (when the input needs one). A 3-d input goes through a 2-d view, and the
    /// result is a view of the 2-d product, as `at::linear` does.
    pub(super) fn linear(&mut self, x: Value, weight: Value, bias: Value) -> R<Value> {
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
                "AddmmBackward0",
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
            "AddmmBackward0",
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
            "ViewBackward0",
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

    fn mse_loss(&mut self, a: Value, b: Value) -> R<Value> {
        let Some(t) = self.tensor_data(a) else {
            return self.error("TypeError: mse_loss expects tensors");
        };
        let out = self.new_tensor_as(vec![], t.dtype, t.device, None, Category::Activation)?;
        autograd::record(
            self,
            out,
            "MseLossBackward0",
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

    /// Methods torch classes provide natively on their instances (`model.parameters()`,
    /// `opt.step()`, `ctx.save_for_backward(...)`): `None` when `name` is not one of them.
    pub(super) fn torch_method(
        &mut self,
        recv: ObjId,
        kind: TorchClass,
        name: &str,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Option<Value>> {
        let kw = |it: &Self, n: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == n)
                .map(|(_, v)| *v)
        };
        let is_module = kind.is_module();
        let is_optimizer = matches!(kind, TorchClass::Sgd | TorchClass::Adam | TorchClass::AdamW);
        if is_module && let Some(v) = self.module_api_method(recv, name, args, kwargs)? {
            return Ok(Some(v));
        }
        if kind == TorchClass::RemovableHandle && name == "remove" {
            return self.remove_hook(recv).map(Some);
        }
        if kind.is_scheduler() {
            return self.scheduler_method(recv, kind, name, args);
        }
        let result = match name {
            "parameters" if is_module => {
                let mut ps = Vec::new();
                self.module_parameters(recv, &mut ps);
                let items: Vec<Value> = ps.into_iter().map(Value::Obj).collect();
                for &p in &items {
                    self.heap.incref(p);
                }
                Value::Obj(self.alloc(ObjKind::List(items)))
            }
            "zero_grad" if is_module || is_optimizer => {
                let set_to_none = match kw(self, "set_to_none").or(args.first().copied()) {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                let params = if is_module {
                    let mut ps = Vec::new();
                    self.module_parameters(recv, &mut ps);
                    ps
                } else {
                    self.optimizer_params(recv)?
                };
                if set_to_none {
                    for p in params {
                        let old = match self.heap.kind_mut(p) {
                            ObjKind::Tensor(t) => t.grad.take(),
                            _ => None,
                        };
                        if let Some(g) = old {
                            self.heap.decref_id(g);
                        }
                    }
                }
                Value::None
            }
            "cuda" | "half" | "float" | "to" | "cpu" | "bfloat16" | "double" if is_module => {
                let mut params = Vec::new();
                self.module_parameters(recv, &mut params);
                // `Module._apply` moves buffers too.
                let mut buffers = Vec::new();
                self.walk_module(recv, "", "buffers", &mut buffers)?;
                for (k, b) in buffers {
                    self.heap.decref(k);
                    if let Value::Obj(b) = b {
                        if !params.contains(&b) {
                            params.push(b);
                        }
                        self.heap.decref_id(b);
                    }
                }
                for p in params {
                    let Some(t) = self.tensor_data(Value::Obj(p)) else {
                        continue;
                    };
                    let (mut device, mut dtype) = (t.device, t.dtype);
                    match name {
                        "cuda" => device = DeviceKind::Cuda,
                        "cpu" => device = DeviceKind::Cpu,
                        "half" => dtype = Dtype::Float16,
                        "float" => dtype = Dtype::Float32,
                        "double" => dtype = Dtype::Float64,
                        "bfloat16" => dtype = Dtype::BFloat16,
                        _ => {
                            for &v in args {
                                match v {
                                    Value::Dtype(d) => dtype = d,
                                    Value::Str(s) if self.names.name(s).starts_with("cuda") => {
                                        device = DeviceKind::Cuda
                                    }
                                    Value::Str(_) => device = DeviceKind::Cpu,
                                    Value::Device(d) => device = d,
                                    Value::Int(_) => device = DeviceKind::Cuda,
                                    _ => {}
                                }
                            }
                        }
                    }
                    // Dtype casts apply to floating tensors only (`num_batches_tracked`
                    // stays an integer).
                    if !t.dtype.is_floating() {
                        dtype = t.dtype;
                    }
                    if device == t.device && dtype == t.dtype {
                        continue;
                    }
                    // `Module._apply`: `param.data = fn(param.data)`, the object stays.
                    let storage = self.new_storage(&t.shape, dtype, device, Category::Parameter)?;
                    if let ObjKind::Tensor(pt) = self.heap.kind_mut(p) {
                        pt.storage = storage;
                        pt.dtype = dtype;
                        pt.device = device;
                    }
                    self.heap.dropped_storage_refs.push(t.storage);
                }
                self.heap.incref(Value::Obj(recv));
                Value::Obj(recv)
            }
            "train" | "eval" | "requires_grad_" if is_module => {
                self.heap.incref(Value::Obj(recv));
                Value::Obj(recv)
            }
            "step" if is_optimizer => {
                self.optimizer_step(recv, kind)?;
                Value::None
            }
            "save_for_backward" if kind == TorchClass::FunctionCtx => {
                for &a in args {
                    self.heap.incref(a);
                }
                let t = self.alloc(ObjKind::Tuple(args.to_vec()));
                let s = self.sym("to_save");
                self.set_attr(Value::Obj(recv), s, Value::Obj(t))?;
                Value::None
            }
            "mark_non_differentiable" | "mark_dirty" | "set_materialize_grads"
                if kind == TorchClass::FunctionCtx =>
            {
                Value::None
            }
            _ => return Ok(None),
        };
        Ok(Some(result))
    }

    fn optimizer_params(&mut self, opt: ObjId) -> R<Vec<ObjId>> {
        let s = self.sym("params");
        let list = self.get_attr(Value::Obj(opt), s)?;
        let items = self.iterable_items(list)?;
        self.heap.decref(list);
        Ok(items.into_iter().filter_map(|v| v.obj()).collect())
    }

    /// `optimizer.step()`: state appears at the first step (Adam's `exp_avg` and
    /// `exp_avg_sq`, SGD's momentum buffer, a clone of the gradient), in a dict per
    /// parameter. The foreach kernels update state and parameters in place; what they
    /// allocate for the step, and free when it ends, is Adam's denominator
    /// (`_foreach_sqrt(exp_avg_sq)`, one per parameter) and, with `weight_decay` in SGD
    /// or Adam (not AdamW, which decays in place), the decayed gradients.
    fn optimizer_step(&mut self, opt: ObjId, kind: TorchClass) -> R<()> {
        let params = self.optimizer_params(opt)?;
        let s = self.sym("state");
        let state = self.get_attr(Value::Obj(opt), s)?;
        let m = self.sym("momentum");
        let momentum = self.get_attr(Value::Obj(opt), m)?;
        let is_zero = |v: Value| matches!(v, Value::Float(f) if f == 0.0) || v == Value::Int(0);
        let uses_momentum = !is_zero(momentum);
        let wd = self.sym("weight_decay");
        let weight_decay = self.get_attr(Value::Obj(opt), wd)?;
        let decays_out_of_place = !is_zero(weight_decay) && kind != TorchClass::AdamW;
        self.heap.decref(weight_decay);
        let Value::Obj(state_id) = state else {
            return self.error("TypeError: optimizer state is missing");
        };
        let mut temporaries = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let Some(t) = self.tensor_data(Value::Obj(*p)) else {
                continue;
            };
            if t.grad.is_none() {
                continue;
            }
            let key = Value::Int(i as i64);
            let exists = matches!(self.heap.kind(state_id), ObjKind::Dict(items) if items.iter().any(|(k, _)| *k == key));
            let wants_state = kind != TorchClass::Sgd || uses_momentum;
            if !exists && wants_state {
                let mut entries = Vec::new();
                if kind == TorchClass::Sgd {
                    let buf = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("momentum_buffer")), buf));
                } else {
                    let step = self.new_tensor_as(
                        vec![],
                        Dtype::Float32,
                        DeviceKind::Cpu,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("step")), step));
                    let a = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("exp_avg")), a));
                    let b = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("exp_avg_sq")), b));
                }
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                for (k, v) in entries {
                    self.dict_set(d, k, v);
                }
                self.dict_set(state_id, key, Value::Obj(d));
            }
            let temporaries_per_param =
                usize::from(kind != TorchClass::Sgd) + usize::from(decays_out_of_place);
            for _ in 0..temporaries_per_param {
                temporaries.push(self.new_storage(
                    &t.shape,
                    t.dtype,
                    t.device,
                    Category::Temporary,
                )?);
            }
        }
        for st in temporaries {
            self.heap.dropped_storage_refs.push(st);
        }
        self.heap.decref(state);
        self.heap.decref(momentum);
        Ok(())
    }

    /// `Fn.apply(*args)` for a subclass of `torch.autograd.Function`: a ctx object per
    /// call (a GC object the collector sees, with the attributes `forward` sets), forward
    /// run with grad mode off, and a `PyNode` that owns the ctx as the outputs' `grad_fn`.
    /// Tensors passed to `ctx.save_for_backward` move from `ctx.to_save` into the node.
    pub(super) fn custom_function_apply(&mut self, class: ObjId, args: Vec<Value>) -> R<Value> {
        let ctx = self.new_torch_instance(TorchClass::FunctionCtx, vec![])?;
        // The ctx knows its Function class (`_forward_cls`).
        self.heap.incref(Value::Obj(class));
        let fc = self.sym("_forward_cls");
        self.set_attr(Value::Obj(ctx), fc, Value::Obj(class))?;
        let forward = self.sym("forward");
        let Some(f) = self.class_lookup(class, forward) else {
            self.heap.decref_all(args);
            self.heap.decref_id(ctx);
            return self.error("NotImplementedError: Function has no forward");
        };
        let needs_graph =
            self.grad_enabled && args.iter().any(|&v| autograd::requires_grad(self, v));
        let inputs = args.clone();
        for &a in &inputs {
            self.heap.incref(a);
        }
        self.heap.incref(f);
        self.heap.incref(Value::Obj(ctx));
        let mut all = vec![Value::Obj(ctx)];
        all.extend(args);
        let was = std::mem::replace(&mut self.grad_enabled, false);
        let result = self.call(f, all, Vec::new());
        self.grad_enabled = was;
        self.heap.decref(f);
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                self.heap.decref_all(inputs);
                self.heap.decref_id(ctx);
                return Err(e);
            }
        };
        let ts = self.sym("to_save");
        let to_save = self.take_instance_attr(ctx, ts);
        let result = if needs_graph {
            self.alias_returned_inputs(result, &inputs)?
        } else {
            result
        };
        if needs_graph {
            let mut node = GradNode::new("PyNode", GradFlow::Python);
            for &v in &inputs {
                if let Some(t) = self.tensor_data(v) {
                    let edge = if t.requires_grad {
                        match t.grad_fn {
                            Some(n) => {
                                self.heap.incref(Value::Obj(n));
                                Some(n)
                            }
                            None => {
                                self.heap.incref(v);
                                let mut acc = GradNode::new("AccumulateGrad", GradFlow::Accumulate);
                                acc.leaf = v.obj();
                                Some(self.heap.insert(ObjKind::GradNode(Box::new(acc))))
                            }
                        }
                    } else {
                        None
                    };
                    node.inputs.push(InputEdge {
                        node: edge,
                        shape: t.shape,
                        dtype: t.dtype,
                        device: t.device,
                    });
                }
            }
            let outputs: Vec<ObjId> = match result {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Tuple(items) => items.iter().filter_map(|v| v.obj()).collect(),
                    _ => vec![id],
                },
                _ => Vec::new(),
            };
            if let Some(Value::Obj(tuple)) = to_save {
                for v in self.iterable_items(Value::Obj(tuple))? {
                    let Some(t) = self.tensor_data(v) else {
                        continue;
                    };
                    node.saved_versions
                        .push((node.saved.len(), self.storages.version(t.storage)));
                    // An output is saved without its Python object (PyTorch keeps it as an
                    // output `SavedVariable`, whose grad_fn is not owned): saving it does
                    // not make the node own its own output.
                    match v {
                        Value::Obj(o) if outputs.contains(&o) => {
                            self.storages.add_ref(t.storage);
                            node.saved.push(Saved::Data(t.storage));
                        }
                        Value::Obj(o) => {
                            self.heap.incref(v);
                            node.saved.push(Saved::Tensor(o));
                        }
                        _ => {}
                    }
                }
            }
            node.ctx = Some(ctx);
            let node = self.heap.insert(ObjKind::GradNode(Box::new(node)));
            self.ctx_nodes.insert(ctx, node);
            let mut first = true;
            for o in outputs {
                if !matches!(self.heap.kind(o), ObjKind::Tensor(_)) {
                    continue;
                }
                if !first {
                    self.heap.incref(Value::Obj(node));
                }
                first = false;
                autograd::set_history(self, o, node);
            }
            if first {
                self.heap.decref_id(node);
            }
        } else {
            self.heap.decref_id(ctx);
        }
        if let Some(v) = to_save {
            self.heap.decref(v);
        }
        self.heap.decref_all(inputs);
        Ok(result)
    }

    /// `_wrap_outputs`: an input returned unchanged (and not marked dirty) becomes a new
    /// tensor object, a view of the input, so that the Function's node is the view's
    /// `grad_fn` and the input keeps its own history (a leaf stays a leaf).
    fn alias_returned_inputs(&mut self, result: Value, inputs: &[Value]) -> R<Value> {
        let is_input = |v: Value| v.obj().is_some() && inputs.contains(&v);
        match result {
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Tuple(_)) => {
                let items = match self.heap.kind(id) {
                    ObjKind::Tuple(items) => items.clone(),
                    _ => Vec::new(),
                };
                for (i, item) in items.into_iter().enumerate() {
                    if is_input(item) && self.is_tensor(item) {
                        let alias = self.alias_of(item)?;
                        if let ObjKind::Tuple(items) = self.heap.kind_mut(id) {
                            items[i] = alias;
                        }
                        self.heap.decref(item);
                    }
                }
                Ok(result)
            }
            v if is_input(v) && self.is_tensor(v) => {
                let alias = self.alias_of(v)?;
                self.heap.decref(v);
                Ok(alias)
            }
            v => Ok(v),
        }
    }

    /// A new tensor object viewing all of `v` (`view_as(self)`).
    fn alias_of(&mut self, v: Value) -> R<Value> {
        let Some(t) = self.tensor_data(v) else {
            return Ok(v);
        };
        let base = t.base.or(v.obj());
        self.new_tensor(t.shape, t.dtype, t.device, Some((t.storage, base)))
    }

    /// `ctx.saved_tensors`: the tensors its node saved, in order; a saved output comes
    /// back as a new tensor object on the same bytes.
    pub(super) fn saved_tensors(&mut self, ctx: ObjId) -> R<Value> {
        let mut items = Vec::new();
        for n in self.nodes_owning(ctx) {
            let ObjKind::GradNode(node) = self.heap.kind(n) else {
                continue;
            };
            if node.released && node.had_saved {
                self.heap.decref_all(items);
                return self.error("RuntimeError: Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.");
            }
            for s in node.saved.clone() {
                match s {
                    Saved::Tensor(t) => {
                        self.heap.incref(Value::Obj(t));
                        items.push(Value::Obj(t));
                    }
                    Saved::Data(st) => {
                        let storage = self.storages.get(st);
                        let shape = storage.shape.to_vec();
                        let dtype = storage.dtype;
                        let device = if storage.addr.is_some() {
                            DeviceKind::Cuda
                        } else {
                            DeviceKind::Cpu
                        };
                        items.push(self.new_tensor(shape, dtype, device, Some((st, None)))?);
                    }
                }
            }
        }
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
    }

    /// The method of a ctx's Function class (`backward`), new reference.
    pub(super) fn custom_function_method(&mut self, ctx: ObjId, name: &str) -> R<Value> {
        let fc = self.sym("_forward_cls");
        let class = self.get_attr(Value::Obj(ctx), fc)?;
        let s = self.sym(name);
        let r = self.get_attr(class, s);
        self.heap.decref(class);
        r
    }

    /// Run by `Variable._execution_engine.run_backward`, `torch.autograd.backward`,
    /// `torch.autograd.grad` and `tensor.backward`. `retain_graph` defaults to
    /// `create_graph`, as in PyTorch.
    pub(super) fn autograd_backward(
        &mut self,
        tensors: Value,
        grads: Value,
        retain: Option<bool>,
        create_graph: bool,
        accumulate: bool,
        inputs: Value,
    ) -> R<Vec<Value>> {
        let as_list = |it: &Self, v: Value| -> R<Vec<Value>> {
            match v {
                Value::None => Ok(Vec::new()),
                Value::Obj(id) if matches!(it.heap.kind(id), ObjKind::Tensor(_)) => Ok(vec![v]),
                _ => it.iterable_items(v),
            }
        };
        let roots: Vec<ObjId> = as_list(self, tensors)?
            .into_iter()
            .filter_map(|v| v.obj())
            .collect();
        let grads = as_list(self, grads)?;
        let inputs: Vec<ObjId> = as_list(self, inputs)?
            .into_iter()
            .filter_map(|v| v.obj())
            .collect();
        autograd::run_backward(
            self,
            &roots,
            &grads,
            &BackwardOptions {
                retain_graph: retain.unwrap_or(create_graph),
                create_graph,
                accumulate,
                inputs,
            },
        )
    }
}
