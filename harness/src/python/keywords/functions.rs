//! Keywords of the native torch functions (factories, `torch.*` ops, autograd entry points).

use crate::python::natives::Native;

const FACTORY: &[&str] = &[
    "dtype",
    "device",
    "requires_grad",
    "pin_memory",
    "generator",
];

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
pub(in crate::python) fn for_native(n: Native) -> Option<(&'static str, &'static [&'static str])> {
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
