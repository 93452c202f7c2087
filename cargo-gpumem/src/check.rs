//! `cargo gpumem check SNAPSHOT [--json] [--peak-allocated BOUND] [--peak-reserved BOUND]
//! [--oom BOOL]`: a recorded `torch.cuda.memory._dump_snapshot` pickle checked like a
//! scenario run.

use gpumem_harness::error::Error;
use gpumem_harness::snapshot_format::check::{CheckFlags, check_snapshot, expectations};
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
#[command(
    after_help = "The snapshot is read by a safe decoder: a pickle that would import or run \
    code is refused (exit 2). The replay line says how many allocation addresses and \
    segments the allocator model predicted."
)]
pub struct CheckArgs {
    /// The snapshot pickle, or a scenario file (`.yaml`): then only the static pass runs,
    /// reporting every construct and name the model cannot run, located.
    pub snapshot: PathBuf,
    /// One JSON object instead of the human report.
    #[arg(long)]
    pub json: bool,
    /// Expected peak allocated bytes, e.g. "<= 20 GiB".
    #[arg(long, value_name = "BOUND")]
    pub peak_allocated: Option<String>,
    /// Expected peak reserved bytes, e.g. "< 24 GiB".
    #[arg(long, value_name = "BOUND")]
    pub peak_reserved: Option<String>,
    /// Whether the trace is expected to hold an out-of-memory error.
    #[arg(long, value_name = "BOOL")]
    pub oom: Option<bool>,
    /// Refused: a snapshot records no iteration boundaries to judge a steady state on; use
    /// a `replay:` scenario whose workload marks iterations, or `diff` two snapshots.
    #[arg(long, hide = true)]
    pub steady_state: bool,
}

/// `check SCENARIO.yaml`: the static pre-run pass alone (every construct and name the model
/// cannot run, located), without running any variant.
fn check_scenario_file(args: &CheckArgs, display: &str) -> Result<i32, Error> {
    if args.json
        || args.peak_allocated.is_some()
        || args.peak_reserved.is_some()
        || args.oom.is_some()
    {
        return Err(Error::Usage(format!(
            "{display} is a scenario file: `check` on a scenario only looks for what the model \
             cannot run; its expectations are checked by `cargo gpumem run {display}`"
        )));
    }
    gpumem_harness::harness::engine::load_scenario(&args.snapshot, display)?;
    println!(
        "{display}: the model can run every construct and name of the workload (run it with \
         `cargo gpumem run {display}`)"
    );
    Ok(gpumem_harness::exit_code::SUCCESS)
}

/// Exit 0 when every check held, 1 when one did not; a bad file is an error (exit 2).
pub fn check(args: &CheckArgs) -> Result<i32, Error> {
    let display = args.snapshot.to_string_lossy().replace('\\', "/");
    if matches!(
        args.snapshot.extension().and_then(|e| e.to_str()),
        Some("yaml" | "yml")
    ) {
        return check_scenario_file(args, &display);
    }
    if args.steady_state {
        return Err(Error::Usage(
            "`--steady-state` cannot be judged on a snapshot: a snapshot records no iteration \
             boundaries; check `--peak-allocated`/`--peak-reserved`, or compare two snapshots \
             with `cargo gpumem diff --fail-if`"
                .to_string(),
        ));
    }
    let flags = CheckFlags {
        peak_allocated: args.peak_allocated.clone(),
        peak_reserved: args.peak_reserved.clone(),
        oom: args.oom,
        steady_state: args.steady_state,
    };
    let expectations = expectations(&flags)?;
    let result = check_snapshot(&args.snapshot, &display, &expectations)?;
    if args.json {
        let json = serde_json::to_string(&result.json_report())
            .map_err(|e| Error::Usage(format!("cannot render the JSON report: {e}")))?;
        println!("{json}");
    } else {
        print!("{}", result.human_report());
    }
    Ok(result.exit_code())
}
