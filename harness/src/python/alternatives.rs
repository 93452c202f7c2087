//! The nearest supported alternative to an API the model lacks, for `unsupported` errors:
//! a tensor method of the same name, or a supported name of the same module that is
//! spelled almost the same or contains (or is contained in) the requested one.

use super::interp::Interpreter;
use crate::heap::Value;

/// Every attribute name some modelled module provides (each is checked against the module
/// at hand before it is suggested).
const MODULE_NAMES: &[&str] = &[
    "Adam",
    "AdamW",
    "CosineAnnealingLR",
    "CrossEntropyLoss",
    "DoubleTensor",
    "Dropout",
    "Embedding",
    "FloatTensor",
    "Function",
    "GRU",
    "HalfTensor",
    "Identity",
    "LSTM",
    "LambdaLR",
    "Linear",
    "LongTensor",
    "MSELoss",
    "Module",
    "MultiStepLR",
    "OneCycleLR",
    "P2POp",
    "Parameter",
    "ReLU",
    "ReduceLROnPlateau",
    "SGD",
    "Sequential",
    "StepLR",
    "Tensor",
    "Variable",
    "_dump_snapshot",
    "_record_memory_history",
    "_set_allocator_settings",
    "abs",
    "add",
    "arange",
    "autograd",
    "backward",
    "barrier",
    "batch_isend_irecv",
    "bfloat16",
    "bmm",
    "bool",
    "cat",
    "collect",
    "cross_entropy",
    "cuda",
    "current_device",
    "device",
    "device_count",
    "disable",
    "distributed",
    "div",
    "double",
    "dropout",
    "embedding",
    "empty",
    "empty_cache",
    "empty_like",
    "enable",
    "enable_grad",
    "exp",
    "eye",
    "float",
    "float16",
    "float32",
    "float64",
    "freeze",
    "full",
    "full_like",
    "functional",
    "gelu",
    "get_count",
    "get_freeze_count",
    "get_rank",
    "get_threshold",
    "get_world_size",
    "grad",
    "half",
    "inference_mode",
    "init_process_group",
    "int",
    "int16",
    "int32",
    "int64",
    "int8",
    "irecv",
    "is_available",
    "isenabled",
    "isend",
    "linear",
    "linspace",
    "log",
    "log_softmax",
    "long",
    "lr_scheduler",
    "matmul",
    "max_memory_allocated",
    "max_memory_reserved",
    "mean",
    "mem_get_info",
    "memory",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "memory_summary",
    "mm",
    "mse_loss",
    "mul",
    "neg",
    "nn",
    "no_grad",
    "ones",
    "ones_like",
    "optim",
    "rand",
    "rand_like",
    "randint",
    "randn",
    "randn_like",
    "recv",
    "relu",
    "reset_peak_memory_stats",
    "run",
    "run_backward",
    "send",
    "set_device",
    "set_threshold",
    "short",
    "sigmoid",
    "softmax",
    "sqrt",
    "stack",
    "sub",
    "sum",
    "synchronize",
    "tanh",
    "tensor",
    "uint8",
    "unfreeze",
    "variable",
    "zeros",
    "zeros_like",
];

/// The tensor methods the model implements.
pub(super) const TENSOR_METHODS: &[&str] = &[
    "abs",
    "add",
    "add_",
    "backward",
    "bfloat16",
    "bmm",
    "bool",
    "clamp",
    "clamp_",
    "clone",
    "contiguous",
    "copy_",
    "cpu",
    "cuda",
    "detach",
    "detach_",
    "dim",
    "div",
    "div_",
    "double",
    "element_size",
    "exp",
    "exp_",
    "expand",
    "fill_",
    "flatten",
    "float",
    "gelu",
    "half",
    "int",
    "item",
    "log",
    "log_softmax",
    "long",
    "matmul",
    "mean",
    "mm",
    "mul",
    "mul_",
    "neg",
    "neg_",
    "nelement",
    "normal_",
    "numel",
    "permute",
    "pow",
    "pow_",
    "relu",
    "relu_",
    "requires_grad_",
    "reshape",
    "sigmoid",
    "sigmoid_",
    "size",
    "softmax",
    "sqrt",
    "squeeze",
    "sub",
    "sub_",
    "sum",
    "t",
    "tanh",
    "tanh_",
    "to",
    "transpose",
    "uniform_",
    "unsqueeze",
    "view",
    "zero_",
];

/// Levenshtein distance, for suggestions.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// The closest of `candidates` to `wanted`: within a third of its length in edits, or
/// (for names of four letters or more) one containing the other.
fn closest<'c>(wanted: &str, candidates: impl Iterator<Item = &'c str>) -> Option<&'c str> {
    let lower = wanted.to_ascii_lowercase();
    candidates
        .filter_map(|c| {
            let cl = c.to_ascii_lowercase();
            let d = distance(&lower, &cl);
            let related = d <= (lower.len() / 3).max(1)
                || (cl.len() >= 4 && lower.contains(&cl))
                || (lower.len() >= 4 && cl.contains(&lower));
            related.then_some((d, c))
        })
        .min()
        .map(|(_, c)| c)
}

/// `; nearest supported: ...` for a missing attribute of module `m`, or `""`.
pub(super) fn for_module_attr(it: &Interpreter<'_>, m: Value, attr: &str) -> String {
    let module = super::natives::module_display_of(m);
    if module == "torch" && matches!(attr, "save" | "load") {
        return "; the model does no file I/O: keep the copy in memory instead, e.g. \
                `{k: v.detach().clone() for k, v in model.state_dict().items()}`"
            .to_string();
    }
    if TENSOR_METHODS.contains(&attr) {
        return format!("; nearest supported: the tensor method `x.{attr}(...)`");
    }
    let supported = MODULE_NAMES
        .iter()
        .copied()
        .filter(|n| *n != attr && it.module_attr(m, n).is_some());
    match closest(attr, supported) {
        Some(n) => format!("; nearest supported: `{module}.{n}`"),
        None => match closest(attr, TENSOR_METHODS.iter().copied()) {
            Some(n) => format!("; nearest supported: the tensor method `x.{n}(...)`"),
            None => String::new(),
        },
    }
}

/// `; nearest supported: ...` for a missing tensor method, or `""`.
pub(super) fn for_tensor_method(method: &str) -> String {
    match closest(
        method,
        TENSOR_METHODS.iter().copied().filter(|m| *m != method),
    ) {
        Some(n) => format!("; nearest supported: `x.{n}(...)`"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions_are_close_names() {
        assert_eq!(distance("softmax", "softmin"), 2);
        assert_eq!(closest("cummax", TENSOR_METHODS.iter().copied()), None);
        assert_eq!(
            closest("reshap", TENSOR_METHODS.iter().copied()),
            Some("reshape")
        );
        assert_eq!(
            closest("log_softmax_", TENSOR_METHODS.iter().copied()),
            Some("log_softmax")
        );
        assert_eq!(
            for_tensor_method("unsqueeze_"),
            "; nearest supported: `x.unsqueeze(...)`"
        );
    }
}
