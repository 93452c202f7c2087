//! Runs one benchmark workload on the model once and prints its wall time, so that the whole
//! process can be measured from outside: by `harness/benches/compare_cpython.sh` (alternating
//! with CPython 3.11 on the same code) and under callgrind (instructions per iteration).
//!
//! `cargo run --release -p gpumem-harness --example workload_speed -- WORKLOAD ITERATIONS`
//! where WORKLOAD is `awaitable`, `simple` or `training`. `--print-python` prints the loop as
//! Python instead (for the CPython side of the comparison). `--records=SIZE` (e.g. `1MiB`)
//! sets `limits.records`, so that a short run folds its middle iterations like a long run does
//! (to measure the folding's cost under callgrind without a million iterations).

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use std::time::Instant;

const AWAITABLE: &str = include_str!("../tests/workloads/awaitable_leak.py");
const SIMPLE: &str = include_str!("../tests/workloads/simple_leak.py");
/// A small MLP trained with Adam (the engine bench's training section).
const TRAINING: &str = r#"model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).cuda()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
loss_fn = torch.nn.MSELoss()
for i in range(5000):
    x = torch.randn(64, 256, device="cuda")
    target = torch.randn(64, 10, device="cuda")
    loss = loss_fn(model(x), target)
    opt.zero_grad()
    loss.backward()
    opt.step()
"#;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let print_python = args.iter().any(|a| a == "--print-python");
    let rest: Vec<&String> = args.iter().filter(|a| !a.starts_with("--")).collect();
    let (Some(name), Some(iterations)) = (rest.first(), rest.get(1)) else {
        eprintln!("usage: workload_speed awaitable|simple|training ITERATIONS [--print-python]");
        std::process::exit(2);
    };
    let iterations: u64 = iterations.parse().unwrap_or_else(|_| {
        eprintln!("ITERATIONS must be a whole number, got {iterations:?}");
        std::process::exit(2);
    });
    let source = match name.as_str() {
        "awaitable" => AWAITABLE,
        "simple" => SIMPLE,
        "training" => TRAINING,
        other => {
            eprintln!("unknown workload {other:?}: awaitable, simple or training");
            std::process::exit(2);
        }
    };
    let workload = source.replace("range(5000)", &format!("range({iterations})"));
    if print_python {
        print!("{workload}");
        return;
    }
    let records = args
        .iter()
        .find_map(|a| a.strip_prefix("--records="))
        .map_or(String::new(), |r| format!(", records: \"{r}\""));
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    // Collections, allocator model and timeline all on; no explicit `gc.collect()`.
    let yaml = format!(
        "name: speed\ndevice: h100-80gb\npython: \"3.11\"\nlimits: {{ steps: 100000000000{records} }}\nvary:\n  gc_every: [0]\nworkload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "speed.yaml").unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(2);
    });
    let variant = scenario.variants().remove(0);
    let start = Instant::now();
    let timeline = match run_variant(&scenario, &variant) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let seconds = start.elapsed().as_secs_f64();
    let events = timeline.events.len();
    println!(
        "{name} {iterations} iterations: {seconds:.3} s, {:.0} iterations/s, {events} allocator events, {:.0} events/s",
        iterations as f64 / seconds,
        events as f64 / seconds
    );
}
