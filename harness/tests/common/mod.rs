//! Helpers shared by the collector tests: running a workload under a given start state and
//! reading the live-tensor counts from its timeline.

pub mod gc_counts;
pub mod unhashable;

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

/// Runs `workload` under the rules of CPython `python` (`"3.11"`, `"3.13.5t"`), starting from `counts` and
/// `long_lived_total`, with the workload variable `gc_every` set.
pub fn run_model(
    workload: &str,
    python: &str,
    counts: [i64; 3],
    long_lived_total: u64,
    gc_every: u32,
) -> Timeline {
    run_model_with_callbacks(workload, python, counts, long_lived_total, gc_every, 0)
}

/// [`run_model`] with `gc_callbacks` Python functions in `gc.callbacks`, as a probe that logs
/// each collection registers.
pub fn run_model_with_callbacks(
    workload: &str,
    python: &str,
    counts: [i64; 3],
    long_lived_total: u64,
    gc_every: u32,
    gc_callbacks: u32,
) -> Timeline {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let [c0, c1, c2] = counts;
    let yaml = format!(
        "name: probe\ndevice: h100-80gb\npython: {{ version: \"{python}\", start: {{ counts: [{c0}, {c1}, {c2}], long_lived_total: {long_lived_total}, gc_callbacks: {gc_callbacks} }} }}\nvary:\n  gc_every: [{gc_every}]\nworkload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "probe.yaml").expect("probe scenario parses");
    let variant = scenario.variants().remove(0);
    run_variant(&scenario, &variant).expect("probe runs")
}

/// Live device tensors at the end of the last iteration, and the most alive before any
/// collection (or at the end).
#[allow(dead_code)] // not every test binary that includes `common` reads tensor counts
pub fn peak_and_end_alive(timeline: &Timeline) -> (u64, u64) {
    let end = timeline
        .iterations
        .last()
        .map_or(0, |m| m.device_tensors_at_end);
    let peak = timeline
        .gc_events
        .iter()
        .map(|e| e.tensors_alive_before)
        .chain([end])
        .max()
        .unwrap_or(0);
    (peak, end)
}
