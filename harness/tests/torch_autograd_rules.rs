//! Issue 8's autograd and tensor bugs: in-place history, `cat`/`stack` graphs, custom
//! Function outputs, `create_graph`, unknown keywords, checked sizes and the objects
//! `torch.cuda.memory_*` create. Each workload's `assert`s state what PyTorch holds at that
//! point (bytes from `torch.cuda.memory_allocated()`), so a wrong rule fails the run.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

/// Runs `workload` (indented by two spaces in the YAML, first line is file line 5).
fn run(python: &str, workload: &str) -> Result<Timeline, String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"{python}\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    let mut last = None;
    for v in s.variants() {
        last = Some(run_variant(&s, &v).map_err(|e| e.to_string())?);
    }
    last.ok_or_else(|| "no variant".to_string())
}

fn ok(workload: &str) -> Timeline {
    match run("3.11", workload) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

fn fails(workload: &str) -> String {
    match run("3.11", workload) {
        Ok(_) => panic!("the workload ran, but an error was expected"),
        Err(e) => e,
    }
}

const MIB: &str = "M = 1024 * 1024\n";
const X: &str = "x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)\n";

// ----- 1. in-place ops keep and rebase history ---------------------------------------------

#[test]
fn augmented_add_keeps_each_iterations_graph_like_the_out_of_place_form() {
    for form in ["total += loss", "total = total + loss"] {
        ok(&format!(
            "{MIB}{X}total = 0
for i in range(3):
    loss = x.sigmoid().sum()
    {form}
# Each iteration's sigmoid output (4 MiB, saved by SigmoidBackward0) stays reachable
# from total's graph.
assert torch.cuda.memory_allocated() >= 16 * M
assert total.grad_fn is not None
total.backward()
assert x.grad is not None
assert torch.cuda.memory_allocated() < 9 * M
"
        ));
    }
}

#[test]
fn accumulating_a_python_float_keeps_no_graph() {
    ok(&format!(
        "{MIB}{X}total = 0.0
for i in range(3):
    loss = x.sigmoid().sum()
    total += loss.item()
del loss
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
}

#[test]
fn in_place_on_a_leaf_that_requires_grad_is_an_error() {
    let e = fails("x = torch.zeros(4, requires_grad=True)\nx += 1\n");
    assert!(
        e.contains("a leaf Variable that requires grad is being used in an in-place operation"),
        "{e}"
    );
    let e = fails("x = torch.zeros(4, requires_grad=True)\nx.mul_(2)\n");
    assert!(e.contains("leaf Variable"), "{e}");
    // Under no_grad it is how optimizers update parameters.
    ok(
        "x = torch.zeros(4, requires_grad=True)\nwith torch.no_grad():\n    x += 1\n    x.mul_(0.5)\nassert x.is_leaf\n",
    );
}

#[test]
fn modifying_a_saved_tensor_fails_at_backward_with_the_version_counter() {
    let e = fails(
        "x = torch.zeros(4, requires_grad=True)\ny = x.sigmoid()\ny.mul_(2)\ny.sum().backward()\n",
    );
    assert!(
        e.contains("modified by an inplace operation")
            && e.contains("is at version 1; expected version 0"),
        "{e}"
    );
    // An op that saved nothing does not care.
    ok(
        "x = torch.zeros(4, requires_grad=True)\ny = x + 1\ny.mul_(2)\ny.sum().backward()\nassert x.grad is not None\n",
    );
}

#[test]
fn in_place_method_routes_gradients_to_the_other_operand() {
    ok("x = torch.zeros(4, requires_grad=True)
w = torch.zeros(4, requires_grad=True)
h = x * 2.0
h.add_(w)
h.sum().backward()
assert w.grad is not None
assert x.grad is not None
");
}

#[test]
fn slice_assignment_of_a_graph_output_keeps_the_graph() {
    ok(&format!(
        "{MIB}{X}buf = torch.zeros(3, 1024 * 1024, device='cuda')
for i in range(3):
    buf[i] = x.sigmoid()
assert buf.requires_grad
# buf 12 MiB, x 4 MiB, three saved sigmoid outputs 12 MiB.
assert torch.cuda.memory_allocated() == 28 * M
buf.sum().backward()
assert torch.cuda.memory_allocated() == 20 * M
"
    ));
}

// ----- 2. cat and stack record a graph -----------------------------------------------------

#[test]
fn cat_and_stack_record_a_node_and_route_gradients() {
    for f in [
        "torch.cat(outs)",
        "torch.stack(outs)",
        "torch.cat(outs, dim=0)",
    ] {
        ok(&format!(
            "{MIB}{X}outs = []
for i in range(4):
    outs.append(x.sigmoid())
total = {f}
del outs
# total 16 MiB, x 4 MiB, the four saved sigmoid outputs 16 MiB: the node saves sizes only.
assert torch.cuda.memory_allocated() == 36 * M
assert total.requires_grad
total.sum().backward()
assert x.grad is not None
assert torch.cuda.memory_allocated() == 24 * M
"
        ));
    }
}

// ----- 3. custom Functions -----------------------------------------------------------------

const EXP: &str = "class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = i.exp()
        ctx.save_for_backward(result)
        return result
    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        return grad_output * result
";

#[test]
fn a_saved_output_does_not_keep_its_own_graph_alive() {
    ok(&format!(
        "{MIB}{EXP}{X}for i in range(3):
    y = Exp.apply(x)
    del y
assert torch.cuda.memory_allocated() == 4 * M
y = Exp.apply(x)
y.sum().backward()
del y
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn returning_an_input_unchanged_gives_a_new_alias_with_the_functions_grad_fn() {
    ok(&format!(
        "{MIB}class Id(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        return i
    @staticmethod
    def backward(ctx, g):
        return g
{X}y = Id.apply(x)
assert x.is_leaf
assert x.grad_fn is None
assert y is not x
assert y.grad_fn is not None
assert torch.cuda.memory_allocated() == 4 * M
y.sum().backward()
y.sum().backward()
del y
assert x.grad is not None
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

// ----- 4. create_graph ----------------------------------------------------------------------

#[test]
fn create_graph_gives_grad_a_graph_that_holds_the_parameter_until_grad_is_reset() {
    let t = ok(&format!(
        "{MIB}{X}for i in range(3):
    y = x.sigmoid().sum()
    y.backward(create_graph=True)
    del y
assert x.grad.requires_grad
assert x.grad.grad_fn is not None
# x, x.grad and each iteration's saved sigmoid output (kept by x.grad's graph).
assert torch.cuda.memory_allocated() >= 20 * M
gc.collect()
assert torch.cuda.memory_allocated() >= 20 * M
x.grad = None
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
    assert!(
        t.approximations
            .iter()
            .any(|n| n.contains("create_graph=True will create a reference cycle")),
        "{:?}",
        t.approximations
    );
}

#[test]
fn autograd_grad_with_create_graph_returns_gradients_with_a_graph() {
    ok("x = torch.zeros(4, requires_grad=True)
y = (x * x).sum()
g, = torch.autograd.grad(y, x, create_graph=True)
assert g.requires_grad
g.sum().backward()
assert x.grad is not None
");
    ok("x = torch.zeros(4, requires_grad=True)
y = (x * x).sum()
g, = torch.autograd.grad(y, [x])
assert not g.requires_grad
");
}

#[test]
fn backward_accepts_inputs_and_grad_tensors() {
    ok("x = torch.zeros(4, requires_grad=True)
w = torch.zeros(4, requires_grad=True)
y = x * w
torch.autograd.backward([y], grad_tensors=[torch.ones(4)], inputs=[w])
assert w.grad is not None
assert x.grad is None
");
}

// ----- 5. unknown keyword arguments ---------------------------------------------------------

#[test]
fn unknown_keywords_are_rejected_at_the_argument() {
    let e = fails("x = torch.zeros(4, bogus=5)\n");
    assert!(e.contains("t.yaml:5:22") && e.contains("bogus"), "{e}");
    let e = fails("x = torch.zeros(4)\ny = x.sum(bogus=1)\n");
    assert!(e.contains("t.yaml:6:13") && e.contains("bogus"), "{e}");
    let e = fails("m = torch.nn.Linear(4, 4, bogus=1)\n");
    assert!(e.contains("t.yaml:5:29") && e.contains("bogus"), "{e}");
    let e = fails("x = torch.zeros(4, requires_grad=True)\nx.sum().backward(bogus=True)\n");
    assert!(e.contains("bogus"), "{e}");
    ok(
        "x = torch.zeros(4, dtype=torch.float16, device='cuda', requires_grad=True)\ny = x.sum(dim=0)\n",
    );
}

// ----- 6. torch.cuda.memory_* create the objects PyTorch creates ------------------------------

/// Objects `memory_stats()` leaves per call, measured on CPython 3.8 to 3.13 (see
/// `python/cuda_memory.rs`): the same in every version. Calls served by free lists (the
/// tuple free list after `import torch` holds many 2-tuples) count fewer until it drains,
/// as in CPython; a full collection empties the free lists first here.
const MEMORY_STATS_GARBAGE: u32 = 127;

#[test]
fn memory_allocated_leaves_memory_stats_cyclic_garbage() {
    for python in ["3.8", "3.10", "3.11", "3.12", "3.13"] {
        run(
            python,
            &format!(
                "gc.collect()
gc.disable()
# A full collection emptied the free lists; the first call refills the dict free list.
a = gc.get_count()[0]
n = torch.cuda.memory_allocated()
first = gc.get_count()[0] - a
a = gc.get_count()[0]
n = torch.cuda.memory_allocated()
b = gc.get_count()[0]
n = torch.cuda.max_memory_reserved()
c = gc.get_count()[0]
assert b - a == {MEMORY_STATS_GARBAGE}, b - a
assert c - b == {MEMORY_STATS_GARBAGE}, c - b
assert first == {MEMORY_STATS_GARBAGE} + 41, first
assert gc.collect() == 3 * {MEMORY_STATS_GARBAGE}
"
            ),
        )
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    }
}

#[test]
fn memory_stats_returns_the_flattened_statistics() {
    ok("x = torch.empty(1024, device='cuda')
s = torch.cuda.memory_stats()
assert s['allocated_bytes.all.current'] == 4096
assert s['num_ooms'] == 0
assert len(s) == 122
assert torch.cuda.memory_allocated() == 4096
");
}

// ----- 7. unsupported APIs say so ----------------------------------------------------------

#[test]
fn an_unmodelled_torch_api_is_unsupported_with_its_location() {
    let e = fails("x = torch.zeros(4)\ny = torch.nn.functional.gumbel_softmax(x)\n");
    assert!(
        e.contains("unsupported")
            && e.contains("torch.nn.functional.gumbel_softmax")
            && e.contains("t.yaml:6:"),
        "{e}"
    );
    let e = fails("x = torch.zeros(4)\ny = x.cummax(0)\n");
    assert!(e.contains("unsupported") && e.contains("cummax"), "{e}");
    // The nearest supported alternative is named.
    let e = fails("x = torch.zeros(4)\ny = torch.clamp(x, 0)\n");
    assert!(
        e.contains("nearest supported: the tensor method `x.clamp(...)`"),
        "{e}"
    );
    let e = fails("x = torch.zeros(4)\ny = torch.zeroes(4)\n");
    assert!(e.contains("nearest supported: `torch.zeros`"), "{e}");
    let e = fails("x = torch.zeros(4)\ny = x.unsqueeze_(0)\n");
    assert!(e.contains("nearest supported: `x.unsqueeze(...)`"), "{e}");
    // A keyword PyTorch has but the model does not is unsupported, not a TypeError.
    let e = fails("x = torch.zeros(4)\ny = torch.add(x, x, out=x)\n");
    assert!(e.contains("unsupported") && e.contains("`out=`"), "{e}");
}

// ----- 8. checked sizes ----------------------------------------------------------------------

#[test]
fn impossible_sizes_are_pytorch_errors_not_wrapped_byte_counts() {
    for w in [
        "torch.zeros(2**32, 2**32, device='cuda')",
        "torch.zeros(2**62, device='cuda')",
        "torch.zeros([2] * 70, device='cuda')",
        "torch.nn.Linear(2**31, 2**31)",
    ] {
        let e = fails(&format!("x = {w}\n"));
        assert!(
            e.contains("Storage size calculation overflowed"),
            "{w}: {e}"
        );
    }
    let e = fails("x = torch.empty(1, 4).expand(2**62, 4).contiguous()\n");
    assert!(e.contains("Storage size calculation overflowed"), "{e}");
    let e = fails("x = torch.zeros(3, -1)\n");
    assert!(
        e.contains("Trying to create tensor with negative dimension -1: [3, -1]"),
        "{e}"
    );
}

#[test]
fn a_size_too_big_for_the_device_is_an_out_of_memory() {
    let t = ok("x = torch.zeros(2**40, device='cuda')\n");
    let oom = t.oom.expect("an out-of-memory error");
    assert!(
        oom.message
            .contains("CUDA out of memory. Tried to allocate 4096.00 GiB"),
        "{}",
        oom.message
    );
}

#[test]
fn expand_then_contiguous_allocates_the_full_tensor() {
    ok(&format!(
        "{MIB}x = torch.empty(1, 1024, device='cuda')
y = x.expand(1024, 1024)
assert torch.cuda.memory_allocated() == 4096
z = y.contiguous()
assert torch.cuda.memory_allocated() == 4096 + 4 * M
w = z.contiguous()
assert w is z
"
    ));
}

// ----- the autograd table --------------------------------------------------------------------

/// Every row of the autograd table, as `op: Node saves [...]`, checked against the
/// derivatives.yaml formulas (the cross-check is in `torch/autograd.rs`'s comments).
#[test]
fn the_autograd_table_lists_every_op_and_what_it_saves() {
    use gpumem_harness::torch::{OP_RULES, Save};
    let render = |s: &Save| match *s {
        Save::Input(0) => "self".to_string(),
        Save::Input(1) => "other".to_string(),
        Save::InputIf(i, c) => {
            let name = |k: usize| match k {
                0 => "self".to_string(),
                1 => "other".to_string(),
                k => format!("operand {k}"),
            };
            format!("{} if {} requires grad", name(i), name(c))
        }
        Save::InputIfAny(i, cs) => {
            let any: Vec<String> = cs.iter().map(|c| format!("operand {c}")).collect();
            format!("operand {i} if any of {} requires grad", any.join(", "))
        }
        Save::Output => "result".to_string(),
        Save::Result(k) => format!("result{k}"),
        Save::Input(i) => format!("operand {i}"),
    };
    let table: Vec<String> = OP_RULES
        .iter()
        .map(|r| {
            let saves: Vec<String> = r.saves.iter().map(render).collect();
            format!("{}: {} saves [{}]", r.op, r.node, saves.join(", "))
        })
        .collect();
    let expected = [
        "add: AddBackward0 saves []",
        "sub: SubBackward0 saves []",
        "mul: MulBackward0 saves [other if self requires grad, self if other requires grad]",
        "mul_scalar: MulBackward0 saves []",
        "div: DivBackward0 saves [other, self if other requires grad]",
        "div_scalar: DivBackward0 saves []",
        "pow: PowBackward0 saves [self]",
        "matmul: MmBackward0 saves [self if other requires grad, other if self requires grad]",
        "linear: AddmmBackward0 saves [self if other requires grad, other if self requires grad]",
        "relu: ReluBackward0 saves [result]",
        "sigmoid: SigmoidBackward0 saves [result]",
        "tanh: TanhBackward0 saves [result]",
        "exp: ExpBackward0 saves [result]",
        "sqrt: SqrtBackward0 saves [result]",
        "softmax: SoftmaxBackward0 saves [result]",
        "log_softmax: LogSoftmaxBackward0 saves [result]",
        "log: LogBackward0 saves [self]",
        "abs: AbsBackward0 saves [self]",
        "clamp: ClampBackward1 saves [self]",
        "gelu: GeluBackward0 saves [self]",
        "neg: NegBackward0 saves []",
        "sum: SumBackward0 saves []",
        "mean: MeanBackward0 saves []",
        "sum_dim: SumBackward1 saves []",
        "mean_dim: MeanBackward1 saves []",
        "clone: CloneBackward0 saves []",
        "to: ToCopyBackward0 saves []",
        "view: ViewBackward0 saves []",
        "split: SplitBackward0 saves []",
        "split_with_sizes: SplitWithSizesBackward0 saves []",
        "repeat: RepeatBackward0 saves []",
        "cat: CatBackward0 saves []",
        "stack: StackBackward0 saves []",
        "mse_loss: MseLossBackward0 saves [self, other]",
        "embedding: EmbeddingBackward0 saves [other]",
        "add_: AddBackward0 saves []",
        "sub_: SubBackward0 saves []",
        "mul_: MulBackward0 saves [other if self requires grad, self if other requires grad]",
        "mul_scalar_: MulBackward0 saves []",
        "div_: DivBackward0 saves [other, self if other requires grad]",
        "div_scalar_: DivBackward0 saves []",
        "pow_: PowBackward0 saves [self]",
        "copy_: CopyBackwards saves []",
        "zero_: ZeroBackward0 saves []",
        "fill_: FillBackward0 saves []",
        "normal_: NormalBackward0 saves []",
        "uniform_: UniformBackward0 saves []",
        "relu_: ReluBackward0 saves [result]",
        "sigmoid_: SigmoidBackward0 saves [result]",
        "tanh_: TanhBackward0 saves [result]",
        "exp_: ExpBackward0 saves [result]",
        "clamp_: ClampBackward1 saves [self]",
        "neg_: NegBackward0 saves []",
        "setitem: CopySlices saves []",
        "leaky_relu: LeakyReluBackward0 saves [self]",
        "silu: SiluBackward0 saves [self]",
        "smooth_l1_loss: SmoothL1LossBackward0 saves [self, other]",
        "binary_cross_entropy: BinaryCrossEntropyBackward0 saves [self, other, operand 2]",
        "binary_cross_entropy_with_logits: BinaryCrossEntropyWithLogitsBackward0 saves [self, other, operand 2, operand 3]",
        "convolution: ConvolutionBackward0 saves [self, other]",
        "adaptive_avg_pool2d: AdaptiveAvgPool2DBackward0 saves [self]",
        "leaky_relu_: LeakyReluBackward1 saves [result]",
        "silu_: SiluBackward0 saves [self]",
        "xlogy: XlogyBackward0 saves [self, other]",
        "softplus: SoftplusBackward0 saves [self]",
        "linalg_vector_norm: LinalgVectorNormBackward0 saves [self, result]",
        "addcmul: AddcmulBackward0 saves [operand 2 if other requires grad, other if operand 2 requires grad]",
        "addcmul_: AddcmulBackward0 saves [operand 2 if other requires grad, other if operand 2 requires grad]",
        "elu: EluBackward0 saves [self]",
        "elu_: EluBackward1 saves [result]",
        "hardtanh: HardtanhBackward0 saves [self]",
        "hardtanh_: HardtanhBackward0 saves [self]",
        "mish: MishBackward0 saves [self]",
        "mish_: MishBackward0 saves [self]",
        "hardswish: HardswishBackward0 saves [self]",
        "hardswish_: HardswishBackward0 saves [self]",
        "layer_norm: NativeLayerNormBackward0 saves [self, other, operand 2, result1, result2]",
        "batch_norm: NativeBatchNormBackward0 saves [self, other, operand 3, operand 4, result1, result2]",
        "group_norm: NativeGroupNormBackward0 saves [self, other, result1, result2]",
        "dropout: NativeDropoutBackward0 saves [result1]",
        "nll_loss: NllLossBackward0 saves [self, other, operand 2, result1]",
        "max_pool2d: MaxPool2DWithIndicesBackward0 saves [self, result1]",
        "bmm: BmmBackward0 saves [self if other requires grad, other if self requires grad]",
        "baddbmm: BaddbmmBackward0 saves [operand 2 if other requires grad, other if operand 2 requires grad]",
        "mul.Scalar: MulBackward1 saves []",
        "t: TBackward0 saves []",
        "unsafe_view: UnsafeViewBackward0 saves []",
        "unbind: UnbindBackward0 saves []",
        "max_dim: MaxBackward0 saves [result1]",
        "min_dim: MinBackward0 saves [result1]",
        "max: MaxBackward1 saves [self, result]",
        "min: MinBackward1 saves [self, result]",
        "maximum: MaximumBackward0 saves [self, other]",
        "minimum: MinimumBackward0 saves [self, other]",
        "sort: SortBackward0 saves [result1]",
        "sort_stable: SortBackward1 saves [result1]",
        "topk: TopkBackward0 saves [result1]",
        "as_strided: AsStridedBackward0 saves []",
        "lstm_cell: ThnnFusedLstmCellBackward0 saves [self, other, operand 2, operand 3, operand 4, result1, result2]",
        "gru_cell: ThnnFusedGruCellBackward0 saves [self, other, operand 2, operand 3, operand 4, result1]",
        "addcdiv: AddcdivBackward0 saves [other if operand 2 requires grad, operand 2 if any of operand 1, operand 2 requires grad]",
        "addcdiv_: AddcdivBackward0 saves [other if operand 2 requires grad, operand 2 if any of operand 1, operand 2 requires grad]",
        "remainder.Scalar: RemainderBackward0 saves []",
        "remainder: RemainderBackward1 saves [self if other requires grad, other if other requires grad]",
        "index: IndexBackward0 saves [other]",
        "permute: PermuteBackward0 saves []",
        "transpose: TransposeBackward0 saves []",
        "expand: ExpandBackward0 saves []",
        "squeeze: SqueezeBackward0 saves []",
        "squeeze_dim: SqueezeBackward1 saves []",
        "unsqueeze: UnsqueezeBackward0 saves []",
        "slice: SliceBackward0 saves []",
        "select: SelectBackward0 saves []",
        "alias: AliasBackward0 saves []",
        "logsumexp: LogsumexpBackward0 saves [self, result]",
        "where: WhereBackward0 saves [self]",
        "index_put_: IndexPutBackward0 saves [other]",
        "log10: Log10Backward0 saves [self]",
        "log2: Log2Backward0 saves [self]",
        "log1p: Log1PBackward0 saves [self]",
        "expm1: Expm1Backward0 saves [result]",
        "exp2: Exp2Backward0 saves [result]",
        "rsqrt: RsqrtBackward0 saves [result]",
        "reciprocal: ReciprocalBackward0 saves [result]",
        "sign: SignBackward0 saves []",
        "floor: FloorBackward0 saves []",
        "ceil: CeilBackward0 saves []",
        "round: RoundBackward0 saves []",
        "round_decimals: RoundBackward1 saves []",
        "trunc: TruncBackward0 saves []",
        "clamp_min: ClampMinBackward0 saves [self]",
        "clamp_max: ClampMaxBackward0 saves [self]",
        "flip: FlipBackward0 saves []",
        "roll: RollBackward0 saves []",
        "tril: TrilBackward0 saves []",
        "triu: TriuBackward0 saves []",
        "cumprod: CumprodBackward0 saves [self, result]",
        "hypot: HypotBackward0 saves [self if self requires grad, other if other requires grad, result]",
        "atan2: Atan2Backward0 saves [self, other]",
        "logaddexp: LogaddexpBackward0 saves [self, other]",
        "lerp: LerpBackward0 saves []",
        "lerp_tensor: LerpBackward1 saves [operand 2 if any of operand 0, operand 1 requires grad, self if operand 2 requires grad, other if operand 2 requires grad]",
        "index_select: IndexSelectBackward0 saves [other]",
        "cumsum: CumsumBackward0 saves []",
    ];
    assert_eq!(table, expected);
}

/// The unary rows hold what they say: with the input and the result dropped while a later
/// op keeps the graph, exactly the saved input or result stays allocated.
#[test]
fn unary_ops_keep_exactly_what_the_table_says() {
    use gpumem_harness::torch::{OP_RULES, Save};
    for r in OP_RULES {
        let call = match r.op {
            "relu" | "sigmoid" | "tanh" | "exp" | "sqrt" | "log" | "abs" | "gelu" | "neg"
            | "clamp" => format!("{}()", r.op),
            "softmax" | "log_softmax" => format!("{}(0)", r.op),
            _ => continue,
        };
        let kept_input = r.saves.contains(&Save::Input(0));
        let kept_output = r.saves.contains(&Save::Output);
        let expected = 4 + 4 * u32::from(kept_input) + 4 * u32::from(kept_output);
        ok(&format!(
            "{MIB}{X}h = x * 2.0
y = h.{call}
z = y.sum()
del h
del y
assert torch.cuda.memory_allocated() == {expected} * M + 512, '{}'
",
            r.op
        ));
    }
}

// ----- allocator settings in the workload -----------------------------------------------------

#[test]
fn allocator_settings_apply_to_later_requests_and_bad_values_are_pytorchs_errors() {
    for (setting, reserved) in [("", "== 100 * M"), ("max_split_size_mb:64", "== 130 * M")] {
        ok(&format!(
            "{MIB}torch.cuda.memory._set_allocator_settings('{setting}')
a = torch.empty(25 * M, device='cuda')
del a
b = torch.empty(30 * M // 4, device='cuda')
# A cached block of at least max_split_size is not split for a smaller request.
assert torch.cuda.memory_reserved() {reserved}
"
        ));
    }
    let e = fails("torch.cuda.memory._set_allocator_settings('max_split_size_mb:8')\n");
    assert!(
        e.contains("max_split_size_mb too small, must be > 20"),
        "{e}"
    );
    let e = fails("torch.cuda.memory._set_allocator_settings('bogus:1')\n");
    assert!(
        e.contains("Unrecognized CachingAllocator option: bogus"),
        "{e}"
    );
    let e = fails("torch.cuda.memory._set_allocator_settings('expandable_segments:True')\n");
    assert!(
        e.contains("unsupported") && e.contains("expandable_segments"),
        "{e}"
    );
}
