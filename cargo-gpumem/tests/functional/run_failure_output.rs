//! `cargo gpumem run` on a workload that raises after printing: the printed lines come
//! first, then the traceback located in the scenario file, then the error.

use crate::Project;

/// Prints one line per step, then raises from a function at step 2 through a handler that
/// does not match (file lines: the raise is line 9, the call line 14). The model builds a
/// traceback while a handler is active, as here (an exception raised with no `try` around it
/// ends the run with its located error line only).
const RAISING: &str = r#"name: raising
device: { capacity: 1 GiB }
python: "3.11"
workload: |
  import torch
  kept = []
  def check(step):
      if step == 2:
          raise ValueError("step %d went wrong" % step)
  for i in range(4):
      kept.append(torch.zeros(256, device="cuda"))
      print("step", i, "allocated:", torch.cuda.memory_allocated())
      try:
          check(i)
      except KeyError:
          pass
"#;

#[test]
fn a_workload_that_raises_keeps_what_it_printed_and_shows_its_traceback() {
    let project = Project::new();
    project.write("raising.yaml", RAISING);
    let out = project.gpumem(&["run", "raising.yaml"]);
    assert_eq!(out.code, 2, "{}", out.all());
    // Each kept tensor holds one 1 KiB block: the three steps before the error.
    let printed = "printed by the workload before the error (3 lines):\n  | step 0 allocated: 1024\n  | step 1 allocated: 2048\n  | step 2 allocated: 3072\n";
    assert!(out.stdout.contains(printed), "{}", out.all());
    assert!(!out.stdout.contains("step 3"), "{}", out.all());
    let traceback = "Traceback (most recent call last):\n  File \"raising.yaml\", line 14, in <module>\n  File \"raising.yaml\", line 9, in check\n";
    assert!(out.stderr.contains(traceback), "{}", out.all());
    let error_at = out.stderr.find("error: ").expect("the error line");
    assert!(
        error_at > out.stderr.find("Traceback").unwrap(),
        "the error follows its traceback: {}",
        out.stderr
    );
    assert!(
        out.stderr[error_at..].contains("ValueError: step 2 went wrong"),
        "{}",
        out.stderr
    );
    assert_eq!(
        crate::location_of(&out.stderr[error_at..], "raising.yaml").map(|(line, _)| line),
        Some(9),
        "{}",
        out.stderr
    );

    let hidden = project.gpumem(&["run", "raising.yaml", "--print-lines", "1"]);
    assert!(
        hidden
            .stdout
            .contains("  | step 0 allocated: 1024\n  … 2 more lines"),
        "{}",
        hidden.all()
    );
    let json = project.gpumem(&["run", "raising.yaml", "--json"]);
    assert_eq!(json.code, 2, "{}", json.all());
    assert!(
        json.stdout.is_empty(),
        "--json prints no text: {}",
        json.all()
    );
}

/// A model error (a run past its step budget) has no Python traceback; the printed lines
/// still show.
#[test]
fn a_budget_error_after_prints_keeps_the_prints_without_a_traceback() {
    let project = Project::new();
    project.write(
        "runaway.yaml",
        "name: runaway\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\nlimits: { steps: 10000 }\nworkload: |\n  print(\"before\")\n  while True:\n      pass\n",
    );
    let out = project.gpumem(&["run", "runaway.yaml"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stdout
            .contains("printed by the workload before the error (1 line):\n  | before\n"),
        "{}",
        out.all()
    );
    assert!(!out.stderr.contains("Traceback"), "{}", out.all());
}
