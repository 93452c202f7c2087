//! The keyword arguments each modelled torch function, tensor method, class and torch
//! object method accepts. A keyword not listed is refused at the argument's own location:
//! one PyTorch also rejects is its `TypeError`; one PyTorch accepts but the model does not
//! is `unsupported`. So no keyword is silently ignored.
//!
//! Every accepted keyword either changes what it changes in PyTorch (`dtype`, `device`,
//! `requires_grad`, `dim`, `retain_graph`, `create_graph`, `inputs`, `set_to_none`, ...) or
//! is one of [`NO_MEMORY_EFFECT`]: it changes values the model does not compute. A
//! function or method missing from these tables accepts no keyword: each is refused as
//! unsupported (PyTorch may know it; the model does not).

use super::interp::{Exc, Interpreter, R};
use super::natives::Native;
use crate::error::InputErrorKind;
use crate::heap::{Sym, Value};

/// Keywords accepted because they only change tensor values, which are not modelled.
#[cfg_attr(not(test), allow(dead_code))]
pub(super) const NO_MEMORY_EFFECT: &[&str] = &[
    // GradScaler: values of its scale (which the model does not compute).
    "init_scale",
    "growth_factor",
    "backoff_factor",
    "growth_interval",
    // checkpoint: the RNG state it stashes is a CPU tensor.
    "preserve_rng_state",
    "lr",
    "betas",
    "eps",
    "alpha",
    "nesterov",
    "dampening",
    "low",
    "high",
    "mean",
    "std",
    "min",
    "max",
    "value",
    "exponent",
    "non_blocking",
    "approximate",
    "inplace",
    "negative_slope",
    "abbreviated",
    "ignore_index",
    "padding_idx",
    "max_norm",
    "scale_grad_by_freq",
    "sparse",
    // clip_grad_norm_/clip_grad_value_: the norms are 0-dim whatever the order; the
    // bound only scales values.
    "norm_type",
    "clip_value",
    "allow_unused",
    "only_inputs",
    "is_grads_batched",
    "materialize_grads",
    "allow_unreachable",
    "pin_memory",
    "generator",
    "keepdim",
    "last_epoch",
    "verbose",
    "step_size",
    "gamma",
    "milestones",
    "T_max",
    "eta_min",
    "max_lr",
    "total_steps",
    "epochs",
    "steps_per_epoch",
    "pct_start",
    "anneal_strategy",
    "cycle_momentum",
    "base_momentum",
    "max_momentum",
    "div_factor",
    "final_div_factor",
    "three_phase",
    "mode",
    "factor",
    "patience",
    "threshold",
    "threshold_mode",
    "cooldown",
    "min_lr",
    // Adagrad: values of its state and learning rate.
    "lr_decay",
    "initial_accumulator_value",
    "beta",
    // scaled_dot_product_attention: the softmax scale, a value.
    "scale",
    // Transformer layers: LayerNorm's epsilon; the fast path's nested tensors and mask
    // check (the fast path is not modelled).
    "layer_norm_eps",
    "enable_nested_tensor",
    "mask_check",
    // LinearLR / ConstantLR: learning-rate factors (values, computed; no memory effect).
    "start_factor",
    "end_factor",
    "total_iters",
    // CyclicLR / PolynomialLR / CosineAnnealingWarmRestarts: rate settings (computed).
    "base_lr",
    "step_size_up",
    "step_size_down",
    "scale_fn",
    "scale_mode",
    "power",
    "T_0",
    "T_mult",
    // torch.linalg.vector_norm: the order changes values only.
    "ord",
    // hardtanh's bounds: values only.
    "min_val",
    "max_val",
    // sort/topk: the order of the values (same shapes and bytes).
    "descending",
    "largest",
    "sorted",
    // DataLoader: the model iterates in order (values are not modelled; same sizes).
    "shuffle",
];

/// Keywords PyTorch accepts on some of these functions whose memory effect the model does
/// not implement: refused as unsupported rather than as an error of the workload.
const KNOWN_UNMODELLED: &[&str] = &[
    "out",
    "layout",
    "memory_format",
    "names",
    "copy",
    "proj_size",
    "enable_gqa",
    // isclose/allclose: the extra isnan temporaries of equal_nan=True.
    "equal_nan",
];

const FACTORY: &[&str] = &[
    "dtype",
    "device",
    "requires_grad",
    "pin_memory",
    "generator",
];

/// Constructor keywords of the modelled `nn` layers and optimizers.
pub(super) fn for_class(kind: super::torchlib::TorchClass) -> &'static [&'static str] {
    use super::torchlib::TorchClass as C;
    match kind {
        C::Linear => &["in_features", "out_features", "bias", "device", "dtype"],
        C::Embedding => &[
            "num_embeddings",
            "embedding_dim",
            "padding_idx",
            "max_norm",
            "scale_grad_by_freq",
            "sparse",
            "device",
            "dtype",
        ],
        C::Lstm | C::Gru => &[
            "input_size",
            "hidden_size",
            "num_layers",
            "bias",
            "batch_first",
            "dropout",
            "bidirectional",
            "device",
            "dtype",
        ],
        C::TransformerEncoderLayer => &[
            "d_model",
            "nhead",
            "dim_feedforward",
            "dropout",
            "activation",
            "layer_norm_eps",
            "batch_first",
            "norm_first",
            "bias",
            "device",
            "dtype",
        ],
        C::TransformerEncoder => &[
            "encoder_layer",
            "num_layers",
            "norm",
            "enable_nested_tensor",
            "mask_check",
        ],
        C::MultiheadAttention => &[
            "embed_dim",
            "num_heads",
            "dropout",
            "bias",
            "add_bias_kv",
            "add_zero_attn",
            "kdim",
            "vdim",
            "batch_first",
            "device",
            "dtype",
        ],
        C::LstmCell | C::GruCell => &["input_size", "hidden_size", "bias", "device", "dtype"],
        C::RnnCell => &[
            "input_size",
            "hidden_size",
            "bias",
            "nonlinearity",
            "device",
            "dtype",
        ],
        C::Rnn => &[
            "input_size",
            "hidden_size",
            "num_layers",
            "nonlinearity",
            "bias",
            "batch_first",
            "dropout",
            "bidirectional",
            "device",
            "dtype",
        ],
        C::CrossEntropyLoss => &["weight", "reduction", "ignore_index"],
        C::MseLoss => &["reduction"],
        C::ReLU => &["inplace"],
        C::Dropout => &["p", "inplace"],
        C::Identity => &[],
        C::ModuleList | C::ModuleDict => &["modules"],
        C::ParameterList => &["values"],
        C::ParameterDict => &["parameters"],
        C::Conv1d | C::Conv2d => &[
            "in_channels",
            "out_channels",
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "groups",
            "bias",
            "padding_mode",
            "device",
            "dtype",
        ],
        C::MaxPool2d => &[
            "kernel_size",
            "stride",
            "padding",
            "dilation",
            "return_indices",
            "ceil_mode",
        ],
        C::AdaptiveAvgPool2d => &["output_size"],
        C::Flatten => &["start_dim", "end_dim"],
        C::L1Loss => &["size_average", "reduce", "reduction"],
        C::NllLoss => &[
            "weight",
            "size_average",
            "ignore_index",
            "reduce",
            "reduction",
        ],
        C::BceLoss => &["weight", "size_average", "reduce", "reduction"],
        C::BceWithLogitsLoss => &[
            "weight",
            "size_average",
            "reduce",
            "reduction",
            "pos_weight",
        ],
        C::SmoothL1Loss => &["size_average", "reduce", "reduction", "beta"],
        C::LayerNorm => &[
            "normalized_shape",
            "eps",
            "elementwise_affine",
            "bias",
            "device",
            "dtype",
        ],
        C::BatchNorm1d | C::BatchNorm2d => &[
            "num_features",
            "eps",
            "momentum",
            "affine",
            "track_running_stats",
            "device",
            "dtype",
        ],
        C::Sgd => &[
            "params",
            "lr",
            "momentum",
            "dampening",
            "weight_decay",
            "nesterov",
            "maximize",
            "differentiable",
            "foreach",
            "fused",
        ],
        C::Adam | C::AdamW => &[
            "params",
            "lr",
            "betas",
            "eps",
            "weight_decay",
            "amsgrad",
            "maximize",
            "capturable",
            "differentiable",
            "foreach",
            "fused",
        ],
        C::RmsProp => &[
            "params",
            "lr",
            "alpha",
            "eps",
            "weight_decay",
            "momentum",
            "centered",
            "capturable",
            "foreach",
            "maximize",
            "differentiable",
        ],
        C::Adagrad => &[
            "params",
            "lr",
            "lr_decay",
            "weight_decay",
            "initial_accumulator_value",
            "eps",
            "foreach",
            "maximize",
            "differentiable",
            "fused",
        ],
        C::LambdaLr => &["optimizer", "lr_lambda", "last_epoch", "verbose"],
        C::StepLr => &["optimizer", "step_size", "gamma", "last_epoch", "verbose"],
        C::MultiStepLr => &["optimizer", "milestones", "gamma", "last_epoch", "verbose"],
        C::CosineAnnealingLr => &["optimizer", "T_max", "eta_min", "last_epoch", "verbose"],
        C::OneCycleLr => &[
            "optimizer",
            "max_lr",
            "total_steps",
            "epochs",
            "steps_per_epoch",
            "pct_start",
            "anneal_strategy",
            "cycle_momentum",
            "base_momentum",
            "max_momentum",
            "div_factor",
            "final_div_factor",
            "three_phase",
            "last_epoch",
            "verbose",
        ],
        C::ReduceLrOnPlateau => &[
            "optimizer",
            "mode",
            "factor",
            "patience",
            "threshold",
            "threshold_mode",
            "cooldown",
            "min_lr",
            "eps",
            "verbose",
        ],
        C::ExponentialLr => &["optimizer", "gamma", "last_epoch", "verbose"],
        C::LinearLr => &[
            "optimizer",
            "start_factor",
            "end_factor",
            "total_iters",
            "last_epoch",
            "verbose",
        ],
        C::ConstantLr => &[
            "optimizer",
            "factor",
            "total_iters",
            "last_epoch",
            "verbose",
        ],
        C::MultiplicativeLr => &["optimizer", "lr_lambda", "last_epoch", "verbose"],
        C::SequentialLr => &[
            "optimizer",
            "schedulers",
            "milestones",
            "last_epoch",
            "verbose",
        ],
        C::ChainedScheduler => &["schedulers", "optimizer"],
        C::CyclicLr => &[
            "optimizer",
            "base_lr",
            "max_lr",
            "step_size_up",
            "step_size_down",
            "mode",
            "gamma",
            "scale_fn",
            "scale_mode",
            "cycle_momentum",
            "base_momentum",
            "max_momentum",
            "last_epoch",
            "verbose",
        ],
        C::PolynomialLr => &["optimizer", "total_iters", "power", "last_epoch", "verbose"],
        C::CosineAnnealingWarmRestarts => &[
            "optimizer",
            "T_0",
            "T_mult",
            "eta_min",
            "last_epoch",
            "verbose",
        ],
        C::KlDivLoss => &["size_average", "reduce", "reduction", "log_target"],
        C::Softplus => &["beta", "threshold"],
        C::LeakyRelu => &["negative_slope", "inplace"],
        C::Elu => &["alpha", "inplace"],
        C::Hardtanh => &["min_val", "max_val", "inplace"],
        C::Gelu => &["approximate"],
        C::Softmax | C::LogSoftmax | C::Softmin => &["dim"],
        C::Unflatten => &["dim", "unflattened_size"],
        C::Silu | C::Relu6 | C::Mish | C::Hardswish => &["inplace"],
        C::GroupNorm => &[
            "num_groups",
            "num_channels",
            "eps",
            "affine",
            "device",
            "dtype",
        ],
        C::DataLoader => &[
            "dataset",
            "batch_size",
            "shuffle",
            "num_workers",
            "collate_fn",
            "pin_memory",
            "drop_last",
        ],
        C::Subset => &["dataset", "indices"],
        C::GradScaler => &[
            "device",
            "init_scale",
            "growth_factor",
            "backoff_factor",
            "growth_interval",
            "enabled",
        ],
        _ => &[],
    }
}
const BACKWARD: &[&str] = &[
    "tensors",
    "grad_tensors",
    "retain_graph",
    "keep_graph",
    "create_graph",
    "grad_variables",
    "inputs",
    "allow_unreachable",
    "accumulate_grad",
];

/// The keywords a native torch function accepts; `None` for natives this table does not
/// cover (the Python builtins, whose keywords are the language side's).
pub(super) fn for_native(n: Native) -> Option<(&'static str, &'static [&'static str])> {
    use Native::*;
    let factory = |name| (name, FACTORY);
    let like: &'static [&'static str] = &["dtype", "device", "requires_grad"];
    let binary: &'static [&'static str] = &["alpha"];
    let memory: &'static [&'static str] = &["device"];
    Some(match n {
        Zeros => factory("torch.zeros"),
        Ones => factory("torch.ones"),
        Empty => factory("torch.empty"),
        Rand => factory("torch.rand"),
        Randn => factory("torch.randn"),
        Full => ("torch.full", &["dtype", "device"]),
        Arange => ("torch.arange", &["dtype", "device"]),
        TensorCtor => ("torch.tensor", &["dtype", "device"]),
        ZerosLike => ("torch.zeros_like", like),
        OnesLike => ("torch.ones_like", like),
        EmptyLike => ("torch.empty_like", like),
        RandLike => ("torch.rand_like", like),
        RandnLike => ("torch.randn_like", like),
        FullLike => ("torch.full_like", like),
        Randint => (
            "torch.randint",
            &["size", "dtype", "device", "low", "high", "generator"],
        ),
        Matmul => ("torch.matmul", &[]),
        Mm => ("torch.mm", &[]),
        Bmm => ("torch.bmm", &[]),
        Add => ("torch.add", binary),
        Sub => ("torch.sub", binary),
        Mul => ("torch.mul", &[]),
        Div => ("torch.div", &["rounding_mode"]),
        Relu => ("torch.relu", &[]),
        Dropout => ("dropout", &["input", "p", "training", "train", "inplace"]),
        SoftmaxFn => ("softmax", &["input", "dim"]),
        LogSoftmaxFn => ("log_softmax", &["input", "dim"]),
        GeluFn => ("torch.nn.functional.gelu", &["input", "approximate"]),
        LogFn => ("torch.log", &["input"]),
        AbsFn => ("torch.abs", &["input"]),
        SqrtFn => ("torch.sqrt", &["input"]),
        NegFn => ("torch.neg", &["input"]),
        Sigmoid => ("torch.sigmoid", &[]),
        Tanh => ("torch.tanh", &[]),
        Exp => ("torch.exp", &[]),
        SumFn => ("torch.sum", &["dim", "keepdim", "dtype"]),
        MeanFn => ("torch.mean", &["dim", "keepdim", "dtype"]),
        Cat => ("torch.cat", &["dim", "tensors"]),
        Stack => ("torch.stack", &["dim", "tensors"]),
        LogsumexpFn => ("torch.logsumexp", &["input", "dim", "keepdim"]),
        WhereFn => ("torch.where", &["condition", "input", "other"]),
        SavedTensorsHooksFn => (
            "torch.autograd.graph.saved_tensors_hooks",
            &["pack_hook", "unpack_hook"],
        ),
        SaveOnCpuFn => (
            "torch.autograd.graph.save_on_cpu",
            &["pin_memory", "device_type"],
        ),
        AsTensorFn => ("torch.as_tensor", &["data", "dtype", "device"]),
        RandomSplit => (
            "torch.utils.data.random_split",
            &["dataset", "lengths", "generator"],
        ),
        AutogradBackward => ("torch.autograd.backward", BACKWARD),
        // `preserve_rng_state` has no memory effect (the RNG state is a CPU tensor).
        Checkpoint => (
            "torch.utils.checkpoint.checkpoint",
            &["use_reentrant", "preserve_rng_state"],
        ),
        RunBackward => ("run_backward", BACKWARD),
        AutogradGrad => (
            "torch.autograd.grad",
            &[
                "outputs",
                "inputs",
                "grad_outputs",
                "retain_graph",
                "create_graph",
                "only_inputs",
                "allow_unused",
                "is_grads_batched",
                "materialize_grads",
            ],
        ),
        FLinear => ("torch.nn.functional.linear", &["bias"]),
        FMseLoss => ("torch.nn.functional.mse_loss", &[]),
        FCrossEntropy => (
            "torch.nn.functional.cross_entropy",
            &["weight", "reduction", "ignore_index", "label_smoothing"],
        ),
        FLayerNorm => (
            "torch.nn.functional.layer_norm",
            &["input", "normalized_shape", "weight", "bias", "eps"],
        ),
        FBatchNorm => (
            "torch.nn.functional.batch_norm",
            &[
                "input",
                "running_mean",
                "running_var",
                "weight",
                "bias",
                "training",
                "momentum",
                "eps",
            ],
        ),
        FConv1d | FConv2d => (
            "torch.nn.functional.conv2d",
            &[
                "input", "weight", "bias", "stride", "padding", "dilation", "groups",
            ],
        ),
        FMaxPool2d => (
            "torch.nn.functional.max_pool2d",
            &[
                "input",
                "kernel_size",
                "stride",
                "padding",
                "dilation",
                "ceil_mode",
                "return_indices",
            ],
        ),
        FAdaptiveAvgPool2d => (
            "torch.nn.functional.adaptive_avg_pool2d",
            &["input", "output_size"],
        ),
        FlattenFn => ("torch.flatten", &["input", "start_dim", "end_dim"]),
        FNllLoss => (
            "torch.nn.functional.nll_loss",
            &[
                "input",
                "target",
                "weight",
                "size_average",
                "ignore_index",
                "reduce",
                "reduction",
            ],
        ),
        FL1Loss => (
            "torch.nn.functional.l1_loss",
            &["input", "target", "size_average", "reduce", "reduction"],
        ),
        FSmoothL1Loss => (
            "torch.nn.functional.smooth_l1_loss",
            &[
                "input",
                "target",
                "size_average",
                "reduce",
                "reduction",
                "beta",
            ],
        ),
        FBce => (
            "torch.nn.functional.binary_cross_entropy",
            &[
                "input",
                "target",
                "weight",
                "size_average",
                "reduce",
                "reduction",
            ],
        ),
        FBceWithLogits => (
            "torch.nn.functional.binary_cross_entropy_with_logits",
            &[
                "input",
                "target",
                "weight",
                "size_average",
                "reduce",
                "reduction",
                "pos_weight",
            ],
        ),
        FLeakyRelu => (
            "torch.nn.functional.leaky_relu",
            &["input", "negative_slope", "inplace"],
        ),
        FSilu => ("torch.nn.functional.silu", &["input", "inplace"]),
        FScaledDotProductAttention => (
            "torch.nn.functional.scaled_dot_product_attention",
            &[
                "query",
                "key",
                "value",
                "attn_mask",
                "dropout_p",
                "is_causal",
                "scale",
            ],
        ),
        CheckpointSequential => (
            "torch.utils.checkpoint.checkpoint_sequential",
            &[
                "functions",
                "segments",
                "input",
                "use_reentrant",
                "preserve_rng_state",
            ],
        ),
        FEmbedding => (
            "torch.nn.functional.embedding",
            &["padding_idx", "max_norm", "scale_grad_by_freq", "sparse"],
        ),
        MemoryAllocated => ("torch.cuda.memory_allocated", memory),
        MemoryReserved => ("torch.cuda.memory_reserved", memory),
        MaxMemoryAllocated => ("torch.cuda.max_memory_allocated", memory),
        MaxMemoryReserved => ("torch.cuda.max_memory_reserved", memory),
        ResetPeakMemoryStats => ("torch.cuda.reset_peak_memory_stats", memory),
        MemGetInfo => ("torch.cuda.mem_get_info", memory),
        Synchronize => ("torch.cuda.synchronize", memory),
        EmptyCache => ("torch.cuda.empty_cache", &[]),
        MemoryStats => ("torch.cuda.memory_stats", memory),
        NnParameter => ("torch.nn.Parameter", &["data", "requires_grad"]),
        SetAllocatorSettings => ("torch.cuda.memory._set_allocator_settings", &[]),
        LegacyFloatTensor
        | LegacyHalfTensor
        | LegacyDoubleTensor
        | LegacyLongTensor
        | LegacyCudaFloatTensor
        | LegacyCudaHalfTensor
        | LegacyCudaLongTensor => ("torch.FloatTensor", &["device"]),
        TorchTensor => ("torch.Tensor", &["device"]),
        FRelu => ("torch.nn.functional.relu", &["input", "inplace"]),
        ReluInPlace => ("torch.relu_", &[]),
        Linspace => ("torch.linspace", &["steps", "dtype", "device"]),
        Eye => ("torch.eye", &["m", "dtype", "device"]),
        MemorySummary => ("torch.cuda.memory_summary", &["device", "abbreviated"]),
        DistInit => (
            "torch.distributed.init_process_group",
            &["backend", "init_method", "rank", "world_size", "timeout"],
        ),
        Autocast => (
            "torch.autocast",
            &["device_type", "dtype", "enabled", "cache_enabled"],
        ),
        CudaAmpAutocast => (
            "torch.cuda.amp.autocast",
            &["dtype", "enabled", "cache_enabled"],
        ),
        FKlDiv => (
            "torch.nn.functional.kl_div",
            &[
                "input",
                "target",
                "size_average",
                "reduce",
                "reduction",
                "log_target",
            ],
        ),
        FSoftplus => (
            "torch.nn.functional.softplus",
            &["input", "beta", "threshold"],
        ),
        NormFn => ("torch.norm", &["input", "p", "dim", "keepdim", "dtype"]),
        LinalgVectorNorm => (
            "torch.linalg.vector_norm",
            &["input", "x", "ord", "dim", "keepdim", "dtype"],
        ),
        AddcmulFn => ("torch.addcmul", &["input", "tensor1", "tensor2", "value"]),
        FElu => ("torch.nn.functional.elu", &["input", "alpha", "inplace"]),
        FHardtanh => (
            "torch.nn.functional.hardtanh",
            &["input", "min_val", "max_val", "inplace"],
        ),
        FRelu6 => ("torch.nn.functional.relu6", &["input", "inplace"]),
        FMish => ("torch.nn.functional.mish", &["input", "inplace"]),
        FHardswish => ("torch.nn.functional.hardswish", &["input", "inplace"]),
        FGroupNorm => (
            "torch.nn.functional.group_norm",
            &["input", "num_groups", "weight", "bias", "eps"],
        ),
        IsnanFn => ("torch.isnan", &["input"]),
        IsinfFn => ("torch.isinf", &["input"]),
        IsfiniteFn => ("torch.isfinite", &["input"]),
        ArgmaxFn => ("torch.argmax", &["input", "dim", "keepdim"]),
        ArgminFn => ("torch.argmin", &["input", "dim", "keepdim"]),
        ClipGradNorm => (
            "torch.nn.utils.clip_grad_norm_",
            &[
                "parameters",
                "max_norm",
                "norm_type",
                "error_if_nonfinite",
                "foreach",
            ],
        ),
        ClipGradValue => (
            "torch.nn.utils.clip_grad_value_",
            &["parameters", "clip_value", "foreach"],
        ),
        MaxFn => ("torch.max", &["input", "dim", "keepdim", "other"]),
        MinFn => ("torch.min", &["input", "dim", "keepdim", "other"]),
        MaximumFn => ("torch.maximum", &["input", "other"]),
        MinimumFn => ("torch.minimum", &["input", "other"]),
        SortFn => ("torch.sort", &["input", "dim", "descending", "stable"]),
        TopkFn => ("torch.topk", &["input", "k", "dim", "largest", "sorted"]),
        FSoftmin => ("torch.nn.functional.softmin", &["input", "dim"]),
        ParametersToVector => ("torch.nn.utils.parameters_to_vector", &["parameters"]),
        VectorToParameters => (
            "torch.nn.utils.vector_to_parameters",
            &["vec", "parameters"],
        ),
        EqFn => ("torch.eq", &["input", "other"]),
        NeFn => ("torch.ne", &["input", "other"]),
        LtFn => ("torch.lt", &["input", "other"]),
        LeFn => ("torch.le", &["input", "other"]),
        GtFn => ("torch.gt", &["input", "other"]),
        GeFn => ("torch.ge", &["input", "other"]),
        AnyFn => ("torch.any", &["input", "dim", "keepdim"]),
        AllFn => ("torch.all", &["input", "dim", "keepdim"]),
        LogicalNotFn => ("torch.logical_not", &["input"]),
        LogicalAndFn => ("torch.logical_and", &["input", "other"]),
        LogicalOrFn => ("torch.logical_or", &["input", "other"]),
        IscloseFn => ("torch.isclose", &["input", "other", "rtol", "atol"]),
        AllcloseFn => ("torch.allclose", &["input", "other", "rtol", "atol"]),
        EqualFn => ("torch.equal", &["input", "other"]),
        RemainderFn => ("torch.remainder", &["input", "other"]),
        FloorDivideFn => ("torch.floor_divide", &["input", "other"]),
        AddcdivFn => ("torch.addcdiv", &["input", "tensor1", "tensor2", "value"]),
        IsTensorFn => ("torch.is_tensor", &["obj"]),
        IsFloatingPointFn => ("torch.is_floating_point", &["input"]),
        SetGradEnabled => ("torch.set_grad_enabled", &["mode"]),
        _ => return None,
    })
}

/// The keywords of a tensor method; `None` for methods not in the table.
pub(super) fn for_tensor_method(method: &str) -> Option<&'static [&'static str]> {
    Some(tensor_method_keywords(method)).filter(|k| !k.is_empty())
}

fn tensor_method_keywords(method: &str) -> &'static [&'static str] {
    match method {
        "backward" => &["gradient", "retain_graph", "create_graph", "inputs"],
        "sum" | "mean" => &["dim", "keepdim", "dtype"],
        "to" => &["device", "dtype", "non_blocking"],
        "cuda" => &["device", "non_blocking"],
        "requires_grad_" => &["requires_grad"],
        "softmax" | "log_softmax" => &["dim", "dtype"],
        "clamp" | "clamp_" => &["min", "max"],
        "add" | "sub" | "add_" | "sub_" => &["alpha"],
        "normal_" => &["mean", "std", "generator"],
        "uniform_" => &["from", "to", "generator"],
        "copy_" => &["non_blocking"],
        "gelu" => &["approximate"],
        "flatten" => &["start_dim", "end_dim"],
        "transpose" => &["dim0", "dim1"],
        "unsqueeze" | "squeeze" | "size" | "chunk" | "split" => &["dim"],
        "norm" => &["p", "dim", "keepdim", "dtype"],
        "addcmul" | "addcmul_" => &["value"],
        "argmax" | "argmin" => &["dim", "keepdim"],
        "max" | "min" => &["dim", "keepdim", "other"],
        "maximum" | "minimum" => &["other"],
        "sort" => &["dim", "descending", "stable"],
        "topk" => &["k", "dim", "largest", "sorted"],
        "unflatten" => &["dim", "sizes"],
        "logsumexp" => &["dim", "keepdim"],
        "where" => &["condition", "other"],
        "eq" | "ne" | "lt" | "le" | "gt" | "ge" | "logical_and" | "logical_or" | "remainder"
        | "floor_divide" | "equal" => &["other"],
        "any" | "all" => &["dim", "keepdim"],
        "isclose" | "allclose" => &["other", "rtol", "atol"],
        "addcdiv" | "addcdiv_" => &["value"],
        "type" => &["dtype", "non_blocking"],
        _ => &[],
    }
}

/// Refuses the first keyword of `kwargs` not in `allowed`, at the keyword's own location:
/// with no table (`None`), or for a keyword PyTorch has but the model does not model, as
/// unsupported; otherwise as the `TypeError` Python raises.
pub(super) fn check(
    it: &Interpreter<'_>,
    function: &str,
    allowed: Option<&[&str]>,
    kwargs: &[(Sym, Value)],
) -> R<()> {
    for &(k, _) in kwargs {
        let name = it.names.name(k);
        if allowed.is_some_and(|a| a.contains(&name)) {
            continue;
        }
        let offset = it
            .call_keywords
            .iter()
            .find(|(s, _)| *s == k)
            .map_or(it.offset, |&(_, o)| o);
        let (kind, message) = if allowed.is_none() || KNOWN_UNMODELLED.contains(&name) {
            (
                InputErrorKind::Unsupported,
                format!(
                    "the keyword argument `{name}=` of `{function}` is not supported by the workload model"
                ),
            )
        } else {
            (
                InputErrorKind::Runtime,
                format!("TypeError: {function}() got an unexpected keyword argument '{name}'"),
            )
        };
        return Err(Box::new(Exc::Error {
            kind,
            message,
            offset,
        }));
    }
    Ok(())
}

/// Keywords whose memory effect the model implements where they are accepted.
#[cfg_attr(not(test), allow(dead_code))]
const MODELLED: &[&str] = &[
    "data",
    // clip_grad_norm_: the isnan/isinf/logical_or temporaries.
    "error_if_nonfinite",
    // kl_div: picks the composite's ops; addcmul's operands; vector_norm's input.
    "log_target",
    "num_groups",
    "num_channels",
    "affine",
    "tensor1",
    "tensor2",
    "x",
    "use_reentrant",
    "optimizer",
    "schedulers",
    "lr_lambda",
    "steps",
    "m",
    "dtype",
    "device",
    "requires_grad",
    "dim",
    "size",
    "tensors",
    "grad_tensors",
    "grad_variables",
    "retain_graph",
    "keep_graph",
    "create_graph",
    "inputs",
    "outputs",
    "grad_outputs",
    "accumulate_grad",
    "gradient",
    "bias",
    "weight",
    "reduction",
    "in_features",
    "out_features",
    "num_embeddings",
    "embedding_dim",
    "input_size",
    "hidden_size",
    "num_layers",
    "batch_first",
    "dropout",
    "bidirectional",
    "params",
    "momentum",
    "weight_decay",
    "start_dim",
    "end_dim",
    "dim0",
    "dim1",
    "label_smoothing",
    "rank",
    "world_size",
    "backend",
    "init_method",
    "timeout",
    "rounding_mode",
    "from",
    "to",
    "input",
    "p",
    "training",
    "train",
    // optimizers (optim.rs): state created, step temporaries, the implementation picked.
    "amsgrad",
    "maximize",
    "capturable",
    "differentiable",
    "foreach",
    "fused",
    "centered",
    "normalized_shape",
    "elementwise_affine",
    "num_features",
    "affine",
    "track_running_stats",
    "in_channels",
    "out_channels",
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "groups",
    "return_indices",
    "ceil_mode",
    "output_size",
    "modules",
    "running_mean",
    "running_var",
    "pos_weight",
    "functions",
    "segments",
    "size_average",
    "reduce",
    "padding_mode",
    "target",
    // autocast (amp.rs): which device's casts (only "cuda"), the cast dtype, whether ops
    // cast, and the weight-cast cache (`cache_enabled=False` turns it off for the region).
    "device_type",
    "enabled",
    "cache_enabled",
    // saved_tensors_hooks (saved_tensors_hooks.rs): every tensor a node saves goes through
    // `pack_hook`, and backward through `unpack_hook`.
    "pack_hook",
    "unpack_hook",
    // nn.RNN: picks the cell whose node saves its result (`TanhBackward0`, `ReluBackward0`).
    "nonlinearity",
    // scaled_dot_product_attention: the mask and causal mask are allocated and added; the
    // dropout mask is kept.
    "attn_mask",
    "dropout_p",
    "is_causal",
    "query",
    "key",
    // nn.MultiheadAttention: sizes of the parameters and intermediates; forward's path.
    "embed_dim",
    "num_heads",
    "kdim",
    "vdim",
    "add_bias_kv",
    "add_zero_attn",
    "key_padding_mask",
    "need_weights",
    "average_attn_weights",
    // Transformer layers: sizes, the activation run, where the norms sit, the layers copied.
    "d_model",
    "nhead",
    "dim_feedforward",
    "activation",
    "norm_first",
    "encoder_layer",
    "norm",
    "src",
    "src_mask",
    "src_key_padding_mask",
    "mask",
    // nn.ParameterList / nn.ParameterDict: the tensors registered as parameters.
    "values",
    "parameters",
    // max/min's second tensor (elementwise), topk's count (the result's size), sort's
    // `stable` (ATen's other overload: its node).
    "other",
    "k",
    "stable",
    // nn.Unflatten / Tensor.unflatten: the view's new sizes.
    "unflattened_size",
    "sizes",
    // vector_to_parameters: the vector whose slices become the parameters' data.
    "vec",
    // isclose/allclose: zero tolerances skip the error temporaries; is_tensor's object.
    "rtol",
    "atol",
    "obj",
    // torch.utils.data: what a loader iterates, batches, drops and collates.
    "dataset",
    "batch_size",
    "drop_last",
    "num_workers",
    "collate_fn",
    "indices",
    "lengths",
    // torch.where: the mask the node keeps.
    "condition",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Every accepted keyword is either modelled or documented as value-only.
    #[test]
    fn every_accepted_keyword_is_modelled_or_has_no_memory_effect() {
        use super::super::natives::Native;
        let mut tables: Vec<&[&str]> = Vec::new();
        for id in 0..u16::MAX {
            let Some(n) = Native::from_id(crate::heap::NativeId(id)) else {
                break;
            };
            if let Some((_, k)) = for_native(n) {
                tables.push(k);
            }
        }
        for m in [
            "backward",
            "sum",
            "to",
            "cuda",
            "softmax",
            "clamp",
            "add_",
            "normal_",
            "uniform_",
            "copy_",
            "gelu",
            "flatten",
            "transpose",
            "squeeze",
        ] {
            tables.extend(for_tensor_method(m));
        }
        use super::super::torchlib::TorchClass as C;
        for c in [
            C::Linear,
            C::Embedding,
            C::Lstm,
            C::CrossEntropyLoss,
            C::MseLoss,
            C::ReLU,
            C::Sgd,
            C::Adam,
            C::RmsProp,
            C::Adagrad,
            C::LambdaLr,
            C::StepLr,
            C::MultiStepLr,
            C::CosineAnnealingLr,
            C::OneCycleLr,
            C::ReduceLrOnPlateau,
            C::GradScaler,
            C::Rnn,
            C::MultiheadAttention,
            C::TransformerEncoderLayer,
            C::TransformerEncoder,
            C::ParameterList,
            C::ParameterDict,
            C::ExponentialLr,
            C::LinearLr,
            C::ConstantLr,
            C::MultiplicativeLr,
            C::SequentialLr,
            C::ChainedScheduler,
            C::CyclicLr,
            C::PolynomialLr,
            C::CosineAnnealingWarmRestarts,
            C::KlDivLoss,
            C::Softplus,
            C::GroupNorm,
            C::LeakyRelu,
            C::Silu,
            C::Elu,
            C::Hardtanh,
            C::Relu6,
            C::Gelu,
            C::Tanh,
            C::Sigmoid,
            C::Mish,
            C::Hardswish,
            C::Softmax,
            C::Unflatten,
            C::DataLoader,
            C::Subset,
            C::LstmCell,
            C::RnnCell,
        ] {
            tables.push(for_class(c));
        }
        for k in tables.into_iter().flatten() {
            assert!(
                MODELLED.contains(k) || NO_MEMORY_EFFECT.contains(k),
                "keyword {k} is accepted but neither modelled nor documented"
            );
            assert!(
                !KNOWN_UNMODELLED.contains(k),
                "{k} is both accepted and unmodelled"
            );
        }
    }
}
