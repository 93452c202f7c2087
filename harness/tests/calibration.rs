//! Calibration against real interpreters: runs the blog's two workloads on every CPython
//! 3.8 – 3.13 found on this machine (`python3.X` on PATH or a pyenv install) with a
//! stand-in tensor, and on the model started from the same collector state, and compares
//! the collections. Versions that are absent are reported as skipped, with the reason.

mod common;

use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const WORKLOADS: &[(&str, &str)] = &[
    ("simple_leak", include_str!("workloads/simple_leak.py")),
    (
        "awaitable_leak",
        include_str!("workloads/awaitable_leak.py"),
    ),
];

/// An interpreter for `3.minor`, if one is installed.
fn interpreter(minor: u8) -> Option<PathBuf> {
    let name = format!("python3.{minor}");
    let on_path = Command::new(&name)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if on_path.is_some() {
        return on_path;
    }
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))?;
    let mut versions: Vec<PathBuf> = std::fs::read_dir(root.join("versions"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(&format!("3.{minor}."))
                    && n[format!("3.{minor}.").len()..]
                        .chars()
                        .all(|c| c.is_ascii_digit())
            })
        })
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|v| v.join("bin").join("python"))
        .filter(|p| p.exists())
}

/// Collections of one run: (iteration, generation) of the automatic ones, and the peak and
/// end counts of live tensors.
#[derive(Debug, PartialEq)]
struct Observed {
    automatic: Vec<(i64, u64)>,
    peak_alive: u64,
    end_alive: u64,
}

fn real_run(python: &PathBuf, workload: &str, gc_every: u32) -> (Value, Observed) {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("workload.py");
    std::fs::write(&file, workload).expect("write workload");
    let probe = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/calibration/probe.py");
    let out = Command::new(python)
        .arg(probe)
        .arg(&file)
        .arg(format!("gc_every={gc_every}"))
        .output()
        .expect("run the interpreter");
    assert!(
        out.status.success(),
        "probe failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).expect("probe prints JSON");
    let collections = json["collections"].as_array().expect("collections");
    let automatic = collections
        .iter()
        .filter(|c| !(gc_every > 0 && c["generation"] == 2))
        .map(|c| {
            (
                c["iteration"].as_i64().unwrap_or(-1),
                c["generation"].as_u64().unwrap_or(9),
            )
        })
        .collect();
    let end_alive = json["end_alive"].as_u64().unwrap_or(0);
    let peak_alive = collections
        .iter()
        .filter_map(|c| c["alive_before"].as_u64())
        .chain([end_alive])
        .max()
        .unwrap_or(0);
    (
        json.clone(),
        Observed {
            automatic,
            peak_alive,
            end_alive,
        },
    )
}

fn model_run(minor: u8, workload: &str, gc_every: u32, real: &Value) -> Observed {
    let count = |i: usize| real["start_counts"][i].as_u64().unwrap_or(0);
    // The same first statement as in the probe, so both runs start from the recorded state.
    let workload = format!("__gc_start__ = gc.get_count()\n{workload}");
    let long_lived = real["long_lived_total"].as_u64().unwrap_or(0);
    let timeline = common::run_model(
        &workload,
        minor,
        [count(0), count(1), count(2)],
        long_lived,
        gc_every,
    );
    let automatic = timeline
        .gc_events
        .iter()
        .filter(|e| e.automatic)
        .map(|e| (e.iteration.map_or(-1, i64::from), u64::from(e.generation)))
        .collect();
    let (peak_alive, end_alive) = common::peak_and_end_alive(&timeline);
    Observed {
        automatic,
        peak_alive,
        end_alive,
    }
}

/// Iterations may differ by `slack` (3.12+ run a due collection at the next eval-breaker
/// check, which the model places at the next statement).
fn assert_close(
    minor: u8,
    name: &str,
    gc_every: u32,
    real: &Observed,
    model: &Observed,
    slack: i64,
) {
    let context = format!("3.{minor} {name} gc_every={gc_every}");
    assert_eq!(
        real.automatic.iter().map(|c| c.1).collect::<Vec<_>>(),
        model.automatic.iter().map(|c| c.1).collect::<Vec<_>>(),
        "{context}: generations of the automatic collections differ\nreal  {:?}\nmodel {:?}",
        real.automatic,
        model.automatic
    );
    for (r, m) in real.automatic.iter().zip(&model.automatic) {
        assert!(
            (r.0 - m.0).abs() <= slack,
            "{context}: collection at iteration {} in CPython, {} in the model\nreal  {:?}\nmodel {:?}",
            r.0,
            m.0,
            real.automatic,
            model.automatic
        );
    }
    let alive_slack = 3 * (slack as u64 + 1);
    assert!(
        real.peak_alive.abs_diff(model.peak_alive) <= alive_slack,
        "{context}: peak alive {} vs {}",
        real.peak_alive,
        model.peak_alive
    );
    assert!(
        real.end_alive.abs_diff(model.end_alive) <= alive_slack,
        "{context}: end alive {} vs {}",
        real.end_alive,
        model.end_alive
    );
}

#[test]
fn model_matches_real_interpreters() {
    let mut compared = 0;
    for minor in 8..=13u8 {
        let Some(python) = interpreter(minor) else {
            eprintln!(
                "skipped: CPython 3.{minor} is not installed (no python3.{minor} on PATH, no pyenv 3.{minor}.x)"
            );
            continue;
        };
        for (name, workload) in WORKLOADS {
            for gc_every in [0, 100] {
                let (json, real) = real_run(&python, workload, gc_every);
                let model = model_run(minor, workload, gc_every, &json);
                let slack = 1;
                assert_close(minor, name, gc_every, &real, &model, slack);
                let exact = real
                    .automatic
                    .iter()
                    .zip(&model.automatic)
                    .filter(|(r, m)| r == m)
                    .count();
                eprintln!(
                    "3.{minor} {name} gc_every={gc_every}: {} automatic collections, {exact} at the same iteration, the rest within one",
                    real.automatic.len()
                );
                compared += 1;
            }
        }
    }
    if compared == 0 {
        eprintln!(
            "skipped: no CPython 3.8 - 3.13 interpreter found; the calibration compared nothing"
        );
    }
}
