//! Command line: `cargo gpumem <COMMAND>`, exit codes from `gpumem_harness::exit_code`.
//!
//! | code | meaning |
//! |------|---------|
//! | 0    | every check and golden timeline held |
//! | 1    | a check or golden timeline failed, golden files await review, no scenario found, or a `diff --fail-if` gate exceeded |
//! | 2    | bad input (scenario file, snapshot), bad usage, or a configuration error |

use clap::{Parser, Subcommand};
use gpumem_harness::error::Error;
use gpumem_harness::exit_code::BAD_INPUT;
use gpumem_harness::harness::Workspace;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// GPU memory regression tests for PyTorch workloads.
#[derive(Debug, Parser)]
#[command(
    name = "cargo-gpumem",
    bin_name = "cargo gpumem",
    version,
    about,
    after_help = "Exit codes: 0 all held; 1 a check or golden timeline failed, golden files \
                  await review, `test` found no scenario, or a `diff --fail-if` gate was \
                  exceeded; 2 bad input, usage or configuration."
)]
pub struct Cli {
    /// Path to Cargo.toml of the workspace whose scenarios `test`, `review`, `accept` and
    /// `reject` use (default: found from the current directory).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run every scenario of the repository as a test, with golden timelines.
    Test(crate::test::TestArgs),
    /// Run one scenario file and print its report.
    Run(crate::run::RunArgs),
    /// Check a PyTorch memory snapshot (`torch.cuda.memory._dump_snapshot` pickle), or a
    /// scenario's workload for what the model cannot run, before running it.
    Check(crate::check::CheckArgs),
    /// Compare two snapshots or scenario runs: peaks, allocated at the end, allocation sites.
    Diff(crate::diff::DiffArgs),
    /// Walk pending golden files interactively, one key each: accept, reject, skip, all, quit.
    Review(FilterArgs),
    /// Accept pending golden files (all, or those matching FILTER).
    Accept(FilterArgs),
    /// Reject (delete) pending golden files (all, or those matching FILTER).
    Reject(FilterArgs),
    /// List the CUDA driver and devices of this machine (for `--device cuda`).
    Devices,
}

/// Selects pending golden files by trial name or path.
#[derive(Debug, clap::Args)]
pub struct FilterArgs {
    /// Only files whose trial name (`<scenario>::<variant>`) or path contains FILTER.
    pub filter: Option<String>,
    /// Path to Cargo.toml of the workspace (default: found from the current directory).
    #[arg(long, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
}

impl FilterArgs {
    /// This command's `--manifest-path`, else the one given before the command.
    fn manifest<'a>(&'a self, before: Option<&'a Path>) -> Option<&'a Path> {
        self.manifest_path.as_deref().or(before)
    }
}

/// Parses the arguments, runs the command and maps its result to an exit code.
pub fn main() -> ExitCode {
    quiet_on_closed_pipe();
    let cli = match Cli::try_parse_from(args_without_subcommand_name(std::env::args_os())) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return code(e.exit_code());
        }
    };
    let manifest = cli.manifest_path.as_deref();
    let result = match cli.command {
        Command::Run(args) => crate::run::run(&args),
        Command::Check(args) => crate::check::check(&args),
        Command::Diff(args) => crate::diff::diff_command(&args),
        Command::Test(args) => crate::test::test(manifest, args),
        Command::Review(args) => {
            crate::review::review(args.manifest(manifest), args.filter.as_deref())
        }
        Command::Accept(args) => {
            crate::accept::accept(args.manifest(manifest), args.filter.as_deref())
        }
        Command::Reject(args) => {
            crate::reject::reject(args.manifest(manifest), args.filter.as_deref())
        }
        Command::Devices => crate::devices::devices(),
    };
    match result {
        Ok(exit) => code(exit),
        Err(e) => {
            eprintln!("error: {e}");
            code(e.exit_code())
        }
    }
}

/// Rust ignores SIGPIPE, so printing to a closed pipe (`cargo gpumem test | head -1`) fails
/// and `println!` panics. Command-line tools end quietly instead: restore the default action.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in `main`, before any thread starts; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// cargo runs `cargo-gpumem gpumem <args>`; drop that `gpumem` so the binary also works
/// when called directly as `cargo-gpumem <args>`.
fn args_without_subcommand_name(
    args: impl Iterator<Item = std::ffi::OsString>,
) -> Vec<std::ffi::OsString> {
    let mut args: Vec<_> = args.collect();
    if args.get(1).is_some_and(|a| a == "gpumem") {
        args.remove(1);
    }
    args
}

fn code(exit: i32) -> ExitCode {
    ExitCode::from(u8::try_from(exit).unwrap_or(BAD_INPUT as u8))
}

/// The workspace for `--manifest-path` (or the current directory).
pub fn workspace(manifest: Option<&Path>) -> Result<Workspace, Error> {
    Workspace::discover(manifest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(args_without_subcommand_name(
            args.iter().map(std::ffi::OsString::from),
        ))
    }

    #[test]
    fn cargo_style_and_direct_invocations_parse_alike() {
        let via_cargo = parse(&["cargo-gpumem", "gpumem", "accept", "cycle"]).unwrap();
        let direct = parse(&["cargo-gpumem", "accept", "cycle"]).unwrap();
        for cli in [via_cargo, direct] {
            let Command::Accept(args) = cli.command else {
                panic!("expected accept");
            };
            assert_eq!(args.filter.as_deref(), Some("cycle"));
        }
    }

    #[test]
    fn manifest_path_is_taken_only_where_it_is_used() {
        let cli = parse(&["cargo-gpumem", "reject", "--manifest-path", "w/Cargo.toml"]).unwrap();
        let Command::Reject(args) = &cli.command else {
            panic!("expected reject");
        };
        assert_eq!(args.manifest(None), Some(Path::new("w/Cargo.toml")));
        let before = parse(&["cargo-gpumem", "--manifest-path", "v/Cargo.toml", "accept"]).unwrap();
        assert_eq!(before.manifest_path, Some(PathBuf::from("v/Cargo.toml")));
        for command in ["run", "check", "diff"] {
            let err = parse(&["cargo-gpumem", command, "a", "--manifest-path", "x"]).unwrap_err();
            assert_eq!(
                err.kind(),
                clap::error::ErrorKind::UnknownArgument,
                "{command}"
            );
        }
    }

    #[test]
    fn test_comes_first_in_help() {
        use clap::CommandFactory;
        let names: Vec<String> = Cli::command()
            .get_subcommands()
            .map(|c| c.get_name().to_string())
            .collect();
        assert_eq!(names.first().map(String::as_str), Some("test"), "{names:?}");
    }

    #[test]
    fn usage_errors_exit_with_bad_input() {
        let err = parse(&["cargo-gpumem", "gpumem", "bogus"]).unwrap_err();
        assert_eq!(err.exit_code(), BAD_INPUT);
        assert!(err.to_string().contains("cargo gpumem"), "{err}");
    }

    #[test]
    fn version_names_the_binary_once() {
        let err = parse(&["cargo-gpumem", "gpumem", "--version"]).unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion);
        assert!(err.to_string().starts_with("cargo-gpumem 0."), "{err}");
    }
}
