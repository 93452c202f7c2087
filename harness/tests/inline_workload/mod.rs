//! Runs a workload written inline in a test, as a one-variant scenario on CPython 3.11's rules
//! and an `h100-80gb`: the surface tests assert inside the workload and read the peak here.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// The run's peak allocated bytes, or the error's text.
pub fn peak_allocated(workload: &str) -> Result<u64, String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&yaml, "t.yaml").map_err(|e| e.to_string())?;
    let v = s.variants().remove(0);
    run_variant(&s, &v)
        .map(|t| t.peak_allocated())
        .map_err(|e| e.to_string())
}
