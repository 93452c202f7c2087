//! A long run's records stay bounded: the recorder folds the iterations between its first and
//! last ones into summaries, so the retained timeline does not grow with the iteration count,
//! while what the reports read (counts, peaks, sites, collections) stays right.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::{MAX_SPANS, Timeline};

/// A trivial workload: one small tensor made and dropped per iteration, `n` iterations, under a
/// 16 MiB memory budget. Every record kept would take about 330 MB for a million iterations:
/// before the recorder folded, this run ended with a memory budget error. The budget keeps 2 MiB
/// of records in full at each end (an eighth of it; the default, 48 MiB, would need millions of
/// iterations to fold, too slow for a debug-build test).
fn tiny_loop(n: u64, extra: &str) -> Timeline {
    let yaml = format!(
        "name: long\ndevice: {{ capacity: 1 GiB }}\npython: \"3.11\"\nlimits: {{ steps: {}, memory: \"16 MiB\" }}\nworkload: |\n  for i in range({n}):\n      x = torch.zeros(256, device='cuda')\n{extra}",
        n * 8 + 1000
    );
    let scenario = scenario::parse(&yaml, "long.yaml").expect("scenario parses");
    let variant = scenario.variants().remove(0);
    run_variant(&scenario, &variant).expect("the long run completes")
}

/// Bytes the retained events, iteration marks and collector runs take, and how many folded
/// summaries there are (at most `MAX_SPANS`: they are merged pairwise when they reach it).
fn retained(t: &Timeline) -> (usize, usize) {
    let bytes = t.events.len() * std::mem::size_of_val(&t.events[0])
        + t.iterations.len() * std::mem::size_of_val(&t.iterations[0])
        + t.gc_events.len() * std::mem::size_of::<gpumem_harness::timeline::GcEvent>();
    (bytes, t.folded_spans().len())
}

#[test]
fn a_long_run_keeps_bounded_records_whatever_its_length() {
    let short = tiny_loop(100_000, "");
    let long = tiny_loop(1_000_000, "");
    for (t, n) in [(&short, 100_000u32), (&long, 1_000_000)] {
        assert_eq!(t.iterations_completed(), n);
        assert_eq!(t.iteration_count(), n);
        assert!(t.oom.is_none());
        // Per iteration the new tensor's `alloc` and the previous one's `free_requested` and
        // `free_completed`; once the segment; the last tensor stays: 3n - 1 events, of which
        // only the kept iterations' are here.
        let kept_iterations = t.iterations.len();
        assert!(kept_iterations < 20_000, "{kept_iterations} kept");
        assert!(t.folded_spans().len() <= MAX_SPANS);
        let folded: u64 = t.folded_spans().iter().map(|s| s.events).sum();
        assert_eq!(t.events.len() as u64 + folded, 3 * n as u64 - 1);
        assert!(
            t.approximations.iter().any(|a| a.starts_with("long run:")),
            "{:?}",
            t.approximations
        );
    }
    // Flat: ten times the iterations, the same retained events and marks, and summaries
    // within their fixed bound.
    let ((a, spans_a), (b, spans_b)) = (retained(&short), retained(&long));
    assert_eq!(a, b, "{a} bytes vs {b} bytes");
    assert!(b <= 4 << 20, "{b} bytes retained");
    assert!(
        spans_a <= MAX_SPANS && spans_b <= MAX_SPANS,
        "{spans_a}, {spans_b}"
    );
}
