//! `cargo gpumem check`, `cargo gpumem diff` and `run --export-snapshot`: PyTorch memory
//! snapshots read, checked, written and compared by the real binary.

use crate::{Project, SMALL_LOOP};
use std::path::PathBuf;

/// The real snapshots of `../shared/corpus/torch-snapshots/` next to the repository (or one
/// level further up from a nested worktree); `None`, with the reason printed, when absent.
fn corpus_file(name: &str) -> Option<PathBuf> {
    let found = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .skip(2)
        .take(2)
        .map(|a| a.join("shared/corpus/torch-snapshots").join(name))
        .find(|p| p.is_file());
    if found.is_none() {
        eprintln!(
            "skipped: the snapshot corpus ../shared/corpus/torch-snapshots/ is absent next to \
             the repository"
        );
    }
    found
}

fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn check_on_a_corpus_file_predicts_every_address_and_judges_the_flags() {
    let Some(file) = corpus_file("wedson_medium_128_training.pickle") else {
        return;
    };
    let project = Project::new();
    let path = file.to_string_lossy().into_owned();
    let out = project.gpumem(&["check", &path, "--json", "--peak-allocated", "<= 20 GiB"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let json = &json_lines(&out.stdout)[0];
    let replay = &json["replay"];
    assert!(replay["allocs_total"].as_u64().unwrap() > 0, "{json}");
    assert_eq!(replay["allocs_predicted"], replay["allocs_total"], "{json}");
    assert_eq!(replay["segments_predicted"], replay["segments_total"]);
    let peak = json["peak_allocated_bytes"].as_u64().unwrap();
    assert!(peak > 0 && json["peak_reserved_bytes"].as_u64().unwrap() >= peak);
    assert_eq!(json["checks"][0]["name"], "peak_allocated");
    assert_eq!(json["checks"][0]["passed"], true);
    assert_eq!(json["passed"], true);
    assert_eq!(json["schema_version"], 1);

    // A bound just below the measured peak fails the command with exit 1.
    let below = format!("< {peak} B");
    let human = project.gpumem(&["check", &path, "--peak-allocated", &below, "--oom", "false"]);
    assert_eq!(human.code, 1, "{}", human.all());
    assert!(
        human.stdout.contains("FAIL peak_allocated"),
        "{}",
        human.all()
    );
    assert!(human.stdout.contains("ok   oom"), "{}", human.all());
    assert!(human.stdout.contains("(100.0 %)"), "{}", human.all());
}

#[test]
fn a_pickle_that_imports_code_is_refused_with_a_located_error() {
    let project = Project::new();
    // PROTO 4, FRAME, GLOBAL 'os system', SHORT_BINUNICODE 'hi', TUPLE1, REDUCE, STOP.
    std::fs::write(
        project.path("evil.pickle"),
        b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00cos\nsystem\n\x8c\x02hi\x85R.",
    )
    .expect("write");
    let out = project.gpumem(&["check", "evil.pickle"]);
    assert_eq!(out.code, 2, "{}", out.all());
    // A binary file is located by byte offset, not by line and column.
    assert!(
        out.stderr
            .contains("evil.pickle: byte offset 11: data error: refused opcode GLOBAL"),
        "{}",
        out.all()
    );
    assert!(out.stdout.is_empty(), "{}", out.all());
}

#[test]
fn export_then_check_round_trips_and_a_truncated_export_is_refused() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    let run = project.gpumem(&[
        "run",
        "small_loop.yaml",
        "--json",
        "--export-snapshot",
        "out/run.pickle",
    ]);
    assert_eq!(run.code, 0, "{}", run.all());
    // Two variants: the variant's name goes before the extension.
    assert_eq!(
        project.files_under("out"),
        ["run.size=1024.pickle", "run.size=4096.pickle"]
    );
    for file in ["out/run.size=1024.pickle", "out/run.size=4096.pickle"] {
        assert!(
            run.stderr.contains(&format!("wrote {file}")),
            "{}",
            run.all()
        );
    }
    for (report, file) in json_lines(&run.stdout)
        .iter()
        .zip(["out/run.size=1024.pickle", "out/run.size=4096.pickle"])
    {
        let check = project.gpumem(&["check", file, "--json", "--oom", "false"]);
        assert_eq!(check.code, 0, "{}", check.all());
        let json = &json_lines(&check.stdout)[0];
        assert_eq!(
            json["peak_allocated_bytes"], report["peak_allocated_bytes"],
            "{file}"
        );
        assert_eq!(
            json["peak_reserved_bytes"], report["peak_reserved_bytes"],
            "{file}"
        );
        assert_eq!(
            json["replay"]["allocs_predicted"],
            json["replay"]["allocs_total"]
        );
    }

    // One variant selected: the file is written as named.
    let one = project.gpumem(&[
        "run",
        "small_loop.yaml",
        "--var",
        "size=1024",
        "--export-snapshot",
        "one.pickle",
    ]);
    assert_eq!(one.code, 0, "{}", one.all());
    let bytes = std::fs::read(project.path("one.pickle")).expect("exported file");
    assert_eq!(bytes[..2], [0x80, 4], "protocol 4");

    std::fs::write(project.path("cut.pickle"), &bytes[..bytes.len() / 2]).expect("write");
    let out = project.gpumem(&["check", "cut.pickle"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(out.stderr.contains("truncated"), "{}", out.all());
    assert!(
        out.stderr.contains("cut.pickle: byte offset "),
        "{}",
        out.all()
    );
}

#[test]
fn diff_of_two_scenario_variants_reports_the_peak_delta() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    let runs = json_lines(&project.gpumem(&["run", "small_loop.yaml", "--json"]).stdout);
    let peak = |i: usize| runs[i]["peak_allocated_bytes"].as_i64().unwrap();

    let out = project.gpumem(&[
        "diff",
        "small_loop.yaml",
        "small_loop.yaml",
        "--var-a",
        "size=1024",
        "--var-b",
        "size=4096",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.all());
    let json = &json_lines(&out.stdout)[0];
    assert_eq!(json["a"], "small_loop.yaml [size=1024]");
    assert_eq!(json["b"], "small_loop.yaml [size=4096]");
    assert_eq!(json["peak_allocated"]["a"], peak(0));
    assert_eq!(json["peak_allocated"]["delta"], peak(1) - peak(0));
    assert!(peak(1) > peak(0));
    let grew = json["sites"].as_array().unwrap();
    assert!(grew.iter().any(|s| s["change"] == "grew"), "{json}");

    // Without selectors the first variant of each side is diffed, and a note says so.
    let first = project.gpumem(&["diff", "small_loop.yaml", "small_loop.yaml"]);
    assert_eq!(first.code, 0, "{}", first.all());
    assert!(
        first.stderr.contains("diffing the first (size=1024)"),
        "{}",
        first.all()
    );
    assert!(first.stdout.contains("unchanged"), "{}", first.all());

    let bad = project.gpumem(&["diff", "small_loop.yaml", "nowhere.pickle"]);
    assert_eq!(bad.code, 2, "{}", bad.all());
}

#[test]
fn check_runs_only_the_static_pass_on_a_scenario_and_refuses_steady_state_up_front() {
    let project = Project::new();
    project.write("small_loop.yaml", SMALL_LOOP);
    let out = project.gpumem(&["check", "small_loop.yaml"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("run it with `cargo gpumem run small_loop.yaml`"),
        "{}",
        out.all()
    );
    project.write(
        "refused.yaml",
        &SMALL_LOOP.replace(
            "workload: |\n",
            "workload: |\n  s = 1j\n  import subprocess\n",
        ),
    );
    let out = project.gpumem(&["check", "refused.yaml"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("unsupported: complex numbers")
            && out.stderr.contains("unsupported: importing `subprocess`"),
        "{}",
        out.all()
    );
    let out = project.gpumem(&["check", "small_loop.yaml", "--peak-allocated", "<= 1 GiB"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("is a scenario file") && out.stderr.contains("cargo gpumem run"),
        "{}",
        out.all()
    );
    let out = project.gpumem(&["check", "any.pickle", "--steady-state"]);
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr.contains("records no iteration boundaries"),
        "{}",
        out.all()
    );
}

#[test]
fn a_replay_on_a_smaller_device_reports_the_replayed_run_in_valid_json() {
    let project = Project::new();
    let fixtures = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../harness/src/snapshot_format/fixtures"
    );
    for file in ["replay_two_tensors.yaml", "two_tensors.pickle"] {
        std::fs::copy(format!("{fixtures}/{file}"), project.path(file)).expect("copy fixture");
    }
    let out = project.gpumem(&["run", "replay_two_tensors.yaml", "--json"]);
    assert_eq!(out.code, 0, "{}", out.all());
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.all());
    for line in &lines {
        crate::schema::assert_valid_run_json(line);
    }
    let reports = json_lines(&out.stdout);
    let small = &reports[1];
    assert_eq!(small["device_capacity_bytes"], 3 << 20, "{small}");
    assert_eq!(small["outcome"], "oom", "{small}");
    assert_eq!(small["passed"], true, "{small}");
    // The replayed run, not the recording: its peaks fit the small device.
    let capacity = 3u64 << 20;
    assert!(
        small["peak_reserved_bytes"].as_u64().unwrap() <= capacity,
        "{small}"
    );
    assert!(
        small["peak_allocated_bytes"].as_u64().unwrap()
            < reports[0]["peak_allocated_bytes"].as_u64().unwrap(),
        "{small}"
    );
    let human = project.gpumem(&["run", "replay_two_tensors.yaml", "--var", "device=3 MiB"]);
    assert_eq!(human.code, 0, "{}", human.all());
    let shares: Vec<f64> = human
        .stdout
        .split("% of the device")
        .filter_map(|before| before.rsplit(' ').next()?.parse().ok())
        .collect();
    assert!(!shares.is_empty(), "{}", human.all());
    // No interpreter ran: no Python version, no collections section.
    assert!(
        human.stdout.contains("replayed snapshot"),
        "{}",
        human.all()
    );
    assert!(!human.stdout.contains("python 3."), "{}", human.all());
    assert!(!human.stdout.contains("== collections"), "{}", human.all());
    assert!(
        shares.iter().all(|&p| p <= 100.0),
        "{shares:?}\n{}",
        human.all()
    );
}

/// Every shipped scenario file, absolute.
fn shipped_scenarios() -> Vec<PathBuf> {
    let root = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../scenarios"));
    let mut found = Vec::new();
    for dir in [root.clone(), root.join("pitfalls")] {
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("scenario folder")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        found.extend(files);
    }
    found
}

/// Property: for every variant of every shipped scenario, `run` → `--export-snapshot` →
/// `check` reproduces the run's peaks, and the replay predicts every address and segment and
/// ends with the same layout.
#[test]
fn every_shipped_scenario_round_trips_through_an_exported_snapshot() {
    let project = Project::new();
    let scenarios = shipped_scenarios();
    assert!(scenarios.len() >= 9, "{scenarios:?}");
    let mut variants = 0;
    for scenario in &scenarios {
        let name = scenario.file_stem().unwrap().to_string_lossy().into_owned();
        let out_dir = project.path(&format!("out/{name}"));
        let export = out_dir.join("run.pickle");
        let run = project.gpumem(&[
            "run",
            &scenario.to_string_lossy(),
            "--json",
            "--export-snapshot",
            &export.to_string_lossy(),
        ]);
        assert!(run.code == 0 || run.code == 1, "{name}: {}", run.all());
        let reports = json_lines(&run.stdout);
        let written: Vec<String> = run
            .stderr
            .lines()
            .filter_map(|l| l.strip_prefix("wrote "))
            .map(str::to_string)
            .collect();
        assert_eq!(written.len(), reports.len(), "{name}: {}", run.all());
        for (report, file) in reports.iter().zip(&written) {
            let check = project.gpumem(&["check", file, "--json"]);
            assert_eq!(check.code, 0, "{file}: {}", check.all());
            let checked = &json_lines(&check.stdout)[0];
            for field in ["peak_allocated_bytes", "peak_reserved_bytes"] {
                assert_eq!(checked[field], report[field], "{file}: {field}");
            }
            assert_eq!(checked["replay_exact"], true, "{file}: {checked}");
            variants += 1;
        }
    }
    assert!(variants >= 42, "{variants} variants");
}
