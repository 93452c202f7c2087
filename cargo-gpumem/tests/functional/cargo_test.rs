//! `gpumem_harness::main()` in a `harness = false` target: `cargo test` lists and runs the
//! same trials, with the same golden files, as `cargo gpumem test`.
//!
//! This builds the harness library inside the temporary workspace (offline, from the local
//! registry, with this repository's lock file); the build goes to a target folder kept between
//! runs so only the first run pays for it.

use crate::{Project, SMALL_LOOP};
use std::path::{Path, PathBuf};
use std::process::Command;

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repository root")
        .to_path_buf()
}

/// A workspace with one package whose `scenarios` test target calls `gpumem_harness::main()`.
fn project_with_harness_target() -> Project {
    let project = Project::new();
    let harness = repository_root().join("harness");
    project.write(
        "Cargo.toml",
        "[workspace]\nmembers = [\"checks\"]\nresolver = \"2\"\n",
    );
    project.write(
        "checks/Cargo.toml",
        &format!(
            "[package]\nname = \"checks\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
             [dev-dependencies]\ngpumem-harness = {{ path = {:?} }}\n\n\
             [[test]]\nname = \"scenarios\"\nharness = false\n",
            harness.to_string_lossy()
        ),
    );
    project.write("checks/src/lib.rs", "");
    project.write(
        "checks/tests/scenarios.rs",
        "fn main() -> std::process::ExitCode {\n    gpumem_harness::main()\n}\n",
    );
    if let Ok(lock) = std::fs::read_to_string(repository_root().join("Cargo.lock")) {
        project.write("Cargo.lock", &lock);
    }
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    project
}

fn cargo_test(project: &Project, args: &[&str], env: &[(&str, &str)]) -> crate::Output {
    let binary = Path::new(env!("CARGO_BIN_EXE_cargo-gpumem"));
    let target = binary
        .parent()
        .and_then(Path::parent)
        .expect("target folder")
        .join("gpumem-functional");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command
        .args(["test", "--offline", "-q", "--test", "scenarios", "--"])
        .args(args)
        .current_dir(project.root())
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1");
    for key in [
        "CI",
        "TF_BUILD",
        "INSTA_UPDATE",
        "INSTA_FORCE_PASS",
        "INSTA_WORKSPACE_ROOT",
    ] {
        command.env_remove(key);
    }
    for (key, value) in env {
        command.env(key, value);
    }
    let output = command.output().expect("run cargo test");
    crate::Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

#[test]
fn cargo_test_lists_the_same_trials() {
    let project = project_with_harness_target();
    let listed = cargo_test(&project, &["--list"], &[]);
    assert_eq!(listed.code, 0, "{}", listed.all());
    let names = |text: &str| {
        text.lines()
            .filter(|l| l.ends_with(": test"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    let gpumem = project.gpumem(&["test", "--list"]);
    assert_eq!(names(&listed.stdout), names(&gpumem.stdout));
    assert_eq!(
        names(&listed.stdout),
        ["small_loop::size=1024: test", "small_loop::size=4096: test"]
    );
}

#[test]
fn cargo_test_uses_the_golden_files_of_cargo_gpumem() {
    let project = project_with_harness_target();
    let ci = cargo_test(&project, &[], &[("CI", "true")]);
    assert_eq!(ci.code, 101, "libtest's failure code:\n{}", ci.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        Vec::<String>::new()
    );
    assert_eq!(project.gpumem(&["test"]).code, 1);
    assert_eq!(project.gpumem(&["accept"]).code, 0);
    let passed = cargo_test(&project, &[], &[("CI", "true")]);
    assert_eq!(passed.code, 0, "{}", passed.all());
}
