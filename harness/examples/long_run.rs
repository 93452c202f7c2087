//! Runs a tiny workload for N iterations (one small tensor made and dropped each) and prints
//! what the timeline kept, so that peak RSS and wall time can be measured from outside for
//! growing N: the recorder's memory must not grow with the iteration count.
//!
//! `cargo build --release -p gpumem-harness --example long_run`, then
//! `/usr/bin/time -v target/release/examples/long_run 100000000`.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use std::time::Instant;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.replace('_', "").parse().ok())
        .unwrap_or(1_000_000);
    let yaml = format!(
        "name: long\ndevice: {{ capacity: 1 GiB }}\npython: \"3.11\"\nlimits: {{ steps: {} }}\n\
         workload: |\n  for i in range({n}):\n      x = torch.zeros(256, device='cuda')\n",
        n.saturating_mul(8).saturating_add(1000)
    );
    let scenario = scenario::parse(&yaml, "long.yaml").expect("the scenario parses");
    let variant = scenario.variants().remove(0);
    let start = Instant::now();
    match run_variant(&scenario, &variant) {
        Ok(t) => println!(
            "{n} iterations: {:.2} s, {} iteration marks and {} events kept, {} completed",
            start.elapsed().as_secs_f64(),
            t.iterations.len(),
            t.events.len(),
            t.iterations_completed()
        ),
        Err(e) => println!(
            "{n} iterations: {:.2} s, error: {e}",
            start.elapsed().as_secs_f64()
        ),
    }
}
