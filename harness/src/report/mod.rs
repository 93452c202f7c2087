//! Renderings of one variant's timeline and verdicts: the golden text a reviewer reads in a
//! diff, the human report `cargo gpumem run` prints, and the JSON report.
//!
//! The golden text prints memory quantities, iterations and workload positions only, so that
//! it moves when memory moves and not otherwise: positions count from the workload's first
//! line (`workload:12 in step`, see [`positions`]), and verdicts are left out (they are the
//! trial's result; loosening a bound must not change a golden file). It stays under about 150
//! lines whatever the number of iterations: iteration ends are compressed into runs of equal
//! values, or into 40 slices when there are more runs than that.

mod boundaries;
mod chart;
mod driver;
mod json;
pub mod positions;
mod sections;
mod sites;
mod tracked;

#[cfg(test)]
mod folded_tests;
#[cfg(test)]
mod tests;

pub use json::{
    CycleFreed, JsonCategoryBytes, JsonCheck, JsonCyclePath, JsonGcEvent, JsonOom, JsonReport,
    JsonSite, Outcome, SCHEMA_VERSION, VaryValues,
};
pub use sites::{Site, live_at_peak};
pub use tracked::tracked_golden_text;

use crate::check::Verdict;
use crate::scenario::{Scenario, Variant};
use crate::timeline::Timeline;
use sections::Lines;

/// The golden rendering of one variant. Deterministic: the same input gives the same text.
pub fn golden_text(scenario: &Scenario, variant: &Variant, timeline: &Timeline) -> String {
    let relative = positions::relative_to_workload(timeline, scenario, false);
    let timeline = &relative;
    let mut out = Lines::new();
    sections::header(&mut out, scenario, variant);
    sections::title(&mut out, "outcome");
    sections::outcome(&mut out, timeline);
    sections::title(&mut out, "peaks");
    sections::peaks(&mut out, timeline);
    sections::title(&mut out, "allocated at iteration ends");
    sections::steady_state_table(&mut out, timeline);
    // A replayed snapshot has no collector to report on.
    if scenario.replay.is_none() {
        sections::title(&mut out, "collections");
        sections::collections(&mut out, timeline);
        sections::title(
            &mut out,
            "cycle paths (device tensors freed by the collector)",
        );
        sections::cycle_paths(&mut out, timeline);
    }
    sections::title(&mut out, "allocated memory");
    sections::allocated_chart(&mut out, timeline);
    sections::title(&mut out, "top allocation sites live at the peak");
    sections::top_sites(&mut out, timeline);
    sections::title(&mut out, "approximations");
    sections::approximations(&mut out, timeline);
    finish(out)
}

/// What `cargo gpumem run` prints for one variant: the verdicts first, with where each check
/// is written, then the same picture as the golden text with a short steady-state summary.
pub fn human_report(
    scenario: &Scenario,
    variant: &Variant,
    timeline: &Timeline,
    verdicts: &[Verdict],
) -> String {
    let mut out = Lines::new();
    let name = variant.name();
    let variant_name = if name.is_empty() {
        String::new()
    } else {
        format!(" [{name}]")
    };
    let failed = verdicts.iter().filter(|v| !v.passed).count();
    out.push(format!(
        "{}{variant_name}: {} ({}), {}, {}",
        scenario.name,
        if failed == 0 { "ok" } else { "FAILED" },
        match (verdicts.len(), failed) {
            (0, _) => "no checks".to_string(),
            (n, 0) => format!("{} held", crate::check::locate::checks(n)),
            (n, f) => format!("{f} of {} failed", crate::check::locate::checks(n)),
        },
        if scenario.replay.is_none() {
            format!("python {}", variant.python.version)
        } else {
            "replayed snapshot".to_string()
        },
        device_name(variant)
    ));
    sections::verdicts(&mut out, verdicts, true);
    sections::title(&mut out, "outcome");
    sections::outcome(&mut out, timeline);
    sections::title(&mut out, "memory");
    sections::peaks(&mut out, timeline);
    sections::steady_state_summary(&mut out, timeline);
    if scenario.replay.is_none() {
        sections::title(&mut out, "collections");
        sections::collections(&mut out, timeline);
    }
    if !timeline.cycle_reports.is_empty() {
        sections::title(&mut out, "cycle paths");
        sections::cycle_paths(&mut out, timeline);
    }
    sections::title(&mut out, "allocated memory");
    sections::allocated_chart(&mut out, timeline);
    sections::title(&mut out, "top allocation sites live at the peak");
    sections::top_sites(&mut out, timeline);
    if let Some(observation) = &timeline.driver {
        sections::title(
            &mut out,
            "CUDA driver (model reserved vs driver-observed use)",
        );
        driver::driver_section(&mut out, observation);
    }
    if !timeline.approximations.is_empty() {
        sections::title(&mut out, "approximations");
        sections::approximations(&mut out, timeline);
    }
    finish(out)
}

/// The JSON report of one variant (print it on one line). Serialize [`JsonReport`] directly
/// to keep its field order; a `serde_json::Value` orders keys alphabetically.
pub fn json_report(
    scenario: &Scenario,
    variant: &Variant,
    timeline: &Timeline,
    verdicts: &[Verdict],
) -> serde_json::Value {
    let report = JsonReport::new(scenario, variant, timeline, verdicts);
    // The report holds only strings, numbers, booleans and lists: it always converts.
    serde_json::to_value(report).unwrap_or(serde_json::Value::Null)
}

/// The device as reports name it: its preset, or its capacity.
fn device_name(variant: &Variant) -> String {
    match &variant.device.preset {
        Some(preset) => preset.clone(),
        None => crate::units::Bytes(variant.device.capacity).to_string(),
    }
}

fn finish(lines: Lines) -> String {
    let mut text = lines
        .iter()
        .map(|l| l.trim_end())
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}
