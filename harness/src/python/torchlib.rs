//! The Python-level parts of torch the workload model provides as classes: `nn.Module`
//! and its layers, `autograd.Function`, optimizers and `torch.distributed` point-to-point.
//!
//! Each is a class object created once when the interpreter starts (like torch's classes,
//! it exists before the workload runs and is never counted). Instances are ordinary
//! instances, so user subclasses work and the collector sees their attributes; the native
//! behaviour (a layer's forward, `optimizer.step`) is looked up by class.
//!
//! This file holds the class registry; constructing the classes is in `torch_construct.rs`,
//! calling a module in
//! `module_forward.rs`, instance methods in `torch_class_methods.rs`, optimizer steps in
//! `optim.rs`, and `autograd.Function` and backward entry points in `custom_function.rs`.

use super::interp::{Interpreter, R};
use crate::heap::{Attrs, Class, ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, DeviceKind, Dtype};

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
    RmsProp,
    Adagrad,
    ModuleList,
    ModuleDict,
    LayerNorm,
    BatchNorm1d,
    BatchNorm2d,
    Conv1d,
    Conv2d,
    MaxPool2d,
    AdaptiveAvgPool2d,
    Flatten,
    L1Loss,
    NllLoss,
    BceLoss,
    BceWithLogitsLoss,
    SmoothL1Loss,
    GradScaler,
    /// `torch.utils.hooks.BackwardHook`: a module call's full-backward-hook state.
    BackwardHook,
    Rnn,
    MultiheadAttention,
    TransformerEncoderLayer,
    TransformerEncoder,
    ParameterList,
    ParameterDict,
    ExponentialLr,
    LinearLr,
    ConstantLr,
    MultiplicativeLr,
    SequentialLr,
    ChainedScheduler,
    CyclicLr,
    PolynomialLr,
    CosineAnnealingWarmRestarts,
    KlDivLoss,
    Softplus,
    GroupNorm,
    LeakyRelu,
    Silu,
    Elu,
    Hardtanh,
    Relu6,
    Gelu,
    Tanh,
    Sigmoid,
    Mish,
    Hardswish,
    Softmax,
    LogSoftmax,
    Softmin,
    Unflatten,
    Dataset,
    IterableDataset,
    TensorDataset,
    Subset,
    DataLoader,
    /// `_SingleProcessDataLoaderIter`: one epoch's iterator of a `DataLoader`.
    DataLoaderIter,
    LstmCell,
    GruCell,
    RnnCell,
    /// `torch.nn.parallel.DistributedDataParallel` (`python/ddp.rs`).
    DistributedDataParallel,
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
    (TorchClass::RmsProp, "RMSprop", None),
    (TorchClass::Adagrad, "Adagrad", None),
    (
        TorchClass::ModuleList,
        "ModuleList",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::ModuleDict,
        "ModuleDict",
        Some(TorchClass::Module),
    ),
    (TorchClass::LayerNorm, "LayerNorm", Some(TorchClass::Module)),
    (
        TorchClass::BatchNorm1d,
        "BatchNorm1d",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::BatchNorm2d,
        "BatchNorm2d",
        Some(TorchClass::Module),
    ),
    (TorchClass::Conv1d, "Conv1d", Some(TorchClass::Module)),
    (TorchClass::Conv2d, "Conv2d", Some(TorchClass::Module)),
    (TorchClass::MaxPool2d, "MaxPool2d", Some(TorchClass::Module)),
    (
        TorchClass::AdaptiveAvgPool2d,
        "AdaptiveAvgPool2d",
        Some(TorchClass::Module),
    ),
    (TorchClass::Flatten, "Flatten", Some(TorchClass::Module)),
    (TorchClass::L1Loss, "L1Loss", Some(TorchClass::Module)),
    (TorchClass::NllLoss, "NLLLoss", Some(TorchClass::Module)),
    (TorchClass::BceLoss, "BCELoss", Some(TorchClass::Module)),
    (
        TorchClass::BceWithLogitsLoss,
        "BCEWithLogitsLoss",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::SmoothL1Loss,
        "SmoothL1Loss",
        Some(TorchClass::Module),
    ),
    (TorchClass::GradScaler, "GradScaler", None),
    (TorchClass::BackwardHook, "BackwardHook", None),
    (TorchClass::Rnn, "RNN", Some(TorchClass::Module)),
    (
        TorchClass::MultiheadAttention,
        "MultiheadAttention",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::TransformerEncoderLayer,
        "TransformerEncoderLayer",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::TransformerEncoder,
        "TransformerEncoder",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::ParameterList,
        "ParameterList",
        Some(TorchClass::Module),
    ),
    (
        TorchClass::ParameterDict,
        "ParameterDict",
        Some(TorchClass::Module),
    ),
    (TorchClass::ExponentialLr, "ExponentialLR", None),
    (TorchClass::LinearLr, "LinearLR", None),
    (TorchClass::ConstantLr, "ConstantLR", None),
    (TorchClass::MultiplicativeLr, "MultiplicativeLR", None),
    (TorchClass::SequentialLr, "SequentialLR", None),
    (TorchClass::ChainedScheduler, "ChainedScheduler", None),
    (TorchClass::CyclicLr, "CyclicLR", None),
    (TorchClass::PolynomialLr, "PolynomialLR", None),
    (
        TorchClass::CosineAnnealingWarmRestarts,
        "CosineAnnealingWarmRestarts",
        None,
    ),
    (TorchClass::KlDivLoss, "KLDivLoss", Some(TorchClass::Module)),
    (TorchClass::Softplus, "Softplus", Some(TorchClass::Module)),
    (TorchClass::GroupNorm, "GroupNorm", Some(TorchClass::Module)),
    (TorchClass::LeakyRelu, "LeakyReLU", Some(TorchClass::Module)),
    (TorchClass::Silu, "SiLU", Some(TorchClass::Module)),
    (TorchClass::Elu, "ELU", Some(TorchClass::Module)),
    (TorchClass::Hardtanh, "Hardtanh", Some(TorchClass::Module)),
    (TorchClass::Relu6, "ReLU6", Some(TorchClass::Module)),
    (TorchClass::Gelu, "GELU", Some(TorchClass::Module)),
    (TorchClass::Tanh, "Tanh", Some(TorchClass::Module)),
    (TorchClass::Sigmoid, "Sigmoid", Some(TorchClass::Module)),
    (TorchClass::Mish, "Mish", Some(TorchClass::Module)),
    (TorchClass::Hardswish, "Hardswish", Some(TorchClass::Module)),
    (TorchClass::Softmax, "Softmax", Some(TorchClass::Module)),
    (
        TorchClass::LogSoftmax,
        "LogSoftmax",
        Some(TorchClass::Module),
    ),
    (TorchClass::Softmin, "Softmin", Some(TorchClass::Module)),
    (TorchClass::Unflatten, "Unflatten", Some(TorchClass::Module)),
    (TorchClass::Dataset, "Dataset", None),
    (
        TorchClass::IterableDataset,
        "IterableDataset",
        Some(TorchClass::Dataset),
    ),
    (
        TorchClass::TensorDataset,
        "TensorDataset",
        Some(TorchClass::Dataset),
    ),
    (TorchClass::Subset, "Subset", Some(TorchClass::Dataset)),
    (TorchClass::DataLoader, "DataLoader", None),
    (
        TorchClass::DataLoaderIter,
        "_SingleProcessDataLoaderIter",
        None,
    ),
    (TorchClass::LstmCell, "LSTMCell", Some(TorchClass::Module)),
    (TorchClass::GruCell, "GRUCell", Some(TorchClass::Module)),
    (TorchClass::RnnCell, "RNNCell", Some(TorchClass::Module)),
    (
        TorchClass::DistributedDataParallel,
        "DistributedDataParallel",
        Some(TorchClass::Module),
    ),
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
                | TorchClass::ExponentialLr
                | TorchClass::LinearLr
                | TorchClass::ConstantLr
                | TorchClass::MultiplicativeLr
                | TorchClass::SequentialLr
                | TorchClass::ChainedScheduler
                | TorchClass::CyclicLr
                | TorchClass::PolynomialLr
                | TorchClass::CosineAnnealingWarmRestarts
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
                | TorchClass::LstmCell
                | TorchClass::GruCell
                | TorchClass::RnnCell
                | TorchClass::CrossEntropyLoss
                | TorchClass::ModuleList
                | TorchClass::ModuleDict
                | TorchClass::LayerNorm
                | TorchClass::BatchNorm1d
                | TorchClass::BatchNorm2d
                | TorchClass::Conv1d
                | TorchClass::Conv2d
                | TorchClass::MaxPool2d
                | TorchClass::AdaptiveAvgPool2d
                | TorchClass::Flatten
                | TorchClass::L1Loss
                | TorchClass::NllLoss
                | TorchClass::BceLoss
                | TorchClass::BceWithLogitsLoss
                | TorchClass::SmoothL1Loss
                | TorchClass::Rnn
                | TorchClass::MultiheadAttention
                | TorchClass::TransformerEncoderLayer
                | TorchClass::TransformerEncoder
                | TorchClass::ParameterList
                | TorchClass::ParameterDict
                | TorchClass::KlDivLoss
                | TorchClass::Softplus
                | TorchClass::GroupNorm
                | TorchClass::Unflatten
                | TorchClass::DistributedDataParallel
        ) || self.is_activation_module()
    }

    /// The elementwise activation modules (`nn.LeakyReLU`, `nn.Tanh`...) and the softmax
    /// family (`nn.Softmax`, `nn.LogSoftmax`, `nn.Softmin`): built and run by `activations.rs`.
    pub(super) fn is_activation_module(self) -> bool {
        matches!(
            self,
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
                | TorchClass::Softmin
        )
    }
}

/// The class objects, created uncounted at start.
#[derive(Default)]
pub(super) struct TorchClasses {
    ids: Vec<(TorchClass, ObjId)>,
    /// The same by object slot (torch's classes are never freed, so their slots stay
    /// theirs): what every class call and method call asks, answered without a scan.
    kind_by_slot: Vec<Option<TorchClass>>,
    /// The recurrent layers' approximation note was added to the timeline.
    pub(super) recurrent_noted: bool,
    /// PyTorch's `create_graph=True` warning was given.
    pub(super) create_graph_warned: bool,
    /// The last hook id handed out (`RemovableHandle.next_id`).
    pub(super) next_hook_id: i64,
    /// The attention math-path approximation note was added to the timeline.
    pub(super) attention_noted: bool,
    /// The transformer fast-path note was added to the timeline.
    pub(super) transformer_noted: bool,
    /// The `_detect_is_causal_mask` note was added to the timeline.
    pub(super) causal_detection_noted: bool,
    /// The sites whose learning-rate scheduler warning was given (once per process each).
    pub(super) scheduler_warnings: Vec<&'static str>,
    /// The `DataLoader(shuffle=True)` order note was added to the timeline.
    pub(super) data_shuffle_noted: bool,
    /// Each leaf's weak reference to its `AccumulateGrad` (`python/grad_accumulator.rs`).
    pub(super) grad_accumulators: super::grad_accumulator::GradAccumulators,
    /// The stack of `saved_tensors_hooks` pairs (`python/saved_tensors_hooks.rs`).
    pub(super) saved_hooks: Vec<super::saved_tensors_hooks::HookPair>,
    /// The class of each node name asked for by `type(grad_fn)` (`python/grad_fn_types.rs`).
    pub(super) node_types: Vec<(String, ObjId)>,
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
        let slots = ids
            .iter()
            .map(|(_, id)| id.0 as usize + 1)
            .max()
            .unwrap_or(0);
        let mut kind_by_slot = vec![None; slots];
        for &(kind, id) in &ids {
            kind_by_slot[id.0 as usize] = Some(kind);
        }
        TorchClasses {
            ids,
            kind_by_slot,
            recurrent_noted: false,
            create_graph_warned: false,
            next_hook_id: 0,
            attention_noted: false,
            transformer_noted: false,
            causal_detection_noted: false,
            scheduler_warnings: Vec::new(),
            data_shuffle_noted: false,
            grad_accumulators: Default::default(),
            saved_hooks: Vec::new(),
            node_types: Vec::new(),
        }
    }

    pub(super) fn id(&self, kind: TorchClass) -> Value {
        self.ids
            .iter()
            .find(|(k, _)| *k == kind)
            .map_or(Value::None, |(_, id)| Value::Obj(*id))
    }

    pub(super) fn kind_of(&self, class: ObjId) -> Option<TorchClass> {
        self.kind_by_slot.get(class.0 as usize).copied().flatten()
    }
}

/// A constructor's argument given by position `i` or by keyword `name` (borrowed).
pub(super) fn constructor_arg(
    it: &Interpreter<'_>,
    args: &[Value],
    kwargs: &[(Sym, Value)],
    i: usize,
    name: &str,
) -> Option<Value> {
    kwargs
        .iter()
        .find(|(k, _)| it.names.name(*k) == name)
        .map(|(_, v)| *v)
        .or(args.get(i).copied())
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

    pub(super) fn sym(&mut self, s: &str) -> Sym {
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

    /// `device=` and `dtype=` of a layer constructor (CPU and float32 by default).
    pub(super) fn factory_kwargs(&self, kwargs: &[(Sym, Value)]) -> (DeviceKind, Dtype) {
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

    pub(super) fn new_parameter(
        &mut self,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
    ) -> R<Value> {
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
}
