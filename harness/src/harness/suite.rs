//! The workspace's scenarios as libtest-mimic trials.
//!
//! Every variant of every scenario is one trial named `<scenario>::<variant>` (or `<scenario>`
//! without `vary`), so filters, `--exact`, `--skip`, `--list`, `--ignored`, `--test-threads`
//! and `--format` behave as in libtest, and `cargo nextest run` sees the same names.
//!
//! Building the suite parses every scenario (to learn its variants) but runs nothing: listing
//! stays cheap. A file that does not parse becomes one failing trial named after the file's
//! path, whose message is the located error (`file:line:col: kind: message`); the other
//! scenarios still run, and `cargo gpumem test` then exits with [`BAD_INPUT`] rather than
//! [`FAILED`].

use super::discovery::{ScenarioFile, Workspace};
use super::engine::{self, Runner};
use super::golden::{self, GoldenOutcome, GoldenTarget};
use super::progress::Progress;
use crate::error::Error;
use crate::exit_code::{BAD_INPUT, FAILED, SUCCESS};
use crate::scenario::{Scenario, Variant};
use libtest_mimic::{Arguments, Completion, Conclusion, Failed, Trial};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Trials of one workspace, not yet run.
#[derive(Debug)]
pub struct Suite {
    workspace_root: PathBuf,
    entries: Vec<Entry>,
}

#[derive(Debug)]
enum Entry {
    /// A variant to run.
    Variant {
        name: String,
        file: ScenarioFile,
        scenario: Arc<Scenario>,
        variant: Variant,
        /// Why it cannot run here (listed as ignored).
        missing: Option<String>,
    },
    /// A file that could not become trials; the trial fails with this error.
    BadFile { name: String, error: String },
}

/// How a suite run ended.
#[derive(Debug)]
pub struct SuiteOutcome {
    pub conclusion: Conclusion,
    /// Failed trials whose cause was bad input (a scenario error), not a failed check.
    pub bad_input: usize,
    /// Pending golden files left by the trials that ran (relative to the workspace).
    pub awaiting_review: Vec<String>,
}

impl SuiteOutcome {
    /// `cargo gpumem test`'s exit code: [`BAD_INPUT`] when a scenario was bad, [`FAILED`] when
    /// a check or golden timeline failed or golden files await review, else [`SUCCESS`].
    pub fn exit_code(&self) -> i32 {
        if self.bad_input > 0 {
            BAD_INPUT
        } else if self.conclusion.has_failed() || !self.awaiting_review.is_empty() {
            FAILED
        } else {
            SUCCESS
        }
    }
}

impl Suite {
    /// Discovers and parses the scenario files of `workspace`.
    pub fn load(workspace: &Workspace) -> Result<Suite, Error> {
        let files = workspace.scenario_files()?;
        let parsed = files
            .into_iter()
            .map(|file| {
                let scenario = engine::load_scenario(&file.path, &file.display);
                (file, scenario)
            })
            .collect();
        Ok(Suite::from_parsed(workspace.root.clone(), parsed))
    }

    /// A suite from files already parsed (or not).
    pub fn from_parsed(
        workspace_root: PathBuf,
        parsed: Vec<(ScenarioFile, Result<Scenario, Error>)>,
    ) -> Suite {
        let mut entries: Vec<Entry> = Vec::new();
        let mut owners: Vec<(String, String)> = Vec::new();
        for (file, scenario) in parsed {
            let scenario = match scenario {
                Ok(s) => s,
                Err(error) => {
                    entries.push(Entry::BadFile {
                        name: file.display.clone(),
                        error: error.to_string(),
                    });
                    continue;
                }
            };
            if let Some((_, other)) = owners.iter().find(|(name, _)| *name == scenario.name) {
                entries.push(Entry::BadFile {
                    name: file.display.clone(),
                    error: format!(
                        "{}: scenario `{}` is also defined in {other}; scenario names must be unique in a workspace",
                        file.display, scenario.name
                    ),
                });
                continue;
            }
            owners.push((scenario.name.clone(), file.display.clone()));
            let scenario = Arc::new(scenario);
            let variants = engine::variants(&scenario);
            if let Err(error) = golden::check_file_names(&file.display, &scenario.name, &variants) {
                entries.push(Entry::BadFile {
                    name: file.display.clone(),
                    error,
                });
                continue;
            }
            for variant in variants {
                entries.push(Entry::Variant {
                    name: trial_name(&scenario.name, &variant.name()),
                    missing: engine::missing_requirement(&scenario, &variant),
                    file: file.clone(),
                    scenario: Arc::clone(&scenario),
                    variant,
                });
            }
        }
        Suite {
            workspace_root,
            entries,
        }
    }

    /// Every variant runs with `limits` over its scenario's own `limits:` (the command line's).
    pub fn with_limits(mut self, limits: crate::scenario::Limits) -> Suite {
        for entry in &mut self.entries {
            if let Entry::Variant { scenario, .. } = entry {
                let merged = limits.merged_over(scenario.limits);
                if merged != scenario.limits {
                    Arc::make_mut(scenario).limits = merged;
                }
            }
        }
        self
    }

    /// Trial names in run order.
    pub fn names(&self) -> Vec<&str> {
        self.entries
            .iter()
            .map(|e| match e {
                Entry::Variant { name, .. } | Entry::BadFile { name, .. } => name.as_str(),
            })
            .collect()
    }

    /// Runs the trials `args` selects with the engine.
    pub fn run(self, args: &Arguments, progress: bool) -> SuiteOutcome {
        self.run_with(args, engine::run_trial, progress)
    }

    /// Runs the trials `args` selects, each variant through `runner`.
    pub fn run_with(self, args: &Arguments, runner: Runner, progress: bool) -> SuiteOutcome {
        let bad_input = Arc::new(AtomicUsize::new(0));
        let asserted: Arc<Mutex<Vec<PathBuf>>> = Arc::default();
        let root = Arc::new(self.workspace_root);
        let progress = Progress::new(progress && !args.list);
        let shared = Shared {
            runner,
            root: Arc::clone(&root),
            bad_input: Arc::clone(&bad_input),
            asserted: Arc::clone(&asserted),
            progress: progress.clone(),
        };
        let missing: Vec<(String, String)> = self
            .entries
            .iter()
            .filter_map(|e| match e {
                Entry::Variant {
                    name,
                    missing: Some(reason),
                    ..
                } => Some((name.clone(), reason.clone())),
                _ => None,
            })
            .collect();
        let trials: Vec<Trial> = self
            .entries
            .into_iter()
            .map(|entry| make_trial(entry, &shared))
            .collect();
        // libtest prints an ignored trial without its reason: say it once the run is over,
        // on stderr so that `--format json` stays parseable.
        let selected: std::collections::HashSet<&str> = trials
            .iter()
            .filter(|t| !args.is_filtered_out(t))
            .map(|t| t.name())
            .collect();
        let ignored_notes: Vec<String> = missing
            .iter()
            .filter(|(name, _)| selected.contains(name.as_str()) && !args.ignored && !args.list)
            .map(|(name, reason)| format!("ignored {name}: {reason}"))
            .collect();
        progress.set_total(
            trials
                .iter()
                .filter(|t| !args.is_filtered_out(t) && !args.is_ignored(t))
                .count(),
        );
        let conclusion = libtest_mimic::run(args, trials);
        progress.finish();
        for note in &ignored_notes {
            eprintln!("{note}");
        }
        let mut awaiting_review: Vec<String> = asserted
            .lock()
            .map(|files| files.clone())
            .unwrap_or_default()
            .iter()
            .map(|snap| golden::pending_file(snap))
            .filter(|pending| pending.is_file())
            .map(|pending| super::discovery::relative_display(&root, &pending))
            .collect();
        awaiting_review.sort();
        SuiteOutcome {
            conclusion,
            bad_input: bad_input.load(Ordering::SeqCst),
            awaiting_review,
        }
    }
}

/// `<scenario>::<variant>`, or `<scenario>` when the variant has no name (no `vary`).
pub fn trial_name(scenario: &str, variant: &str) -> String {
    if variant.is_empty() {
        scenario.to_string()
    } else {
        format!("{scenario}::{variant}")
    }
}

/// What every trial of one run shares.
#[derive(Clone)]
struct Shared {
    runner: Runner,
    root: Arc<PathBuf>,
    /// Failed trials caused by bad input.
    bad_input: Arc<AtomicUsize>,
    /// Golden files asserted, to find the pending ones afterwards.
    asserted: Arc<Mutex<Vec<PathBuf>>>,
    progress: Progress,
}

fn make_trial(entry: Entry, shared: &Shared) -> Trial {
    match entry {
        Entry::BadFile { name, error } => {
            let bad_input = Arc::clone(&shared.bad_input);
            Trial::test(name, move || {
                bad_input.fetch_add(1, Ordering::SeqCst);
                Err(Failed::from(error))
            })
        }
        Entry::Variant {
            name,
            file,
            scenario,
            variant,
            missing,
        } => {
            let ignored = missing.is_some();
            let shared = shared.clone();
            let label = name.clone();
            Trial::ignorable_test(name, move || {
                if let Some(reason) = missing {
                    return Ok(Completion::ignored_with(reason));
                }
                let _running = shared.progress.running(&label);
                run_variant(&shared, &label, &file, &scenario, &variant)
            })
            .with_ignored_flag(ignored)
        }
    }
}

/// The body of a variant's trial: run, check, compare the golden text.
fn run_variant(
    shared: &Shared,
    label: &str,
    file: &ScenarioFile,
    scenario: &Scenario,
    variant: &Variant,
) -> Result<Completion, Failed> {
    let run = (shared.runner)(scenario, variant).map_err(|error| {
        if error.exit_code() == BAD_INPUT {
            shared.bad_input.fetch_add(1, Ordering::SeqCst);
        }
        Failed::from(error.to_string())
    })?;
    let variant_name = variant.name();
    let target = GoldenTarget {
        snapshot_dir: &file.snapshot_dir,
        scenario: &scenario.name,
        variant: &variant_name,
        input_file: &file.path,
        description: format!("{label} ({})", file.display),
    };
    if let Ok(mut files) = shared.asserted.lock() {
        files.push(golden::snapshot_file(
            target.snapshot_dir,
            target.scenario,
            target.variant,
        ));
    }
    let golden = golden::assert_golden(&target, &run.golden).map_err(|error| {
        // A golden file that cannot be read or written is a problem of the workspace, not a
        // changed timeline.
        shared.bad_input.fetch_add(1, Ordering::SeqCst);
        Failed::from(error)
    })?;
    match failure(&run.failed_checks, &golden, &shared.root) {
        None => Ok(Completion::Completed),
        Some(message) => Err(Failed::from(message)),
    }
}

/// The failure message of a trial, or `None` when it passed.
fn failure(failed_checks: &[String], golden: &GoldenOutcome, root: &Path) -> Option<String> {
    let mut parts: Vec<String> = failed_checks.to_vec();
    if let GoldenOutcome::Mismatch(mismatch) = golden {
        parts.push(mismatch.message(|p| super::discovery::relative_display(root, p)));
    }
    (!parts.is_empty()).then(|| parts.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{InputErrorKind, Location};
    use crate::scenario::{Device, GcStartState, PyVersion, PythonProfile, VarValue, Workload};

    fn scenario(name: &str, vary: Vec<(&str, Vec<VarValue>)>) -> Scenario {
        Scenario {
            file: format!("scenarios/{name}.yaml"),
            name: name.to_string(),
            about: String::new(),
            device: Device {
                preset: None,
                capacity: 1 << 30,
                context: 0,
            },
            python: PythonProfile {
                version: PyVersion::minor(11),
                start: GcStartState {
                    counts: [0, 0, 0],
                    long_lived_total: 0,
                    free_lists_full: false,
                    count_below_zero: 0,
                    gc_callbacks: 0,
                },
                start_given: false,
            },
            vary: vary.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
            workload: Workload {
                source: String::new(),
                first_line: 1,
                indent: 0,
            },
            replay: None,
            expect: Vec::new(),
            limits: Default::default(),
            allocator: String::new(),
        }
    }

    fn file(root: &Path, stem: &str) -> ScenarioFile {
        let path = root.join("scenarios").join(format!("{stem}.yaml"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, "name: x\n").unwrap();
        ScenarioFile {
            display: format!("scenarios/{stem}.yaml"),
            snapshot_dir: root.join("scenarios/snapshots"),
            path,
        }
    }

    fn bad_yaml() -> Error {
        Error::input(
            InputErrorKind::Yaml,
            Location::new("scenarios/broken.yaml", 3, 7),
            "did not find expected key",
        )
    }

    /// Golden text that names the variant, so every variant has its own golden file.
    fn echo_runner(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
        Ok(TrialRun {
            failed_checks: Vec::new(),
            golden: format!("scenario {}\nvariant {}\n", scenario.name, variant.name()),
        })
    }

    fn failing_check_runner(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
        let mut run = echo_runner(scenario, variant)?;
        run.failed_checks
            .push("scenarios/a.yaml:9:5: peak_allocated <= 1 GiB: measured 2 GiB".into());
        Ok(run)
    }

    fn runtime_error_runner(_: &Scenario, _: &Variant) -> Result<TrialRun, Error> {
        Err(Error::input(
            InputErrorKind::Runtime,
            Location::new("scenarios/a.yaml", 12, 9),
            "name `x` is not defined",
        ))
    }

    use super::engine::TrialRun;

    /// Arguments for in-process suite runs: their libtest output goes to a log file, so the
    /// unit tests' own output never shows a nested suite's "test result: FAILED" line.
    fn quiet_args() -> Arguments {
        static RUNS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let log = std::env::temp_dir().join(format!(
            "gpumem-suite-test-{}-{run}.log",
            std::process::id()
        ));
        let mut args = Arguments::from_iter(["harness", "--test-threads", "1", "--quiet"]);
        args.logfile = Some(log.to_string_lossy().into_owned());
        args
    }

    #[test]
    fn trials_are_named_scenario_and_variant_in_vary_order() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![
                (
                    file(root, "cycle"),
                    Ok(scenario(
                        "cycle",
                        vec![
                            ("gc_every", vec![VarValue::Int(0), VarValue::Int(100)]),
                            ("python", vec![VarValue::Str("3.11".into())]),
                        ],
                    )),
                ),
                (file(root, "plain"), Ok(scenario("plain", vec![]))),
                (file(root, "broken"), Err(bad_yaml())),
                (file(root, "copy"), Ok(scenario("plain", vec![]))),
            ],
        );
        assert_eq!(
            suite.names(),
            [
                "cycle::gc_every=0,python=3.11",
                "cycle::gc_every=100,python=3.11",
                "plain",
                "scenarios/broken.yaml",
                "scenarios/copy.yaml",
            ]
        );
    }

    #[test]
    fn listing_runs_nothing() {
        fn must_not_run(_: &Scenario, _: &Variant) -> Result<TrialRun, Error> {
            panic!("listing ran a workload")
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![(file(root, "plain"), Ok(scenario("plain", vec![])))],
        );
        let args = Arguments::from_iter(["harness", "--list"]);
        let outcome = suite.run_with(&args, must_not_run, false);
        assert_eq!(outcome.exit_code(), SUCCESS);
        assert!(!root.join("scenarios/snapshots").exists());
    }

    #[test]
    fn a_bad_file_fails_its_trial_and_means_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![(file(root, "broken"), Err(bad_yaml()))],
        );
        let outcome = suite.run_with(&quiet_args(), echo_runner, false);
        assert_eq!(outcome.conclusion.num_failed, 1);
        assert_eq!(outcome.bad_input, 1);
        assert_eq!(outcome.exit_code(), BAD_INPUT);
    }

    #[test]
    fn a_workload_error_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![(file(root, "a"), Ok(scenario("a", vec![])))],
        );
        let outcome = suite.run_with(&quiet_args(), runtime_error_runner, false);
        assert_eq!(outcome.exit_code(), BAD_INPUT);
    }

    #[test]
    fn golden_files_gate_the_trial() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let load = || {
            Suite::from_parsed(
                root.to_path_buf(),
                vec![(
                    file(root, "a"),
                    Ok(scenario("a", vec![("n", vec![VarValue::Int(1)])])),
                )],
            )
        };
        // Without a golden file the trial fails (insta writes a pending file unless on CI).
        let first = load().run_with(&quiet_args(), echo_runner, false);
        assert_eq!(first.conclusion.num_failed, 1);
        assert_eq!(first.exit_code(), FAILED);
        // With the accepted golden file it passes.
        let golden = root.join("scenarios/snapshots/a@n=1.snap");
        // Under CI=true insta wrote nothing, not even the folder.
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, "---\nsource: x\n---\nscenario a\nvariant n=1\n").unwrap();
        let second = load().run_with(&quiet_args(), echo_runner, false);
        assert_eq!(second.conclusion.num_passed, 1);
        assert_eq!(second.exit_code(), SUCCESS);
        assert!(second.awaiting_review.is_empty());
        // A failed check fails the trial even when the golden text matches.
        let third = load().run_with(&quiet_args(), failing_check_runner, false);
        assert_eq!(third.exit_code(), FAILED);
    }

    #[test]
    fn a_panicking_variant_fails_alone() {
        fn panics_on_one(scenario: &Scenario, variant: &Variant) -> Result<TrialRun, Error> {
            if variant.name() == "n=1" {
                panic!("model bug");
            }
            echo_runner(scenario, variant)
        }
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let golden = root.join("scenarios/snapshots/a@n=2.snap");
        std::fs::create_dir_all(golden.parent().unwrap()).unwrap();
        std::fs::write(&golden, "---\nsource: x\n---\nscenario a\nvariant n=2\n").unwrap();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![(
                file(root, "a"),
                Ok(scenario(
                    "a",
                    vec![("n", vec![VarValue::Int(1), VarValue::Int(2)])],
                )),
            )],
        );
        let outcome = suite.run_with(&quiet_args(), panics_on_one, false);
        assert_eq!(outcome.conclusion.num_failed, 1);
        assert_eq!(outcome.conclusion.num_passed, 1);
    }

    #[test]
    fn variants_sharing_a_golden_file_are_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let suite = Suite::from_parsed(
            root.to_path_buf(),
            vec![(
                file(root, "a"),
                Ok(scenario(
                    "a",
                    vec![(
                        "p",
                        vec![VarValue::Str("x/y".into()), VarValue::Str("x\\y".into())],
                    )],
                )),
            )],
        );
        assert_eq!(suite.names(), ["scenarios/a.yaml"]);
    }

    #[test]
    fn failure_message_lists_checks_then_the_golden_diff() {
        let mismatch = super::golden::GoldenMismatch {
            snapshot: PathBuf::from("/w/scenarios/snapshots/a.snap"),
            existed: false,
            pending_written: false,
            diff: "@@ -1,0 +1,1 @@\n+peak 1 GiB\n".into(),
        };
        let message = failure(
            &["scenarios/a.yaml:9:5: oom: expected false, measured true".into()],
            &GoldenOutcome::Mismatch(mismatch),
            Path::new("/w"),
        )
        .unwrap();
        assert_eq!(
            message,
            "scenarios/a.yaml:9:5: oom: expected false, measured true\n\
             no golden timeline yet at scenarios/snapshots/a.snap\n\
             no file written (CI detected or INSTA_UPDATE forbids it)\n\
             @@ -1,0 +1,1 @@\n+peak 1 GiB"
        );
        assert_eq!(failure(&[], &GoldenOutcome::Matched, Path::new("/w")), None);
    }
}
