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
    --no-tests pass|warn|fail: what finding no scenario at all does (default fail: exit 1).\n\
    Scenarios: with a `Cargo.toml` (found from the current directory up), `scenarios/` at the \
    cargo workspace root and folders named by `[package.metadata.gpumem] scenarios`; without \
    one, the nearest folder up to the repository root that holds `scenarios/`, a `gpumem.toml` \
    or a `pyproject.toml` with `[tool.gpumem]` (both may name other folders: \
    `scenarios = [\"path\"]`).\n\
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
    let SplitArgs {
        manifest: manifest_in_args,
        no_tests,
        libtest: libtest_args,
    } = split_args(args)?;
    let manifest = manifest_in_args.as_deref().or(manifest);
    let libtest = libtest_mimic::Arguments::from_iter(
        std::iter::once("cargo gpumem test".to_string()).chain(libtest_args),
    );
    let workspace = crate::cli::workspace(manifest)?;
    // SAFETY: single-threaded so far; trials start inside `run` below.
    unsafe { harness::prepare_process(&workspace.root) };
    let suite = Suite::load(&workspace)?.with_limits(limits);
    if suite.names().is_empty() && !libtest.list {
        let message = format!("no scenarios to run: {}", workspace.where_looked());
        match no_tests {
            NoTests::Pass => {}
            NoTests::Warn => eprintln!("warning: {message}"),
            NoTests::Fail => {
                eprintln!("error: {message}\n(`--no-tests=pass` or `warn` accepts this)");
                return Ok(gpumem_harness::exit_code::FAILED);
            }
        }
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

/// What `cargo gpumem test` does when it finds no scenario at all (like nextest's
/// `--no-tests`): a CI job pointed at the wrong folder must not pass silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum NoTests {
    Pass,
    Warn,
    #[default]
    Fail,
}

/// The arguments of `test` that are ours, and libtest's.
#[derive(Debug, PartialEq)]
struct SplitArgs {
    manifest: Option<PathBuf>,
    no_tests: NoTests,
    libtest: Vec<String>,
}

/// Drops the first `--` separator and takes out `--manifest-path` and `--no-tests` given after
/// `test` but before `--` (the trailing argument list would otherwise swallow them).
fn split_args(args: Vec<String>) -> Result<SplitArgs, Error> {
    let mut manifest = None;
    let mut no_tests = NoTests::default();
    let mut rest = Vec::new();
    let mut iter = args.into_iter();
    while let Some(arg) = iter.next() {
        if arg == "--" {
            rest.extend(iter);
            break;
        }
        if let Some(value) = option_value(&arg, "--manifest-path", &mut iter)? {
            manifest = Some(PathBuf::from(value));
        } else if let Some(value) = option_value(&arg, "--no-tests", &mut iter)? {
            no_tests = match value.as_str() {
                "pass" => NoTests::Pass,
                "warn" => NoTests::Warn,
                "fail" => NoTests::Fail,
                other => {
                    return Err(Error::Usage(format!(
                        "`--no-tests {other}`: expected pass, warn or fail"
                    )));
                }
            };
        } else {
            rest.push(arg);
        }
    }
    Ok(SplitArgs {
        manifest,
        no_tests,
        libtest: rest,
    })
}

/// The value of `--name VALUE` or `--name=VALUE` when `arg` is that option.
fn option_value(
    arg: &str,
    name: &str,
    rest: &mut impl Iterator<Item = String>,
) -> Result<Option<String>, Error> {
    if arg == name {
        return rest
            .next()
            .map(Some)
            .ok_or_else(|| Error::Usage(format!("`{name}` needs a value")));
    }
    Ok(arg
        .strip_prefix(name)
        .and_then(|v| v.strip_prefix('='))
        .map(str::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn separator_and_manifest_path_are_taken_out() {
        let split = split_args(strings(&[
            "cycle",
            "--manifest-path",
            "w/Cargo.toml",
            "--no-tests=warn",
            "--",
            "--exact",
            "--manifest-path=x",
        ]))
        .unwrap();
        assert_eq!(split.manifest, Some(PathBuf::from("w/Cargo.toml")));
        assert_eq!(split.no_tests, NoTests::Warn);
        assert_eq!(
            split.libtest,
            strings(&["cycle", "--exact", "--manifest-path=x"])
        );
    }

    #[test]
    fn libtest_flags_pass_through_without_separator() {
        let split = split_args(strings(&["--list", "--format", "terse"])).unwrap();
        assert_eq!(split.manifest, None);
        assert_eq!(split.no_tests, NoTests::Fail);
        assert_eq!(split.libtest, strings(&["--list", "--format", "terse"]));
    }

    #[test]
    fn no_tests_takes_pass_warn_or_fail() {
        let split = split_args(strings(&["--no-tests", "pass"])).unwrap();
        assert_eq!(split.no_tests, NoTests::Pass);
        let err = split_args(strings(&["--no-tests=maybe"])).unwrap_err();
        assert!(err.to_string().contains("pass, warn or fail"), "{err}");
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
