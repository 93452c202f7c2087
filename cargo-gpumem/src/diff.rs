//! `cargo gpumem diff A B [--json]`: how memory moved between two snapshots, two scenario
//! runs, or one of each. A file ending in `.yaml`/`.yml` is a scenario (one variant of it is
//! run); anything else is read as a snapshot pickle.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::{FAILED, SUCCESS};
use gpumem_harness::harness::engine;
use gpumem_harness::report::positions::relative_to_workload;
use gpumem_harness::snapshot_format::check::snapshot_timeline;
use gpumem_harness::snapshot_format::diff::{Quantity, TimelineDiff, diff, render};
use gpumem_harness::timeline::Timeline;
use gpumem_harness::units::Bytes;
use std::path::{Path, PathBuf};

/// Changed allocation sites shown by the human report.
const MAX_SITES: usize = 20;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A scenario with several variants needs selectors: --var applies to both \
    sides, --var-a and --var-b to one side. When several variants still match, the first is \
    diffed and a note on stderr says which. Exit 0 when both sides were read and no \
    `--fail-if` gate was exceeded, 1 when one was, 2 on bad input."
)]
pub struct DiffArgs {
    /// The baseline: a snapshot pickle or a scenario file.
    pub a: PathBuf,
    /// The file compared with it.
    pub b: PathBuf,
    /// Select variants of both scenarios where NAME has VALUE; repeatable.
    #[arg(long = "var", value_name = "NAME=VALUE")]
    pub vars: Vec<String>,
    /// Select variants of scenario A only; repeatable.
    #[arg(long = "var-a", value_name = "NAME=VALUE")]
    pub vars_a: Vec<String>,
    /// Select variants of scenario B only; repeatable.
    #[arg(long = "var-b", value_name = "NAME=VALUE")]
    pub vars_b: Vec<String>,
    /// One JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Exit 1 when B exceeds A by more than a limit: `QUANTITY>+LIMIT`, QUANTITY one of
    /// peak_allocated, peak_reserved, steady_state_allocated, LIMIT a percentage of A
    /// (`+5%`) or bytes (`+100 MiB`); repeatable.
    #[arg(long = "fail-if", value_name = "GATE")]
    pub fail_if: Vec<String>,
}

/// One side of the diff: what it is called in the report and its timeline.
struct Side {
    label: String,
    timeline: Timeline,
}

pub fn diff_command(args: &DiffArgs) -> Result<i32, Error> {
    let gates = args
        .fail_if
        .iter()
        .map(|g| Gate::parse(g))
        .collect::<Result<Vec<_>, _>>()?;
    let a = side(&args.a, args.vars.iter().chain(&args.vars_a), "A")?;
    let b = side(&args.b, args.vars.iter().chain(&args.vars_b), "B")?;
    let d = diff(&a.timeline, &b.timeline);
    if args.json {
        let gate_results: Vec<serde_json::Value> = gates
            .iter()
            .map(|g| {
                let (quantity, _) = g.quantity(&d);
                serde_json::json!({ "gate": g.text, "exceeded": g.exceeded(quantity) })
            })
            .collect();
        let mut json = serde_json::json!({
            "schema_version": gpumem_harness::report::SCHEMA_VERSION,
            "a": a.label,
            "b": b.label,
            "gates": gate_results,
        });
        if let (Some(object), Ok(serde_json::Value::Object(fields))) =
            (json.as_object_mut(), serde_json::to_value(&d))
        {
            object.extend(fields);
        }
        println!("{json}");
    } else {
        println!("a: {}\nb: {}", a.label, b.label);
        print!("{}", render(&d, MAX_SITES));
    }
    let mut exceeded = false;
    for gate in &gates {
        let (quantity, text) = gate.quantity(&d);
        if gate.exceeded(quantity) {
            exceeded = true;
            let line = format!(
                "FAIL {text}: {} -> {} exceeds `{}`",
                Bytes(quantity.a),
                Bytes(quantity.b),
                gate.text
            );
            if args.json {
                eprintln!("{line}");
            } else {
                println!("{line}");
            }
        }
    }
    Ok(if exceeded { FAILED } else { SUCCESS })
}

/// `--fail-if peak_allocated>+5%`: how much B may exceed A before the diff fails.
#[derive(Debug, Clone, PartialEq)]
struct Gate {
    text: String,
    quantity: GateQuantity,
    limit: Limit,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum GateQuantity {
    PeakAllocated,
    PeakReserved,
    SteadyStateAllocated,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Limit {
    /// Percent of A's value.
    Percent(f64),
    Bytes(u64),
}

impl Gate {
    fn parse(text: &str) -> Result<Gate, Error> {
        let usage = |why: &str| {
            Error::Usage(format!(
                "`--fail-if {text}`: {why}; expected QUANTITY>+LIMIT such as \
                 `peak_allocated>+5%` or `peak_reserved>+100 MiB` (QUANTITY: peak_allocated, \
                 peak_reserved, steady_state_allocated)"
            ))
        };
        let Some((name, limit)) = text.split_once('>') else {
            return Err(usage("no `>`"));
        };
        let quantity = match name.trim() {
            "peak_allocated" => GateQuantity::PeakAllocated,
            "peak_reserved" => GateQuantity::PeakReserved,
            "steady_state_allocated" => GateQuantity::SteadyStateAllocated,
            other => return Err(usage(&format!("unknown quantity `{other}`"))),
        };
        let limit = limit.trim();
        let limit = limit.strip_prefix('+').unwrap_or(limit).trim();
        let limit = if let Some(percent) = limit.strip_suffix('%') {
            let value: f64 = percent
                .trim()
                .parse()
                .map_err(|_| usage(&format!("`{percent}` is not a number")))?;
            if !value.is_finite() || value < 0.0 {
                return Err(usage("the percentage must be 0 or more"));
            }
            Limit::Percent(value)
        } else {
            Limit::Bytes(gpumem_harness::units::parse_bytes(limit).map_err(|e| usage(&e))?)
        };
        Ok(Gate {
            text: text.to_string(),
            quantity,
            limit,
        })
    }

    fn quantity<'d>(&self, d: &'d TimelineDiff) -> (&'d Quantity, &'static str) {
        match self.quantity {
            GateQuantity::PeakAllocated => (&d.peak_allocated, "peak allocated"),
            GateQuantity::PeakReserved => (&d.peak_reserved, "peak reserved"),
            GateQuantity::SteadyStateAllocated => {
                (&d.steady_state_allocated, "allocated at the end")
            }
        }
    }

    /// Whether B grew past the limit (a percentage of 0 allows no growth at all).
    fn exceeded(&self, q: &Quantity) -> bool {
        match self.limit {
            Limit::Bytes(bytes) => q.delta > bytes as i128,
            Limit::Percent(percent) => q.delta as f64 > q.a as f64 * percent / 100.0,
        }
    }
}

fn is_scenario(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    )
}

/// Reads one side: a snapshot's timeline, or the run of one variant of a scenario.
fn side<'v>(
    path: &Path,
    vars: impl Iterator<Item = &'v String>,
    which: &str,
) -> Result<Side, Error> {
    let display = path.to_string_lossy().replace('\\', "/");
    if !is_scenario(path) {
        let vars: Vec<&String> = vars.collect();
        if let Some(v) = vars.first() {
            return Err(Error::Usage(format!(
                "`--var {v}` selects scenario variants, but {which} ({display}) is a snapshot"
            )));
        }
        return Ok(Side {
            timeline: snapshot_timeline(path, &display)?,
            label: display,
        });
    }
    let scenario = engine::load_scenario(path, &display)?;
    let filters = vars
        .map(|v| crate::run::parse_var(&scenario, v))
        .collect::<Result<Vec<_>, _>>()?;
    let matching: Vec<_> = engine::variants(&scenario)
        .into_iter()
        .filter(|v| crate::run::selected(v, &filters))
        .collect();
    let Some(variant) = matching.first() else {
        return Err(Error::Usage(format!(
            "no variant of {display} matches the `--var` selectors"
        )));
    };
    if matching.len() > 1 {
        eprintln!(
            "note: {which} ({display}) has {} matching variants; diffing the first ({}); select \
             one with --var-{} NAME=VALUE",
            matching.len(),
            variant.name(),
            which.to_lowercase()
        );
    }
    // Sites keyed by workload position, function and source text, so that two copies of a
    // scenario (another path, `git show HEAD~1:...`) match where their code is the same.
    let timeline = relative_to_workload(
        &gpumem_harness::run::run_variant(&scenario, variant)?,
        &scenario,
        true,
    );
    let name = variant.name();
    Ok(Side {
        label: if name.is_empty() {
            display
        } else {
            format!("{display} [{name}]")
        },
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(a: u64, b: u64) -> Quantity {
        Quantity {
            a,
            b,
            delta: b as i128 - a as i128,
        }
    }

    #[test]
    fn percentage_gates_compare_with_a() {
        let gate = Gate::parse("peak_allocated>+5%").unwrap();
        assert_eq!(gate.limit, Limit::Percent(5.0));
        assert!(!gate.exceeded(&q(1000, 1050)));
        assert!(gate.exceeded(&q(1000, 1051)));
        assert!(!gate.exceeded(&q(1000, 10)));
    }

    #[test]
    fn byte_gates_and_bad_gates() {
        let gate = Gate::parse("peak_reserved > +2 MiB").unwrap();
        assert_eq!(gate.quantity, GateQuantity::PeakReserved);
        assert!(gate.exceeded(&q(0, (2 << 20) + 1)));
        assert!(!gate.exceeded(&q(0, 2 << 20)));
        let err = Gate::parse("peak>+5%").unwrap_err().to_string();
        assert!(err.contains("unknown quantity `peak`"), "{err}");
        let err = Gate::parse("peak_allocated>+5").unwrap_err().to_string();
        assert!(err.contains("has no unit"), "{err}");
    }
}
