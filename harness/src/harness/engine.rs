//! The one place where the harness calls the engine: parse a scenario, run a variant, check
//! it and render its golden text. Everything else in the harness (discovery, naming, insta,
//! review) works on what these functions return, and its tests substitute a small runner.

use crate::check::Verdict;
use crate::error::Error;
use crate::scenario::{Scenario, Variant};
use crate::timeline::Timeline;
use std::path::Path;

/// What one variant produced, as the harness needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrialRun {
    /// One line per expectation that did not hold: which check, expected versus measured,
    /// and where it was written (`file:line:col`).
    pub failed_checks: Vec<String>,
    /// The golden text of the timeline (compared with the `.snap` file).
    pub golden: String,
}

/// How a trial's variant is run: [`run_trial`] in production, a stand-in in tests.
pub type Runner = fn(&Scenario, &Variant) -> Result<TrialRun, Error>;

/// Reads and validates a scenario file, then checks its whole workload for what the model
/// cannot run (every finding at once, before any variant runs); `display` is the path shown
/// in messages.
pub fn load_scenario(path: &Path, display: &str) -> Result<Scenario, Error> {
    let scenario = crate::scenario::load(path, display)?;
    crate::python::static_check::check_scenario(&scenario)?;
    Ok(scenario)
}

/// The variants of a scenario, in `vary` order.
pub fn variants(scenario: &Scenario) -> Vec<Variant> {
    scenario.variants()
}

/// Runs one variant and judges its expectations.
fn run_and_check(
    scenario: &Scenario,
    variant: &Variant,
) -> Result<(Timeline, Vec<Verdict>), Error> {
    let timeline = timeline_of(scenario, variant)?;
    let verdicts = crate::check::evaluate(&scenario.expectations_for(variant), &timeline);
    Ok((timeline, verdicts))
}

fn timeline_of(scenario: &Scenario, variant: &Variant) -> Result<Timeline, Error> {
    crate::run::run_variant(scenario, variant)
}

/// Runs one variant, checks its expectations and renders its golden text.
pub fn run_trial(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
    let (timeline, verdicts) = run_and_check(scenario, variant)?;
    Ok(trial_run(scenario, variant, &timeline, &verdicts))
}

/// The harness's view of a checked timeline.
fn trial_run(
    scenario: &Scenario,
    variant: &Variant,
    timeline: &Timeline,
    verdicts: &[Verdict],
) -> TrialRun {
    TrialRun {
        failed_checks: verdicts
            .iter()
            .filter(|v| !v.passed)
            .map(|v| format!("{}: {} failed: {}", v.location, v.name, v.message))
            .collect(),
        golden: crate::report::golden_text(scenario, variant, timeline),
    }
}

/// How `cargo gpumem run` shows a variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// The human-readable report.
    Human,
    /// One JSON object on one line.
    JsonLine,
}

/// One variant's report for `cargo gpumem run`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VariantReport {
    /// The report text (a JSON line without its newline for [`ReportFormat::JsonLine`]).
    pub text: String,
    /// Whether every expectation held.
    pub all_held: bool,
}

/// Runs one variant and renders its report.
pub fn report_variant(
    scenario: &Scenario,
    variant: &Variant,
    format: ReportFormat,
) -> Result<VariantReport, Error> {
    report_variant_with_timeline(scenario, variant, format).map(|(report, _)| report)
}

/// [`report_variant`], also returning the timeline (for `run --export-snapshot`).
pub fn report_variant_with_timeline(
    scenario: &Scenario,
    variant: &Variant,
    format: ReportFormat,
) -> Result<(VariantReport, Timeline), Error> {
    report_variant_keeping_output(scenario, variant, format).map_err(|failure| failure.error)
}

/// [`report_variant_with_timeline`], keeping what a failed workload printed before its
/// error and the error's traceback (`cargo gpumem run` shows them).
pub fn report_variant_keeping_output(
    scenario: &Scenario,
    variant: &Variant,
    format: ReportFormat,
) -> Result<(VariantReport, Timeline), Box<crate::run::Failure>> {
    let timeline = crate::run::run_variant_keeping_output(scenario, variant)?;
    let verdicts = crate::check::evaluate(&scenario.expectations_for(variant), &timeline);
    let text = match format {
        ReportFormat::Human => crate::report::human_report(scenario, variant, &timeline, &verdicts),
        ReportFormat::JsonLine => {
            crate::report::json_report(scenario, variant, &timeline, &verdicts).to_string()
        }
    };
    let report = VariantReport {
        text,
        all_held: verdicts.iter().all(|v| v.passed),
    };
    Ok((report, timeline))
}

/// Why a variant cannot run on this machine (a trial that is then listed as ignored), or
/// `None`: a `device: cuda` variant without a usable driver or device ("needs a CUDA device:
/// no driver found"), decided before listing so that nextest shows a skip.
pub fn missing_requirement(scenario: &Scenario, variant: &Variant) -> Option<String> {
    let _ = scenario;
    crate::real_device::unavailable(&variant.device)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timeline::{Action, IterationMark, MemoryEvent, StackId};

    const SCENARIO: &str = "name: steady\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\n\
        workload: |\n  for i in range(2):\n      a = torch.zeros(256, device=\"cuda\")\n\
        expect:\n  - peak_allocated: \"<= 1024 B\"\n    oom: false\n";

    /// Two iterations, each allocating one block of `allocated` bytes and freeing the last.
    fn timeline(allocated: u64) -> Timeline {
        let event = |action, iteration, live| MemoryEvent {
            action,
            addr: 0x7f00_0000_0000,
            size: allocated,
            stream: 0,
            stack: StackId::default(),
            iteration: Some(iteration),
            allocated: live,
            reserved: 2 << 20,
            device_free: None,
            category: None,
        };
        let mark = |iteration| IterationMark {
            iteration,
            first_event: 0,
            allocated_at_start: allocated,
            reserved_at_start: 2 << 20,
            allocated_at_end: allocated,
            reserved_at_end: 2 << 20,
            peak_allocated: allocated,
            device_tensors_at_end: 1,
            completed: true,
        };
        Timeline {
            device_capacity: 1 << 30,
            events: vec![
                event(Action::Alloc, 0, allocated),
                event(Action::Alloc, 1, 2 * allocated),
                event(Action::FreeRequested, 1, allocated),
            ],
            iterations: vec![mark(0), mark(1)],
            ..Timeline::default()
        }
    }

    fn judged(allocated: u64) -> TrialRun {
        let scenario = crate::scenario::parse(SCENARIO, "scenarios/steady.yaml").unwrap();
        let variant = &variants(&scenario)[0];
        let timeline = timeline(allocated);
        let verdicts = crate::check::evaluate(&scenario.expectations_for(variant), &timeline);
        trial_run(&scenario, variant, &timeline, &verdicts)
    }

    #[test]
    fn failed_checks_name_the_check_and_where_it_is_written() {
        let held = judged(512);
        assert_eq!(held.failed_checks, Vec::<String>::new());
        let failed = judged(4096);
        assert_eq!(failed.failed_checks.len(), 1, "{:?}", failed.failed_checks);
        assert!(
            failed.failed_checks[0].starts_with("scenarios/steady.yaml:8:"),
            "{:?}",
            failed.failed_checks
        );
        assert!(failed.failed_checks[0].contains("peak_allocated failed"));
    }

    #[test]
    fn golden_text_is_the_report_rendering_and_follows_memory() {
        let small = judged(512);
        let large = judged(4096);
        assert!(!small.golden.is_empty());
        assert_ne!(small.golden, large.golden);
        assert_eq!(small.golden, judged(512).golden, "deterministic");
    }
}
