//! Engine throughput: runs the blog's awaitable workload (100 000 iterations) on the model
//! and, side by side, the same loop on CPython 3.11 with a stand-in tensor, when that
//! interpreter is installed. Prints iterations per second and allocator events per second.
//! A second section runs a training loop (a small MLP with Adam, 10 000 iterations: autograd
//! recording, backward, optimizer state) and prints iterations per second.
//!
//! Run with `cargo bench -p gpumem-harness --bench engine`.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use std::process::Command;
use std::time::Instant;

const ITERATIONS: u32 = 100_000;
const AWAITABLE: &str = include_str!("../tests/workloads/awaitable_leak.py");

fn main() {
    let workload = AWAITABLE.replace("range(5000)", &format!("range({ITERATIONS})"));
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!(
        "name: bench\ndevice: h100-80gb\npython: \"3.11\"\nvary:\n  gc_every: [0]\nworkload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "bench.yaml").expect("bench scenario parses");
    let variant = scenario.variants().remove(0);

    let mut best = f64::MAX;
    let mut events = 0;
    for _ in 0..5 {
        let start = Instant::now();
        let timeline = run_variant(&scenario, &variant).expect("bench runs");
        best = best.min(start.elapsed().as_secs_f64());
        events = timeline.events.len();
    }
    println!("model (CPython 3.11 rules), awaitable_leak, {ITERATIONS} iterations, best of 5:");
    println!(
        "  {:.3} s, {:.0} iterations/s, {:.0} allocator events/s ({events} events)",
        best,
        ITERATIONS as f64 / best,
        events as f64 / best
    );

    match cpython_seconds(&workload) {
        Ok(seconds) => {
            println!("CPython 3.11, same loop with a __slots__ stand-in tensor, best of 5:");
            println!(
                "  {:.3} s, {:.0} iterations/s",
                seconds,
                ITERATIONS as f64 / seconds
            );
            println!("model / CPython speed: {:.2}x", seconds / best);
        }
        Err(why) => println!("CPython 3.11 comparison skipped: {why}"),
    }

    training();
}

const TRAINING_ITERATIONS: u32 = 10_000;

/// A small MLP trained with Adam: forward, `MSELoss`, `zero_grad`, backward, `step`.
const TRAINING: &str = r#"model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.MSELoss()
for i in range(ITERATIONS):
    x = torch.randn(64, 256, device="cuda")
    target = torch.randn(64, 10, device="cuda")
    loss = loss_fn(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
"#;

fn training() {
    let workload = TRAINING.replace("ITERATIONS", &TRAINING_ITERATIONS.to_string());
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml =
        format!("name: bench_training\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let scenario = scenario::parse(&yaml, "bench_training.yaml").expect("training scenario parses");
    let variant = scenario.variants().remove(0);
    let mut best = f64::MAX;
    let mut events = 0;
    for _ in 0..3 {
        let start = Instant::now();
        let timeline = run_variant(&scenario, &variant).expect("training bench runs");
        best = best.min(start.elapsed().as_secs_f64());
        events = timeline.events.len();
    }
    println!("model, small MLP + Adam, {TRAINING_ITERATIONS} iterations, best of 3:");
    println!(
        "  {:.3} s, {:.0} iterations/s, {:.0} allocator events/s ({events} events)",
        best,
        f64::from(TRAINING_ITERATIONS) / best,
        events as f64 / best
    );
}

/// Times the loop on CPython 3.11 (best of 5 runs inside one process).
fn cpython_seconds(workload: &str) -> Result<f64, String> {
    let python = ["python3.11"]
        .into_iter()
        .map(String::from)
        .chain(
            std::env::var("HOME")
                .ok()
                .map(|h| format!("{h}/.pyenv/versions/3.11.7/bin/python")),
        )
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .ok_or("no python3.11 on PATH and no pyenv 3.11.7")?;
    let script = format!(
        r#"
import gc, time
class StandInTensor:
    __slots__ = ("n", "base")
    def __init__(self, n, base=None):
        self.n = n
        self.base = base
    def view(self, *shape):
        return StandInTensor(self.n, self)
class StandInTorch:
    pass
torch = StandInTorch()
torch.zeros = lambda n, device=None: StandInTensor(n)
code = compile({workload:?}, "workload", "exec")
best = 1e9
for _ in range(5):
    gc.collect()
    start = time.perf_counter()
    exec(code, {{"torch": torch, "gc": gc, "gc_every": 0}})
    best = min(best, time.perf_counter() - start)
print(best)
"#
    );
    let out = Command::new(&python)
        .arg("-c")
        .arg(script)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("{e}"))
}
