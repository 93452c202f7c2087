//! `cargo gpumem run FILE [--var NAME=VALUE]... [--json] [--export-snapshot FILE]`: one
//! scenario, a report per variant.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::{FAILED, SUCCESS};
use gpumem_harness::harness::engine::{self, ReportFormat};
use gpumem_harness::scenario::{Device, Limits, PRESETS, Scenario, Variant, device_from_str};
use gpumem_harness::snapshot_format::{export_file, export_timeline};
use std::path::Path;
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
    /// Also write each variant's timeline as a PyTorch memory snapshot (open it with
    /// `torch/cuda/_memory_viz.py` or pytorch.org/memory_viz). With several variants the
    /// variant's name goes before the extension: `out.pickle` → `out.size=1024.pickle`.
    #[arg(long, value_name = "FILE")]
    pub export_snapshot: Option<PathBuf>,
    /// Run every variant on this device instead of the scenario's: `cuda` or `cuda:N` (a real
    /// GPU: the model's segments become real allocations), a preset, or a capacity.
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Budgets of the run over the scenario's `limits:`: `steps=N,memory=2GiB,seconds=S,records=48MiB`.
    #[arg(long, value_name = "KEY=VALUE,...")]
    pub limits: Option<String>,
    /// Run each variant under every CPython collector the model knows (3.8 - 3.15, 3.14.0 -
    /// 3.14.4's incremental one, free-threaded builds) and print one line per version.
    #[arg(long, conflicts_with_all = ["json", "export_snapshot"])]
    pub python_matrix: bool,
    /// How many lines of the workload's `print` output the report shows (0 hides them).
    #[arg(long, value_name = "N", default_value_t = crate::printed::DEFAULT_LINES)]
    pub print_lines: usize,
}

/// Exit [`SUCCESS`] when every check held, [`FAILED`] when one did not; an input error stops
/// the run with that error (exit code 2).
pub fn run(args: &RunArgs) -> Result<i32, Error> {
    let display = args.file.to_string_lossy().replace('\\', "/");
    let mut scenario = engine::load_scenario(&args.file, &display)?;
    if let Some(text) = &args.limits {
        let limits = Limits::parse_assignments(text)
            .map_err(|e| Error::Usage(format!("`--limits {text}`: {e}")))?;
        scenario.limits = limits.merged_over(scenario.limits);
    }
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
    let device = args.device.as_deref().map(parse_device).transpose()?;
    let mut all_held = true;
    let variants: Vec<Variant> = engine::variants(&scenario)
        .into_iter()
        .filter(|v| selected(v, &filters))
        .map(|mut v| {
            if let Some(device) = &device {
                v.device = device.clone();
            }
            v
        })
        .collect();
    // A variant this machine cannot run stops the command before anything runs.
    if let Some(reason) = variants
        .iter()
        .find_map(|v| gpumem_harness::real_device::unavailable(&v.device))
    {
        return Err(Error::Usage(reason));
    }
    if args.python_matrix {
        for variant in &variants {
            println!("{} [{}]", scenario.name, variant.name());
            for line in gpumem_harness::version_matrix::matrix_lines(&scenario, variant)? {
                println!("  {line}");
            }
        }
        return Ok(SUCCESS);
    }
    for variant in &variants {
        let outcome = gpumem_harness::run::contain_panic(&display, "rendering the report", || {
            Ok(engine::report_variant_keeping_output(
                &scenario, variant, format,
            ))
        })?;
        let (report, timeline) = match outcome {
            Ok(done) => done,
            Err(failure) => {
                if !args.json {
                    crate::printed::show_failure(&failure, args.print_lines);
                }
                return Err(failure.error);
            }
        };
        if let Some(file) = &args.export_snapshot {
            let path = if variants.len() > 1 {
                with_variant_name(file, &variant.name())
            } else {
                file.clone()
            };
            export_file::write_export(&path, &export_timeline(&timeline))?;
            // On stderr, so that `--json` output stays one object per line.
            eprintln!("wrote {}", path.display());
            if let Some(folded) = &timeline.folded {
                let iterations: u64 = folded.spans.iter().map(|s| s.iterations as u64).sum();
                eprintln!(
                    "note: {} holds only the kept events of a long run: {iterations} iterations \
                     were folded into summaries (raise limits.records to keep more)",
                    path.display()
                );
            }
        }
        all_held &= report.all_held;
        if args.json {
            println!("{}", report.text);
        } else {
            print!("{}", report.text);
            if !report.text.ends_with('\n') {
                println!();
            }
            print!(
                "{}",
                crate::printed::section(&timeline.printed, args.print_lines)
            );
        }
    }
    Ok(if all_held { SUCCESS } else { FAILED })
}

/// `--device`: `cuda`, `cuda:N`, a preset or a capacity.
fn parse_device(text: &str) -> Result<Device, Error> {
    device_from_str(text).ok_or_else(|| {
        Error::Usage(format!(
            "`--device {text}`: expected `cuda` or `cuda:N` (a real GPU), a preset ({}), or a \
             capacity such as \"24 GiB\"",
            PRESETS
                .iter()
                .map(|p| p.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))
    })
}

/// `NAME=VALUE`, checked against the scenario's `vary`.
pub(crate) fn parse_var(scenario: &Scenario, text: &str) -> Result<(String, String), Error> {
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

pub(crate) fn selected(variant: &Variant, filters: &[(String, String)]) -> bool {
    filters
        .iter()
        .all(|(name, value)| variant.get(name).is_some_and(|v| v.to_string() == *value))
}

/// `out.pickle` with variant `size=1024` → `out.size=1024.pickle` (`out` → `out.size=1024`).
/// Variant names become safe file-name components (see `export_file`).
fn with_variant_name(file: &Path, variant: &str) -> PathBuf {
    export_file::variant_export_path(file, variant)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_variant_name_goes_before_the_extension() {
        assert_eq!(
            with_variant_name(Path::new("out/run.pickle"), "size=1024"),
            PathBuf::from("out/run.size=1024.pickle")
        );
        assert_eq!(
            with_variant_name(Path::new("run"), "a=1,b=2"),
            PathBuf::from("run.a=1,b=2")
        );
    }
}
