//! `@torch.no_grad()`, `@torch.enable_grad()`, `@torch.inference_mode()` and the bare
//! `@torch.no_grad` on functions and methods. No PyTorch is installed: the expectations are
//! derived by hand from `torch/utils/_contextlib.py` (`context_decorator` returns a
//! `functools.wraps` wrapper that enters a fresh manager around every call) and
//! `derivatives.yaml` (`addmm` saves its input `mat1` for backward).

#[allow(dead_code)]
mod probes;

use gpumem_harness::check::series::{completed_boundaries, growth_per_iteration};
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

const KIB: i64 = 1 << 10;

/// Growth per iteration of an inline 3.11 workload on an 80 GiB card.
fn growth(name: &str, workload: &str) -> i64 {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: {name}\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let scenario = scenario::parse(&yaml, "t.yaml").unwrap_or_else(|e| panic!("{name}: {e}"));
    let variant = scenario.variants().into_iter().next().expect("one variant");
    let timeline = run_variant(&scenario, &variant).unwrap_or_else(|e| panic!("{name}: {e}"));
    growth_per_iteration(&completed_boundaries(&timeline))
        .unwrap_or_else(|e| panic!("{name}: {e:?}"))
        .bytes_per_iteration
}

/// An eval loop that keeps every output: under `@torch.no_grad()` only the 64 × 512 float
/// output (128 KiB) stays per iteration; with `@torch.enable_grad()` inside `no_grad` the
/// graph is recorded again and keeps the input `addmm` saved (another 128 KiB).
#[test]
fn decorated_eval_step_keeps_only_its_outputs() {
    let eval = |decorator: &str, outer: &str| {
        format!(
            "import torch
model = torch.nn.Linear(512, 512).cuda()
outs = []
@torch.{decorator}
def predict(x):
    return model(x)
for step in range(12):
    {outer}
        outs.append(predict(torch.randn(64, 512, device=\"cuda\")))
"
        )
    };
    assert_eq!(growth("no_grad", &eval("no_grad()", "if True:")), 128 * KIB);
    assert_eq!(growth("bare", &eval("no_grad", "if True:")), 128 * KIB);
    assert_eq!(
        growth("inference", &eval("inference_mode()", "if True:")),
        128 * KIB
    );
    assert_eq!(
        growth("enable", &eval("enable_grad()", "with torch.no_grad():")),
        256 * KIB
    );
}

/// The wrapper is a function: it binds as a method, copies `__name__`, keeps `__wrapped__`,
/// and restores the grad mode after each call.
#[test]
fn decorated_methods_bind_and_keep_their_names() {
    probes::ok(
        "import torch
class Predictor:
    def __init__(self):
        self.lin = torch.nn.Linear(4, 4)
    @torch.no_grad()
    def predict(self, x):
        return self.lin(x)
p = Predictor()
y = p.predict(torch.randn(2, 4))
assert y.grad_fn is None
assert not y.requires_grad
assert Predictor.predict.__name__ == \"predict\"
assert Predictor.predict.__wrapped__.__name__ == \"predict\"
z = p.lin(torch.randn(2, 4))
assert z.grad_fn is not None
",
    );
}

/// Generator functions (wrapped per resume by PyTorch) and classes are refused, located.
#[test]
fn decorated_generators_and_classes_are_refused_located() {
    for (workload, expected) in [
        (
            "import torch\n@torch.no_grad()\ndef batches():\n    yield torch.zeros(2)\n",
            "`@torch.no_grad()` on a generator function",
        ),
        (
            "import torch\n@torch.inference_mode()\nclass C:\n    pass\n",
            "`@torch.inference_mode()` on a class",
        ),
    ] {
        let err = probes::run("3.11", workload)
            .expect_err(workload)
            .to_string();
        assert!(err.contains(expected), "{workload}: {err}");
        assert!(err.contains("t.yaml:"), "{workload}: not located: {err}");
    }
}
