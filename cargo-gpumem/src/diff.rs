//! `cargo gpumem diff A B [--json]`: how memory moved between two snapshots, two scenario
//! runs, or one of each. A file ending in `.yaml`/`.yml` is a scenario (one variant of it is
//! run); anything else is read as a snapshot pickle.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::SUCCESS;
use gpumem_harness::harness::engine;
use gpumem_harness::snapshot_format::check::snapshot_timeline;
use gpumem_harness::snapshot_format::diff::{diff, render};
use gpumem_harness::timeline::Timeline;
use std::path::{Path, PathBuf};

/// Changed allocation sites shown by the human report.
const MAX_SITES: usize = 20;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "A scenario with several variants needs selectors: --var applies to both \
    sides, --var-a and --var-b to one side. When several variants still match, the first is \
    diffed and a note on stderr says which. Exit 0 when both sides were read, 2 on bad input."
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
}

/// One side of the diff: what it is called in the report and its timeline.
struct Side {
    label: String,
    timeline: Timeline,
}

pub fn diff_command(args: &DiffArgs) -> Result<i32, Error> {
    let a = side(&args.a, args.vars.iter().chain(&args.vars_a), "A")?;
    let b = side(&args.b, args.vars.iter().chain(&args.vars_b), "B")?;
    let d = diff(&a.timeline, &b.timeline);
    if args.json {
        let mut json = serde_json::json!({ "a": a.label, "b": b.label });
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
    Ok(SUCCESS)
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
    let timeline = gpumem_harness::run::run_variant(&scenario, variant)?;
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
