//! The autograd table (`torch::OP_RULES`) re-derived from the facts of PyTorch's
//! `tools/autograd/derivatives.yaml`, read from the ROCm/pytorch fork at commit
//! `10b22ea5c6a60ffa85520eb2d293affc48cea8ee` (a 2.x-era copy of the upstream file).
//!
//! For each entry the model uses, the facts below record (in our own words, not the file's
//! text) which tensor arguments each differentiable input's gradient formula reads *in
//! full*, and whether a formula reads the result. Reading only `sizes()`, `options()` or a
//! scalar type is metadata and saves no tensor. The generated node saves a tensor argument
//! when some input whose formula reads it requires grad; so it saves it unconditionally
//! when every differentiable input's formula reads it, and "only if input j requires grad"
//! when j's formula alone reads it. The test derives each row's saves that way and compares
//! them with the model's table, so a row that drifts from the file fails here.
//!
//! A formula may also read `result1`, `result2`, ... of a multi-output op (normalization
//! statistics, dropout's mask, pooling indices, a fused cell's workspace): the node saves
//! them as `Save::Result(k)`. A tensor read by several, but not all, differentiable inputs
//! is saved when any of them requires grad (`Save::InputIfAny`).
//!
//! No real PyTorch is installed here: every expectation is derived from the file's text as
//! read (the facts below), not measured.
//!
//! The last test walks the model's recording sites (every node class named in
//! `harness/src/python`) so that a node recorded without a row of the table fails.

use gpumem_harness::torch::{OP_RULES, Save};

/// One derivatives.yaml entry, as facts.
struct Entry {
    /// The entry's schema name in the file (`mul.Tensor`).
    schema: &'static str,
    /// The node class PyTorch generates for it.
    node: &'static str,
    /// The entry's tensor arguments in the model's operand order (operand 0, 1, ...).
    operands: &'static [&'static str],
    /// Each differentiable input and the tensor arguments its formula reads in full.
    reads: &'static [(&'static str, &'static [&'static str])],
    /// Some formula reads the forward result.
    reads_result: bool,
    /// The further results (`result1`, `result2`, ...) some formula reads.
    results: &'static [usize],
}

const fn e(
    schema: &'static str,
    node: &'static str,
    operands: &'static [&'static str],
    reads: &'static [(&'static str, &'static [&'static str])],
    reads_result: bool,
) -> Entry {
    Entry {
        schema,
        node,
        operands,
        reads,
        reads_result,
        results: &[],
    }
}

impl Entry {
    /// The entry's formulas also read these results of a multi-output op.
    fn reading_results(mut self, results: &'static [usize]) -> Entry {
        self.results = results;
        self
    }
}

/// The facts, per op name of the model's table. In-place ops (`mul_`) use their out-of-place
/// entry: the file states that an in-place variant without its own entry takes the
/// out-of-place definition. A Python number operand (`x * 2`) is wrapped into a CPU scalar
/// tensor and dispatched to the `Tensor` overload; it is not a model operand (no device bytes),
/// so it is left out of `operands` and anything read of it is ignored.
fn facts(op: &str) -> Option<Entry> {
    // `leaky_relu_` has an entry of its own: its formula reads the result, not `self`.
    if op == "leaky_relu_" {
        return Some(e(
            "leaky_relu_",
            "LeakyReluBackward1",
            &["self"],
            &[("self", &[])],
            true,
        ));
    }
    // `elu_` has an entry of its own too, reading the result.
    if op == "elu_" {
        return Some(e("elu_", "EluBackward1", &["self"], &[("self", &[])], true));
    }
    let base = op.strip_suffix('_').unwrap_or(op);
    Some(match base {
        // add.Tensor / sub.Tensor: the gradients are grad (scaled by alpha); only scalar types.
        "add" => e(
            "add.Tensor",
            "AddBackward0",
            &["self", "other"],
            &[("self", &[]), ("other", &[])],
            false,
        ),
        "sub" => e(
            "sub.Tensor",
            "SubBackward0",
            &["self", "other"],
            &[("self", &[]), ("other", &[])],
            false,
        ),
        // mul.Tensor: self's gradient multiplies by other, other's by self.
        "mul" => e(
            "mul.Tensor",
            "MulBackward0",
            &["self", "other"],
            &[("self", &["other"]), ("other", &["self"])],
            false,
        ),
        "mul_scalar" => e(
            "mul.Tensor",
            "MulBackward0",
            &["self"],
            &[("self", &["other"])],
            false,
        ),
        // div.Tensor: self's gradient reads other; other's reads self and other. Not result.
        "div" => e(
            "div.Tensor",
            "DivBackward0",
            &["self", "other"],
            &[("self", &["other"]), ("other", &["self", "other"])],
            false,
        ),
        "div_scalar" => e(
            "div.Tensor",
            "DivBackward0",
            &["self"],
            &[("self", &["other"])],
            false,
        ),
        // pow.Tensor_Scalar: the gradient reads self.
        "pow" => e(
            "pow.Tensor_Scalar",
            "PowBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // mm: self's gradient reads mat2 (and self's sizes/strides/layout), mat2's reads self.
        "matmul" => e(
            "mm",
            "MmBackward0",
            &["self", "mat2"],
            &[("self", &["mat2"]), ("mat2", &["self"])],
            false,
        ),
        // addmm (F.linear of a 2-D input with bias): mat1 = input, mat2 = weight.t(); the
        // bias's gradient reads nothing.
        "linear" => e(
            "addmm",
            "AddmmBackward0",
            &["mat1", "mat2"],
            &[("self", &[]), ("mat1", &["mat2"]), ("mat2", &["mat1"])],
            false,
        ),
        // Formulas of the result.
        "relu" => e("relu", "ReluBackward0", &["self"], &[("self", &[])], true),
        "sigmoid" => e(
            "sigmoid",
            "SigmoidBackward0",
            &["self"],
            &[("self", &[])],
            true,
        ),
        "tanh" => e("tanh", "TanhBackward0", &["self"], &[("self", &[])], true),
        "exp" => e("exp", "ExpBackward0", &["self"], &[("self", &[])], true),
        "sqrt" => e("sqrt", "SqrtBackward0", &["self"], &[("self", &[])], true),
        "softmax" => e(
            "_softmax",
            "SoftmaxBackward0",
            &["self"],
            &[("self", &[])],
            true,
        ),
        "log_softmax" => e(
            "_log_softmax",
            "LogSoftmaxBackward0",
            &["self"],
            &[("self", &[])],
            true,
        ),
        // Formulas of the input.
        "log" => e(
            "log",
            "LogBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "abs" => e(
            "abs",
            "AbsBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // clamp with Python-number bounds is the second clamp entry (the first takes tensors).
        "clamp" => e(
            "clamp",
            "ClampBackward1",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "gelu" => e(
            "gelu",
            "GeluBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "neg" => e("neg", "NegBackward0", &["self"], &[("self", &[])], false),
        // Reductions, copies and views: sizes, numel, options only.
        "sum" => e("sum", "SumBackward0", &["self"], &[("self", &[])], false),
        "sum_dim" => e(
            "sum.dim_IntList",
            "SumBackward1",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "mean" => e("mean", "MeanBackward0", &["self"], &[("self", &[])], false),
        "mean_dim" => e(
            "mean.dim",
            "MeanBackward1",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "clone" => e(
            "clone",
            "CloneBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "to" => e(
            "_to_copy",
            "ToCopyBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "view" => e("view", "ViewBackward0", &["self"], &[("self", &[])], false),
        // split.Tensor / split_with_sizes: the pieces' gradients, sizes and options; repeat:
        // the repeats and self's sizes.
        "split" => e(
            "split.Tensor",
            "SplitBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "split_with_sizes" => e(
            "split_with_sizes",
            "SplitWithSizesBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "repeat" => e(
            "repeat",
            "RepeatBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // cat keeps the inputs' sizes and scalar types; stack only their scalar types.
        "cat" => e("cat", "CatBackward0", &[], &[("tensors", &[])], false),
        "stack" => e("stack", "StackBackward0", &[], &[("tensors", &[])], false),
        // Losses and lookups.
        "mse_loss" => e(
            "mse_loss",
            "MseLossBackward0",
            &["self", "target"],
            &[
                ("self", &["self", "target"]),
                ("target", &["target", "self"]),
            ],
            false,
        ),
        // embedding: indices are non-differentiable; the weight's gradient reads them (and
        // the weight's first size).
        "embedding" => e(
            "embedding",
            "EmbeddingBackward0",
            &["weight", "indices"],
            &[("weight", &["indices"])],
            false,
        ),
        // In-place fills: the gradient is zeros of grad's shape.
        "zero" => e("zero_", "ZeroBackward0", &["self"], &[("self", &[])], false),
        "fill" => e(
            "fill_.Scalar",
            "FillBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "normal" => e(
            "normal_",
            "NormalBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "uniform" => e(
            "uniform_",
            "UniformBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "leaky_relu" => e(
            "leaky_relu",
            "LeakyReluBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // silu: (infinitely_differentiable_)silu_backward(grad, self).
        "silu" => e(
            "silu",
            "SiluBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "smooth_l1_loss" => e(
            "smooth_l1_loss",
            "SmoothL1LossBackward0",
            &["self", "target"],
            &[
                ("self", &["self", "target"]),
                ("target", &["target", "self"]),
            ],
            false,
        ),
        "binary_cross_entropy" => e(
            "binary_cross_entropy",
            "BinaryCrossEntropyBackward0",
            &["self", "target", "weight"],
            &[
                ("self", &["self", "target", "weight"]),
                ("target", &["self", "target", "weight"]),
            ],
            false,
        ),
        "binary_cross_entropy_with_logits" => e(
            "binary_cross_entropy_with_logits",
            "BinaryCrossEntropyWithLogitsBackward0",
            &["self", "target", "weight", "pos_weight"],
            &[
                ("self", &["self", "target", "weight", "pos_weight"]),
                ("target", &["self", "target", "weight", "pos_weight"]),
            ],
            false,
        ),
        // convolution: `input, weight, bias: convolution_backward(grad, input, weight, ...)`
        // (the bias only by its sizes).
        "convolution" => e(
            "convolution",
            "ConvolutionBackward0",
            &["input", "weight", "bias"],
            &[
                ("input", &["input", "weight"]),
                ("weight", &["input", "weight"]),
                ("bias", &["input", "weight"]),
            ],
            false,
        ),
        // _adaptive_avg_pool2d: _adaptive_avg_pool2d_backward(grad, self).
        "adaptive_avg_pool2d" => e(
            "_adaptive_avg_pool2d",
            "AdaptiveAvgPool2DBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // xlogy.Tensor: self's gradient is grad * xlogy(self != 0, other), other's
        // grad * self / other: both read both operands.
        "xlogy" => e(
            "xlogy.Tensor",
            "XlogyBackward0",
            &["self", "other"],
            &[("self", &["self", "other"]), ("other", &["self", "other"])],
            false,
        ),
        // softplus: softplus_backward(grad, self, beta, threshold).
        "softplus" => e(
            "softplus",
            "SoftplusBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // linalg_vector_norm: linalg_vector_norm_backward(grad, self, ord, result, dim, keepdim).
        "linalg_vector_norm" => e(
            "linalg_vector_norm",
            "LinalgVectorNormBackward0",
            &["self"],
            &[("self", &["self"])],
            true,
        ),
        // addcmul: self's gradient is grad (its scalar type only); tensor1's multiplies by
        // tensor2 * value, tensor2's by tensor1 * value.
        "addcmul" => e(
            "addcmul",
            "AddcmulBackward0",
            &["self", "tensor1", "tensor2"],
            &[
                ("self", &[]),
                ("tensor1", &["tensor2"]),
                ("tensor2", &["tensor1"]),
            ],
            false,
        ),
        // elu: elu_backward(grad, alpha, scale, input_scale, is_result=false, self).
        "elu" => e(
            "elu",
            "EluBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // hardtanh: hardtanh_backward(grad, self, min_val, max_val); no hardtanh_ entry.
        "hardtanh" => e(
            "hardtanh",
            "HardtanhBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // mish: (infinitely_differentiable_)mish_backward(grad, self).
        "mish" => e(
            "mish",
            "MishBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // hardswish: hardswish_backward(grad, self).
        "hardswish" => e(
            "hardswish",
            "HardswishBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // Multi-output ops. native_layer_norm: one formula for input, weight and bias reads
        // all three and result1 (mean), result2 (rstd).
        "layer_norm" => e(
            "native_layer_norm",
            "NativeLayerNormBackward0",
            &["input", "weight", "bias"],
            &[
                ("input", &["input", "weight", "bias"]),
                ("weight", &["input", "weight", "bias"]),
                ("bias", &["input", "weight", "bias"]),
            ],
            false,
        )
        .reading_results(&[1, 2]),
        // native_batch_norm: the formula reads input, weight, running_mean, running_var and
        // result1/result2 (save_mean, save_invstd); not bias.
        "batch_norm" => e(
            "native_batch_norm",
            "NativeBatchNormBackward0",
            &["input", "weight", "bias", "running_mean", "running_var"],
            &[
                ("input", &["input", "weight", "running_mean", "running_var"]),
                (
                    "weight",
                    &["input", "weight", "running_mean", "running_var"],
                ),
                ("bias", &["input", "weight", "running_mean", "running_var"]),
            ],
            false,
        )
        .reading_results(&[1, 2]),
        // native_group_norm: both branches read input, weight, result1 and result2 (the
        // group count and sizes are integers); not bias.
        "group_norm" => e(
            "native_group_norm",
            "NativeGroupNormBackward0",
            &["input", "weight", "bias"],
            &[
                ("input", &["input", "weight"]),
                ("weight", &["input", "weight"]),
                ("bias", &["input", "weight"]),
            ],
            false,
        )
        .reading_results(&[1, 2]),
        // native_dropout: the input's formula reads result1 (the mask) and scalars.
        "dropout" => e(
            "native_dropout",
            "NativeDropoutBackward0",
            &["input"],
            &[("input", &[])],
            false,
        )
        .reading_results(&[1]),
        // nll_loss_forward: self's formula reads self, target, weight and result1
        // (total_weight); target is non-differentiable, weight has no formula.
        "nll_loss" => e(
            "nll_loss_forward",
            "NllLossBackward0",
            &["self", "target", "weight"],
            &[("self", &["self", "target", "weight"])],
            false,
        )
        .reading_results(&[1]),
        // max_pool2d_with_indices: reads self and result1 (the indices).
        "max_pool2d" => e(
            "max_pool2d_with_indices",
            "MaxPool2DWithIndicesBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        )
        .reading_results(&[1]),
        // bmm: self's gradient reads mat2, mat2's reads self.
        "bmm" => e(
            "bmm",
            "BmmBackward0",
            &["self", "mat2"],
            &[("self", &["mat2"]), ("mat2", &["self"])],
            false,
        ),
        // baddbmm: self's gradient reads none; batch1's reads batch2 and batch2's batch1.
        "baddbmm" => e(
            "baddbmm",
            "BaddbmmBackward0",
            &["self", "batch1", "batch2"],
            &[
                ("self", &[]),
                ("batch1", &["batch2"]),
                ("batch2", &["batch1"]),
            ],
            false,
        ),
        // mul.Scalar (the file's second `mul` entry, hence `MulBackward1`): the scalar only.
        "mul.Scalar" => e(
            "mul.Scalar",
            "MulBackward1",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // t, _unsafe_view, unbind.int: sizes and dims only.
        "t" => e("t", "TBackward0", &["self"], &[("self", &[])], false),
        "unsafe_view" => e(
            "_unsafe_view",
            "UnsafeViewBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "unbind" => e(
            "unbind.int",
            "UnbindBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // max.dim / min.dim (first of their names in the file: `*Backward0`) read the
        // `indices` result (result1); max() / min() (`*Backward1`) read self and result.
        "max_dim" => e(
            "max.dim",
            "MaxBackward0",
            &["self"],
            &[("self", &[])],
            false,
        )
        .reading_results(&[1]),
        "min_dim" => e(
            "min.dim",
            "MinBackward0",
            &["self"],
            &[("self", &[])],
            false,
        )
        .reading_results(&[1]),
        "max" => e(
            "max",
            "MaxBackward1",
            &["self"],
            &[("self", &["self"])],
            true,
        ),
        "min" => e(
            "min",
            "MinBackward1",
            &["self"],
            &[("self", &["self"])],
            true,
        ),
        // maximum / minimum: both inputs' formulas compare self with other.
        "maximum" => e(
            "maximum",
            "MaximumBackward0",
            &["self", "other"],
            &[("self", &["self", "other"]), ("other", &["self", "other"])],
            false,
        ),
        "minimum" => e(
            "minimum",
            "MinimumBackward0",
            &["self", "other"],
            &[("self", &["self", "other"]), ("other", &["self", "other"])],
            false,
        ),
        // sort / sort.stable / topk: value_selecting_reduction_backward reads `indices`
        // (result1) and self's sizes.
        "sort" => {
            e("sort", "SortBackward0", &["self"], &[("self", &[])], false).reading_results(&[1])
        }
        "sort_stable" => e(
            "sort.stable",
            "SortBackward1",
            &["self"],
            &[("self", &[])],
            false,
        )
        .reading_results(&[1]),
        "topk" => {
            e("topk", "TopkBackward0", &["self"], &[("self", &[])], false).reading_results(&[1])
        }
        // as_strided: as_strided_backward reads self's geometry only.
        "as_strided" => e(
            "as_strided",
            "AsStridedBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // _thnn_fused_lstm_cell: one formula for all five inputs; its two branches together
        // read every operand, result1 (cy) and result2 (workspace).
        "lstm_cell" => {
            const ALL: &[&str] = &[
                "input_gates",
                "hidden_gates",
                "cx",
                "input_bias",
                "hidden_bias",
            ];
            e(
                "_thnn_fused_lstm_cell",
                "ThnnFusedLstmCellBackward0",
                ALL,
                &[
                    ("input_gates", ALL),
                    ("hidden_gates", ALL),
                    ("cx", ALL),
                    ("input_bias", ALL),
                    ("hidden_bias", ALL),
                ],
                false,
            )
            .reading_results(&[1, 2])
        }
        // _thnn_fused_gru_cell: the same with hx, and result1 (workspace).
        "gru_cell" => {
            const ALL: &[&str] = &[
                "input_gates",
                "hidden_gates",
                "hx",
                "input_bias",
                "hidden_bias",
            ];
            e(
                "_thnn_fused_gru_cell",
                "ThnnFusedGruCellBackward0",
                ALL,
                &[
                    ("input_gates", ALL),
                    ("hidden_gates", ALL),
                    ("hx", ALL),
                    ("input_bias", ALL),
                    ("hidden_bias", ALL),
                ],
                false,
            )
            .reading_results(&[1])
        }
        // addcdiv: self's gradient reads none; tensor1's reads tensor2; tensor2's reads
        // tensor1 and tensor2.
        "addcdiv" => e(
            "addcdiv",
            "AddcdivBackward0",
            &["self", "tensor1", "tensor2"],
            &[
                ("self", &[]),
                ("tensor1", &["tensor2"]),
                ("tensor2", &["tensor1", "tensor2"]),
            ],
            false,
        ),
        // Views: each formula reads sizes, dims or indices of `self`, never its values
        // (permute_backwards, grad.transpose, sum_to, unsqueeze_to, grad.squeeze,
        // slice_backward_wrapper, select_backward, grad).
        "permute" => e(
            "permute",
            "PermuteBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "transpose" => e(
            "transpose.int",
            "TransposeBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "expand" => e(
            "expand",
            "ExpandBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "squeeze" => e(
            "squeeze",
            "SqueezeBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "squeeze_dim" => e(
            "squeeze.dim",
            "SqueezeBackward1",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "unsqueeze" => e(
            "unsqueeze",
            "UnsqueezeBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "slice" => e(
            "slice.Tensor",
            "SliceBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "select" => e(
            "select.int",
            "SelectBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "alias" => e(
            "alias",
            "AliasBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // remainder.Scalar: self: grad. remainder.Tensor: self: grad; other: -grad *
        // self.div(other, rounding_mode="floor"), reading both.
        "remainder.Scalar" => e(
            "remainder.Scalar",
            "RemainderBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "remainder" => e(
            "remainder.Tensor",
            "RemainderBackward1",
            &["self", "other"],
            &[("self", &[]), ("other", &["self", "other"])],
            false,
        ),
        // index.Tensor: index_backward(grad.new_zeros(self.sizes(), self.options()),
        // indices, grad): the indices; self's sizes and options only.
        "index" => e(
            "index.Tensor",
            "IndexBackward0",
            &["self", "indices"],
            &[("self", &["indices"])],
            false,
        ),
        // logsumexp: logsumexp_backward(grad, self, result, dim, keepdim).
        "logsumexp" => e(
            "logsumexp",
            "LogsumexpBackward0",
            &["self"],
            &[("self", &["self"])],
            true,
        ),
        // where.self: condition is non-differentiable; self's gradient is
        // where(condition, grad, 0), other's where(condition, 0, grad): both read condition.
        "where" => e(
            "where.self",
            "WhereBackward0",
            &["condition", "self", "other"],
            &[("self", &["condition"]), ("other", &["condition"])],
            false,
        ),
        // index_put (index_put_ takes it): self's gradient is grad, or
        // grad.index_put(indices, zeros_like(values)); values' is grad.index(indices):
        // both read the indices, values only for its sizes and options.
        "index_put" => e(
            "index_put",
            "IndexPutBackward0",
            &["self", "indices", "values"],
            &[("self", &["indices"]), ("values", &["indices"])],
            false,
        ),
        // python/pointwise_math.rs. log10: grad / (self * ln 10); log2: grad / (self * ln 2);
        // log1p: log1p_backward(grad, self).
        "log10" => e(
            "log10",
            "Log10Backward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "log2" => e(
            "log2",
            "Log2Backward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "log1p" => e(
            "log1p",
            "Log1PBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // expm1: grad * (result + 1); exp2: grad * result * ln 2; rsqrt: -0.5 * grad *
        // result^3; reciprocal: -grad * result^2.
        "expm1" => e("expm1", "Expm1Backward0", &["self"], &[("self", &[])], true),
        "exp2" => e("exp2", "Exp2Backward0", &["self"], &[("self", &[])], true),
        "rsqrt" => e("rsqrt", "RsqrtBackward0", &["self"], &[("self", &[])], true),
        "reciprocal" => e(
            "reciprocal",
            "ReciprocalBackward0",
            &["self"],
            &[("self", &[])],
            true,
        ),
        // sign, floor, ceil, round, round.decimals, trunc: zeros_like(grad).
        "sign" => e("sign", "SignBackward0", &["self"], &[("self", &[])], false),
        "floor" => e(
            "floor",
            "FloorBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "ceil" => e("ceil", "CeilBackward0", &["self"], &[("self", &[])], false),
        "round" => e(
            "round",
            "RoundBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "round_decimals" => e(
            "round.decimals",
            "RoundBackward1",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "trunc" => e(
            "trunc",
            "TruncBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        // clamp_min / clamp_max (Scalar bound): where(self >= min, grad, 0) and the like.
        "clamp_min" => e(
            "clamp_min",
            "ClampMinBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        "clamp_max" => e(
            "clamp_max",
            "ClampMaxBackward0",
            &["self"],
            &[("self", &["self"])],
            false,
        ),
        // flip / roll / tril / triu: the same op on grad with the op's int arguments.
        "flip" => e("flip", "FlipBackward0", &["self"], &[("self", &[])], false),
        "roll" => e("roll", "RollBackward0", &["self"], &[("self", &[])], false),
        "tril" => e("tril", "TrilBackward0", &["self"], &[("self", &[])], false),
        "triu" => e("triu", "TriuBackward0", &["self"], &[("self", &[])], false),
        // cumprod_backward(grad, self, dim, result).
        // cumsum: cumsum_backward(grad.to(self.scalar_type()), dim): self's dtype only.
        "cumsum" => e(
            "cumsum",
            "CumsumBackward0",
            &["self"],
            &[("self", &[])],
            false,
        ),
        "cumprod" => e(
            "cumprod",
            "CumprodBackward0",
            &["self"],
            &[("self", &["self"])],
            true,
        ),
        // hypot: self: grad * self / result; other: grad * other / result.
        "hypot" => e(
            "hypot",
            "HypotBackward0",
            &["self", "other"],
            &[("self", &["self"]), ("other", &["other"])],
            true,
        ),
        // atan2: one formula for both reads self and other; logaddexp: each reads both.
        "atan2" => e(
            "atan2",
            "Atan2Backward0",
            &["self", "other"],
            &[("self", &["self", "other"]), ("other", &["self", "other"])],
            false,
        ),
        "logaddexp" => e(
            "logaddexp",
            "LogaddexpBackward0",
            &["self", "other"],
            &[("self", &["self", "other"]), ("other", &["self", "other"])],
            false,
        ),
        // lerp.Scalar: grad * (1 - weight) and grad * weight, weight a number.
        "lerp" => e(
            "lerp.Scalar",
            "LerpBackward0",
            &["self", "end"],
            &[("self", &[]), ("end", &[])],
            false,
        ),
        // lerp.Tensor: self: grad * (1 - weight); end: grad * weight; weight: grad * (end -
        // self).
        "lerp_tensor" => e(
            "lerp.Tensor",
            "LerpBackward1",
            &["self", "end", "weight"],
            &[
                ("self", &["weight"]),
                ("end", &["weight"]),
                ("weight", &["end", "self"]),
            ],
            false,
        ),
        // index_select: index_select_backward(grad, self.sizes(), dim, index); the index
        // is non-differentiable.
        "index_select" => e(
            "index_select",
            "IndexSelectBackward0",
            &["self", "index"],
            &[("self", &["index"])],
            false,
        ),
        _ => return None,
    })
}

/// Ops whose nodes are hand-written in PyTorch (not generated from the file), with what
/// they keep: `copy_`'s `CopyBackwards` and the `CopySlices` of a write through a view keep
/// only geometry and options.
const HAND_WRITTEN: &[(&str, &str)] = &[("copy_", "CopyBackwards"), ("setitem", "CopySlices")];

/// The saves the generated node has, derived from an entry's facts.
fn derive(entry: &Entry) -> Vec<Save> {
    let differentiable: Vec<&str> = entry.reads.iter().map(|(input, _)| *input).collect();
    let mut saves = Vec::new();
    for (i, arg) in entry.operands.iter().enumerate() {
        let readers: Vec<&str> = entry
            .reads
            .iter()
            .filter(|(_, read)| read.contains(arg))
            .map(|(input, _)| *input)
            .collect();
        if readers.is_empty() {
            continue;
        }
        if readers.len() == differentiable.len() {
            saves.push(Save::Input(i));
            continue;
        }
        let position = |reader: &str| {
            entry
                .operands
                .iter()
                .position(|o| *o == reader)
                .unwrap_or_else(|| panic!("{}: {reader} is not an operand", entry.schema))
        };
        if let [reader] = readers.as_slice() {
            saves.push(Save::InputIf(i, position(reader)));
            continue;
        }
        // Several, not all, inputs read it: saved when any of them requires grad. The
        // table spells the condition as a static list; compare its contents.
        let mut any: Vec<usize> = readers.iter().map(|r| position(r)).collect();
        any.sort_unstable();
        let known: &'static [usize] = match any.as_slice() {
            [1, 2] => &[1, 2],
            [0, 1] => &[0, 1],
            other => panic!("{}: no static list for {other:?}", entry.schema),
        };
        saves.push(Save::InputIfAny(i, known));
    }
    if entry.reads_result {
        saves.push(Save::Output);
    }
    saves.extend(entry.results.iter().map(|&k| Save::Result(k)));
    saves
}

fn sorted(saves: &[Save]) -> Vec<String> {
    let mut v: Vec<String> = saves.iter().map(|s| format!("{s:?}")).collect();
    v.sort();
    v
}

#[test]
fn every_row_of_the_autograd_table_matches_the_derivatives_yaml_facts() {
    let mut mismatches = Vec::new();
    for row in OP_RULES {
        if let Some(&(_, node)) = HAND_WRITTEN.iter().find(|(op, _)| *op == row.op) {
            if row.node != node || !row.saves.is_empty() {
                mismatches.push(format!("{}: hand-written {node} saves no tensor", row.op));
            }
            continue;
        }
        let Some(entry) = facts(row.op) else {
            mismatches.push(format!(
                "{}: no derivatives.yaml facts for this row",
                row.op
            ));
            continue;
        };
        if row.node != entry.node {
            mismatches.push(format!(
                "{}: node {} but {} generates {}",
                row.op, row.node, entry.schema, entry.node
            ));
        }
        let derived = derive(&entry);
        if sorted(row.saves) != sorted(&derived) {
            mismatches.push(format!(
                "{}: saves {:?} but {} reads {:?}",
                row.op, row.saves, entry.schema, derived
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The derivation itself distinguishes the three cases, so the comparison above can fail.
#[test]
fn the_derivation_tells_unconditional_conditional_and_result_saves_apart() {
    let div = facts("div").unwrap();
    assert_eq!(
        sorted(&derive(&div)),
        sorted(&[Save::Input(1), Save::InputIf(0, 1)])
    );
    let mm = facts("matmul").unwrap();
    assert_eq!(
        sorted(&derive(&mm)),
        sorted(&[Save::InputIf(0, 1), Save::InputIf(1, 0)])
    );
    assert_eq!(derive(&facts("relu").unwrap()), vec![Save::Output]);
    assert_eq!(derive(&facts("cat").unwrap()), vec![]);
    // An in-place op takes its out-of-place entry.
    assert_eq!(facts("mul_").unwrap().schema, "mul.Tensor");
    // Results beyond the first, and a tensor read by two of three inputs.
    assert_eq!(
        sorted(&derive(&facts("layer_norm").unwrap())),
        sorted(&[
            Save::Input(0),
            Save::Input(1),
            Save::Input(2),
            Save::Result(1),
            Save::Result(2),
        ])
    );
    assert_eq!(
        sorted(&derive(&facts("addcdiv").unwrap())),
        sorted(&[Save::InputIf(1, 2), Save::InputIfAny(2, &[1, 2])])
    );
    // Batch norm's bias is not read: not saved.
    assert!(!derive(&facts("batch_norm").unwrap()).contains(&Save::Input(2)));
}

/// Every node class the model's recording code names (a string literal in
/// `harness/src/python`, the only place nodes are built) is a row of the autograd table or
/// a hand-written node with its reason, so a new op recorded without a row fails here.
#[test]
fn every_node_the_model_records_is_a_row_or_a_hand_written_node() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/python");
    let mut files = vec![root];
    let mut names = std::collections::BTreeMap::<String, String>::new();
    let mut table_reads: Vec<(String, String)> = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("readable source dir") {
                files.push(entry.expect("a dir entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        for (line_no, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            // Sites that read the table by op name (`row("layer_norm")`, `op_rule("addcmul")`,
            // `record_op(it, out, "convolution", ..)`) name a row that exists.
            for call in ["row(\"", "op_rule(\"", "record_normalization(\""] {
                for rest in line.split(call).skip(1) {
                    let op = rest.split('"').next().unwrap_or_default();
                    table_reads.push((
                        op.to_string(),
                        format!("{}:{}", path.display(), line_no + 1),
                    ));
                }
            }
            if let Some(rest) = line.split("record_op(").nth(1)
                && let Some(op) = rest.split('"').nth(1)
            {
                table_reads.push((
                    op.to_string(),
                    format!("{}:{}", path.display(), line_no + 1),
                ));
            }
            for literal in line.split('"').skip(1).step_by(2) {
                let is_node = literal.chars().all(|c| c.is_ascii_alphanumeric())
                    && literal.starts_with(|c: char| c.is_ascii_uppercase())
                    && (literal
                        .trim_end_matches(|c: char| c.is_ascii_digit())
                        .ends_with("Backward")
                        || literal.ends_with("Backwards")
                        || ["CopySlices", "AccumulateGrad", "PyNode"].contains(&literal));
                if is_node {
                    names
                        .entry(literal.to_string())
                        .or_insert_with(|| format!("{}:{}", path.display(), line_no + 1));
                }
            }
        }
    }
    // The sites of each kind of recording must have been found at all.
    for expected in ["BackwardHookFunctionBackward", "CopySlices"] {
        assert!(names.contains_key(expected), "scan missed {expected}");
    }
    for expected in ["mul.Scalar", "cat", "lstm_cell"] {
        assert!(
            table_reads.iter().any(|(op, _)| op == expected),
            "scan missed the table read of {expected}"
        );
    }
    let missing: Vec<String> = names
        .iter()
        .filter(|(name, _)| {
            !gpumem_harness::torch::is_known_node(name) && !MODEL_FALLBACKS.contains(&name.as_str())
        })
        .map(|(name, at)| format!("{name} (recorded at {at}) has no row in torch::OP_RULES"))
        .collect();
    assert!(missing.is_empty(), "{}", missing.join("\n"));
    assert!(
        table_reads.len() >= 10,
        "scan found only {} table reads",
        table_reads.len()
    );
    let unknown: Vec<String> = table_reads
        .iter()
        .filter(|(op, _)| gpumem_harness::torch::op_rule(op).is_none())
        .map(|(op, at)| format!("{at} reads row {op:?}, which the table lacks"))
        .collect();
    assert!(unknown.is_empty(), "{}", unknown.join("\n"));
    // Every hand-written node has a reason.
    for (node, reason) in gpumem_harness::torch::HAND_WRITTEN_NODES {
        assert!(!reason.is_empty(), "{node}");
    }
}

/// Node names the model uses that are not PyTorch's, with why: `BinaryBackward` is the
/// model's node for a tensor operator it has no row for (`//`, `%`, bitwise, shifts), saving
/// both operands. PyTorch records `RemainderBackward0` for `%` and no differentiable node
/// for the others; not modelled yet.
const MODEL_FALLBACKS: &[&str] = &["BinaryBackward"];

/// Recording sites name the op, and the table names its node: no source file of the model
/// spells a node class the table generates (so the one table decides what each node is
/// called and saves). Hand-written nodes and the model's fallbacks are spelled where they
/// are built.
#[test]
fn no_recording_site_spells_a_generated_node_name() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/python");
    let mut files = vec![root];
    let mut spelled = Vec::new();
    while let Some(path) = files.pop() {
        if path.is_dir() {
            for entry in std::fs::read_dir(&path).expect("readable source dir") {
                files.push(entry.expect("a dir entry").path());
            }
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).expect("readable source");
        for (line_no, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            for literal in line.split('"').skip(1).step_by(2) {
                let hand_written = gpumem_harness::torch::HAND_WRITTEN_NODES
                    .iter()
                    .any(|(n, _)| *n == literal);
                if OP_RULES.iter().any(|r| r.node == literal) && !hand_written {
                    spelled.push(format!("{}:{}: {literal}", path.display(), line_no + 1));
                }
            }
        }
    }
    assert!(spelled.is_empty(), "{}", spelled.join("\n"));
}
