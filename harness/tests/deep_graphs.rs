//! Recursion audit of the autograd and layer code (issue 9): graphs whose depth the workload
//! controls (a chain of 200 000 recorded ops, a chain of modules) are built, walked by
//! `backward()` and freed without recursion over their depth. The model's graph walks use
//! explicit stacks; these tests keep it so (a recursive walk or drop would overflow the
//! workload thread's stack or take far longer).

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

fn run(workload: &str) -> Timeline {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!(
        "name: t\ndevice: {{ capacity: 8 GiB }}\npython: \"3.11\"\nlimits: {{ steps: 100000000 }}\nworkload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "t.yaml").expect("scenario parses");
    let variant = scenario.variants().remove(0);
    run_variant(&scenario, &variant).expect("the deep graph runs")
}

#[test]
fn a_200000_op_autograd_chain_is_walked_by_backward_and_freed_iteratively() {
    let t = run("w = torch.ones(4, device='cuda', requires_grad=True)
x = w
for i in range(200000):
    x = x * 1.0
loss = x.sum()
loss.backward()
del x, loss
");
    // Everything the chain saved is gone once the last reference goes: only the leaf, its
    // gradient and (possibly) cached blocks remain allocated.
    let last = t.events.last().expect("events");
    assert!(
        last.allocated <= 4 * 512,
        "allocated at the end: {}",
        last.allocated
    );
}

#[test]
fn a_deep_chain_of_nested_modules_runs_forward_and_is_freed() {
    let t = run("layers = [torch.nn.Linear(4, 4) for i in range(2000)]
model = torch.nn.Sequential(*layers).cuda()
out = model(torch.ones(2, 4, device='cuda'))
out.sum().backward()
del out, model, layers
");
    let peak = t.events.iter().map(|e| e.allocated).max().unwrap_or(0);
    let last = t.events.last().expect("events").allocated;
    assert!(
        last < peak,
        "the graph and modules were freed ({last} of {peak} left)"
    );
}
