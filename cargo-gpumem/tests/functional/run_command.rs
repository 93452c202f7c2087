//! `cargo gpumem run FILE [--var NAME=VALUE]... [--json]`.

use crate::{BROKEN_YAML, Project, SMALL_LOOP};

#[test]
fn json_prints_one_object_per_variant() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    let out = project.gpumem(&["run", "small_loop.yaml", "--json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let lines: Vec<serde_json::Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert_eq!(lines[0]["scenario"], "small_loop");
    assert_eq!(lines[0]["variant"]["size"], 1024);
    assert_eq!(lines[1]["variant"]["size"], 4096);
    assert_eq!(lines[0]["outcome"], "completed");
    assert_eq!(lines[0]["checks"][0]["passed"], true);
}

#[test]
fn var_selects_variants_and_rejects_unknown_values() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    let one = project.gpumem(&["run", "small_loop.yaml", "--var", "size=4096", "--json"]);
    assert_eq!(one.code, 0, "{}", one.all());
    assert_eq!(one.stdout.lines().count(), 1, "{}", one.stdout);
    let bad_value = project.gpumem(&["run", "small_loop.yaml", "--var", "size=7"]);
    assert_eq!(bad_value.code, 2, "{}", bad_value.all());
    assert!(
        bad_value.stderr.contains("1024, 4096"),
        "{}",
        bad_value.all()
    );
    let bad_name = project.gpumem(&["run", "small_loop.yaml", "--var", "depth=1"]);
    assert_eq!(bad_name.code, 2, "{}", bad_name.all());
}

#[test]
fn a_failed_check_exits_1_and_bad_input_exits_2() {
    let project = Project::new();
    let failing = SMALL_LOOP.replace("  - oom: false\n", "  - oom: true\n");
    project.write("failing.yaml", &failing);
    let out = project.gpumem(&["run", "failing.yaml"]);
    assert_eq!(out.code, 1, "{}", out.all());
    project.write("broken.yaml", BROKEN_YAML);
    let out = project.gpumem(&["run", "broken.yaml"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        crate::location_of(&out.stderr, "broken.yaml").is_some(),
        "{}",
        out.all()
    );
}
