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
