//! `cargo gpumem check SNAPSHOT`: a recorded snapshot checked like a scenario run. The
//! snapshot becomes a Timeline (exact allocated bytes when the replay predicts the whole
//! trace), the same expectations as a scenario's `expect` judge it, and the report carries
//! the replay's line.

use super::read::allocator_config;
use super::read::{ImportedTimeline, read_snapshot_file, to_timeline};
use super::replay::{ReplayCounts, ReplayReport, WhatIfSetup, apply_exact_series, replay, what_if};
use crate::check::{Verdict, evaluate};
use crate::error::{Error, Location};
use crate::exit_code;
use crate::scenario::{Check, Expectation, parse_bound};
use crate::timeline::{OomReport, Timeline};
use crate::units::Bytes;
use serde::Serialize;
use std::path::Path;

/// Expectations given on the command line, as text (`"<= 20 GiB"`).
#[derive(Debug, Clone, Default)]
pub struct CheckFlags {
    pub peak_allocated: Option<String>,
    pub peak_reserved: Option<String>,
    /// `--oom true|false`.
    pub oom: Option<bool>,
    /// `--steady-state`: as `steady_state: true` in a scenario (warm-up 1, tolerance 0). A
    /// snapshot records no iteration boundaries, so the check reports that it cannot hold
    /// unless the timeline has them.
    pub steady_state: bool,
}

/// The flags as expectations, located at `<command line>`.
pub fn expectations(flags: &CheckFlags) -> Result<Vec<Expectation>, Error> {
    let location = || Location::new("<command line>", 1, 1);
    let bound = |flag: &str, text: &str| {
        parse_bound(text).map_err(|e| Error::Usage(format!("--{flag} {text:?}: {e}")))
    };
    let mut out = Vec::new();
    if let Some(text) = &flags.peak_allocated {
        out.push(Expectation {
            check: Check::PeakAllocated(bound("peak-allocated", text)?),
            location: location(),
        });
    }
    if let Some(text) = &flags.peak_reserved {
        out.push(Expectation {
            check: Check::PeakReserved(bound("peak-reserved", text)?),
            location: location(),
        });
    }
    if let Some(oom) = flags.oom {
        out.push(Expectation {
            check: Check::Oom(oom),
            location: location(),
        });
    }
    if flags.steady_state {
        out.push(Expectation {
            check: Check::SteadyState {
                warmup: 1,
                tolerance: 0,
            },
            location: location(),
        });
    }
    Ok(out)
}

/// A checked snapshot.
#[derive(Debug, Clone)]
pub struct SnapshotCheck {
    /// The file as the user named it.
    pub file: String,
    pub imported: ImportedTimeline,
    pub replay: ReplayReport,
    /// Whether allocated bytes come from the exact replay (else from rounded requests).
    pub exact_allocated: bool,
    pub verdicts: Vec<Verdict>,
}

impl SnapshotCheck {
    /// 0 when every check held, 1 otherwise (bad input is an `Err` before this).
    pub fn exit_code(&self) -> i32 {
        if self.verdicts.iter().all(|v| v.passed) {
            exit_code::SUCCESS
        } else {
            exit_code::FAILED
        }
    }

    /// What `cargo gpumem check` prints.
    pub fn human_report(&self) -> String {
        let t = &self.imported.timeline;
        let failed = self.verdicts.iter().filter(|v| !v.passed).count();
        let mut out = format!(
            "{}: {} ({}), device {}\n",
            self.file,
            if failed == 0 { "ok" } else { "FAILED" },
            match (self.verdicts.len(), failed) {
                (0, _) => "no checks".to_string(),
                (n, 0) => format!("{} held", crate::check::locate::checks(n)),
                (n, f) => format!("{f} of {} failed", crate::check::locate::checks(n)),
            },
            self.imported.device
        );
        for v in &self.verdicts {
            out.push_str(&format!(
                "  {} {}: {}\n",
                if v.passed { "ok  " } else { "FAIL" },
                v.name,
                v.message
            ));
        }
        out.push_str(&format!(
            "peak allocated {}, peak reserved {}\n",
            Bytes(t.peak_allocated()),
            Bytes(t.peak_reserved())
        ));
        out.push_str(&format!(
            "trace: {} events, starting at {} allocated / {} reserved\n",
            t.events.len(),
            Bytes(self.imported.initial_allocated),
            Bytes(self.imported.initial_reserved)
        ));
        out.push_str(&self.replay.summary());
        out.push('\n');
        for note in t.approximations.iter().chain(&self.replay.notes) {
            out.push_str(&format!("note: {note}\n"));
        }
        out
    }

    /// The `--json` report: the fields of `run --json` that apply, plus `replay`.
    pub fn json_report(&self) -> SnapshotJson {
        let t = &self.imported.timeline;
        SnapshotJson {
            schema_version: crate::report::SCHEMA_VERSION,
            passed: self.verdicts.iter().all(|v| v.passed),
            snapshot: self.file.clone(),
            device: self.imported.device,
            device_capacity_bytes: t.device_capacity,
            outcome: if t.oom.is_some()
                || t.events
                    .iter()
                    .any(|e| e.action == crate::timeline::Action::Oom)
            {
                "oom"
            } else {
                "completed"
            },
            iterations_completed: t.iterations_completed(),
            peak_allocated_bytes: t.peak_allocated(),
            peak_reserved_bytes: t.peak_reserved(),
            checks: self
                .verdicts
                .iter()
                .map(|v| crate::report::JsonCheck {
                    name: v.name.clone(),
                    passed: v.passed,
                    message: v.message.clone(),
                    location: v.location.to_string(),
                })
                .collect(),
            approximations: t
                .approximations
                .iter()
                .chain(&self.replay.notes)
                .cloned()
                .collect(),
            replay: self.replay.counts.clone(),
            replay_exact: self.replay.exact(),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SnapshotJson {
    /// The same version as `run --json`'s: both change together.
    pub schema_version: u32,
    /// Every check held.
    pub passed: bool,
    pub snapshot: String,
    pub device: u32,
    /// 0: a snapshot does not record the capacity.
    pub device_capacity_bytes: u64,
    /// "completed" or "oom" (the trace holds an `oom` entry).
    pub outcome: &'static str,
    pub iterations_completed: u32,
    pub peak_allocated_bytes: u64,
    pub peak_reserved_bytes: u64,
    pub checks: Vec<crate::report::JsonCheck>,
    pub approximations: Vec<String>,
    pub replay: ReplayCounts,
    /// Every address and segment predicted and the final layout identical.
    pub replay_exact: bool,
}

/// Reads, replays and checks the snapshot at `path` (`file`: how messages name it).
pub fn check_snapshot(
    path: &Path,
    file: &str,
    expectations: &[Expectation],
) -> Result<SnapshotCheck, Error> {
    let snapshot = read_snapshot_file(path, file)?;
    let mut imported = to_timeline(&snapshot);
    let replay = replay(&snapshot);
    let exact_allocated = apply_exact_series(&mut imported, &replay);
    let checks: Vec<&Expectation> = expectations.iter().collect();
    let verdicts = evaluate(&checks, &imported.timeline);
    Ok(SnapshotCheck {
        file: file.to_string(),
        imported,
        replay,
        exact_allocated,
        verdicts,
    })
}

/// The Timeline of a snapshot for a `replay:` scenario source: exact when the replay is.
pub fn snapshot_timeline(path: &Path, file: &str) -> Result<Timeline, Error> {
    let snapshot = read_snapshot_file(path, file)?;
    let mut imported = to_timeline(&snapshot);
    let report = replay(&snapshot);
    apply_exact_series(&mut imported, &report);
    let mut timeline = imported.timeline;
    timeline.approximations.push(report.summary());
    timeline.approximations.extend(report.notes);
    Ok(timeline)
}

/// How many timeline events [`to_timeline`] makes of `entries` (it skips snapshot markers and
/// actions it does not know).
fn events_before(entries: &[super::model::TraceEntry]) -> usize {
    entries
        .iter()
        .filter(|e| {
            !matches!(
                e.action,
                super::model::TraceAction::Snapshot | super::model::TraceAction::Other(_)
            )
        })
        .count()
}

/// The Timeline of a `replay:` scenario on a device of `capacity` bytes: the recorded trace
/// (as [`snapshot_timeline`]), and, when the same requests replayed through the allocator
/// model under the recorded settings do not fit the device, the out-of-memory error they
/// would meet.
pub fn replay_timeline(path: &Path, file: &str, capacity: u64) -> Result<Timeline, Error> {
    let snapshot = read_snapshot_file(path, file)?;
    let mut imported = to_timeline(&snapshot);
    let report = replay(&snapshot);
    apply_exact_series(&mut imported, &report);
    let mut timeline = imported.timeline;
    timeline.device_capacity = capacity;
    timeline.approximations.push(report.summary());
    timeline.approximations.extend(report.notes);
    let setup = WhatIfSetup {
        config: allocator_config(&snapshot),
        capacity,
    };
    let outcome = what_if(&snapshot, &setup);
    if let Some(at) = outcome.oom_at_entry {
        let entry = snapshot
            .device_traces
            .get(imported.device as usize)
            .and_then(|t| t.get(at));
        let message = outcome.oom_message.unwrap_or_default();
        // The replayed run stops at the failing request: peaks, checks and reports are those
        // of the run up to there, not of the recording (whose peak may exceed this device).
        let kept = snapshot
            .device_traces
            .get(imported.device as usize)
            .map_or(0, |t| events_before(&t[..at.min(t.len())]));
        timeline.events.truncate(kept);
        timeline.approximations.push(format!(
            "on a device of {} the recorded requests run out of memory at trace entry {at}; \
             the timeline stops there (reserved bytes up to there are the recorded ones)",
            Bytes(capacity)
        ));
        timeline.oom = Some(OomReport {
            iteration: None,
            requested_bytes: entry.map_or(0, |e| e.size),
            message,
            stack: entry.and_then(|e| e.frames).unwrap_or_default(),
        });
    }
    Ok(timeline)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot_format::corpus;

    #[test]
    fn corpus_checks_report_peaks_of_the_file_and_full_replay() {
        let Some(dir) = corpus::dir() else {
            return;
        };
        for name in corpus::FILES {
            let flags = CheckFlags {
                peak_allocated: Some("<= 20 GiB".into()),
                peak_reserved: Some("< 1 GiB".into()),
                oom: Some(false),
                steady_state: false,
            };
            let result =
                check_snapshot(&dir.join(name), name, &expectations(&flags).unwrap()).unwrap();
            assert!(result.exact_allocated, "{name}");
            assert_eq!(result.verdicts.len(), 3);
            assert!(
                result.verdicts[0].passed
                    && !result.verdicts[1].passed
                    && result.verdicts[2].passed
            );
            assert_eq!(result.exit_code(), exit_code::FAILED);
            let json = serde_json::to_value(result.json_report()).unwrap();
            assert_eq!(
                json["replay"]["allocs_predicted"],
                json["replay"]["allocs_total"]
            );
            assert_eq!(
                json["peak_reserved_bytes"],
                result.imported.timeline.peak_reserved()
            );
            let text = result.human_report();
            assert!(text.contains("(100.0 %)"), "{text}");
            assert!(text.contains("FAIL peak_reserved"), "{text}");
        }
    }

    #[test]
    fn a_pickle_with_global_reduce_is_refused_with_exit_2() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("evil.pickle");
        std::fs::write(
            &path,
            b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00cos\nsystem\n\x8c\x02hi\x85R.",
        )
        .unwrap();
        let e = check_snapshot(&path, "evil.pickle", &[]).unwrap_err();
        assert_eq!(e.exit_code(), exit_code::BAD_INPUT);
        let text = e.to_string();
        assert!(
            text.starts_with("evil.pickle: byte offset 11: data error: refused opcode GLOBAL"),
            "{text}"
        );
        assert!(matches!(
            expectations(&CheckFlags {
                peak_allocated: Some("about 3".into()),
                ..CheckFlags::default()
            }),
            Err(Error::Usage(_))
        ));
    }

    /// The fixture folder: an exported model run and scenarios over it.
    fn fixtures() -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/snapshot_format/fixtures")
    }

    /// The timeline of the fixture's own workload, run on the model now.
    fn fresh_two_tensors_run() -> Timeline {
        let scenario =
            crate::scenario::load(&fixtures().join("two_tensors.yaml"), "two_tensors.yaml")
                .unwrap();
        crate::run::run_variant(&scenario, &scenario.variants()[0]).unwrap()
    }

    /// Rewrites `fixtures/two_tensors.pickle` from `two_tensors.yaml`:
    /// `cargo test -p gpumem-harness regenerate_replay_fixture -- --ignored`.
    #[test]
    #[ignore = "writes the fixture; run it when the engine's timeline of the workload changes"]
    fn regenerate_replay_fixture() {
        let bytes = crate::snapshot_format::export_timeline(&fresh_two_tensors_run());
        std::fs::write(fixtures().join("two_tensors.pickle"), bytes).unwrap();
    }

    #[test]
    fn a_replay_scenario_over_an_exported_run_checks_it_on_each_device() {
        let scenario = crate::scenario::load(
            &fixtures().join("replay_two_tensors.yaml"),
            "fixtures/replay_two_tensors.yaml",
        )
        .unwrap();
        let replay = scenario.replay.as_ref().unwrap();
        assert_eq!(replay.display, "fixtures/two_tensors.pickle");
        let fresh = fresh_two_tensors_run();
        let variants = scenario.variants();
        assert_eq!(variants.len(), 2);

        let big = crate::run::run_variant(&scenario, &variants[0]).unwrap();
        assert_eq!(
            (big.peak_allocated(), big.peak_reserved()),
            (fresh.peak_allocated(), fresh.peak_reserved()),
            "the fixture no longer matches the engine's run of two_tensors.yaml; regenerate it              (see regenerate_replay_fixture)"
        );
        assert_eq!(big.device_capacity, 1 << 30);
        assert!(big.oom.is_none());
        assert!(
            big.approximations.iter().any(|n| n.contains("(100.0 %)")),
            "{:?}",
            big.approximations
        );

        // 1 MiB tensors come from the small pool's 2 MiB segments: the run needs two of them
        // (the old `b` lives while the new one is made), and 3 MiB holds one.
        let small = crate::run::run_variant(&scenario, &variants[1]).unwrap();
        let oom = small.oom.as_ref().expect("OOM on a 3 MiB device");
        assert_eq!(oom.requested_bytes, 262144 * 4);
        assert!(oom.message.contains("out of memory"), "{}", oom.message);
        // The replayed run stops at the failing request: its peak fits the small device and
        // is below the recording's.
        assert!(
            small.peak_reserved() <= 3 << 20,
            "{}",
            small.peak_reserved()
        );
        assert!(small.peak_allocated() < big.peak_allocated());

        for (variant, timeline) in variants.iter().zip([&big, &small]) {
            let checks = scenario.expectations_for(variant);
            let verdicts = evaluate(&checks, timeline);
            assert!(!verdicts.is_empty());
            assert!(
                verdicts.iter().all(|v| v.passed),
                "{}: {verdicts:?}",
                variant.name()
            );
        }
    }

    #[test]
    fn a_replay_scenario_over_a_corpus_file_has_the_files_peaks() {
        let Some(dir) = corpus::dir() else {
            return;
        };
        let name = corpus::FILES[0];
        let work = tempfile::tempdir().unwrap();
        // `replay:` is relative to the scenario, so the scenario sits beside a copy of the file.
        std::fs::copy(dir.join(name), work.path().join(name)).unwrap();
        std::fs::write(
            work.path().join("recorded.yaml"),
            format!(
                "name: recorded\ndevice: h100-80gb\nreplay: {name}\nexpect:\n  \
                 - oom: false\n    peak_reserved: \"<= 80 GiB\"\n"
            ),
        )
        .unwrap();
        let scenario =
            crate::scenario::load(&work.path().join("recorded.yaml"), "recorded.yaml").unwrap();
        let variant = &scenario.variants()[0];
        let timeline = crate::run::run_variant(&scenario, variant).unwrap();
        let direct = check_snapshot(&dir.join(name), name, &[]).unwrap();
        assert!(direct.exact_allocated);
        assert_eq!(
            timeline.peak_allocated(),
            direct.imported.timeline.peak_allocated()
        );
        assert_eq!(
            timeline.peak_reserved(),
            direct.imported.timeline.peak_reserved()
        );
        assert!(timeline.oom.is_none());
        let verdicts = evaluate(&scenario.expectations_for(variant), &timeline);
        assert!(verdicts.iter().all(|v| v.passed), "{verdicts:?}");
    }

    #[test]
    fn replay_and_workload_are_exclusive_and_located() {
        let parse = |text: &str| crate::scenario::parse(text, "s/t.yaml");
        let both = parse(
            "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: x = 1\nreplay: a.pickle\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            both.starts_with("s/t.yaml:5:1: ") && both.contains("not both"),
            "{both}"
        );
        let absolute = parse("name: t\ndevice: a100-40gb\nreplay: /tmp/a.pickle\n")
            .unwrap_err()
            .to_string();
        assert!(
            absolute.starts_with("s/t.yaml:3:9: ") && absolute.contains("absolute"),
            "{absolute}"
        );
        let neither = parse("name: t\ndevice: a100-40gb\npython: \"3.11\"\n")
            .unwrap_err()
            .to_string();
        assert!(neither.contains("missing `workload`"), "{neither}");
        let ok = parse("name: t\ndevice: a100-40gb\nreplay: runs/a.pickle\n").unwrap();
        let replay = ok.replay.unwrap();
        assert_eq!(replay.display, "s/runs/a.pickle");
        assert_eq!(replay.location.to_string(), "s/t.yaml:3:1");

        let missing = crate::scenario::parse(
            "name: t\ndevice: a100-40gb\nreplay: nowhere.pickle\n",
            "t.yaml",
        )
        .unwrap();
        let e = crate::run::run_variant(&missing, &missing.variants()[0]).unwrap_err();
        assert_eq!(e.exit_code(), exit_code::BAD_INPUT);
        assert!(e.to_string().contains("nowhere.pickle"), "{e}");
    }
}
