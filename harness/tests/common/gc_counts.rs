//! Gen-0 counts read around constructs, in the model and in a real interpreter: shared by the
//! `gc_schedule_*` tests.
#![allow(dead_code)] // not every test binary that includes `common` uses these

/// The gen-0 count each explicit `gc.collect(0)` of `workload` found, in order, under `python`.
pub fn counts_at_explicit_collections(workload: &str, python: &str) -> Vec<u64> {
    super::run_model(workload, python, [0, 0, 0], 11_000, 0)
        .gc_events
        .iter()
        .filter(|e| !e.automatic && e.generation == 0)
        .map(|e| e.counts_before[0])
        .collect()
}

/// The gen-0 counts `workload` appends to `out`, printed by the real interpreter.
pub fn real_out(python: &std::path::Path, workload: &str) -> Vec<u64> {
    let run = std::process::Command::new(python)
        .args(["-c", &format!("{workload}print(out)\n")])
        .output()
        .expect("runs python");
    assert!(run.status.success(), "{python:?}: {run:?}");
    let text = String::from_utf8_lossy(&run.stdout);
    text.trim()
        .trim_matches(['[', ']'])
        .split(',')
        .map(|n| n.trim().parse().expect("a count"))
        .collect()
}

/// Runs `script` (which fills `out` with counts) in the model under each release 3.8 – 3.15,
/// asserting `out == expected(minor)`, and prints `out` from each interpreter `interpreter`
/// finds, which must equal the same figures (skipped, with the reason, where absent).
pub fn check_against_measured_and_installed(
    script: &str,
    expected: impl Fn(u8) -> Vec<u64>,
    interpreter: impl Fn(u8) -> Option<std::path::PathBuf>,
) {
    for minor in 8..=15u8 {
        let workload = format!("{script}assert out == {:?}, out\n", expected(minor));
        super::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
        match interpreter(minor) {
            Some(python) => assert_eq!(
                real_out(&python, &format!("import gc\n{script}")),
                expected(minor),
                "CPython 3.{minor} ({python:?})"
            ),
            None => eprintln!("skipped: CPython 3.{minor} is not installed"),
        }
    }
}

/// A script that fills `out` with the count each call in `makers` (a tuple expression of
/// callables) leaves right after `gc.collect()` (free lists empty), its result kept; `setup`
/// comes first. With `warm`, each is called once before its collection (its site and frame
/// warm), as the measured figures of the `gc_schedule_*` tests were taken.
pub fn kept_after_collection(setup: &str, makers: &str, warm: bool) -> String {
    let warm = if warm { "    make()\n" } else { "" };
    format!(
        "{setup}keep = []
out = []
for make in {makers}:
{warm}    gc.collect()
    gc.get_count()
    b = gc.get_count()[0]
    keep.append(make())
    out.append(gc.get_count()[0] - b)
"
    )
}
