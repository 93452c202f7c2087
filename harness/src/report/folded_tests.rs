//! A long run's folded timeline reads like the full one: the same run recorded twice, once
//! keeping every iteration and once folding all but a few, gives the same counts, peaks,
//! peak sites, collection lines and growth, and says that it folded.

use super::{json, sections, sites};
use crate::check::{locate, series};
use crate::timeline::{Action, Category, Frame, GcEvent, Recorder, StackId, Timeline};

const ITERATIONS: u32 = 400;
/// Where allocated memory peaks (a big temporary) and where reserved memory peaks (a segment
/// held for one iteration), both in the middle of the run.
const ALLOCATED_PEAK_AT: u32 = 150;
const RESERVED_PEAK_AT: u32 = 260;

fn stack(recorder: &mut Recorder, line: u32) -> StackId {
    recorder.stacks().intern(vec![Frame {
        file: "s.yaml".into(),
        line,
        name: "<module>".into(),
    }])
}

/// A leaking loop: every iteration keeps one 1 KiB block (labelled a gradient after the fact
/// every tenth iteration), makes and frees a temporary, and every 7th runs a collection that
/// (from iteration 200 on) frees a block held by a cycle; every 50th an explicit
/// `gc.collect()`.
fn run(mut recorder: Recorder) -> Timeline {
    let (keep, temp, big, cyclic) = (
        stack(&mut recorder, 10),
        stack(&mut recorder, 11),
        stack(&mut recorder, 12),
        stack(&mut recorder, 13),
    );
    let (mut allocated, mut reserved) = (0u64, 1u64 << 30);
    let mut next_addr = 0x1000u64;
    let mut addr = || {
        next_addr += 0x1000;
        next_addr
    };
    let mut pending_cycle: Option<(u64, u64)> = None;
    recorder.record(
        Action::SegmentAlloc,
        0,
        reserved,
        0,
        None,
        keep,
        0,
        reserved,
        None,
    );
    for i in 0..ITERATIONS {
        recorder.begin_iteration(i, allocated, reserved);
        let a = addr();
        allocated += 1024;
        let category = Some(Category::Activation);
        recorder.record(
            Action::Alloc,
            a,
            1024,
            0,
            None,
            keep,
            allocated,
            reserved,
            category,
        );
        if i % 10 == 0 {
            recorder.relabel_allocation(a, Category::Gradient);
        }
        let size = if i == ALLOCATED_PEAK_AT { 1 << 20 } else { 512 };
        let t = addr();
        allocated += size;
        recorder.record(
            Action::Alloc,
            t,
            size,
            0,
            None,
            temp,
            allocated,
            reserved,
            None,
        );
        if i == RESERVED_PEAK_AT {
            reserved += 2 << 30;
            recorder.record(
                Action::SegmentAlloc,
                0,
                2 << 30,
                0,
                None,
                big,
                allocated,
                reserved,
                None,
            );
        }
        allocated -= size;
        recorder.record(
            Action::FreeRequested,
            t,
            size,
            0,
            None,
            temp,
            allocated,
            reserved,
            None,
        );
        if i == RESERVED_PEAK_AT {
            reserved -= 2 << 30;
            recorder.record(
                Action::SegmentFree,
                0,
                2 << 30,
                0,
                None,
                big,
                allocated,
                reserved,
                None,
            );
        }
        if i % 7 == 3 {
            let at = recorder.next_event();
            let mut freed = (0, 0);
            if let Some((c, bytes)) = pending_cycle.take() {
                allocated -= bytes;
                recorder.record(
                    Action::FreeRequested,
                    c,
                    bytes,
                    0,
                    None,
                    cyclic,
                    allocated,
                    reserved,
                    None,
                );
                freed = (1, bytes);
            }
            let c = addr();
            allocated += 256;
            recorder.record(
                Action::Alloc,
                c,
                256,
                0,
                None,
                cyclic,
                allocated,
                reserved,
                None,
            );
            // Cycles start late, so that the first run that frees memory is not among the
            // first runs of its kind.
            if i >= 200 {
                pending_cycle = Some((c, 256));
            }
            let explicit = i % 50 == 3;
            recorder.gc_event(
                GcEvent {
                    iteration: Some(i),
                    iterations_begun: i + 1,
                    generation: if explicit { 2 } else { (i % 3) as u8 },
                    automatic: !explicit,
                    objects_collected: 3,
                    tensors_alive_before: 0,
                    tensors_alive_after: 0,
                    device_tensors_freed: freed.0,
                    bytes_freed: freed.1,
                    event_index: 0,
                    line: Some(14),
                    counts_before: [0; 3],
                },
                at,
            );
        }
        recorder.end_iteration(allocated, reserved, 0, true);
    }
    recorder.finish()
}

fn full() -> Timeline {
    run(Recorder::with_retention(4 << 30, usize::MAX, usize::MAX))
}

fn folded() -> Timeline {
    run(Recorder::with_retention(4 << 30, 4096, 4096))
}

#[test]
fn a_run_short_enough_is_not_folded() {
    let t = full();
    assert!(t.folded.is_none());
    assert_eq!(t.iterations.len(), ITERATIONS as usize);
    assert!(t.approximations.is_empty());
}

#[test]
fn a_folded_run_keeps_few_iterations_and_says_so() {
    let (f, t) = (folded(), full());
    // About 8 iterations' records at each end, and the two peaks' iterations.
    assert!(f.iterations.len() <= 30, "{}", f.iterations.len());
    assert!(f.events.len() * 10 < t.events.len());
    let note = f.approximations.last().expect("a note");
    assert!(
        note.starts_with(
            "long run: full detail is kept for the first and last iterations (up to 4 KiB of \
             records each)"
        ),
        "{note}"
    );
    // The peaks' iterations are kept.
    let kept: Vec<u32> = f.iterations.iter().map(|m| m.iteration).collect();
    assert!(
        kept.contains(&ALLOCATED_PEAK_AT) && kept.contains(&RESERVED_PEAK_AT),
        "{kept:?}"
    );
    // Indexes into the kept events stay in order and in range.
    for pair in f.iterations.windows(2) {
        assert!(pair[0].first_event <= pair[1].first_event);
    }
    assert!(f.gc_events.iter().all(|g| g.event_index <= f.events.len()));
}

#[test]
fn counts_peaks_and_sites_of_a_folded_run_match_the_full_run() {
    let (f, t) = (folded(), full());
    assert_eq!(f.iterations_completed(), t.iterations_completed());
    assert_eq!(f.iteration_count(), ITERATIONS);
    assert_eq!(f.peak_allocated(), t.peak_allocated());
    assert_eq!(f.peak_reserved(), t.peak_reserved());
    for automatic in [true, false] {
        for generation in 0..3 {
            assert_eq!(
                f.collections(automatic, generation),
                t.collections(automatic, generation)
            );
        }
    }
    assert_eq!(f.collections_total(), t.gc_events.len() as u64);
    assert_eq!(f.collector_freed(), t.collector_freed());
    // Where the peaks were reached, and what was live there (the kept blocks of folded
    // iterations included, with the category they were relabelled to).
    let describe = |t: &Timeline| {
        (
            locate::peak_allocated_site(t).map(|s| s.describe(t)),
            locate::peak_reserved_site(t).map(|s| s.describe(t)),
        )
    };
    assert_eq!(describe(&f), describe(&t));
    assert_eq!(
        describe(&t).0.as_deref(),
        Some("iteration 150, s.yaml:11 in <module>")
    );
    assert_eq!(sites::live_at_peak(&f), sites::live_at_peak(&t));
    assert!(
        sites::live_at_peak(&t)
            .iter()
            .any(|s| s.category == Some(Category::Gradient))
    );
    // The report's collection lines and the JSON totals.
    let (mut a, mut b) = (Vec::new(), Vec::new());
    sections::collections(&mut a, &f);
    sections::collections(&mut b, &t);
    assert_eq!(a, b);
    assert_eq!(json::cycle_freed(&f).bytes, json::cycle_freed(&t).bytes);
}

#[test]
fn the_growth_of_a_folded_run_is_measured_from_its_summaries() {
    let (f, t) = (folded(), full());
    let slope = |t: &Timeline| {
        series::growth_per_iteration(&series::completed_boundaries(t))
            .map(|s| (s.bytes_per_iteration, s.first.iteration, s.last.iteration))
            .unwrap()
    };
    // Linear growth plus a sawtooth of 256-byte cycles: the summaries' lowest and highest ends
    // sit on the same line, so the fit moves by less than the sawtooth.
    let (folded_slope, full_slope) = (slope(&f), slope(&t));
    assert_eq!(
        (folded_slope.1, folded_slope.2),
        (full_slope.1, full_slope.2)
    );
    assert!(
        (folded_slope.0 - full_slope.0).abs() <= 256,
        "{folded_slope:?} vs {full_slope:?}"
    );
    // The chart spans every iteration.
    let mut chart = Vec::new();
    sections::allocated_chart(&mut chart, &f);
    let axis = chart.iter().rev().nth(1).expect("an x axis").clone();
    assert!(
        axis.trim_start().starts_with('0') && axis.trim_end().ends_with("399"),
        "{chart:?}"
    );
}
