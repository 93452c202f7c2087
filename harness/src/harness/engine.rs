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

/// Reads and validates a scenario file; `display` is the path shown in messages.
pub fn load_scenario(path: &Path, display: &str) -> Result<Scenario, Error> {
    crate::scenario::load(path, display)
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

// The workload runner lands with the engine; until then no timeline can be produced.
fn timeline_of(scenario: &Scenario, variant: &Variant) -> Result<Timeline, Error> {
    let _ = (scenario, variant);
    Err(Error::Usage(
        "the workload engine is not available in this build".to_string(),
    ))
}

/// Runs one variant, checks its expectations and renders its golden text.
pub fn run_trial(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
    let (timeline, verdicts) = run_and_check(scenario, variant)?;
    Ok(TrialRun {
        failed_checks: verdicts
            .iter()
            .filter(|v| !v.passed)
            .map(|v| format!("{}: {} failed: {}", v.location, v.name, v.message))
            .collect(),
        golden: crate::report::golden_text(scenario, variant, &timeline, &verdicts),
    })
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
    let (timeline, verdicts) = run_and_check(scenario, variant)?;
    let text = match format {
        ReportFormat::Human => crate::report::human_report(scenario, variant, &timeline, &verdicts),
        ReportFormat::JsonLine => {
            crate::report::json_report(scenario, variant, &timeline, &verdicts).to_string()
        }
    };
    Ok(VariantReport {
        text,
        all_held: verdicts.iter().all(|v| v.passed),
    })
}

/// Why a variant cannot run on this machine (a trial that is then listed as ignored), or
/// `None`. Every device is simulated today, so nothing is missing yet; a real-GPU device will
/// report "no CUDA device" here, decided before listing so that nextest shows a skip.
pub fn missing_requirement(scenario: &Scenario, variant: &Variant) -> Option<String> {
    let _ = (scenario, variant);
    None
}
