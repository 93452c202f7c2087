//! Trial names, `--list`, filters, scenario folders and bad input.

use crate::{BROKEN_YAML, Project, SMALL_LOOP};

/// A scenario whose workload fails when run (an undefined name): listing it must not run it.
const FAILS_WHEN_RUN: &str = "name: fails_when_run\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\n\
    workload: |\n  x = undefined_name\n";

#[test]
fn list_names_every_variant_without_running_workloads() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    project.write("scenarios/fails_when_run.yaml", FAILS_WHEN_RUN);
    let out = project.gpumem(&["test", "--list"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        out.stdout.lines().collect::<Vec<_>>(),
        [
            "fails_when_run: test",
            "small_loop::size=1024: test",
            "small_loop::size=4096: test",
        ]
    );
    assert!(!project.exists("scenarios/snapshots"));
    let run = project.gpumem_with(&["test", "fails_when_run"], &[("CI", "true")]);
    assert_eq!(
        run.code,
        2,
        "running it is a workload error:\n{}",
        run.all()
    );
}

#[test]
fn filters_exact_and_skip_select_trials() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    let filtered = project.gpumem(&["test", "size=4096", "--", "--list"]);
    assert_eq!(
        filtered.stdout.trim(),
        "small_loop::size=4096: test",
        "{}",
        filtered.all()
    );
    let exact = project.gpumem(&["test", "--", "--exact", "small_loop::size=1024", "--list"]);
    assert_eq!(
        exact.stdout.trim(),
        "small_loop::size=1024: test",
        "{}",
        exact.all()
    );
    let skipped = project.gpumem(&["test", "--skip", "size=1024", "--list"]);
    assert_eq!(
        skipped.stdout.trim(),
        "small_loop::size=4096: test",
        "{}",
        skipped.all()
    );
    let run = project.gpumem_with(&["test", "size=4096"], &[("CI", "true")]);
    assert!(run.stdout.contains("1 filtered out"), "{}", run.all());
}

#[test]
fn a_syntax_error_reports_file_line_column_and_exits_2() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    project.write("scenarios/broken.yaml", BROKEN_YAML);
    let out = project.gpumem_with(&["test"], &[("CI", "true")]);
    assert_eq!(out.code, 2, "{}", out.all());
    let at = crate::location_of(&out.stdout, "scenarios/broken.yaml");
    assert!(
        matches!(at, Some((line, col)) if line >= 3 && col >= 1),
        "expected scenarios/broken.yaml:LINE:COL in:\n{}",
        out.all()
    );
    let trial_line = out
        .stdout
        .lines()
        .find(|l| l.starts_with("test scenarios/broken.yaml "));
    assert!(
        trial_line.is_some_and(|l| l.ends_with("FAILED")),
        "the broken file is a failing trial named after it:\n{}",
        out.all()
    );
}

#[test]
fn bad_libtest_flags_are_usage_errors() {
    let project = Project::new();
    let out = project.gpumem(&["test", "--", "--no-such-flag"]);
    assert_eq!(out.code, 2, "{}", out.all());
}

#[test]
fn package_metadata_names_more_scenario_folders() {
    let project = Project::new();
    project.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"crates/model\"]\nresolver = \"2\"\n",
    );
    project.write(
        "crates/model/Cargo.toml",
        "[package]\nname = \"model\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [package.metadata.gpumem]\nscenarios = \"gpu-scenarios\"\n",
    );
    project.write("crates/model/src/lib.rs", "");
    project.write("crates/model/gpu-scenarios/small_loop.yaml", SMALL_LOOP);
    let out = project.gpumem(&["test", "--list"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains("small_loop::size=1024: test"),
        "{}",
        out.all()
    );
    let run = project.gpumem(&["test"]);
    assert_eq!(run.code, 1, "{}", run.all());
    assert_eq!(
        project.files_under("crates/model/gpu-scenarios/snapshots"),
        [
            "small_loop@size=1024.snap.new",
            "small_loop@size=4096.snap.new"
        ]
    );
}

#[test]
fn manifest_path_selects_the_workspace() {
    let project = Project::new();
    project.write("ws/Cargo.toml", "[workspace]\nresolver = \"2\"\n");
    project.write("ws/scenarios/small_loop.yaml", SMALL_LOOP);
    let manifest = project.path("ws/Cargo.toml");
    let manifest = manifest.to_str().unwrap();
    let out = project.gpumem(&["test", "--manifest-path", manifest, "--list"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains("small_loop::size=4096: test"),
        "{}",
        out.all()
    );
    let out = project.gpumem(&["--manifest-path", manifest, "test", "--", "--list"]);
    assert!(
        out.stdout.contains("small_loop::size=4096: test"),
        "{}",
        out.all()
    );
}

#[test]
fn a_missing_declared_folder_is_a_configuration_error() {
    let project = Project::new();
    project.write(
        "Cargo.toml",
        "[package]\nname = \"p\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         [package.metadata.gpumem]\nscenarios = \"nowhere\"\n[workspace]\n",
    );
    project.write("src/lib.rs", "");
    let out = project.gpumem(&["test", "--list"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("`nowhere`"), "{}", out.all());
}
