//! The one place where the harness calls the engine: parse a scenario, run a variant, check
//! it and render its golden text. Everything else in the harness (discovery, naming, insta,
//! review) works on what these functions return, and its tests substitute a small runner.

use crate::error::Error;
use crate::scenario::{Scenario, Variant};

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
pub fn load_scenario(path: &std::path::Path, display: &str) -> Result<Scenario, Error> {
    let _ = path;
    Err(Error::Usage(format!(
        "{display}: scenario parsing is not available in this build"
    )))
}

/// The variants of a scenario, in `vary` order.
// Until the scenario module's own expansion lands: the cartesian product of the `vary`
// values, under the scenario's device and Python profile.
pub fn variants(scenario: &Scenario) -> Vec<Variant> {
    let mut combos: Vec<Vec<(String, crate::scenario::VarValue)>> = vec![Vec::new()];
    for (name, values) in &scenario.vary {
        combos = combos
            .into_iter()
            .flat_map(|combo| {
                values.iter().map(move |v| {
                    let mut next = combo.clone();
                    next.push((name.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    combos
        .into_iter()
        .map(|values| Variant {
            values,
            device: scenario.device.clone(),
            python: scenario.python.clone(),
        })
        .collect()
}

/// Runs one variant, checks its expectations and renders its golden text.
pub fn run_trial(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
    let _ = (scenario, variant);
    Err(Error::Usage(
        "the workload engine is not available in this build".to_string(),
    ))
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
    let _ = (scenario, variant, format);
    Err(Error::Usage(
        "the workload engine is not available in this build".to_string(),
    ))
}

/// Why a variant cannot run on this machine (a trial that is then listed as ignored), or
/// `None`. Every device is simulated today, so nothing is missing yet; a real-GPU device will
/// report "no CUDA device" here, decided before listing so that nextest shows a skip.
pub fn missing_requirement(scenario: &Scenario, variant: &Variant) -> Option<String> {
    let _ = (scenario, variant);
    None
}
