//! Leak reports collected in round 13, part 2: custom autograd Functions (state on `ctx`, a
//! backward that keeps its gradients or calls `autograd.grad`), `backward(retain_graph=True)`
//! per loss, full backward hooks, losses kept as tensors, and the reports the model still
//! refuses (named by the feature). Part 1 is `user_reports_round13.rs`.

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

use reports_judge::{judge_fix, try_judge};

const MIB: i64 = 1 << 20;

/// RobinBruegger/RevTorch#1: `ctx.y = y` (the output) is deleted in `backward`, but an
/// output no loss consumes never runs backward: `y → grad_fn → ctx → y` keeps each unused
/// 256×1024 output (1 MiB) until a collection. `save_for_backward` makes no cycle.
#[test]
fn output_on_ctx_of_an_unconsumed_branch_stays() {
    let (buggy, fixed) = judge_fix(
        "unconsumed_branch_ctx_output",
        r#"
import torch
import torch.nn as nn
class RevFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        y = x * w
        if fix:
            ctx.save_for_backward(y, w)
        else:
            ctx.y = y
            ctx.w = w
        return y
    @staticmethod
    def backward(ctx, grad):
        if fix:
            y, w = ctx.saved_tensors
        else:
            y = ctx.y
            w = ctx.w
            del ctx.y
        return grad * w, (grad * y / w).sum()
w1 = torch.ones(1, device="cuda", requires_grad=True)
w2 = torch.ones(1, device="cuda", requires_grad=True)
for i in range(10):
    x = torch.randn(256, 1024, device="cuda")
    y1 = RevFunction.apply(x, w1)
    y2 = RevFunction.apply(x, w2)
    loss = y1.sum()
    loss.backward()
"#,
    );
    assert_eq!(buggy.growth, MIB);
    assert_eq!(buggy.collector_freed, 0);
    assert_eq!(fixed.growth, 0);
}

/// dmlc/dgl#1060: `ctx.backward_cache = src, index` beside `save_for_backward(out)` on a
/// `mark_dirty` output. The PR's notes mark this form as not leaking (only inputs are on
/// `ctx`, no cycle): flat, as with everything in `save_for_backward`.
#[test]
fn inputs_cached_on_ctx_are_freed_with_the_graph() {
    let (buggy, fixed) = judge_fix(
        "ctx_backward_cache_tuple",
        r#"
import torch
class ScatterMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, out, src, index):
        out.mul_(2)
        ctx.mark_dirty(out)
        ctx.save_for_backward(out)
        if fix:
            ctx.save_for_backward(out, src, index)
        else:
            ctx.backward_cache = src, index
        return out
    @staticmethod
    def backward(ctx, grad_out):
        return grad_out * 2, None, None
for i in range(10):
    src = torch.randn(256, 1024, device="cuda", requires_grad=True)
    index = torch.zeros(256, 1024, device="cuda")
    out = torch.ones(256, 1024, device="cuda").requires_grad_() * 1
    res = ScatterMul.apply(out, src, index)
    res.sum().backward()
"#,
    );
    assert_eq!((buggy.growth, fixed.growth), (0, 0));
    assert_eq!((buggy.collector_freed, fixed.collector_freed), (0, 0));
}

/// discuss.pytorch.org/t/190094: a custom Function's backward appends
/// `grad_output.detach()` to a global list (what the user wants, but it keeps one
/// 1024×256 gradient, 1 MiB, per step); the list's length is printed.
#[test]
fn backward_keeping_its_grad_outputs_grows_by_one_gradient() {
    let (buggy, fixed) = judge_fix(
        "function_backward_appends_grad",
        r#"
import torch
import gc
a = []
class Exp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i):
        result = torch.exp(i)
        ctx.save_for_backward(result)
        return result
    @staticmethod
    def backward(ctx, grad_output):
        result, = ctx.saved_tensors
        if not fix:
            a.append(grad_output.detach())
        return grad_output * result
exp = Exp()
for step in range(10):
    x = torch.randn(1024, 256, device="cuda", requires_grad=True)
    y = Exp.apply(x)
    y.sum().backward()
gc.collect()
torch.cuda.empty_cache()
print(len(a))
"#,
    );
    assert_eq!(buggy.growth, MIB);
    assert_eq!(buggy.printed, ["10"]);
    assert_eq!((fixed.growth, fixed.printed[0].as_str()), (0, "0"));
}

/// pytorch/pytorch#40005: one `backward(retain_graph=True)` per layer loss. Retaining keeps
/// the step's graph only until the step's tensors are rebound: flat, a higher peak than one
/// backward of the summed losses.
#[test]
fn retain_graph_per_layer_loss_raises_the_peak_not_the_trend() {
    let (buggy, fixed) = judge_fix(
        "retain_graph_per_layer_losses",
        r#"
import torch
import torch.nn as nn
import torch.nn.functional as F
s_layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(4)]).cuda()
t_layers = nn.ModuleList([nn.Linear(512, 512) for _ in range(4)]).cuda()
loss = nn.KLDivLoss(reduction='batchmean')
opt = torch.optim.SGD(s_layers.parameters(), lr=0.1)
for step in range(10):
    x = torch.randn(256, 512, device="cuda")
    s_hidden = []
    h = x
    for layer in s_layers:
        h = torch.relu(layer(h))
        s_hidden.append(h)
    with torch.no_grad():
        t_hidden = []
        g = x
        for layer in t_layers:
            g = torch.relu(layer(g))
            t_hidden.append(g)
    opt.zero_grad()
    if fix:
        total = 0
        for i in range(4):
            total = total + loss(F.log_softmax(s_hidden[i], dim=1), F.softmax(t_hidden[i], dim=1))
        total.backward()
    else:
        for i in range(4):
            output = loss(F.log_softmax(s_hidden[i], dim=1), F.softmax(t_hidden[i], dim=1))
            output.backward(retain_graph=True)
    opt.step()
"#,
    );
    assert_eq!((buggy.growth, fixed.growth), (0, 0));
    assert!(buggy.peak > fixed.peak, "{} vs {}", buggy.peak, fixed.peak);
}

/// pytorch/pytorch#74831: a full backward hook kept `grad_outputs` alive (fixed in PyTorch
/// 1.13 by #82788); the model follows the fixed behaviour: the same figures with the hook.
#[test]
fn full_backward_hook_keeps_no_grad_outputs() {
    let (hooked, plain) = judge_fix(
        "full_backward_hook_grad_outputs",
        r#"
import torch
import torch.nn as nn
import gc
model = nn.Sequential(nn.Linear(512, 1024, bias=False), nn.Linear(1024, 512, bias=False)).cuda()
if not fix:
    model[0].register_full_backward_hook(lambda m, gin, gout: None)
for i in range(10):
    x = torch.rand(256, 512).cuda()
    y = model(x).sum()
    y.backward()
"#,
    );
    assert_eq!((hooked.growth, plain.growth), (0, 0));
    assert_eq!(hooked.peak, plain.peak);
}

/// rballester/tntorch#19: `loss_history.append(loss)` with `backward(retain_graph=True)`
/// keeps each step's graph: the saved 64×1024 product (256 KiB) and the 0-dim loss (one
/// 512-byte block). Keeping `loss.detach()` keeps the block alone.
#[test]
fn loss_history_of_retained_graphs_grows_by_the_saved_product() {
    let (buggy, fixed) = judge_fix(
        "loss_history_full_graphs",
        r#"
import torch
core = torch.randn(64, 64, device="cuda", requires_grad=True)
factor = torch.randn(64, 1024, device="cuda", requires_grad=True)
target = torch.randn(64, 1024, device="cuda")
optimizer = torch.optim.Adam([core, factor], lr=0.01)
loss_history = []
for it in range(10):
    optimizer.zero_grad()
    approx = core @ factor
    loss = ((approx - target) ** 2).mean()
    if fix:
        loss_history.append(loss.detach())
    else:
        loss_history.append(loss)
    loss.backward(retain_graph=True)
    optimizer.step()
"#,
    );
    assert_eq!(buggy.growth, 256 * 1024 + 512);
    assert_eq!(fixed.growth, 512);
}

/// jokester-zzz/SSA-SC#2: validation without `no_grad` sums `loss[key]` tensors into a dict
/// made per epoch: each epoch keeps its batches' graphs until the dict is rebuilt. Bounded
/// (flat across epochs), a higher peak than summing `.item()`s.
#[test]
fn validation_loss_dict_of_tensors_is_bounded_per_epoch() {
    let (buggy, fixed) = judge_fix(
        "validation_loss_dict_without_no_grad",
        r#"
import torch
import torch.nn as nn
model = nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 16)).cuda()
def compute_loss(scores, target):
    return {'total': ((scores - target) ** 2).mean(), 'l1': (scores - target).abs().mean()}
for epoch in range(8):
    model.eval()
    epoch_loss = {'total': 0, 'l1': 0}
    for t in range(4):
        x = torch.randn(256, 1024, device="cuda")
        target = torch.randn(256, 16, device="cuda")
        scores = model(x)
        loss = compute_loss(scores, target)
        for l_key in loss:
            if fix:
                epoch_loss[l_key] += loss[l_key].item()
            else:
                epoch_loss[l_key] += loss[l_key]
    history = epoch_loss
"#,
    );
    assert_eq!((buggy.growth, fixed.growth), (0, 0));
    assert!(buggy.peak > fixed.peak, "{} vs {}", buggy.peak, fixed.peak);
}

/// The report the model refuses, at its feature (the gap listed in the round's notes).
/// pytorch/pytorch#115255 runs now: `tests/torch_saved_tensors_hooks.rs`.
#[test]
fn refused_reports_name_the_missing_feature() {
    // pytorch/tensordict#1309
    let (report, feature) = ("tensordict_module_io", "tensordict");
    let workload = r#"fix = False
import torch as th
import torch.nn as nn
from tensordict import TensorDict
model = nn.Linear(1000, 1000).to("cuda:0")
for i in range(10):
    td = TensorDict({"x": th.randn(100, 1000)}, [100])
"#;
    match try_judge(report, workload) {
        Ok(_) => panic!("{report}: ran; expected a refusal"),
        Err(e) => assert!(
            e.contains("unsupported") && e.contains(feature),
            "{report}: {e}"
        ),
    }
}
