//! Untrusted scenario files and workspaces: one bad trial never stops the others, nothing is
//! read or written through links or outside the workspace, and every refusal is exit 2 with
//! a message naming the file.

use super::{Project, SMALL_LOOP};

/// A scenario whose workload runs past a small step budget.
const RUNAWAY: &str = "name: runaway\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\n\
    limits: { steps: 10000 }\nworkload: |\n  while True:\n      x = 1\n";

/// A scenario whose comparison recursed until the stack overflowed (aborting the process).
const SELF_REFERENTIAL: &str = "name: selfref\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\n\
    workload: |\n  x = []\n  x.append(x)\n  y = []\n  y.append(y)\n  z = x == y\n";

#[test]
fn a_runaway_or_recursive_trial_fails_alone_and_the_summary_is_printed() {
    let project = Project::new();
    project
        .write("scenarios/small_loop.yaml", SMALL_LOOP)
        .write("scenarios/runaway.yaml", RUNAWAY)
        .write("scenarios/selfref.yaml", SELF_REFERENTIAL);
    project.gpumem(&["test"]);
    project.gpumem(&["accept"]);
    let out = project.gpumem(&["test"]);
    assert_eq!(out.code, 2, "{}", out.all());
    let all = out.all();
    assert!(all.contains("test small_loop::size=1024 ... ok"), "{all}");
    assert!(
        all.contains("scenarios/runaway.yaml:7:7: budget: 10,000 steps exceeded"),
        "{all}"
    );
    assert!(
        all.contains("RecursionError: maximum recursion depth exceeded in comparison"),
        "{all}"
    );
    assert!(
        all.contains("test result: FAILED. 2 passed; 2 failed"),
        "{all}"
    );
}

#[test]
fn limits_on_the_command_line_override_the_file() {
    let project = Project::new();
    project.write("scenarios/runaway.yaml", RUNAWAY);
    let out = project.gpumem(&["run", "scenarios/runaway.yaml", "--limits", "steps=500"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("budget: 500 steps exceeded"),
        "{}",
        out.stderr
    );
    let out = project.gpumem(&["test", "--limits", "steps=700"]);
    assert!(
        out.all().contains("budget: 700 steps exceeded"),
        "{}",
        out.all()
    );
}

#[cfg(unix)]
#[test]
fn writing_to_a_closed_pipe_ends_quietly() {
    use std::process::{Command, Stdio};
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    // Many reports, read by nobody: the pipe closes before the first write ends.
    let binary = env!("CARGO_BIN_EXE_cargo-gpumem");
    let mut child = Command::new(binary)
        .args(["gpumem", "run", "scenarios/small_loop.yaml"])
        .current_dir(project.root())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
}

#[test]
fn values_that_print_alike_are_a_load_error() {
    let project = Project::new();
    for (i, values) in ["[1, \"1\"]", "[1, 1.0]", "[true, \"true\"]"]
        .iter()
        .enumerate()
    {
        let file = format!("scenarios/alike{i}.yaml");
        project.write(
            &file,
            &format!(
                "name: alike{i}\ndevice: {{ capacity: 1 GiB }}\npython: \"3.11\"\nvary:\n  q: {values}\nworkload: |\n  x = q\n"
            ),
        );
        let out = project.gpumem(&["run", &file]);
        assert_eq!(out.code, 2, "{}", out.all());
        assert!(out.stderr.contains(&format!("{file}:5:")), "{}", out.stderr);
        assert!(out.stderr.contains("both print as"), "{}", out.stderr);
    }
}

#[test]
fn golden_file_names_the_file_system_refuses_are_bad_input() {
    let project = Project::new();
    let long = "v".repeat(300);
    project.write(
        "scenarios/long.yaml",
        &format!(
            "name: long\ndevice: {{ capacity: 1 GiB }}\npython: \"3.11\"\nvary:\n  q: [\"{long}\"]\nworkload: |\n  x = q\n"
        ),
    );
    let out = project.gpumem(&["test"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.all().contains("over the 255 a file name may have"),
        "{}",
        out.all()
    );
    assert!(!out.all().contains("panicked"), "{}", out.all());
}

#[cfg(unix)]
#[test]
fn a_read_only_snapshots_folder_is_bad_input_in_our_words() {
    use std::os::unix::fs::PermissionsExt;
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    let snapshots = project.path("scenarios/snapshots");
    std::fs::create_dir_all(&snapshots).unwrap();
    std::fs::set_permissions(&snapshots, std::fs::Permissions::from_mode(0o555)).unwrap();
    if std::fs::write(snapshots.join("probe"), "").is_ok() {
        eprintln!("skipped: running as a user who can write to read-only folders (root)");
        return;
    }
    let out = project.gpumem(&["test"]);
    std::fs::set_permissions(&snapshots, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.all()
            .contains("cannot compare or write the golden file"),
        "{}",
        out.all()
    );
}

#[cfg(unix)]
#[test]
fn golden_and_pending_files_are_never_followed_through_links() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    project.write("outside.txt", "secret");
    std::fs::create_dir_all(project.path("scenarios/snapshots")).unwrap();
    let link = project.path("scenarios/snapshots/small_loop@size=1024.snap");
    std::os::unix::fs::symlink(project.path("outside.txt"), &link).unwrap();
    let out = project.gpumem(&["test"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.all()
            .contains("small_loop@size=1024.snap is a symbolic link"),
        "{}",
        out.all()
    );
    assert_eq!(
        std::fs::read_to_string(project.path("outside.txt")).unwrap(),
        "secret"
    );
    // A linked pending file is refused by accept, and nothing is copied.
    std::fs::remove_file(&link).unwrap();
    let pending = project.path("scenarios/snapshots/small_loop@size=4096.snap.new");
    let _ = std::fs::remove_file(&pending);
    std::os::unix::fs::symlink(project.path("outside.txt"), &pending).unwrap();
    let out = project.gpumem(&["accept"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.all().contains("is a symbolic link"), "{}", out.all());
    assert!(!project.exists("scenarios/snapshots/small_loop@size=4096.snap"));
}

#[cfg(unix)]
#[test]
fn discovery_does_not_follow_linked_folders() {
    let project = Project::new();
    project.write("scenarios/small_loop.yaml", SMALL_LOOP);
    std::os::unix::fs::symlink(".", project.path("scenarios/loop")).unwrap();
    let out = project.gpumem(&["test", "--list"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        out.stdout.matches("small_loop::size=1024: test").count(),
        1,
        "{}",
        out.stdout
    );
}

#[cfg(unix)]
#[test]
fn replay_paths_stay_inside_the_package() {
    let project = Project::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("x.pickle"), b"\x80\x04N.").unwrap();
    std::os::unix::fs::symlink(
        outside.path().join("x.pickle"),
        project.path("linked.pickle"),
    )
    .unwrap();
    project.write(
        "scenarios/replayed.yaml",
        "name: replayed\ndevice: { capacity: 1 GiB }\nreplay: ../linked.pickle\n",
    );
    let out = project.gpumem(&["run", "scenarios/replayed.yaml"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("scenarios/replayed.yaml:3:1: scenario error: `replay: ../linked.pickle` resolves to a file outside"),
        "{}",
        out.stderr
    );
}

#[cfg(unix)]
#[test]
fn exports_stay_in_the_requested_folder_and_replace_no_link() {
    let project = Project::new();
    project.write(
        "scenarios/names.yaml",
        "name: names\ndevice: { capacity: 1 GiB }\npython: \"3.11\"\nvary:\n  q: [\"../../escape\", \"ok\"]\nworkload: |\n  x = q\n",
    );
    let out = project.gpumem(&[
        "run",
        "scenarios/names.yaml",
        "--export-snapshot",
        "out/run.pickle",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let written = project.files_under("out");
    assert_eq!(written.len(), 2, "{written:?}");
    assert!(written.iter().all(|f| !f.contains('/')), "{written:?}");
    assert!(!project.exists("escape.pickle") && !project.path("../escape.pickle").exists());
    project.write("victim.txt", "keep");
    std::fs::remove_file(project.path("out/run.q=ok.pickle")).unwrap();
    std::os::unix::fs::symlink(
        project.path("victim.txt"),
        project.path("out/run.q=ok.pickle"),
    )
    .unwrap();
    let out = project.gpumem(&[
        "run",
        "scenarios/names.yaml",
        "--export-snapshot",
        "out/run.pickle",
    ]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("not a regular file"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(project.path("victim.txt")).unwrap(),
        "keep"
    );
}
