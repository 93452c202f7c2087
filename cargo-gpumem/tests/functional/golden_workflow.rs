//! The golden-timeline workflow of a fresh workspace: CI, first run, accept, rerun, change.

use crate::{Project, SMALL_LOOP, SMALL_LOOP_CHANGED};

const SNAP_1024: &str = "small_loop@size=1024.snap";
const SNAP_4096: &str = "small_loop@size=4096.snap";

#[test]
fn under_ci_a_missing_golden_file_fails_and_nothing_is_written() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    let out = project.gpumem_with(&["test"], &[("CI", "true")]);
    assert_eq!(out.code, 1, "{}", out.all());
    assert!(
        out.stdout.contains("no golden timeline yet"),
        "{}",
        out.all()
    );
    assert!(out.stdout.contains("no file written"), "{}", out.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        Vec::<String>::new()
    );
}

#[test]
fn first_run_accept_rerun_then_a_change_shows_a_diff() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);

    let first = project.gpumem(&["test"]);
    assert_eq!(first.code, 1, "{}", first.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        [format!("{SNAP_1024}.new"), format!("{SNAP_4096}.new")]
    );
    assert!(first.stderr.contains("await review"), "{}", first.all());

    let accept = project.gpumem(&["accept"]);
    assert_eq!(accept.code, 0, "{}", accept.all());
    assert_eq!(
        project.files_under("scenarios/snapshots"),
        [SNAP_1024, SNAP_4096]
    );
    let golden =
        std::fs::read_to_string(project.path(&format!("scenarios/snapshots/{SNAP_1024}"))).unwrap();
    assert!(
        golden.contains("input_file: scenarios/small_loop.yaml"),
        "{golden}"
    );
    assert!(!golden.contains("assertion_line"), "{golden}");
    assert!(
        !golden.contains(&project.root().to_string_lossy().to_string()),
        "{golden}"
    );

    let second = project.gpumem(&["test"]);
    assert_eq!(second.code, 0, "{}", second.all());
    assert!(second.stdout.contains("2 passed"), "{}", second.all());

    project.write("scenarios/small_loop.yaml", SMALL_LOOP_CHANGED);
    let changed = project.gpumem(&["test"]);
    assert_eq!(changed.code, 1, "{}", changed.all());
    assert!(
        changed
            .stdout
            .contains("golden timeline differs from scenarios/snapshots/"),
        "{}",
        changed.all()
    );
    let diff_lines = changed
        .stdout
        .lines()
        .filter(|l| l.starts_with('-') || l.starts_with('+'));
    assert!(
        diff_lines.count() >= 2,
        "expected a -/+ diff:\n{}",
        changed.all()
    );
    assert!(project.exists(&format!("scenarios/snapshots/{SNAP_1024}.new")));
}

#[test]
fn reject_deletes_pending_files_and_keeps_golden_ones() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    assert_eq!(project.gpumem(&["test"]).code, 1);
    let accept = project.gpumem(&["accept", "size=1024"]);
    assert_eq!(accept.code, 0, "{}", accept.all());
    let reject = project.gpumem(&["reject"]);
    assert_eq!(reject.code, 0, "{}", reject.all());
    assert_eq!(project.files_under("scenarios/snapshots"), [SNAP_1024]);
    let rerun = project.gpumem(&["test"]);
    assert_eq!(
        rerun.code,
        1,
        "the 4096 variant has no golden file yet:\n{}",
        rerun.all()
    );
    assert!(
        rerun.stdout.contains("1 passed; 1 failed"),
        "{}",
        rerun.all()
    );
}

#[test]
fn a_failed_expectation_fails_with_its_location() {
    let project = Project::new();
    let scenario = SMALL_LOOP.replace("  - oom: false\n", "  - peak_allocated: \"<= 1 KiB\"\n");
    project.write("scenarios/small_loop.yaml", &scenario);
    let out = project.gpumem_with(&["test"], &[("CI", "true")]);
    assert_eq!(out.code, 1, "{}", out.all());
    let at = crate::location_of(&out.stdout, "scenarios/small_loop.yaml");
    assert_eq!(at.map(|(line, _)| line), Some(11), "{}", out.all());
}

#[test]
fn a_changed_golden_timeline_is_coloured_only_where_colour_is_wanted() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    assert_eq!(project.gpumem(&["test"]).code, 1);
    assert_eq!(project.gpumem(&["accept"]).code, 0);
    project.write("scenarios/small_loop.yaml", SMALL_LOOP_CHANGED);
    let plain = project.gpumem_with(&["test"], &[("CI", "true")]);
    assert_eq!(plain.code, 1, "{}", plain.all());
    assert!(!plain.stdout.contains('\u{1b}'), "{}", plain.all());
    let coloured = project.gpumem_with(
        &["test"],
        &[("CI", "true"), ("CLICOLOR_FORCE", "1"), ("NO_COLOR", "")],
    );
    assert_eq!(coloured.code, 1, "{}", coloured.all());
    // Removed lines red, added lines green, as `review` shows them.
    assert!(
        coloured.stdout.contains("\u{1b}[31m-"),
        "{}",
        coloured.all()
    );
    assert!(
        coloured.stdout.contains("\u{1b}[32m+"),
        "{}",
        coloured.all()
    );
}
