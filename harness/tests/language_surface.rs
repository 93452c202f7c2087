//! The Python-language table of `gpumem_harness::python::constructs`, held to what the model
//! does: every example that the table says runs passes the static pre-run pass and runs;
//! every example of a refused form is reported by the pass and refused by the evaluator with
//! the same words at the same line; the README's "Supported Python language" table is the
//! table, row for row; and the pass accepts every shipped scenario.

use gpumem_harness::harness::engine::load_scenario;
use gpumem_harness::python::constructs::{LANGUAGE, Support};
use gpumem_harness::python::static_check::check_scenario;
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario::{self, Scenario};
use std::path::{Path, PathBuf};

fn scenario_of(workload: &str) -> Scenario {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    scenario::parse(&yaml, "t.yaml").expect("the example's scenario parses")
}

#[test]
fn every_example_that_the_table_says_runs_passes_the_pass_and_runs() {
    let mut checked = 0;
    for row in LANGUAGE.iter().filter(|r| !r.runs.is_empty()) {
        let s = scenario_of(row.runs);
        check_scenario(&s).unwrap_or_else(|e| panic!("{:?}: the pass refuses {e}", row.key));
        let v = s.variants().remove(0);
        run_variant(&s, &v).unwrap_or_else(|e| panic!("{:?}: the run fails: {e}", row.key));
        checked += 1;
    }
    assert!(checked >= 15, "{checked} examples");
}

#[test]
fn every_refused_example_is_refused_by_the_pass_and_the_evaluator_in_the_same_words() {
    let mut checked = 0;
    for row in LANGUAGE.iter().filter(|r| !r.refused.is_empty()) {
        assert_ne!(row.support, Support::Yes, "{:?}", row.key);
        let s = scenario_of(row.refused);
        let before = check_scenario(&s)
            .map(|()| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            before.contains(": unsupported: ") && before.contains(row.what),
            "{:?}: the pass reports {before:?}, the table says {:?}",
            row.key,
            row.what
        );
        let v = s.variants().remove(0);
        let during = run_variant(&s, &v)
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        let line = |text: &str| text.split(':').nth(1).map(str::to_string);
        assert!(
            during.contains(&format!(": unsupported: {}", row.what))
                && line(&during) == line(&before),
            "{:?}: the evaluator says {during:?}, the pass {before:?}",
            row.key
        );
        checked += 1;
    }
    assert!(checked >= 11, "{checked} examples");
}

#[test]
fn the_pass_reports_every_finding_at_once_located() {
    let s = scenario_of(
        "import subprocess\ndef later():\n    s = b'ab'\n    return torch.no_such_function(s)\nx = 1\n",
    );
    let text = check_scenario(&s).unwrap_err().to_string();
    for expected in [
        "t.yaml:5:10: unsupported: importing `subprocess`",
        "t.yaml:7:11: unsupported: bytes literals",
        "t.yaml:8:14: unsupported: `torch.no_such_function`",
    ] {
        assert!(text.contains(expected), "{expected:?} missing in:\n{text}");
    }
    assert!(text.starts_with("3 problems"), "{text}");
}

#[test]
fn generator_bodies_are_judged_by_the_vm_compiler_before_the_run() {
    // A generator the VM compiles passes; one it cannot compile (a `yield` behind a short
    // circuit) and a `yield` in a lambda are both reported
    // before anything runs.
    let s = scenario_of("def ok():\n    x = yield 1\n    yield x\nx = 1\n");
    assert!(check_scenario(&s).is_ok());
    let s =
        scenario_of("def gen():\n    x = 1 or (yield 1)\n    yield x\n\n\nf = lambda: (yield 2)\n");
    let text = check_scenario(&s).unwrap_err().to_string();
    assert!(text.starts_with("2 problems"), "{text}");
    assert!(
        text.contains("t.yaml:6:"),
        "the generator's `yield` is located: {text}"
    );
    assert!(
        text.contains("t.yaml:10:"),
        "the lambda's yield is located: {text}"
    );
}

#[test]
fn a_rebound_module_name_is_not_judged_as_the_module() {
    // `torch` is a parameter here: its attributes are not torch's, so nothing is refused.
    let s = scenario_of("def f(torch):\n    return torch.anything\nx = 1\n");
    assert!(check_scenario(&s).is_ok());
    // Annotations are not evaluated by the model, so they hold nothing to refuse.
    let s = scenario_of("def f(a: {1, 2}) -> ...:\n    return a\n");
    assert!(check_scenario(&s).is_ok());
}

/// The README's rows under "## Supported Python language".
fn readme_rows(readme: &str) -> Vec<String> {
    let section = readme
        .split("## Supported Python language")
        .nth(1)
        .expect("the README has a Python-language section");
    section
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(str::to_string)
        .collect()
}

#[test]
fn the_readme_language_table_is_the_construct_table() {
    let expected: Vec<String> = LANGUAGE
        .iter()
        .map(|r| {
            let notes = if r.notes.is_empty() { "—" } else { r.notes };
            format!("| {} | {} | {} |", r.construct, r.support.word(), notes)
        })
        .collect();
    let found = readme_rows(include_str!("../../README.md"));
    assert_eq!(
        found,
        expected,
        "the README's table differs from the construct table; expected rows:\n{}",
        expected.join("\n")
    );
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml") {
            out.push(path);
        }
    }
}

#[test]
fn the_pass_accepts_every_shipped_scenario() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    yaml_files(&root.join("scenarios"), &mut files);
    yaml_files(
        &root.join("harness/src/snapshot_format/fixtures"),
        &mut files,
    );
    assert!(files.len() >= 19, "{files:?}");
    for file in &files {
        let display = file.to_string_lossy().to_string();
        if let Err(e) = load_scenario(file, &display) {
            panic!("the pass refuses a shipped scenario: {e}");
        }
    }
}

#[test]
fn a_refused_construct_in_a_branch_no_run_takes_is_still_reported_before_the_run() {
    // The evaluator alone would finish this run (the branch is never taken); the pass, run
    // by `load_scenario` before any variant, refuses it, and `run_variant` runs the pass
    // first too, so a library caller gets the same located refusal instead of a run.
    let s = scenario_of("x = 1\nif x == 2:\n    s = b'ab'\n");
    let found = check_scenario(&s).unwrap_err().to_string();
    assert!(
        found.contains("t.yaml:7:11: unsupported: bytes literals"),
        "{found}"
    );
    let v = s.variants().remove(0);
    let ran = run_variant(&s, &v)
        .expect_err("refused before the run")
        .to_string();
    assert!(
        ran.contains("t.yaml:7:11: unsupported: bytes literals"),
        "{ran}"
    );
}
