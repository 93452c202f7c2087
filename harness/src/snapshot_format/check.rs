//! `cargo gpumem check SNAPSHOT`: a recorded snapshot checked like a scenario run. The
//! snapshot becomes a Timeline (exact allocated bytes when the replay predicts the whole
//! trace), the same expectations as a scenario's `expect` judge it, and the report carries
//! the replay's line.

use super::read::{ImportedTimeline, read_snapshot_file, to_timeline};
use super::replay::{ReplayCounts, ReplayReport, apply_exact_series, replay};
use crate::check::{Verdict, evaluate};
use crate::error::{Error, Location};
use crate::exit_code;
use crate::scenario::{Check, Expectation, parse_bound};
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
                (n, 0) => format!("{n} checks held"),
                (n, f) => format!("{f} of {n} checks failed"),
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
pub fn snapshot_timeline(path: &Path, file: &str) -> Result<crate::timeline::Timeline, Error> {
    let snapshot = read_snapshot_file(path, file)?;
    let mut imported = to_timeline(&snapshot);
    let report = replay(&snapshot);
    apply_exact_series(&mut imported, &report);
    let mut timeline = imported.timeline;
    timeline.approximations.push(report.summary());
    timeline.approximations.extend(report.notes);
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
            text.starts_with("evil.pickle:1:12: data error: refused opcode GLOBAL"),
            "{text}"
        );
        assert!(text.contains("byte offset 11"), "{text}");
        assert!(matches!(
            expectations(&CheckFlags {
                peak_allocated: Some("about 3".into()),
                ..CheckFlags::default()
            }),
            Err(Error::Usage(_))
        ));
    }
}
