//! The default measured loop (no `# gpumem: measure` marker): the first outermost loop to
//! run, but when the module body has loops of its own only those qualify, so a short loop
//! inside a helper called at module level (pytorch_memlab#17's shape: a 2-pass setup loop
//! in a function, then the training loop) is not taken for the iterations. A function's
//! loop is measured only when the module body has none.
//!
//! Figures by hand: each measured pass keeps one 256-float tensor, 1 KiB (two allocator
//! blocks of 512 bytes).

#[allow(dead_code)] // each test file uses some of the helpers
mod reports_judge;

const KIB: i64 = 1 << 10;

fn judge(name: &str, workload: &str) -> (i64, usize) {
    let yaml = reports_judge::inline_yaml(name, "", workload);
    let f = reports_judge::judge_variant(&yaml, &format!("{name}.yaml"), "");
    (f.growth, f.iterations)
}

#[test]
fn a_helpers_loop_run_first_does_not_take_the_module_loops_place() {
    // Before the rule, `for k in range(2)` (run first, at depth 0) was measured: 2
    // iterations of 4 KiB each and no growth seen.
    let workload = "import torch
kept = []
def build():
    layers = []
    for k in range(2):
        layers.append(torch.zeros(1024, device=\"cuda\"))
    return layers
layers = build()
for step in range(12):
    kept.append(torch.zeros(256, device=\"cuda\"))
";
    assert_eq!(judge("helper_then_module_loop", workload), (KIB, 12));
}

#[test]
fn a_module_loop_under_with_or_if_qualifies() {
    let workload = "import torch
kept = []
def warm():
    for k in range(3):
        torch.zeros(1024, device=\"cuda\")
warm()
with torch.no_grad():
    if True:
        for step in range(8):
            kept.append(torch.zeros(256, device=\"cuda\"))
";
    assert_eq!(judge("module_loop_under_with", workload), (KIB, 8));
}

#[test]
fn without_module_loops_a_functions_loop_is_measured() {
    let workload = "import torch
kept = []
def train():
    for step in range(6):
        kept.append(torch.zeros(256, device=\"cuda\"))
train()
";
    assert_eq!(judge("function_loop_only", workload), (KIB, 6));
}
