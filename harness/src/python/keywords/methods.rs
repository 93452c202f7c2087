//! Keywords of the modelled tensor methods.

/// The keywords of a tensor method; `None` for methods not in the table.
pub(in crate::python) fn for_tensor_method(method: &str) -> Option<&'static [&'static str]> {
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
        "round" => &["decimals"],
        "clamp_min" => &["min"],
        "clamp_max" => &["max"],
        "flip" => &["dims"],
        "roll" => &["shifts", "dims"],
        "tril" | "triu" => &["diagonal"],
        "cumprod" => &["dim", "dtype"],
        "hypot" | "atan2" | "logaddexp" => &["other"],
        "lerp" => &["end", "weight"],
        "outer" => &["vec2"],
        "repeat_interleave" => &["repeats", "dim", "output_size"],
        "cumsum" => &["dim", "dtype"],
        "diff" => &["n", "dim"],
        _ => &[],
    }
}
