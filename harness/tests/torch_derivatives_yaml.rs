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
        let [reader] = readers.as_slice() else {
            panic!(
                "{}: {arg} is read by a subset of several inputs",
                entry.schema
            )
        };
        let j = entry
            .operands
            .iter()
            .position(|o| o == reader)
            .unwrap_or_else(|| panic!("{}: {reader} is not an operand", entry.schema));
        saves.push(Save::InputIf(i, j));
    }
    if entry.reads_result {
        saves.push(Save::Output);
    }
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
}
