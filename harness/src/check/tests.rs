use super::fixture::{Builder, FILE, bound, expectation, with_boundaries};
use super::*;
use crate::units::{GIB, MIB};

fn one(check: Check, timeline: &Timeline) -> Verdict {
    let e = expectation(check, 21);
    let verdicts = evaluate(&[&e], timeline);
    assert_eq!(verdicts.len(), 1);
    assert_eq!(verdicts[0].location, Location::new(FILE, 21, 5));
    verdicts[0].clone()
}

/// Iteration 0 holds 1 GiB; iteration 1 a second 3 GiB block (the peak, line 12); iteration 2
/// frees it; then the run OOMs in iteration 3 on line 14 when `oom` is set.
fn peaky(oom: bool) -> Timeline {
    let mut b = Builder::new(80 * GIB);
    b.begin();
    b.alloc(GIB, 10);
    b.end();
    b.begin();
    let big = b.alloc(3 * GIB, 12);
    b.end();
    b.begin();
    b.free(big);
    b.end();
    if oom {
        b.begin();
        b.oom(100 * GIB, 14);
    }
    b.finish()
}

#[test]
fn oom_check_passes_and_fails_both_ways() {
    let completed = peaky(false);
    let failed = peaky(true);
    assert!(one(Check::Oom(false), &completed).passed);
    assert!(one(Check::Oom(true), &failed).passed);

    let v = one(Check::Oom(true), &completed);
    assert!(!v.passed);
    assert_eq!(v.name, "oom");
    assert!(
        v.message.contains("expected an OOM, measured none"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("completed 3 iterations"),
        "{}",
        v.message
    );

    let v = one(Check::Oom(false), &failed);
    assert!(!v.passed);
    assert!(v.message.contains("expected no OOM"), "{}", v.message);
    assert!(v.message.contains("iteration 3"), "{}", v.message);
    assert!(v.message.contains(&format!("{FILE}:14")), "{}", v.message);
    assert!(v.message.contains("CUDA out of memory"), "{}", v.message);
}

#[test]
fn peak_allocated_fails_with_measured_bytes_iteration_and_line() {
    let t = peaky(false);
    let v = one(Check::PeakAllocated(bound(Comparison::Le, 4 * GIB)), &t);
    assert!(v.passed, "{}", v.message);

    let v = one(Check::PeakAllocated(bound(Comparison::Le, 2 * GIB)), &t);
    assert!(!v.passed);
    assert_eq!(v.name, "peak_allocated");
    assert!(
        v.message.starts_with("expected peak allocated <= 2 GiB"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("measured 4 GiB (4294967296 bytes)"),
        "{}",
        v.message
    );
    assert!(v.message.contains("iteration 1"), "{}", v.message);
    assert!(
        v.message.contains(&format!("{FILE}:12 in <module>")),
        "{}",
        v.message
    );
}

#[test]
fn peak_reserved_points_at_the_allocation_that_grew_the_cache() {
    let t = peaky(false);
    assert_eq!(t.peak_reserved(), 4 * GIB);
    let v = one(Check::PeakReserved(bound(Comparison::Lt, 4 * GIB)), &t);
    assert!(!v.passed);
    assert_eq!(v.name, "peak_reserved");
    assert!(
        v.message.contains("expected peak reserved < 4 GiB"),
        "{}",
        v.message
    );
    assert!(v.message.contains("iteration 1"), "{}", v.message);
    assert!(v.message.contains(":12 in"), "{}", v.message);
    assert!(one(Check::PeakReserved(bound(Comparison::Le, 4 * GIB)), &t).passed);
}

#[test]
fn peaks_are_still_judged_on_an_oom_run() {
    let t = peaky(true);
    let v = one(Check::PeakAllocated(bound(Comparison::Le, GIB)), &t);
    assert!(!v.passed);
    assert!(v.message.contains("measured 4 GiB"), "{}", v.message);
}

#[test]
fn steady_state_passes_within_tolerance() {
    let t = with_boundaries(&[10 * MIB, 512 * MIB, 512 * MIB, 513 * MIB, 512 * MIB]);
    let check = Check::SteadyState {
        warmup: 1,
        tolerance: MIB,
    };
    let v = one(check, &t);
    assert!(v.passed, "{}", v.message);
    assert!(
        v.message.contains("widest move +1 MiB at iteration 3"),
        "{}",
        v.message
    );
}

#[test]
fn steady_state_reports_first_iteration_leaving_the_band() {
    let t = with_boundaries(&[10 * MIB, 512 * MIB, 512 * MIB, 768 * MIB, GIB, 512 * MIB]);
    let check = Check::SteadyState {
        warmup: 1,
        tolerance: MIB,
    };
    let v = one(check, &t);
    assert!(!v.passed);
    assert_eq!(v.name, "steady_state");
    assert!(v.message.starts_with("expected allocated"), "{}", v.message);
    assert!(
        v.message.contains("within ±1 MiB of iteration 1's 512 MiB"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("iteration 3 ended at 768 MiB"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("+256 MiB from the reference"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("255 MiB beyond the tolerance"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains("widest move +512 MiB at iteration 4"),
        "{}",
        v.message
    );
}

#[test]
fn steady_state_on_a_short_run_fails_instead_of_passing_vacuously() {
    let t = with_boundaries(&[MIB, MIB, MIB]);
    let check = Check::SteadyState {
        warmup: 2,
        tolerance: 0,
    };
    let v = one(check, &t);
    assert!(!v.passed);
    assert!(
        v.message.contains("needs at least 4 completed iterations"),
        "{}",
        v.message
    );
    assert!(v.message.contains("measured 3"), "{}", v.message);
}

#[test]
fn steady_state_on_an_oom_run_judges_the_completed_iterations() {
    let mut b = Builder::new(80 * GIB);
    for _ in 0..4 {
        b.begin();
        b.alloc(MIB, 9);
        b.end();
    }
    b.begin();
    b.oom(100 * GIB, 9);
    let t = b.finish();
    // Each iteration leaks 1 MiB: iterations 1..=3 are judged; the OOM'd one has no end.
    let check = Check::SteadyState {
        warmup: 1,
        tolerance: 0,
    };
    let v = one(check.clone(), &t);
    assert!(!v.passed);
    assert!(v.message.contains("iterations 1-3"), "{}", v.message);
    assert!(
        v.message.contains("iteration 2 ended at 3 MiB"),
        "{}",
        v.message
    );

    let check = Check::SteadyState {
        warmup: 3,
        tolerance: 0,
    };
    let v = one(check, &t);
    assert!(v.message.contains("before the OOM"), "{}", v.message);
}

#[test]
fn leak_per_iteration_measures_the_signed_slope() {
    let growing = with_boundaries(&[GIB, MIB, 2 * MIB, 3 * MIB, 4 * MIB]);
    let v = one(Check::LeakPerIteration(bound(Comparison::Le, 0)), &growing);
    assert!(!v.passed);
    assert_eq!(v.name, "leak_per_iteration");
    assert!(
        v.message
            .starts_with("expected growth per iteration <= 0 B"),
        "{}",
        v.message
    );
    assert!(
        v.message
            .contains("measured +1 MiB per iteration (1048576 bytes"),
        "{}",
        v.message
    );
    assert!(v.message.contains("iterations 1-4"), "{}", v.message);
    assert!(
        one(
            Check::LeakPerIteration(bound(Comparison::Le, MIB)),
            &growing
        )
        .passed
    );

    let shrinking = with_boundaries(&[MIB, 4 * MIB, 3 * MIB, 2 * MIB]);
    let v = one(
        Check::LeakPerIteration(bound(Comparison::Le, 0)),
        &shrinking,
    );
    assert!(v.passed, "{}", v.message);
    assert!(v.message.contains("-1 MiB per iteration"), "{}", v.message);
    assert!(
        !one(
            Check::LeakPerIteration(bound(Comparison::Ge, 0)),
            &shrinking
        )
        .passed
    );
}

#[test]
fn leak_per_iteration_on_a_short_run_fails() {
    let t = with_boundaries(&[MIB, MIB]);
    let v = one(Check::LeakPerIteration(bound(Comparison::Le, 0)), &t);
    assert!(!v.passed);
    assert!(
        v.message
            .contains("needs at least 3 completed iterations to judge, measured 2"),
        "{}",
        v.message
    );
}

#[test]
fn cycles_none_names_the_first_freeing_collection_and_path() {
    let mut b = Builder::new(80 * GIB);
    b.begin();
    b.gc(0, true, &[], 11);
    b.end();
    let clean = b.timeline.clone();
    b.begin();
    let a = b.alloc(256 * MIB, 12);
    b.gc(2, false, &[a], 17);
    b.end();
    b.cycle_report(1, 256 * MIB, 12);
    let t = b.finish();

    let v = one(Check::CyclesNone, &clean);
    assert!(v.passed, "{}", v.message);

    let v = one(Check::CyclesNone, &t);
    assert!(!v.passed);
    assert_eq!(v.name, "cycles");
    assert!(
        v.message
            .contains("measured 256 MiB (268435456 bytes) in 1 tensors"),
        "{}",
        v.message
    );
    assert!(
        v.message
            .contains("first at iteration 1 (generation 2, gc.collect(), line 17)"),
        "{}",
        v.message
    );
    assert!(
        v.message
            .contains("held by Node.tensor in the cycle Node -[link]-> Node"),
        "{}",
        v.message
    );
    assert!(
        v.message.contains(&format!("allocated at {FILE}:12")),
        "{}",
        v.message
    );
}

#[test]
fn verdicts_come_back_in_order_with_their_locations() {
    let t = peaky(false);
    let a = expectation(Check::Oom(false), 30);
    let b = expectation(Check::CyclesNone, 31);
    let verdicts = evaluate(&[&a, &b], &t);
    let names: Vec<_> = verdicts
        .iter()
        .map(|v| (v.name.as_str(), v.location.line))
        .collect();
    assert_eq!(names, [("oom", 30), ("cycles", 31)]);
}

#[test]
fn an_empty_timeline_does_not_panic() {
    let t = Timeline::default();
    for check in [
        Check::Oom(false),
        Check::PeakAllocated(bound(Comparison::Eq, 0)),
        Check::PeakReserved(bound(Comparison::Le, 0)),
        Check::SteadyState {
            warmup: u32::MAX,
            tolerance: 0,
        },
        Check::LeakPerIteration(bound(Comparison::Le, 0)),
        Check::CyclesNone,
    ] {
        let _ = one(check, &t);
    }
    assert!(one(Check::PeakAllocated(bound(Comparison::Eq, 0)), &t).passed);
}
