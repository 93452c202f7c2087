//! `cargo gpumem test [FILTER] [-- LIBTEST_ARGS]`: every scenario variant as a libtest trial.

use gpumem_harness::error::Error;
use gpumem_harness::harness::{self, Suite};
use gpumem_harness::scenario::Limits;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Args)]
#[command(
    after_help = "libtest flags (before or after `--`): --list, --exact, --skip FILTER, \
    --ignored, --include-ignored, --test-threads N, --format pretty|terse|json, -q/--quiet, \
    --color auto|always|never.\n\
    Golden timelines: a missing or changed one fails its trial and leaves a pending \
    `<scenario>@<variant>.snap.new` beside it (nothing is written when CI is set); review it \
    with `cargo gpumem review`, `accept` or `reject`."
)]
pub struct TestArgs {
    /// Run trials whose name (`<scenario>::<variant>`) contains FILTER, then libtest flags.
    #[arg(
        value_name = "FILTER|LIBTEST_ARGS",
        trailing_var_arg = true,
        allow_hyphen_values = true
    )]
    pub args: Vec<String>,
}

/// Runs the trials; the exit code follows `SuiteOutcome::exit_code`.
pub fn test(manifest: Option<&Path>, args: TestArgs) -> Result<i32, Error> {
    let mut args = args.args;
    let limits = take_limits(&mut args)?;
    let (manifest_in_args, libtest_args) = split_args(args)?;
    let manifest = manifest_in_args.as_deref().or(manifest);
    let libtest = libtest_mimic::Arguments::from_iter(
        std::iter::once("cargo gpumem test".to_string()).chain(libtest_args),
    );
    let workspace = crate::cli::workspace(manifest)?;
    // SAFETY: single-threaded so far; trials start inside `run` below.
    unsafe { harness::prepare_process(&workspace.root) };
    let suite = Suite::load(&workspace)?.with_limits(limits);
    if suite.names().is_empty() {
        eprintln!(
            "note: no scenario files found: looked in `scenarios/` at the workspace root and in \
             folders named by `[package.metadata.gpumem] scenarios`"
        );
    }
    let outcome = suite.run(&libtest, std::io::stderr().is_terminal());
    if outcome.bad_input > 0 {
        eprintln!(
            "error: {} trial(s) failed on bad input (scenario errors above)",
            outcome.bad_input
        );
    }
    if !outcome.awaiting_review.is_empty() {
        eprintln!(
            "{} golden file(s) await review (`cargo gpumem review`, `accept` or `reject`):",
            outcome.awaiting_review.len()
        );
        for file in &outcome.awaiting_review {
            eprintln!("  {file}");
        }
    }
    Ok(outcome.exit_code())
}

/// Takes `--limits KEY=VALUE,...` (before any `--`) out of the arguments: budgets for every
/// trial over the scenarios' own `limits:`.
fn take_limits(args: &mut Vec<String>) -> Result<Limits, Error> {
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let Some(at) = args[..end]
        .iter()
        .position(|a| a == "--limits" || a.starts_with("--limits="))
    else {
        return Ok(Limits::default());
    };
    let text = match args[at].strip_prefix("--limits=") {
        Some(text) => {
            let text = text.to_string();
            args.remove(at);
            text
        }
        None => {
            if at + 1 >= end {
                return Err(Error::Usage("`--limits` needs a value".to_string()));
            }
            args.remove(at);
            args.remove(at)
        }
    };
    Limits::parse_assignments(&text).map_err(|e| Error::Usage(format!("`--limits {text}`: {e}")))
}

/// Drops the first `--` separator and takes out a `--manifest-path` given after `test` but
/// before `--` (the trailing argument list would otherwise swallow it).
fn split_args(args: Vec<String>) -> Result<(Option<PathBuf>, Vec<String>), Error> {
    let mut manifest = None;
    let mut rest = Vec::new();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            rest.extend(iter);
            break;
        }
        if arg == "--manifest-path" {
            let path = iter
                .next()
                .ok_or_else(|| Error::Usage("`--manifest-path` needs a value".to_string()))?;
            manifest = Some(PathBuf::from(path));
        } else if let Some(path) = arg.strip_prefix("--manifest-path=") {
            manifest = Some(PathBuf::from(path));
        } else {
            rest.push(arg);
        }
    }
    Ok((manifest, rest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn separator_and_manifest_path_are_taken_out() {
        let (manifest, rest) = split_args(strings(&[
            "cycle",
            "--manifest-path",
            "w/Cargo.toml",
            "--",
            "--exact",
            "--manifest-path=x",
        ]))
        .unwrap();
        assert_eq!(manifest, Some(PathBuf::from("w/Cargo.toml")));
        assert_eq!(rest, strings(&["cycle", "--exact", "--manifest-path=x"]));
    }

    #[test]
    fn libtest_flags_pass_through_without_separator() {
        let (manifest, rest) = split_args(strings(&["--list", "--format", "terse"])).unwrap();
        assert_eq!(manifest, None);
        assert_eq!(rest, strings(&["--list", "--format", "terse"]));
    }

    #[test]
    fn limits_are_taken_out_before_the_separator() {
        let mut args = strings(&["cycle", "--limits", "steps=10", "--", "--limits=x"]);
        assert_eq!(take_limits(&mut args).unwrap().steps, Some(10));
        assert_eq!(args, strings(&["cycle", "--", "--limits=x"]));
        let mut args = strings(&["--limits=memory=1GiB"]);
        assert_eq!(take_limits(&mut args).unwrap().memory, Some(1 << 30));
        assert!(take_limits(&mut strings(&["--limits=bogus=1"])).is_err());
    }

    #[test]
    fn manifest_path_without_value_is_a_usage_error() {
        let err = split_args(strings(&["--manifest-path"])).unwrap_err();
        assert_eq!(err.exit_code(), gpumem_harness::exit_code::BAD_INPUT);
    }
}
