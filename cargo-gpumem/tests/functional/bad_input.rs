//! Bad scenario files: each kind of error names the file, line and column of its cause
//! (inside the `workload` block too) and ends `cargo gpumem run` with exit code 2.

use crate::{Project, location_of};

/// Runs `cargo gpumem run` on one scenario file and returns the error's (line, column).
fn run_error(scenario: &str) -> (crate::Output, Option<(u32, u32)>) {
    let project = Project::new();
    project.write("scenarios/bad.yaml", scenario);
    let out = project.gpumem(&["run", "scenarios/bad.yaml"]);
    let at = location_of(&out.stderr, "scenarios/bad.yaml");
    (out, at)
}

const HEADER: &str = "name: bad\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\n";

#[test]
fn broken_yaml_is_located() {
    let (out, at) = run_error(&format!(
        "{HEADER}vary: {{ size: [1, 2\nworkload: |\n  x = 1\n"
    ));
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("YAML error"), "{}", out.all());
    assert!(matches!(at, Some((line, _)) if line >= 4), "{}", out.all());
}

#[test]
fn an_unknown_key_is_located_and_names_the_known_ones() {
    let (out, at) = run_error(&format!(
        "{HEADER}workload: |\n  x = 1\nexpected:\n  - oom: false\n"
    ));
    assert_eq!(out.code, 2, "{}", out.all());
    assert_eq!(at, Some((6, 1)), "{}", out.all());
    assert!(
        out.stderr.contains("unknown key `expected`") && out.stderr.contains("expect"),
        "{}",
        out.all()
    );
}

#[test]
fn an_unsupported_construct_is_located_inside_the_workload() {
    // Line 6 of the file is the workload's second line; `match` starts at column 3.
    let (out, at) = run_error(&format!(
        "{HEADER}workload: |\n  x = 1\n  match x:\n      case _:\n          pass\n"
    ));
    assert_eq!(out.code, 2, "{}", out.all());
    assert_eq!(at, Some((6, 3)), "{}", out.all());
    assert!(
        out.stderr.contains(":6:3: unsupported: `match` statements"),
        "{}",
        out.all()
    );
}

#[test]
fn an_undefined_name_is_a_located_runtime_error() {
    // `undefined_thing` starts at column 9 of the workload line, column 11 of file line 6.
    let (out, at) = run_error(&format!(
        "{HEADER}workload: |\n  x = 1\n  y = x + undefined_thing\n"
    ));
    assert_eq!(out.code, 2, "{}", out.all());
    assert_eq!(at, Some((6, 11)), "{}", out.all());
    assert!(
        out.stderr
            .contains("NameError: name 'undefined_thing' is not defined"),
        "{}",
        out.all()
    );
}

#[test]
fn a_python_syntax_error_is_located_inside_the_workload() {
    let (out, at) = run_error(&format!("{HEADER}workload: |\n  x = (1,\n  y = 2 +\n"));
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("Python syntax error"), "{}", out.all());
    assert!(
        matches!(at, Some((line, _)) if (5..=7).contains(&line)),
        "{}",
        out.all()
    );
}

#[test]
fn every_unsupported_construct_is_reported_before_any_variant_runs() {
    // Two refused constructs in branches no variant takes, and an unknown module attribute:
    // all three are reported at once, located, and nothing runs (no report on stdout).
    let (out, _) = run_error(&format!(
        "{HEADER}workload: |\n  x = 1\n  if x == 2:\n      s = 1j\n  def never():\n      return torch.not_a_function(b'x')\n"
    ));
    assert_eq!(out.code, 2, "{}", out.all());
    for expected in [
        ":7:11: unsupported: complex numbers",
        ":9:14: unsupported: `torch.not_a_function`",
        ":9:35: unsupported: bytes literals",
    ] {
        assert!(out.stderr.contains(expected), "{expected}: {}", out.all());
    }
    assert!(out.stdout.is_empty(), "{}", out.all());
}
