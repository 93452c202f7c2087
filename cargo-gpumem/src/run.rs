//! `cargo gpumem run FILE [--var NAME=VALUE]... [--json]`: one scenario, a report per variant.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::{FAILED, SUCCESS};
use gpumem_harness::harness::engine::{self, ReportFormat};
use gpumem_harness::scenario::{Scenario, Variant};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The scenario file.
    pub file: PathBuf,
    /// Run only the variants where NAME (a `vary` variable) has VALUE; repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// One JSON object per variant per line instead of the human report.
    #[arg(long)]
    pub json: bool,
}

/// Exit [`SUCCESS`] when every check held, [`FAILED`] when one did not; an input error stops
/// the run with that error (exit code 2).
pub fn run(args: &RunArgs) -> Result<i32, Error> {
    let display = args.file.to_string_lossy().replace('\\', "/");
    let scenario = engine::load_scenario(&args.file, &display)?;
    let filters = args
        .vars
        .iter()
        .map(|v| parse_var(&scenario, v))
        .collect::<Result<Vec<_>, _>>()?;
    let format = if args.json {
        ReportFormat::JsonLine
    } else {
        ReportFormat::Human
    };
    let mut all_held = true;
    for variant in engine::variants(&scenario)
        .iter()
        .filter(|v| selected(v, &filters))
    {
        let report = engine::report_variant(&scenario, variant, format)?;
        all_held &= report.all_held;
        if args.json {
            println!("{}", report.text);
        } else {
            print!("{}", report.text);
            if !report.text.ends_with('\n') {
                println!();
            }
        }
    }
    Ok(if all_held { SUCCESS } else { FAILED })
}

/// `NAME=VALUE`, checked against the scenario's `vary`.
fn parse_var(scenario: &Scenario, text: &str) -> Result<(String, String), Error> {
    let Some((name, value)) = text.split_once('=') else {
        return Err(Error::Usage(format!("`--var {text}`: expected NAME=VALUE")));
    };
    let (name, value) = (name.trim(), value.trim());
    let Some((_, values)) = scenario.vary.iter().find(|(n, _)| n == name) else {
        let known: Vec<&str> = scenario.vary.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Error::Usage(if known.is_empty() {
            format!("`--var {text}`: {} has no `vary`", scenario.file)
        } else {
            format!(
                "`--var {text}`: {} does not vary `{name}`; it varies {}",
                scenario.file,
                known.join(", ")
            )
        }));
    };
    if !values.iter().any(|v| v.to_string() == value) {
        let listed: Vec<String> = values.iter().map(|v| v.to_string()).collect();
        return Err(Error::Usage(format!(
            "`--var {text}`: `{name}` has no value `{value}`; its values are {}",
            listed.join(", ")
        )));
    }
    Ok((name.to_string(), value.to_string()))
}

fn selected(variant: &Variant, filters: &[(String, String)]) -> bool {
    filters
        .iter()
        .all(|(name, value)| variant.get(name).is_some_and(|v| v.to_string() == *value))
}
