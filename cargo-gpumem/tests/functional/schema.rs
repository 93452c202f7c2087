//! Validates every JSON output of the CLI against the schema file that ships with the
//! engine crate (`harness/schema/`), with the `jsonschema` crate: `run --json` lines against
//! `run-report.schema.json`, `check SNAPSHOT --json` against `snapshot-check.schema.json`,
//! `diff --json` against `diff.schema.json`. (`test --format json` is libtest's own format.)

use crate::{Project, SMALL_LOOP, SMALL_LOOP_CHANGED};
use serde_json::Value;

/// A JSON output of the CLI and the schema file that describes it.
#[derive(Debug, Clone, Copy)]
pub enum Output {
    Run,
    SnapshotCheck,
    Diff,
}

impl Output {
    fn schema_file(self) -> &'static str {
        match self {
            Output::Run => "run-report.schema.json",
            Output::SnapshotCheck => "snapshot-check.schema.json",
            Output::Diff => "diff.schema.json",
        }
    }
}

fn schema(output: Output) -> Value {
    let path = format!(
        "{}/../harness/schema/{}",
        env!("CARGO_MANIFEST_DIR"),
        output.schema_file()
    );
    serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file")).expect("schema")
}

/// Every way `value` breaks the schema of `output`, with its JSON path.
fn violations(output: Output, value: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema(output))
        .unwrap_or_else(|e| panic!("{} is not a valid schema: {e}", output.schema_file()));
    validator
        .iter_errors(value)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect()
}

/// Panics with every violation when `line` does not satisfy the schema of `output`.
pub fn assert_valid(output: Output, line: &str) {
    let value: Value = serde_json::from_str(line).expect("one JSON object per line");
    let found = violations(output, &value);
    assert!(
        found.is_empty(),
        "{} violations of {}:\n{}\nin: {}",
        found.len(),
        output.schema_file(),
        found.join("\n"),
        &line[..line.len().min(2000)]
    );
}

pub fn assert_valid_run_json(line: &str) {
    assert_valid(Output::Run, line);
}

#[test]
fn the_validator_rejects_what_a_schema_forbids() {
    let bad = serde_json::json!({ "schema_version": 2 });
    for output in [Output::Run, Output::SnapshotCheck, Output::Diff] {
        let found = violations(output, &bad);
        assert!(found.len() >= 2, "{output:?}: {found:?}");
    }
    let found = violations(Output::Diff, &serde_json::json!({ "schema_version": 1 })).join("\n");
    assert!(
        found.contains("\"peak_allocated\" is a required property"),
        "{found}"
    );
}

/// Keys of a JSON object in the order they were written.
fn keys(object: &Value) -> Vec<&str> {
    object
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

#[test]
fn run_check_and_diff_json_follow_their_schemas_with_keys_in_schema_order() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    project.write("changed.yaml", SMALL_LOOP_CHANGED);
    let run = project.gpumem(&[
        "run",
        "small_loop.yaml",
        "--json",
        "--export-snapshot",
        "small.pickle",
    ]);
    assert_eq!(run.code, 0, "{}", run.all());
    for line in run.stdout.lines() {
        assert_valid(Output::Run, line);
        let value: Value = serde_json::from_str(line).expect("JSON");
        // The report reads top-down: what ran, then its verdict, then the figures; the
        // variant's values in `vary` order.
        assert_eq!(
            keys(&value)[..8],
            [
                "schema_version",
                "scenario",
                "variant",
                "python",
                "device",
                "device_capacity_bytes",
                "passed",
                "outcome"
            ],
            "{line}"
        );
        assert_eq!(keys(&value["variant"]), ["size"], "{line}");
    }
    let check = project.gpumem(&["check", "small.size=1024.pickle", "--json"]);
    assert_eq!(check.code, 0, "{}", check.all());
    assert_valid(Output::SnapshotCheck, check.stdout.trim());
    let value: Value = serde_json::from_str(check.stdout.trim()).expect("JSON");
    assert_eq!(keys(&value)[..3], ["schema_version", "passed", "snapshot"]);

    for args in [
        &[
            "diff",
            "small.size=1024.pickle",
            "small.size=4096.pickle",
            "--json",
        ][..],
        &[
            "diff",
            "small_loop.yaml",
            "changed.yaml",
            "--var",
            "size=1024",
            "--json",
            "--fail-if",
            "peak_allocated>+5%",
        ][..],
    ] {
        let diff = project.gpumem(args);
        assert!(diff.code == 0 || diff.code == 1, "{}", diff.all());
        assert_valid(Output::Diff, diff.stdout.trim());
        let value: Value = serde_json::from_str(diff.stdout.trim()).expect("JSON");
        assert_eq!(keys(&value)[..4], ["schema_version", "a", "b", "gates"]);
    }
}
