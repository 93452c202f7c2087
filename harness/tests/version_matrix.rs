//! `--python-matrix`: one line per collector behaviour, and the shipped scenario that shows the
//! 3.14.0 - 3.14.4 incremental collector running out of memory where 3.13 and 3.14.5+ do not.

use gpumem_harness::scenario::{self, VERSION_MATRIX};
use gpumem_harness::version_matrix::matrix_lines;

#[test]
fn the_matrix_has_one_line_per_version_and_shows_the_incremental_collector_oom() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/versions/incremental_gc_cycles.yaml"
    );
    let scenario = scenario::load(std::path::Path::new(path), "incremental_gc_cycles.yaml")
        .expect("the shipped scenario loads");
    let variant = scenario.variants().remove(0);
    let lines = matrix_lines(&scenario, &variant).expect("runs");
    assert_eq!(lines.len(), VERSION_MATRIX.len());
    let line = |version: &str| {
        lines
            .iter()
            .find(|l| l.split_whitespace().nth(1) == Some(version))
            .unwrap_or_else(|| panic!("no line for {version}: {lines:#?}"))
            .clone()
    };
    for bounded in ["3.13", "3.14", "3.15"] {
        assert!(
            line(bounded).contains("completed 3000 iterations"),
            "{lines:#?}"
        );
    }
    assert!(line("3.14.4").contains("OOM at iteration"), "{lines:#?}");
    // The incremental collector still collects (increments reported as generation 1).
    assert!(
        !line("3.14.4").contains("collections    0 automatic"),
        "{lines:#?}"
    );
}

/// The acceptance check: `python: "3.14.2"` (incremental collector) and `"3.14"`
/// (3.14.5+, generational) give different outcomes on the cyclic-garbage scenario.
#[test]
fn python_3_14_2_and_3_14_differ_on_cyclic_garbage() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../scenarios/versions/incremental_gc_cycles.yaml"
    );
    let scenario = scenario::load(std::path::Path::new(path), "incremental_gc_cycles.yaml")
        .expect("the shipped scenario loads");
    let outcome = |text: &str| {
        let version = scenario::version_from_str(text).expect("a known version");
        let mut variant = scenario.variants().remove(0);
        variant.python = scenario::PythonProfile {
            version,
            start: scenario::GcStartState::after_import_torch(version),
            start_given: false,
        };
        gpumem_harness::run::run_variant(&scenario, &variant)
            .expect("runs")
            .oom
            .and_then(|oom| oom.iteration)
    };
    assert!(outcome("3.14.2").is_some(), "3.14.2 runs out of memory");
    assert_eq!(outcome("3.14"), None, "3.14 (3.14.5+) completes");
}
