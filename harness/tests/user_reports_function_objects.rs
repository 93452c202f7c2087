//! Leak reports that use function objects, builtin methods and debugging probes the way
//! users write them (a counter and a history stored on a function, `key=scores.get`,
//! `store = captured.append` passed as a hook's callback, `sys.getrefcount` and
//! `weakref.ref` probes, `images, labels = zip(*batch)` in a collate function), and the
//! `# gpumem: measure` marker that names the measured loop when hooks are registered in a
//! first loop and training runs in a second. Figures are derived by hand from the tensors
//! each report keeps (noted beside them); the language parts are checked against every
//! installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses a part of the shared probes
mod probes;

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use probes::{
    Probe, agrees_with_cpython, model_matches_table, table_matches_installed_interpreters,
};

const MIB: i64 = 1 << 20;
const KIB: i64 = 1 << 10;

/// Growth per iteration (least squares after iteration 0) and the number of iterations of
/// the variant named `variant` (`""` for a scenario without `vary`).
fn judge(yaml: &str, file: &str, variant: &str) -> (i64, usize) {
    let f = reports_judge::judge_variant(yaml, file, variant);
    (f.growth, f.iterations)
}

fn inline_yaml(name: &str, workload: &str) -> String {
    reports_judge::inline_yaml(name, "", workload)
}

/// An inline report: no `vary`, 3.11, an 80 GiB card.
fn judge_inline(name: &str, workload: &str) -> (i64, usize) {
    judge(&inline_yaml(name, workload), &format!("{name}.yaml"), "")
}

const HOOKS_THEN_TRAIN: &str =
    include_str!("../../scenarios/reports/hooks_registered_then_trained.yaml");
const BOUND_APPEND: &str = include_str!("../../scenarios/reports/bound_append_as_callback.yaml");
const FUNCTION_HISTORY: &str =
    include_str!("../../scenarios/reports/function_attribute_history.yaml");

// ----- the measured loop ----------------------------------------------------------------

const TWO_LOOPS: &str = "import torch
import torch.nn as nn
net = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512)).cuda()
acts = []
for layer in net:
    layer.register_forward_hook(lambda m, i, o: acts.append(o))
for step in range(20):MARK
    out = net(torch.randn(64, 512, device=\"cuda\"))
    out.sum().backward()
";

/// Without the marker the 3 registrations are the iterations and nothing is seen to grow;
/// marked, the training loop is judged: three kept 64 × 512 float32 outputs per step.
#[test]
fn the_marked_second_loop_is_the_measured_one() {
    let (slope, iterations) = judge_inline("two_loops", &TWO_LOOPS.replace("MARK", ""));
    assert_eq!((slope, iterations), (0, 3));
    let marked = TWO_LOOPS.replace("MARK", "  # gpumem: measure");
    let (slope, iterations) = judge_inline("two_loops_marked", &marked);
    assert_eq!((slope, iterations), (384 * KIB, 20));
}

/// A marked loop inside a function (a `train_epoch()` called once) and a marked `while`.
#[test]
fn a_marked_loop_in_a_function_or_a_while_loop_is_measured() {
    let workload = "import torch
kept = []
for warmup in range(2):
    torch.zeros(1024, device=\"cuda\")
def train_epoch():
    step = 0
    while step < 12:  # gpumem: measure
        kept.append(torch.zeros(256, device=\"cuda\"))
        step += 1
train_epoch()
";
    // One 256-float tensor (1 KiB) kept per pass of the `while`.
    assert_eq!(judge_inline("marked_while", workload), (KIB, 12));
}

/// A marker on a line that starts no loop is a scenario error at the comment, with the
/// scenario file's line and column.
#[test]
fn a_misplaced_marker_is_a_located_scenario_error() {
    let workload = "import torch
for i in range(3):
    x = torch.zeros(4, device=\"cuda\")  # gpumem: measure
";
    let yaml = inline_yaml("misplaced", workload);
    let scenario = scenario::parse(&yaml, "misplaced.yaml").expect("parses");
    let variant = scenario.variants().remove(0);
    let err = run_variant(&scenario, &variant)
        .expect_err("refused")
        .to_string();
    // Workload line 3 is file line 7; the comment starts at its column 40, the file's 42.
    assert!(err.contains("misplaced.yaml:7:42"), "{err}");
    assert!(err.contains("starts no `for` or `while` loop"), "{err}");
    let twice = "for a in range(2):  # gpumem: measure\n    pass\nfor b in range(2):  # gpumem: measure\n    pass\n";
    let yaml = inline_yaml("twice", twice);
    let scenario = scenario::parse(&yaml, "twice.yaml").expect("parses");
    let variant = scenario.variants().remove(0);
    let err = run_variant(&scenario, &variant)
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("twice.yaml:7:23") && err.contains("a second"),
        "{err}"
    );
}

// ----- shipped reports ------------------------------------------------------------------

/// pytorch/pytorch#46386 style: hooks registered in a first loop, training in the marked
/// second; three kept 64 × 512 float32 outputs (128 KiB each) per step; latest detached is flat.
#[test]
fn hooks_registered_then_trained_is_judged_on_the_training_loop() {
    let file = "hooks_registered_then_trained.yaml";
    assert_eq!(
        judge(HOOKS_THEN_TRAIN, file, "collect=append"),
        (384 * KIB, 30)
    );
    assert_eq!(judge(HOOKS_THEN_TRAIN, file, "collect=latest"), (0, 30));
}

/// `store = captured.append` as a hook callback: the Linear output (64 × 256 × 4 B) and the
/// input its `addmm` node saved (64 KiB) per step.
#[test]
fn a_bound_append_as_a_callback_keeps_every_output() {
    let file = "bound_append_as_callback.yaml";
    assert_eq!(
        judge(BOUND_APPEND, file, "callback=bound_append").0,
        128 * KIB
    );
    assert_eq!(judge(BOUND_APPEND, file, "callback=latest_detached").0, 0);
}

/// A function keeping its losses on itself: x and `pow`'s saved input (256 × 1024 × 4 B
/// each) and the loss's 512 B block per step; `loss.item()` is flat.
#[test]
fn a_function_attribute_history_keeps_the_graphs() {
    let file = "function_attribute_history.yaml";
    assert_eq!(
        judge(FUNCTION_HISTORY, file, "keep=tensor").0,
        2 * MIB + 512
    );
    assert_eq!(judge(FUNCTION_HISTORY, file, "keep=number").0, 0);
}

// ----- more reports, judged inline -------------------------------------------------------

/// A training step counting its calls and keeping its (backpropagated) losses on itself:
/// backward freed the graphs' saved tensors, so only the 0-dim loss (one 512 B block) stays.
#[test]
fn train_step_history_keeps_only_the_losses_after_backward() {
    let workload = "import torch
model = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.Adam(model.parameters())
def train_step(x):
    train_step.calls += 1
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    train_step.history.append(loss)
    return loss
train_step.calls = 0
train_step.history = []
for i in range(20):
    train_step(torch.randn(64, 256, device=\"cuda\"))
    assert train_step.calls == i + 1 and train_step.__name__ == \"train_step\"
";
    assert_eq!(judge_inline("train_step_history", workload).0, 512);
}

/// `min(val_losses, key=val_losses.get)` over Python floats, while the loss tensors are also
/// kept: each keeps its graph, the 512 × 256 float32 batch (512 KiB) saved by `addmm`, the
/// 512 × 1 output saved by `pow` (2 KiB) and the loss (512 B).
#[test]
fn best_epoch_by_dict_get_with_kept_losses() {
    let workload = "import torch
model = torch.nn.Linear(256, 1).cuda()
val_losses = {}
keep = {}
for epoch in range(20):
    loss = model(torch.randn(512, 256, device=\"cuda\")).pow(2).mean()
    keep[epoch] = loss
    val_losses[epoch] = loss.item()
    best_epoch = min(val_losses, key=val_losses.get)
";
    assert_eq!(
        judge_inline("best_epoch", workload).0,
        512 * KIB + 2 * KIB + 512
    );
}

/// A refcount probe printed every step (`sys.getrefcount(loss)`) changes nothing.
#[test]
fn refcount_probes_in_a_training_loop_are_flat() {
    let workload = "import torch, sys
model = torch.nn.Linear(256, 256).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(20):
    x = torch.randn(64, 256, device=\"cuda\")
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    assert sys.getrefcount(loss) == 2 and sys.getrefcount(x) == 2
";
    assert_eq!(judge_inline("refcount_probe", workload).0, 0);
}

/// A `weakref.ref` probe: the output dies at `del`, the probe sees `None`, memory is flat.
#[test]
fn weakref_probe_sees_the_output_freed() {
    let workload = "import torch, weakref
model = torch.nn.Linear(256, 256).cuda()
for step in range(20):
    out = model(torch.randn(64, 256, device=\"cuda\"))
    probe = weakref.ref(out)
    del out
    assert probe() is None
";
    assert_eq!(judge_inline("weakref_probe", workload).0, 0);
}

/// A collate function unpacking `zip(*batch)` and stacking onto the GPU: flat.
#[test]
fn zip_star_collate_is_flat() {
    let workload = "import torch
samples = [(torch.randn(3, 32, 32), i % 10) for i in range(64)]
def collate(batch):
    images, labels = zip(*batch)
    return torch.stack(images).cuda(), torch.tensor(labels).cuda()
model = torch.nn.Linear(3 * 32 * 32, 10).cuda()
for step in range(20):
    start = (step * 8) % 64
    x, y = collate(samples[start:start + 8])
    loss = torch.nn.functional.cross_entropy(model(x.flatten(1)), y)
    loss.backward()
";
    assert_eq!(judge_inline("zip_collate", workload).0, 0);
}

/// An EMA copy made with `copy.deepcopy` every step and kept: the 1024 × 1024 weight and
/// the bias (4 MiB + 4 KiB) per step.
#[test]
fn ema_snapshots_by_deepcopy_keep_a_model_per_step() {
    let workload = "import torch, copy
model = torch.nn.Linear(1024, 1024).cuda()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
ema_snapshots = []
for step in range(12):
    loss = model(torch.randn(64, 1024, device=\"cuda\")).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    ema = copy.deepcopy(model)
    ema.eval()
    ema_snapshots.append(ema)
";
    assert_eq!(judge_inline("ema_deepcopy", workload).0, 4 * MIB + 4 * KIB);
}

/// `@lru_cache` on a method keeps every `self` (its 512 × 512 weight, 1 MiB) and result
/// (64 × 512, 128 KiB) (pytorch/pytorch#147233).
#[test]
fn lru_cache_on_a_method_keeps_every_instance() {
    let workload = "import torch
from functools import lru_cache
class Featurizer:
    def __init__(self):
        self.weight = torch.randn(512, 512, device=\"cuda\")
    @lru_cache(maxsize=None)
    def features(self, n):
        return torch.randn(n, 512, device=\"cuda\") @ self.weight
for step in range(12):
    out = Featurizer().features(64)
";
    assert_eq!(judge_inline("lru_method", workload).0, MIB + 128 * KIB);
}

/// What the model does not run is refused at the construct, not misreported: file I/O.
/// (Grad-mode decorators run: `tests/torch_grad_mode_decorators.rs`.)
#[test]
fn torch_save_is_refused_located() {
    let workload =
        "import torch\nm = torch.nn.Linear(2, 2)\ntorch.save(m.state_dict(), \"ckpt.pt\")\n";
    let err = probes::run("3.11", workload)
        .expect_err(workload)
        .to_string();
    assert!(
        err.contains("the model does no file I/O"),
        "{workload}: {err}"
    );
    assert!(err.contains("t.yaml:"), "{workload}: not located: {err}");
    // The context-manager forms still run.
    probes::ok(
        "import torch\nwith torch.no_grad():\n    y = torch.zeros(2) * 2\nwith torch.inference_mode(False):\n    z = y + 1\n",
    );
}

// ----- the language parts, against CPython ------------------------------------------------

/// Function attributes: stored values, `__dict__`, `__name__`, `__module__`, a one-line
/// `__doc__`, and `AttributeError` for a missing one.
#[test]
fn function_attributes_agree_with_cpython() {
    agrees_with_cpython(
        "",
        13,
        r#"
def step(x):
    """One step."""
    step.calls += 1
    step.seen.append(x)
    return x
step.calls = 0
step.seen = []
for i in range(3):
    step(i)
assert step.calls == 3 and step.seen == [0, 1, 2]
assert step.__dict__ == {"calls": 3, "seen": [0, 1, 2]}
assert step.__name__ == "step" and step.__module__ == "__main__" and step.__doc__ == "One step."
def plain():
    return 1
assert plain.__doc__ is None and plain.__dict__ == {}
try:
    plain.missing
    assert False
except AttributeError as e:
    assert "missing" in str(e)
"#,
    );
}

/// Builtin methods taken as values: `key=d.get`, `store = lst.append`, a bound method's
/// `__name__` and `__self__`.
#[test]
fn bound_builtin_methods_agree_with_cpython() {
    agrees_with_cpython(
        "",
        13,
        r#"
scores = {"a": 0.5, "b": 0.25, "c": 0.75}
assert min(scores, key=scores.get) == "b" and max(scores, key=scores.get) == "c"
assert sorted(scores, key=scores.get) == ["b", "a", "c"]
out = []
store = out.append
for i in range(3):
    store(i * i)
assert out == [0, 1, 4]
get = scores.get
assert get("a") == 0.5 and get("z") is None and get("z", 1) == 1
assert get.__name__ == "get" and get.__self__ is scores and store.__self__ is out
logs = {}
logs.setdefault("loss", []).append(1.0)
logs.setdefault("loss", []).append(2.0)
assert logs == {"loss": [1.0, 2.0]} and logs.setdefault("lr") is None
logs.update({"acc": 3})
logs.update(step=4)
assert sorted(logs) == ["acc", "loss", "lr", "step"]
logs.clear()
assert logs == {}
images, labels = zip(*[("x0", 0), ("x1", 1), ("x2", 2)])
assert images == ("x0", "x1", "x2") and labels == (0, 1, 2)
first, second = iter([10, 20])
assert (first, second) == (10, 20)
try:
    a, b = zip([1, 2, 3])
    assert False
except ValueError:
    pass
"#,
    );
}

/// `sys.getrefcount` counts the argument's own reference, as CPython does. (Inside a
/// function called with the object, CPython ≤ 3.10 counts one more: the caller's value
/// stack keeps its own reference to an argument; the model counts 3.11's figure there.)
#[test]
fn getrefcount_agrees_with_cpython() {
    agrees_with_cpython(
        "import sys\n",
        13,
        r#"
import sys
t = [1.0]
assert sys.getrefcount(t) == 2
alias = t
holder = {"t": t}
assert sys.getrefcount(t) == 4
del alias, holder
assert sys.getrefcount(t) == 2
"#,
    );
}

/// Objects counted by the collector: a kept bound builtin method is one GC object, a
/// function's first attribute store takes its `__dict__` from the dict free list (measured
/// on CPython 3.8 – 3.13: 1 and 1, as without the store).
const PROBES: &[Probe] = &[
    (
        "a kept bound dict.get",
        "d = {1: 2}\ndef probe():\n    keep.append(d.get)\n",
        1,
        1,
    ),
    (
        "a kept function with an attribute",
        "def probe():\n    def g():\n        pass\n    g.calls = 1\n    keep.append(g)\n",
        1,
        1,
    ),
];

#[test]
fn bound_method_and_function_dict_counts_match_the_table() {
    model_matches_table(PROBES);
}

#[test]
fn the_counts_table_matches_installed_interpreters() {
    table_matches_installed_interpreters(PROBES);
}
