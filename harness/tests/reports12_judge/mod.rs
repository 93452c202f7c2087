//! Shared by the round-12 report tests: a report's figures (growth, peaks, what the
//! collector freed) from an inline workload, a report with its fix (`vary: fix`), or a
//! shipped scenario's variants.

use gpumem_harness::check::series::{completed_boundaries, growth_per_iteration};
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

/// What a report is judged by.
pub struct Figures {
    /// Least-squares growth of allocated bytes per iteration after iteration 0.
    pub growth: i64,
    pub peak: u64,
    pub peak_reserved: u64,
    /// Device bytes the cycle collector freed.
    pub collector_freed: u64,
}

pub fn figures(timeline: &Timeline, file: &str) -> Figures {
    Figures {
        growth: growth_per_iteration(&completed_boundaries(timeline))
            .unwrap_or_else(|e| panic!("{file}: {e:?}"))
            .bytes_per_iteration,
        peak: timeline.peak_allocated(),
        peak_reserved: timeline.peak_reserved(),
        collector_freed: timeline.collector_freed().1,
    }
}

fn indented(workload: &str) -> String {
    workload.lines().map(|l| format!("  {l}\n")).collect()
}

/// An inline report: no `vary`, 3.11, an 80 GiB card.
pub fn judge(name: &str, workload: &str) -> Figures {
    let yaml = format!(
        "name: {name}\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{}",
        indented(workload)
    );
    let file = format!("{name}.yaml");
    let scenario = scenario::parse(&yaml, &file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let variant = scenario.variants().remove(0);
    let timeline = run_variant(&scenario, &variant).unwrap_or_else(|e| panic!("{file}: {e}"));
    figures(&timeline, &file)
}

/// A report and its fix: the workload branches on `fix` (`False` as reported, `True` fixed).
pub fn judge_fix(name: &str, workload: &str) -> (Figures, Figures) {
    let yaml = format!(
        "name: {name}\ndevice: h100-80gb\npython: \"3.11\"\nvary:\n  fix: [false, true]\nworkload: |\n{}",
        indented(workload)
    );
    let file = format!("{name}.yaml");
    let scenario = scenario::parse(&yaml, &file).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut runs = scenario.variants().into_iter().map(|v| {
        let timeline = run_variant(&scenario, &v).unwrap_or_else(|e| panic!("{file}: {e}"));
        figures(&timeline, &file)
    });
    let (Some(buggy), Some(fixed)) = (runs.next(), runs.next()) else {
        panic!("{file}: two variants")
    };
    (buggy, fixed)
}

/// The figures of each variant of a shipped scenario, in `vary` order.
pub fn judge_scenario(yaml: &str, file: &str) -> Vec<Figures> {
    let scenario = scenario::parse(yaml, file).unwrap_or_else(|e| panic!("{file}: {e}"));
    scenario
        .variants()
        .into_iter()
        .map(|v| figures(&run_variant(&scenario, &v).expect("runs"), file))
        .collect()
}
