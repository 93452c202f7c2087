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

/// A workload that prints what it measures, as users debug leaks.
const PRINTING: &str = r#"name: printing
device: { capacity: 1 GiB }
python: "3.11"
workload: |
  import torch
  kept = []
  for i in range(3):
      kept.append(torch.zeros(256, device="cuda"))
      print("step", i, "allocated:", torch.cuda.memory_allocated())
  print("done", end="")
"#;

#[test]
fn the_workloads_print_output_is_shown_after_its_report() {
    let project = Project::new();
    project.write("printing.yaml", PRINTING);
    let out = project.gpumem(&["run", "printing.yaml"]);
    assert_eq!(out.code, 0, "{}", out.all());
    // Each kept tensor (256 float32) holds one 1 KiB block: the model's figures, printed by the
    // workload.
    let expected = "printed by the workload (4 lines):\n  | step 0 allocated: 1024\n  | step 1 allocated: 2048\n  | step 2 allocated: 3072\n  | done\n";
    assert!(out.stdout.contains(expected), "{}", out.all());
    let report_end = out.stdout.find("printed by the workload").expect("section");
    assert!(report_end > 0, "the report comes first: {}", out.stdout);

    let limited = project.gpumem(&["run", "printing.yaml", "--print-lines", "1"]);
    assert!(
        limited
            .stdout
            .contains("  | step 0 allocated: 1024\n  … 3 more lines"),
        "{}",
        limited.all()
    );
    let hidden = project.gpumem(&["run", "printing.yaml", "--print-lines", "0"]);
    assert!(!hidden.stdout.contains("printed by"), "{}", hidden.all());
    let json = project.gpumem(&["run", "printing.yaml", "--json"]);
    assert_eq!(json.stdout.lines().count(), 1, "{}", json.all());
    assert!(!json.stdout.contains("allocated: 1024"), "{}", json.all());
}
