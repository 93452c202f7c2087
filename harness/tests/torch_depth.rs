//! Autograd, modules, optimizers and p2p in the workload model: each test runs a workload
//! whose `assert`s state the memory PyTorch would hold at that point (bytes from
//! `torch.cuda.memory_allocated()`), so a wrong save or a late free fails the run.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// Runs `workload` (indented by two spaces in the YAML) and returns the error, if any.
fn run(python: &str, workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"{python}\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    for v in s.variants() {
        run_variant(&s, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn ok(workload: &str) {
    if let Err(e) = run("3.11", workload) {
        panic!("{e}");
    }
}

const MIB: &str = "M = 1024 * 1024\n";

#[test]
fn relu_saves_its_output_and_backward_frees_it() {
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
y = x.relu()
assert torch.cuda.memory_allocated() == 8 * M
del y
# The output's death frees its graph, and with it the saved output.
assert torch.cuda.memory_allocated() == 4 * M
z = x.relu().sum()
before = torch.cuda.memory_allocated()
assert before >= 8 * M
z.backward()
# The saved 4 MiB output is released while x.grad (4 MiB) appears.
assert torch.cuda.memory_allocated() < before + M
assert x.grad is not None
"
    ));
}

#[test]
fn mul_saves_the_other_operand_only_when_needed() {
    // x requires grad, w does not: MulBackward0 saves w (for x's gradient), not x.
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
w = torch.empty(1024 * 1024, device='cuda')
y = (x * 2.0) * w
assert torch.cuda.memory_allocated() == 12 * M
del w
assert torch.cuda.memory_allocated() == 12 * M
y.sum().backward()
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn add_saves_nothing() {
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
h = x * 2.0
y = h + 1.0
del h
assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn retain_graph_keeps_saved_tensors_and_a_second_backward_fails_without_it() {
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
y = x.sigmoid().sum()
y.backward(retain_graph=True)
assert torch.cuda.memory_allocated() == 12 * M + 512
y.backward()
assert torch.cuda.memory_allocated() == 8 * M + 512
"
    ));
    let e = run(
        "3.11",
        "x = torch.empty(16, device='cuda', requires_grad=True)\ny = x.exp().sum()\ny.backward()\ny.backward()\n",
    )
    .unwrap_err();
    assert!(
        e.contains("backward through the graph a second time"),
        "{e}"
    );
}

#[test]
fn grad_is_allocated_once_and_accumulates_in_place() {
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
for i in range(3):
    (x * 2.0).sum().backward()
    assert torch.cuda.memory_allocated() == 8 * M
"
    ));
}

#[test]
fn no_grad_records_nothing() {
    ok(&format!(
        "{MIB}x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
with torch.no_grad():
    y = x.relu()
assert not y.requires_grad
assert y.grad_fn is None
y = x.relu()
assert y.requires_grad
"
    ));
}

#[test]
fn custom_function_ctx_is_seen_by_the_collector() {
    // ctx.keep = output: tensor -> grad_fn (ctx) -> keep -> tensor, collectable.
    ok(&format!(
        "{MIB}class F(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        y = x * 2.0
        ctx.keep = y
        return y
    @staticmethod
    def backward(ctx, g):
        return g
x = torch.empty(1024 * 1024, device='cuda', requires_grad=True)
y = F.apply(x)
del y
assert torch.cuda.memory_allocated() == 8 * M
gc.collect()
assert torch.cuda.memory_allocated() == 4 * M
"
    ));
}

#[test]
fn builtin_grad_fn_object_is_created_only_on_access() {
    ok("x = torch.empty(4, requires_grad=True)
y = x * 2.0
gc.collect()
a = gc.get_count()[0]
g = y.grad_fn
b = gc.get_count()[0]
g2 = y.grad_fn
c = gc.get_count()[0]
assert b > a
assert c == b
");
}

#[test]
fn adam_state_appears_at_the_first_step() {
    ok(&format!(
        "{MIB}model = torch.nn.Linear(1024, 1024, bias=False).cuda()
opt = torch.optim.Adam(model.parameters(), lr=0.1)
assert torch.cuda.memory_allocated() == 4 * M
model(torch.empty(1, 1024, device='cuda')).sum().backward()
assert torch.cuda.memory_allocated() == 8 * M
opt.step()
assert torch.cuda.memory_allocated() == 16 * M
opt.zero_grad()
assert torch.cuda.memory_allocated() == 12 * M
"
    ));
}

#[test]
fn p2p_work_keeps_buffers_until_wait() {
    ok(&format!(
        "{MIB}import torch.distributed as dist
dist.init_process_group(rank=0, world_size=2)
t = torch.empty(1024 * 1024, device='cuda')
reqs = dist.batch_isend_irecv([dist.P2POp(dist.isend, t, 1)])
del t
assert torch.cuda.memory_allocated() == 4 * M
reqs[0].wait()
assert torch.cuda.memory_allocated() == 0
"
    ));
}
