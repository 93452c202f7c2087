//! A PyTorch repository without any Rust file: discovery from `scenarios/`, `gpumem.toml` or
//! `pyproject.toml`, and no scenario at all failing unless `--no-tests` says otherwise.

use crate::{Project, SMALL_LOOP, SMALL_LOOP_CHANGED};

#[test]
fn the_whole_flow_runs_in_a_repository_without_cargo_toml() {
    let project = Project::without_cargo();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    project.write("src/model/train.py", "print('not a scenario')\n");

    let first = project.gpumem(&["test"]);
    assert_eq!(first.code, 1, "{}", first.all());
    assert!(first.stderr.contains("await review"), "{}", first.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        [
            "small_loop@size=1024.snap.new",
            "small_loop@size=4096.snap.new"
        ]
    );

    // From a subfolder, as a developer would run it.
    let accept = project.gpumem_in(&project.path("src/model"), &["accept"], &[]);
    assert_eq!(accept.code, 0, "{}", accept.all());
    let pass = project.gpumem_in(&project.path("src/model"), &["test"], &[]);
    assert_eq!(pass.code, 0, "{}", pass.all());
    assert!(pass.stdout.contains("2 passed"), "{}", pass.all());

    std::fs::copy(
        project.path("scenarios/small_loop.yaml"),
        project.path("before.yaml"),
    )
    .unwrap();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP_CHANGED);
    let changed = project.gpumem_with(&["test"], &[("CI", "true")]);
    assert_eq!(changed.code, 1, "{}", changed.all());
    assert!(
        changed.stdout.contains("golden timeline differs"),
        "{}",
        changed.all()
    );

    let diff = project.gpumem(&[
        "diff",
        "before.yaml",
        "scenarios/small_loop.yaml",
        "--var",
        "size=1024",
    ]);
    assert_eq!(diff.code, 0, "{}", diff.all());
    assert!(diff.stdout.contains("peak allocated"), "{}", diff.all());
    // The copies live at different paths: sites still match by workload position and text.
    assert!(
        diff.stdout.contains(
            "appeared    +32 KiB (a 0 B, b 32 KiB): workload:3 in <module> \
             `b = torch.zeros(size * 4, device=\"cuda\")`"
        ),
        "{}",
        diff.all()
    );
    assert!(!diff.stdout.contains("disappeared"), "{}", diff.all());
    let gate = project.gpumem(&[
        "diff",
        "before.yaml",
        "scenarios/small_loop.yaml",
        "--var",
        "size=1024",
        "--fail-if",
        "peak_allocated>+5%",
    ]);
    assert_eq!(gate.code, 1, "the peak grew 5-fold:\n{}", gate.all());
    assert!(gate.stdout.contains("peak_allocated"), "{}", gate.all());
    let gate_json = project.gpumem(&[
        "diff",
        "before.yaml",
        "scenarios/small_loop.yaml",
        "--var",
        "size=1024",
        "--json",
        "--fail-if",
        "peak_reserved>+5%",
    ]);
    assert_eq!(
        gate_json.code,
        0,
        "reserved did not grow:\n{}",
        gate_json.all()
    );
    let value: serde_json::Value = serde_json::from_str(gate_json.stdout.trim()).unwrap();
    assert_eq!(value["schema_version"], 1);
    assert_eq!(value["gates"][0]["exceeded"], false, "{value}");

    let json = project.gpumem(&["run", "scenarios/small_loop.yaml", "--json"]);
    assert_eq!(json.code, 0, "{}", json.all());
    for line in json.stdout.lines() {
        crate::schema::assert_valid_run_json(line);
    }
}

#[test]
fn pyproject_and_gpumem_toml_name_scenario_folders() {
    let project = Project::without_cargo();
    project.write(
        "pyproject.toml",
        "[project]\nname = \"trainer\"\n[tool.gpumem]\nscenarios = [\"tests/gpu\"]\n",
    );
    project.write("tests/gpu/small_loop.yaml", SMALL_LOOP);
    let list = project.gpumem(&["test", "--list"]);
    assert_eq!(list.code, 0, "{}", list.all());
    assert!(
        list.stdout.contains("small_loop::size=1024: test"),
        "{}",
        list.all()
    );

    let other = Project::without_cargo();
    other.write("gpumem.toml", "scenarios = \"memory\"\n");
    other.write("memory/small_loop.yaml", SMALL_LOOP);
    let list = other.gpumem(&["test", "--list"]);
    assert!(
        list.stdout.contains("small_loop::size=4096: test"),
        "{}",
        list.all()
    );

    other.write("gpumem.toml", "scenario = \"memory\"\n");
    let typo = other.gpumem(&["test"]);
    assert_eq!(typo.code, 2, "{}", typo.all());
    assert!(
        typo.stderr.contains("gpumem.toml: unknown key `scenario`"),
        "{}",
        typo.all()
    );
}

#[test]
fn no_scenario_fails_and_names_where_it_looked() {
    let project = Project::without_cargo();
    project.write("src/train.py", "x = 1\n");
    let out = project.gpumem_in(&project.path("src"), &["test"], &[]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(out.stderr.contains("no scenarios to run"), "{}", out.all());
    let looked = project.path("src/scenarios").display().to_string();
    assert!(out.stderr.contains(&looked), "{}", out.all());
    let root = project.path("scenarios").display().to_string();
    assert!(out.stderr.contains(&root), "{}", out.all());

    let warn = project.gpumem(&["test", "--no-tests=warn"]);
    assert_eq!(warn.code, 0, "{}", warn.all());
    assert!(
        warn.stderr.contains("warning: no scenarios"),
        "{}",
        warn.all()
    );
    let pass = project.gpumem(&["test", "--no-tests", "pass"]);
    assert_eq!(pass.code, 0, "{}", pass.all());
    assert!(!pass.stderr.contains("no scenarios"), "{}", pass.all());
}

#[test]
fn an_empty_cargo_workspace_fails_too() {
    let project = Project::new();
    let out = project.gpumem(&["test"]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(out.stderr.contains("no scenarios to run"), "{}", out.all());
    assert!(
        out.stderr.contains("package.metadata.gpumem"),
        "{}",
        out.all()
    );
}
