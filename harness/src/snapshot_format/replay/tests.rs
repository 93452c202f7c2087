use super::*;
use crate::snapshot_format::{corpus, read_snapshot, to_timeline};

#[test]
fn corpus_replays_predict_every_address_and_the_final_layout() {
    for (name, bytes) in corpus::all() {
        let snapshot = read_snapshot(&bytes[..], name).unwrap();
        let report = replay(&snapshot);
        eprintln!(
            "{name}: {} start exact {} notes {:?}",
            report.summary(),
            report.start_state_exact,
            report.notes
        );
        assert!(report.start_state_exact, "{name}");
        assert!(report.counts.allocs_total > 1000, "{name}");
        assert_eq!(
            report.counts.allocs_predicted, report.counts.allocs_total,
            "{name}"
        );
        assert_eq!(
            report.counts.segments_predicted, report.counts.segments_total,
            "{name}"
        );
        assert!(report.final_layout_identical, "{name}");
        assert!(report.exact(), "{name}");
        // The exact series ends at the file's own final state.
        let mut imported = to_timeline(&snapshot);
        assert!(apply_exact_series(&mut imported, &report), "{name}");
        let last = imported.timeline.events.last().unwrap();
        let final_allocated: u64 = snapshot.segments.iter().map(|s| s.allocated_size).sum();
        let final_reserved: u64 = snapshot.segments.iter().map(|s| s.total_size).sum();
        assert_eq!(
            (last.allocated, last.reserved),
            (final_allocated, final_reserved),
            "{name}"
        );
    }
}

#[test]
fn what_if_reports_peaks_fragmentation_and_oom() {
    let Some((name, bytes)) = corpus::all().into_iter().nth(1) else {
        return;
    };
    let snapshot = read_snapshot(&bytes[..], name).unwrap();
    let big = WhatIfSetup {
        config: AllocatorConfig::default(),
        capacity: 80 << 30,
    };
    let base = what_if(&snapshot, &big);
    assert_eq!(base.oom_at_entry, None);
    let imported = to_timeline(&snapshot);
    // Same requests: the allocated peak is the trace's own (block sizes may differ by at most
    // the unsplit slack), and reserved covers it.
    let file_peak = imported.timeline.peak_allocated();
    assert!(
        base.peak_allocated_bytes.abs_diff(file_peak) <= 64 << 20,
        "{base:?} vs {file_peak}"
    );
    assert!(base.peak_reserved_bytes >= base.peak_allocated_bytes);
    assert!((0.0..1.0).contains(&base.fragmentation_at_peak));
    // max_split_size changes the layout: reserved memory moves.
    let mut split = big.clone();
    split.config.max_split_size = 64 << 20;
    let with_split = what_if(&snapshot, &split);
    assert_eq!(with_split.peak_allocated_bytes, base.peak_allocated_bytes);
    // A device smaller than the allocated peak runs out of memory, with torch's message.
    let small = WhatIfSetup {
        config: AllocatorConfig::default(),
        capacity: base.peak_allocated_bytes / 2,
    };
    let oom = what_if(&snapshot, &small);
    assert!(oom.oom_at_entry.is_some());
    assert!(oom.oom_message.unwrap().starts_with("CUDA out of memory."));
    eprintln!("{name}: base {base:?}\nmax_split 64 MiB {with_split:?}");
}
