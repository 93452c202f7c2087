//! `cargo gpumem review` outside a terminal.

use crate::Project;

#[test]
fn review_refuses_without_a_terminal_and_names_the_alternatives() {
    let project = Project::new();
    project.write(
        "scenarios/snapshots/a.snap.new",
        "---\nsource: x\n---\nnew\n",
    );
    let out = project.gpumem(&["review"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("cargo gpumem accept"), "{}", out.all());
    assert!(out.stderr.contains("cargo gpumem reject"), "{}", out.all());
    assert!(
        project.exists("scenarios/snapshots/a.snap.new"),
        "nothing was decided"
    );
}

#[test]
fn accept_and_reject_take_filters() {
    let project = Project::new();
    project.write(
        "scenarios/snapshots/a@n=1.snap.new",
        "---\nassertion_line: 9\n---\none\n",
    );
    project.write(
        "scenarios/snapshots/a@n=2.snap.new",
        "---\nassertion_line: 9\n---\ntwo\n",
    );
    project.write("scenarios/snapshots/b.snap.new", "---\n---\nthree\n");
    let out = project.gpumem(&["accept", "a::n=2"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("accepted scenarios/snapshots/a@n=2.snap"),
        "{}",
        out.all()
    );
    let out = project.gpumem(&["reject", "b"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        ["a@n=1.snap.new", "a@n=2.snap"]
    );
    let accepted = std::fs::read_to_string(project.path("scenarios/snapshots/a@n=2.snap")).unwrap();
    assert_eq!(accepted, "---\n---\ntwo\n");
}

/// Runs `cargo gpumem review` with stdin and stdout on a pseudo-terminal (util-linux
/// `script`), typing `answers`. `None` when `script` is not installed.
fn review_on_a_terminal(project: &Project, answers: &str) -> Option<crate::Output> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let binary = std::path::Path::new(env!("CARGO_BIN_EXE_cargo-gpumem"));
    let mut child = Command::new("script")
        .args(["-qec"])
        .arg(format!("{} gpumem review", binary.display()))
        .arg("/dev/null")
        .current_dir(project.root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .ok()?;
    child.stdin.take()?.write_all(answers.as_bytes()).ok()?;
    let output = child.wait_with_output().ok()?;
    Some(crate::Output {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

#[test]
fn review_on_a_terminal_shows_diffs_and_applies_decisions() {
    let project = Project::new();
    project.write(
        "scenarios/snapshots/a@n=1.snap",
        "---\nsource: x\n---\nline one\nline two\n",
    );
    project.write(
        "scenarios/snapshots/a@n=1.snap.new",
        "---\nsource: x\nassertion_line: 3\n---\nline one\nline 2\n",
    );
    project.write(
        "scenarios/snapshots/b.snap.new",
        "---\nsource: x\n---\nfresh\n",
    );
    project.write(
        "scenarios/snapshots/c.snap.new",
        "---\nsource: x\n---\nthird\n",
    );
    let Some(out) = review_on_a_terminal(&project, "a\nr\ns\n") else {
        eprintln!("`script` is not installed: interactive review not exercised");
        return;
    };
    // One golden file was skipped and still awaits review: exit 1, as `test` would.
    assert_eq!(out.code, 1, "{}", out.all());
    let text = out.all();
    assert!(text.contains("-line two"), "{text}");
    assert!(text.contains("+line 2"), "{text}");
    assert!(text.contains("+fresh"), "{text}");
    assert!(text.contains("accepted 1, rejected 1, skipped 1"), "{text}");
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        ["a@n=1.snap", "c.snap.new"]
    );
}

#[test]
fn review_accepts_every_remaining_file_on_capital_a() {
    let project = Project::new();
    for name in ["a", "b", "c"] {
        project.write(
            &format!("scenarios/snapshots/{name}.snap.new"),
            &format!("---\nsource: x\n---\n{name}\n"),
        );
    }
    // One key each, no Enter: skip the first, accept the rest at once.
    let Some(out) = review_on_a_terminal(&project, "sA") else {
        eprintln!("`script` is not installed: interactive review not exercised");
        return;
    };
    // The skipped file still awaits review: exit 1.
    assert_eq!(out.code, 1, "{}", out.all());
    let text = out.all();
    assert!(text.contains("accepted 2, rejected 0, skipped 1"), "{text}");
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        ["a.snap.new", "b.snap", "c.snap"]
    );
    // The header with the trial and its golden file is repeated above the prompt.
    assert!(
        text.matches("a (1 of 3): scenarios/snapshots/a.snap (new)")
            .count()
            >= 2,
        "{text}"
    );
}
