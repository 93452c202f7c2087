//! Autograd for memory: graph nodes, what each op saves for backward, and who holds what.
//!
//! A graph node is a C++ object. It holds, through C++ references the cycle collector
//! cannot see: the tensors it saved for backward, the nodes of its inputs (`next_edges`),
//! a custom Function's `ctx` (a `PyNode` owns its Python object) and, for
//! `AccumulateGrad`, the leaf tensor. So everything a live graph reaches is a root to the
//! collector, and it lives as long as some tensor's `grad_fn` chain reaches it.
//!
//! # What each op saves (PyTorch's `derivatives.yaml`)
//!
//! The table the model runs on is [`OP_RULES`] below (one row per op: node, gradient flow,
//! saves); the summary here also covers the layers that build their nodes themselves.
//!
//! Saving is conditional, as in the generated code: an operand needed only for another
//! operand's gradient is saved only when that other operand requires grad.
//!
//! | op                              | node              | saves                                                   |
//! |---------------------------------|-------------------|---------------------------------------------------------|
//! | `a + b`, `a - b`, `a + s`       | `AddBackward0`    | nothing (sizes only)                                    |
//! | `a * b`                         | `MulBackward0`    | `b` if `a` requires grad, `a` if `b` requires grad      |
//! | `a * s`, `a / s` (Python number)| `MulBackward0`... | the number, wrapped as a CPU scalar: no device bytes    |
//! | `a / b`                         | `DivBackward0`    | `b` always, `a` if `b` requires grad                    |
//! | `a @ b`, `mm`, `matmul`         | `MmBackward0`     | `a` if `b` requires grad, `b` if `a` requires grad      |
//! | `F.linear`, `nn.Linear`         | `AddmmBackward0`  | input if weight requires grad, weight if input does     |
//! | the same without a bias         | `MmBackward0`     | the same (the weight as its `t()` view), see `python/layers.rs` |
//! | `relu`, `sigmoid`, `tanh`, `exp`| `*Backward0`      | its **output** (the result's data, not its PyObject)    |
//! | `softmax`, `log_softmax`        | `*Backward0`      | its output                                              |
//! | `log`, `abs`, `sqrt`, `gelu`... | `*Backward0`      | its input (`sqrt` its output)                           |
//! | `pow(s)`                        | `PowBackward0`    | its input                                               |
//! | `sum`, `mean`, `clone`, `to`    | `*Backward0/1`    | nothing (`*Backward1`: the `dim=` overloads)            |
//! | views (`view`, `t`, `permute`...)| `ViewBackward0`, `TBackward0`, `PermuteBackward0`... (one per view op) | nothing |
//! | `mse_loss`                      | `MseLossBackward0`| input and target                                        |
//! | `cross_entropy`                 | `NllLossBackward0` + `LogSoftmaxBackward0` | the log-softmax output, target, class weights, `total_weight` |
//! | `embedding`                     | `EmbeddingBackward0` | the indices                                          |
//! | `dropout` (training, `0<p<1`)   | `NativeDropoutBackward0` | its bool mask (`result1`), see `python/dropout.rs` |
//! | `nn.LSTM`, `nn.GRU` (per step)  | `MmBackward0` ×2 + `ThnnFused*CellBackward0` | see `python/layers.rs`           |
//! | `stack` (inside those layers)   | `StackBackward0`  | nothing; backward hands out slices                      |
//!
//! An op's *input* is saved as the tensor itself (`SavedVariable` keeps the TensorImpl, so
//! its Python object stays alive as a root). An op's *output* is saved as its data only (a
//! saved output must not own its own `grad_fn`, so PyTorch keeps `tensor_data()`): the
//! storage stays, the Python object may die.
//!
//! Backward without `retain_graph` releases every executed node's saved tensors; the nodes
//! themselves live on while a tensor's `grad_fn` reaches them.

use super::StorageId;
use super::{DeviceKind, Dtype};
use crate::heap::{ObjId, Value};

/// A tensor saved for backward.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Saved {
    /// An op input: the tensor object itself, held by C++.
    Tensor(ObjId),
    /// An op output: its data (one storage reference), without the tensor object.
    Data(StorageId),
    /// Saved under `torch.autograd.graph.saved_tensors_hooks`: what `pack` returned and the
    /// hook pair (`PySavedVariableHooks` owns all three, one reference each), never the
    /// tensor itself (`python/saved_tensors_hooks.rs`).
    Packed {
        data: Value,
        pack: Value,
        unpack: Value,
    },
}

/// Where the gradient for one input of a node goes, and that input's metadata.
#[derive(Debug, Clone)]
pub struct InputEdge {
    /// The input's `grad_fn` (or its `AccumulateGrad`); `None` when it needs no gradient.
    pub node: Option<ObjId>,
    /// Which of `node`'s outputs this input was (PyTorch's `Edge::input_nr`): the slot its
    /// gradient fills. 0 except for nodes with several outputs.
    pub input_nr: u32,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
}

/// How a node turns its incoming gradient into its inputs' gradients, for memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GradFlow {
    /// Each input gets a newly allocated gradient of its own shape.
    Compute,
    /// The incoming gradient is passed on unchanged or as a view (views, `+`, `clone`):
    /// no allocation when shapes agree.
    PassThrough,
    /// `stack`/`cat`: each input's gradient is a slice (a view) of the incoming one, so
    /// nothing is allocated; the incoming buffer lives while a slice does.
    Split,
    /// `AccumulateGrad`: the gradient goes into the leaf's `.grad`.
    Accumulate,
    /// A custom `autograd.Function`: its Python `backward` runs.
    Python,
    /// `torch.utils.checkpoint`: the function runs again with grad mode on and its graph is
    /// back-propagated, giving the saved inputs' gradients.
    Recompute,
}

/// One C++ autograd node.
#[derive(Debug, Clone)]
pub struct GradNode {
    /// PyTorch's class name (`MulBackward0`), shown in reports.
    pub name: &'static str,
    pub flow: GradFlow,
    pub saved: Vec<Saved>,
    pub inputs: Vec<InputEdge>,
    /// A custom Function's ctx (the `PyNode` owns it).
    pub ctx: Option<ObjId>,
    /// `AccumulateGrad`'s leaf tensor.
    pub leaf: Option<ObjId>,
    /// Saved tensors were freed by a backward without `retain_graph`.
    pub released: bool,
    /// Some tensors were saved (so a backward after their release is an error; a node that
    /// saved only sizes can run again, as in PyTorch).
    pub had_saved: bool,
    /// `(index into saved, version when saved)`: the saved tensor's version counter must
    /// not have moved when backward unpacks it.
    pub saved_versions: Vec<(usize, u32)>,
    /// The lazily created Python object of a built-in node (not a reference).
    pub py_object: Option<ObjId>,
    /// `_backward_hooks` dicts of the tensors this node produced, registered by
    /// `grad_fn._register_hook_dict(t)` (`PyFunctionTensorPreHook`, a C++ reference): they
    /// run on the node's incoming gradient before it executes.
    /// Each with the output (slot) of the node its tensor is.
    pub hook_dicts: Vec<(ObjId, u32)>,
    /// A module's `BackwardHook` object, for a `BackwardHookFunctionBackward` node: the
    /// closures `register_full_backward_(pre_)hook` registers on the node (C++ references
    /// to Python functions that close over it) call the module's hooks.
    pub module_hook: Option<(ObjId, ModuleHookSide)>,
    /// `CopySlices`' `fn`: the node of the in-place op written through a view, which it
    /// owns (one reference) and calls itself on the slice of the base's gradient; the
    /// engine never reaches it through an edge. Dropped by `release_variables`, after which
    /// the node cannot run again (`ERR_BACKWARD_TWICE`).
    pub wrapped: Option<ObjId>,
    /// A custom Function's outputs (shape, dtype, device; `None` for a non-tensor output),
    /// one gradient slot each: `PyNode::apply` passes zeros of this metadata for a slot no
    /// gradient reached (unless `ctx.set_materialize_grads(False)`).
    pub output_meta: Vec<Option<(Vec<i64>, Dtype, DeviceKind)>>,
    /// A custom Function's arguments, `true` where one was a tensor (PyTorch's
    /// `is_variable_input`): `backward` returns one value per argument, and only a
    /// tensor argument's value has an edge (in `inputs`).
    pub arg_is_tensor: Vec<bool>,
    /// `grad_fn.register_prehook`/`register_hook`: the dict of hooks the node's
    /// `PyFunctionPreHook`/`PyFunctionPostHook` owns (one C++ reference each), see
    /// `python/node_hooks.rs`.
    pub pre_hook_dict: Option<ObjId>,
    pub post_hook_dict: Option<ObjId>,
}

/// Which side of a module call a `BackwardHookFunctionBackward` node wraps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleHookSide {
    /// The inputs: a node post-hook runs the full backward hooks with `grad_input`.
    Inputs,
    /// The outputs: a node pre-hook records `grad_output` and runs the pre-hooks.
    Outputs,
}

impl GradNode {
    pub fn new(name: &'static str, flow: GradFlow) -> GradNode {
        GradNode {
            name,
            flow,
            saved: Vec::new(),
            inputs: Vec::new(),
            ctx: None,
            leaf: None,
            released: false,
            had_saved: false,
            saved_versions: Vec::new(),
            py_object: None,
            hook_dicts: Vec::new(),
            module_hook: None,
            wrapped: None,
            output_meta: Vec::new(),
            arg_is_tensor: Vec::new(),
            pre_hook_dict: None,
            post_hook_dict: None,
        }
    }

    /// Takes the saved tensors out (backward without `retain_graph`).
    pub fn take_saved(&mut self) -> Vec<Saved> {
        self.released = true;
        self.had_saved |= !self.saved.is_empty();
        std::mem::take(&mut self.saved)
    }

    /// Deallocation: drops everything the node holds.
    pub fn release(
        self,
        mut drop_ref: impl FnMut(Value),
        dropped_storage_refs: &mut Vec<StorageId>,
    ) {
        for s in self.saved {
            match s {
                Saved::Tensor(t) => drop_ref(Value::Obj(t)),
                Saved::Data(st) => dropped_storage_refs.push(st),
                Saved::Packed { data, pack, unpack } => {
                    drop_ref(data);
                    drop_ref(pack);
                    drop_ref(unpack);
                }
            }
        }
        for e in self.inputs {
            if let Some(n) = e.node {
                drop_ref(Value::Obj(n));
            }
        }
        if let Some(c) = self.ctx {
            drop_ref(Value::Obj(c));
        }
        if let Some(l) = self.leaf {
            drop_ref(Value::Obj(l));
        }
        for (d, _) in self.hook_dicts {
            drop_ref(Value::Obj(d));
        }
        if let Some((h, _)) = self.module_hook {
            drop_ref(Value::Obj(h));
        }
        if let Some(w) = self.wrapped {
            drop_ref(Value::Obj(w));
        }
        for d in [self.pre_hook_dict, self.post_hook_dict]
            .into_iter()
            .flatten()
        {
            drop_ref(Value::Obj(d));
        }
    }
}

/// What a node saves of an op's operands (`Input(i)`), of its result (`Output`), or of an
/// operand only when another one requires grad (`InputIf(i, other)`: the generated code's
/// `should_compute_output`). Everything else a node keeps is sizes and scalars.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Save {
    Input(usize),
    InputIf(usize, usize),
    /// Operand `i`, saved when any of the listed operands requires grad: several inputs'
    /// formulas read it, but not every differentiable input's (`addcdiv`'s `tensor2`).
    InputIfAny(usize, &'static [usize]),
    /// The op's (first) result, as its data.
    Output,
    /// Result `k` of a multi-output op (`result1`, `result2`, ...), as its data: statistics,
    /// masks and indices the op computes beside its output (`Result(0)` is `Output`).
    Result(usize),
}

/// One row of the autograd table: the op as the model names it, PyTorch's node class, how
/// the gradient flows, and what the node saves.
#[derive(Debug, Clone, Copy)]
pub struct OpRule {
    pub op: &'static str,
    pub node: &'static str,
    pub flow: GradFlow,
    pub saves: &'static [Save],
}

const fn rule(
    op: &'static str,
    node: &'static str,
    flow: GradFlow,
    saves: &'static [Save],
) -> OpRule {
    OpRule {
        op,
        node,
        flow,
        saves,
    }
}

use GradFlow::{Compute, PassThrough, Split};
use Save::{Input, InputIf, InputIfAny, Output, Result};

/// The autograd table: every op the model records, in one place, cross-checked against the
/// formulas of PyTorch's `tools/autograd/derivatives.yaml` as read from the ROCm/pytorch
/// fork at commit `10b22ea5c6a60ffa85520eb2d293affc48cea8ee` (a 2.x-era copy of upstream's
/// file; the upstream copy available here was a 1.x one). A tensor argument a formula reads
/// in full is what the generated node saves, and it saves it only when an input whose
/// formula reads it requires grad; `sizes()`, `options()` and scalar types are metadata.
/// `harness/tests/torch_derivatives_yaml.rs` re-derives every row from those facts.
///
/// Operand 0 is `self`, operand 1 `other` (or the weight, target, indices); in-place ops
/// (`add_`) use their out-of-place entry (the file's own rule) and save the value of `self`
/// *before* the write as a copy when their formula needs it (`original_self`). A Python
/// number operand (`x * 2`) is wrapped into a CPU scalar tensor and dispatched to the
/// `Tensor` overload, so the node is `MulBackward0` and what it saves has no device bytes.
/// `CopyBackwards` and `CopySlices` are hand-written nodes, not in the file.
pub const OP_RULES: &[OpRule] = &[
    // add.Tensor / sub.Tensor: grad and -grad (maybe reduced to the operand's shape).
    rule("add", "AddBackward0", PassThrough, &[]),
    rule("sub", "SubBackward0", PassThrough, &[]),
    // mul.Tensor: self: grad * other, other: grad * self.
    rule(
        "mul",
        "MulBackward0",
        Compute,
        &[InputIf(1, 0), InputIf(0, 1)],
    ),
    rule("mul_scalar", "MulBackward0", Compute, &[]),
    // div.Tensor: self: grad / other, other: -grad * self / other^2.
    rule("div", "DivBackward0", Compute, &[Input(1), InputIf(0, 1)]),
    rule("div_scalar", "DivBackward0", Compute, &[]),
    // pow.Tensor_Scalar: pow_backward(grad, self, exponent).
    rule("pow", "PowBackward0", Compute, &[Input(0)]),
    // mm: self: grad.mm(mat2.t()), mat2: self.t().mm(grad).
    rule(
        "matmul",
        "MmBackward0",
        Compute,
        &[InputIf(0, 1), InputIf(1, 0)],
    ),
    // addmm (F.linear): mat1 if mat2 needs grad, mat2 if mat1 does.
    rule(
        "linear",
        "AddmmBackward0",
        Compute,
        &[InputIf(0, 1), InputIf(1, 0)],
    ),
    // Formulas of the result: threshold_backward(grad, result), grad * result, ...
    rule("relu", "ReluBackward0", Compute, &[Output]),
    rule("sigmoid", "SigmoidBackward0", Compute, &[Output]),
    rule("tanh", "TanhBackward0", Compute, &[Output]),
    rule("exp", "ExpBackward0", Compute, &[Output]),
    rule("sqrt", "SqrtBackward0", Compute, &[Output]),
    rule("softmax", "SoftmaxBackward0", Compute, &[Output]),
    rule("log_softmax", "LogSoftmaxBackward0", Compute, &[Output]),
    // Formulas of the input: grad / self, grad * self.sgn(), clamp_backward(grad, self, ..).
    rule("log", "LogBackward0", Compute, &[Input(0)]),
    rule("abs", "AbsBackward0", Compute, &[Input(0)]),
    rule("clamp", "ClampBackward1", Compute, &[Input(0)]),
    rule("gelu", "GeluBackward0", Compute, &[Input(0)]),
    rule("neg", "NegBackward0", Compute, &[]),
    // Reductions and copies keep sizes and dtypes only.
    rule("sum", "SumBackward0", Compute, &[]),
    rule("mean", "MeanBackward0", Compute, &[]),
    rule("sum_dim", "SumBackward1", Compute, &[]),
    rule("mean_dim", "MeanBackward1", Compute, &[]),
    rule("clone", "CloneBackward0", PassThrough, &[]),
    rule("to", "ToCopyBackward0", Compute, &[]),
    rule("view", "ViewBackward0", PassThrough, &[]),
    // split / chunk (one node for all pieces) and repeat: sizes only.
    rule("split", "SplitBackward0", Compute, &[]),
    rule("split_with_sizes", "SplitWithSizesBackward0", Compute, &[]),
    rule("repeat", "RepeatBackward0", Compute, &[]),
    // cat / stack: split the gradient by the saved sizes.
    rule("cat", "CatBackward0", Split, &[]),
    rule("stack", "StackBackward0", Split, &[]),
    // Losses and lookups.
    rule(
        "mse_loss",
        "MseLossBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    rule("embedding", "EmbeddingBackward0", Compute, &[Input(1)]),
    // In-place ops.
    rule("add_", "AddBackward0", Compute, &[]),
    rule("sub_", "SubBackward0", Compute, &[]),
    rule(
        "mul_",
        "MulBackward0",
        Compute,
        &[InputIf(1, 0), InputIf(0, 1)],
    ),
    rule("mul_scalar_", "MulBackward0", Compute, &[]),
    rule("div_", "DivBackward0", Compute, &[Input(1), InputIf(0, 1)]),
    rule("div_scalar_", "DivBackward0", Compute, &[]),
    rule("pow_", "PowBackward0", Compute, &[Input(0)]),
    rule("copy_", "CopyBackwards", Compute, &[]),
    rule("zero_", "ZeroBackward0", Compute, &[]),
    rule("fill_", "FillBackward0", Compute, &[]),
    rule("normal_", "NormalBackward0", Compute, &[]),
    rule("uniform_", "UniformBackward0", Compute, &[]),
    rule("relu_", "ReluBackward0", Compute, &[Output]),
    rule("sigmoid_", "SigmoidBackward0", Compute, &[Output]),
    rule("tanh_", "TanhBackward0", Compute, &[Output]),
    rule("exp_", "ExpBackward0", Compute, &[Output]),
    rule("clamp_", "ClampBackward1", Compute, &[Input(0)]),
    rule("neg_", "NegBackward0", Compute, &[]),
    // Writing into an index of a tensor (`t[i] = v`).
    rule("setitem", "CopySlices", Compute, &[]),
    // Activations whose formulas read the input.
    rule("leaky_relu", "LeakyReluBackward0", Compute, &[Input(0)]),
    rule("silu", "SiluBackward0", Compute, &[Input(0)]),
    // Fused losses: both the input's and the target's formulas read every tensor operand.
    rule(
        "smooth_l1_loss",
        "SmoothL1LossBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    rule(
        "binary_cross_entropy",
        "BinaryCrossEntropyBackward0",
        Compute,
        &[Input(0), Input(1), Input(2)],
    ),
    rule(
        "binary_cross_entropy_with_logits",
        "BinaryCrossEntropyWithLogitsBackward0",
        Compute,
        &[Input(0), Input(1), Input(2), Input(3)],
    ),
    // convolution: one formula for input, weight and bias reads input and weight.
    rule(
        "convolution",
        "ConvolutionBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    rule(
        "adaptive_avg_pool2d",
        "AdaptiveAvgPool2DBackward0",
        Compute,
        &[Input(0)],
    ),
    // In-place activations: `leaky_relu_` has its own entry, whose formula reads the result
    // (node `LeakyReluBackward1`); `silu_` has none and takes `silu`'s, which reads `self`,
    // so the generated code saves a clone of `self` taken before the write.
    rule("leaky_relu_", "LeakyReluBackward1", Compute, &[Output]),
    rule("silu_", "SiluBackward0", Compute, &[Input(0)]),
    // kl_div's composite (`python/kl_div.rs`): xlogy.Tensor's two formulas each read both
    // operands.
    rule("xlogy", "XlogyBackward0", Compute, &[Input(0), Input(1)]),
    // softplus: softplus_backward(grad, self, beta, threshold).
    rule("softplus", "SoftplusBackward0", Compute, &[Input(0)]),
    // linalg_vector_norm (torch.norm, Tensor.norm): its backward reads self and result.
    rule(
        "linalg_vector_norm",
        "LinalgVectorNormBackward0",
        Compute,
        &[Input(0), Output],
    ),
    // addcmul: tensor1's gradient reads tensor2, tensor2's reads tensor1; self's reads none.
    rule(
        "addcmul",
        "AddcmulBackward0",
        Compute,
        &[InputIf(2, 1), InputIf(1, 2)],
    ),
    rule(
        "addcmul_",
        "AddcmulBackward0",
        Compute,
        &[InputIf(2, 1), InputIf(1, 2)],
    ),
    // Activations (`python/activations.rs`): elu, hardtanh (relu6), mish and hardswish read
    // `self`; `elu_` has an entry of its own reading the result; `hardtanh_`, `mish_` and
    // `hardswish_` take the out-of-place formula (a copy of `self` before the write).
    rule("elu", "EluBackward0", Compute, &[Input(0)]),
    rule("elu_", "EluBackward1", Compute, &[Output]),
    rule("hardtanh", "HardtanhBackward0", Compute, &[Input(0)]),
    rule("hardtanh_", "HardtanhBackward0", Compute, &[Input(0)]),
    rule("mish", "MishBackward0", Compute, &[Input(0)]),
    rule("mish_", "MishBackward0", Compute, &[Input(0)]),
    rule("hardswish", "HardswishBackward0", Compute, &[Input(0)]),
    rule("hardswish_", "HardswishBackward0", Compute, &[Input(0)]),
    // Multi-output ops: each formula reads `result1`/`result2`, the statistics (or mask,
    // indices, workspace) the kernel returns beside its output; see `python/normalization.rs`,
    // `python/group_norm.rs`, `python/dropout.rs`, `python/losses.rs`.
    // native_layer_norm(input, weight, bias): one formula for all three reads them all
    // and result1 (mean), result2 (rstd).
    rule(
        "layer_norm",
        "NativeLayerNormBackward0",
        Compute,
        &[Input(0), Input(1), Input(2), Result(1), Result(2)],
    ),
    // native_batch_norm(input, weight, bias, running_mean, running_var): reads input,
    // weight, the running stats and result1/result2 (save_mean, save_invstd), not bias.
    rule(
        "batch_norm",
        "NativeBatchNormBackward0",
        Compute,
        &[Input(0), Input(1), Input(3), Input(4), Result(1), Result(2)],
    ),
    // native_group_norm(input, weight, bias): reads input, weight, result1 (mean) and
    // result2 (rstd).
    rule(
        "group_norm",
        "NativeGroupNormBackward0",
        Compute,
        &[Input(0), Input(1), Result(1), Result(2)],
    ),
    // native_dropout: the gradient reads result1 (the mask) only.
    rule("dropout", "NativeDropoutBackward0", Compute, &[Result(1)]),
    // nll_loss_forward(self, target, weight): self's formula reads all three and
    // result1 (total_weight); target is non-differentiable.
    rule(
        "nll_loss",
        "NllLossBackward0",
        Compute,
        &[Input(0), Input(1), Input(2), Result(1)],
    ),
    // max_pool2d_with_indices: reads self and result1 (the indices).
    rule(
        "max_pool2d",
        "MaxPool2DWithIndicesBackward0",
        Compute,
        &[Input(0), Result(1)],
    ),
    // bmm / baddbmm: each batch's gradient reads the other batch.
    rule(
        "bmm",
        "BmmBackward0",
        Compute,
        &[InputIf(0, 1), InputIf(1, 0)],
    ),
    rule(
        "baddbmm",
        "BaddbmmBackward0",
        Compute,
        &[InputIf(2, 1), InputIf(1, 2)],
    ),
    // mul.Scalar (a C++ scalar, as in attention's math path): reads the scalar only.
    rule("mul.Scalar", "MulBackward1", Compute, &[]),
    // Views and reshapes: sizes only.
    rule("t", "TBackward0", PassThrough, &[]),
    rule("unsafe_view", "UnsafeViewBackward0", PassThrough, &[]),
    rule("unbind", "UnbindBackward0", Compute, &[]),
    // max.dim / min.dim read result1 (indices); max() / min() read self and the result.
    rule("max_dim", "MaxBackward0", Compute, &[Result(1)]),
    rule("min_dim", "MinBackward0", Compute, &[Result(1)]),
    rule("max", "MaxBackward1", Compute, &[Input(0), Output]),
    rule("min", "MinBackward1", Compute, &[Input(0), Output]),
    // maximum / minimum (also `torch.max(a, b)`): both formulas compare self with other.
    rule(
        "maximum",
        "MaximumBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    rule(
        "minimum",
        "MinimumBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    // sort / sort.stable / topk scatter the gradient back through result1 (indices).
    rule("sort", "SortBackward0", Compute, &[Result(1)]),
    rule("sort_stable", "SortBackward1", Compute, &[Result(1)]),
    rule("topk", "TopkBackward0", Compute, &[Result(1)]),
    // as_strided: the input's geometry (sizes, strides, offset) only. The model records no
    // such node; PyTorch regenerates one for a strided view, which the version error names.
    rule("as_strided", "AsStridedBackward0", Compute, &[]),
    // Fused recurrent cells (input_gates, hidden_gates, cx/hx, input_bias, hidden_bias): one
    // formula reads every operand; the LSTM's also result1 (cy) and result2 (workspace),
    // the GRU's result1 (workspace).
    rule(
        "lstm_cell",
        "ThnnFusedLstmCellBackward0",
        Compute,
        &[
            Input(0),
            Input(1),
            Input(2),
            Input(3),
            Input(4),
            Result(1),
            Result(2),
        ],
    ),
    rule(
        "gru_cell",
        "ThnnFusedGruCellBackward0",
        Compute,
        &[Input(0), Input(1), Input(2), Input(3), Input(4), Result(1)],
    ),
    // addcdiv(self, tensor1, tensor2): tensor1's formula reads tensor2; tensor2's reads
    // tensor1 and tensor2. So tensor1 is saved when tensor2 requires grad, tensor2 when
    // either does.
    rule(
        "addcdiv",
        "AddcdivBackward0",
        Compute,
        &[InputIf(1, 2), InputIfAny(2, &[1, 2])],
    ),
    rule(
        "addcdiv_",
        "AddcdivBackward0",
        Compute,
        &[InputIf(1, 2), InputIfAny(2, &[1, 2])],
    ),
    // remainder.Scalar: self: grad. remainder.Tensor: self: grad; other: -grad *
    // self.div(other, rounding_mode="floor"), which reads both operands.
    rule("remainder.Scalar", "RemainderBackward0", PassThrough, &[]),
    rule(
        "remainder",
        "RemainderBackward1",
        Compute,
        &[InputIf(0, 1), InputIf(1, 1)],
    ),
    // index.Tensor: self: index_backward(grad.new_zeros(self.sizes(), self.options()),
    // indices, grad): the index tensors (a bool mask as given), self's sizes only.
    rule("index", "IndexBackward0", Compute, &[Input(1)]),
    // View ops, each its own node class as PyTorch names it (the formulas read sizes and
    // dims only): permute, transpose.int, expand, squeeze / squeeze.dim, unsqueeze,
    // slice.Tensor and select.int (basic indexing), alias (`x[...]`).
    rule("permute", "PermuteBackward0", PassThrough, &[]),
    rule("transpose", "TransposeBackward0", PassThrough, &[]),
    rule("expand", "ExpandBackward0", PassThrough, &[]),
    rule("squeeze", "SqueezeBackward0", PassThrough, &[]),
    rule("squeeze_dim", "SqueezeBackward1", PassThrough, &[]),
    rule("unsqueeze", "UnsqueezeBackward0", PassThrough, &[]),
    rule("slice", "SliceBackward0", PassThrough, &[]),
    rule("select", "SelectBackward0", PassThrough, &[]),
    rule("alias", "AliasBackward0", PassThrough, &[]),
    // logsumexp: logsumexp_backward(grad, self, result, dim, keepdim) reads self and result.
    rule(
        "logsumexp",
        "LogsumexpBackward0",
        Compute,
        &[Input(0), Output],
    ),
    // where.self(condition, self, other): both gradients are `where(condition, ...)` of
    // grad, so the (non-differentiable) condition is saved; the operands are not.
    rule("where", "WhereBackward0", Compute, &[Input(0)]),
    // index_put_ (`t[mask] = v`, `t[idx] = v`; operands self, indices, values): both
    // formulas read the indices; `values` only for `zeros_like` (sizes and options).
    rule("index_put_", "IndexPutBackward0", Compute, &[Input(1)]),
    // python/pointwise_math.rs. log10 / log2 / log1p read self; expm1, exp2, rsqrt and
    // reciprocal the result; sign, floor, ceil, round (both overloads) and trunc are
    // zeros_like(grad); clamp_min/clamp_max (Scalar) compare self with the bound.
    rule("log10", "Log10Backward0", Compute, &[Input(0)]),
    rule("log2", "Log2Backward0", Compute, &[Input(0)]),
    rule("log1p", "Log1PBackward0", Compute, &[Input(0)]),
    rule("expm1", "Expm1Backward0", Compute, &[Output]),
    rule("exp2", "Exp2Backward0", Compute, &[Output]),
    rule("rsqrt", "RsqrtBackward0", Compute, &[Output]),
    rule("reciprocal", "ReciprocalBackward0", Compute, &[Output]),
    rule("sign", "SignBackward0", Compute, &[]),
    rule("floor", "FloorBackward0", Compute, &[]),
    rule("ceil", "CeilBackward0", Compute, &[]),
    rule("round", "RoundBackward0", Compute, &[]),
    rule("round_decimals", "RoundBackward1", Compute, &[]),
    rule("trunc", "TruncBackward0", Compute, &[]),
    rule("clamp_min", "ClampMinBackward0", Compute, &[Input(0)]),
    rule("clamp_max", "ClampMaxBackward0", Compute, &[Input(0)]),
    // flip, roll, tril, triu: the same op on grad (dims, shifts, diagonal only).
    rule("flip", "FlipBackward0", Compute, &[]),
    rule("roll", "RollBackward0", Compute, &[]),
    rule("tril", "TrilBackward0", Compute, &[]),
    rule("triu", "TriuBackward0", Compute, &[]),
    // cumprod_backward(grad, self, dim, result).
    rule("cumprod", "CumprodBackward0", Compute, &[Input(0), Output]),
    // hypot: self's gradient reads self and the result, other's other and the result.
    rule(
        "hypot",
        "HypotBackward0",
        Compute,
        &[InputIf(0, 0), InputIf(1, 1), Output],
    ),
    // atan2_backward(grad, self, other, mask); logaddexp's two formulas read both.
    rule("atan2", "Atan2Backward0", Compute, &[Input(0), Input(1)]),
    rule(
        "logaddexp",
        "LogaddexpBackward0",
        Compute,
        &[Input(0), Input(1)],
    ),
    // lerp.Scalar reads the number only; lerp.Tensor: self's and end's formulas read
    // weight, weight's reads end and self.
    rule("lerp", "LerpBackward0", Compute, &[]),
    rule(
        "lerp_tensor",
        "LerpBackward1",
        Compute,
        &[InputIfAny(2, &[0, 1]), InputIf(0, 2), InputIf(1, 2)],
    ),
    // index_select (repeat_interleave's composite): index_select_backward reads the index.
    rule("index_select", "IndexSelectBackward0", Compute, &[Input(1)]),
    // cumsum: cumsum_backward(grad.to(self.scalar_type()), dim) reads self's dtype only.
    rule("cumsum", "CumsumBackward0", Compute, &[]),
];

/// Nodes the model records that `derivatives.yaml` does not generate, with why: PyTorch
/// writes them by hand in C++ or they are Python `autograd.Function`s. What each keeps is
/// modelled where it is built (named in the reason).
pub const HAND_WRITTEN_NODES: &[(&str, &str)] = &[
    (
        "CopySlices",
        "an in-place op on a view rebases the base's history (torch/csrc/autograd/functions/tensor.cpp); keeps geometry and the op's node, see python/inplace.rs",
    ),
    (
        "CopyBackwards",
        "copy_ is hand-written (torch/csrc/autograd/functions/tensor.cpp); keeps the source's options only",
    ),
    (
        "AccumulateGrad",
        "the leaf's gradient sink (torch/csrc/autograd/functions/accumulate_grad.cpp); holds the leaf",
    ),
    (
        "PyNode",
        "a custom autograd.Function's node; owns its ctx (python/custom_function.rs)",
    ),
    (
        "BackwardHookFunctionBackward",
        "torch/utils/hooks.py's BackwardHookFunction (a Python Function), see python/module_backward_hooks.rs",
    ),
    (
        "CheckpointFunctionBackward",
        "torch/utils/checkpoint.py's CheckpointFunction (a Python Function), see python/checkpoint.rs",
    ),
    (
        "NotImplemented",
        "an op with no derivatives.yaml formula (floor_divide): the generated code gives its result a NotImplemented node (torch/csrc/autograd/functions/basic_ops.h) whose backward raises; keeps nothing",
    ),
];

/// Whether `node` is a node class the model may record: a row of [`OP_RULES`] or one of
/// [`HAND_WRITTEN_NODES`].
pub fn is_known_node(node: &str) -> bool {
    OP_RULES.iter().any(|r| r.node == node) || HAND_WRITTEN_NODES.iter().any(|(n, _)| *n == node)
}

/// The row of `op`, if the model records it.
pub fn op_rule(op: &str) -> Option<&'static OpRule> {
    OP_RULES.iter().find(|r| r.op == op)
}

/// What the memory profiler calls an allocation's role; it travels with alloc events.
pub use crate::timeline::Category;
