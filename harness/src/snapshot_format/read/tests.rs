use super::*;
use crate::snapshot_format::corpus;

#[test]
fn corpus_files_read_and_end_at_their_final_segments() {
    for (name, bytes) in corpus::all() {
        let snapshot = read_snapshot(&bytes[..], name).unwrap();
        assert_eq!(snapshot.device_traces.len(), 1, "{name}");
        assert!(snapshot.allocator_settings.is_some(), "{name}");
        // Blocks tile every segment (an invariant of real files).
        for s in &snapshot.segments {
            assert_eq!(
                s.blocks.iter().map(|b| b.size).sum::<u64>(),
                s.total_size,
                "{name}"
            );
            let mut next = s.address;
            for b in &s.blocks {
                assert_eq!(b.address, next, "{name}");
                next += b.size;
            }
        }
        let imported = to_timeline(&snapshot);
        let t = &imported.timeline;
        let last = t.events.last().unwrap();
        let final_allocated: u64 = snapshot.segments.iter().map(|s| s.allocated_size).sum();
        let final_reserved: u64 = snapshot.segments.iter().map(|s| s.total_size).sum();
        assert_eq!(last.allocated, final_allocated, "{name}");
        assert_eq!(last.reserved, final_reserved, "{name}");
        assert!(t.peak_allocated() >= final_allocated, "{name}");
        assert!(
            t.peak_reserved() <= final_reserved,
            "{name}: no segment_free in corpus"
        );
        assert_eq!(t.events.len(), snapshot.device_traces[0].len(), "{name}");
        // Stacks were interned: far fewer than trace entries, and frames are torch's.
        assert!(t.stacks.len() < t.events.len(), "{name}");
        let frames = t.stacks.get(t.events[0].stack);
        assert!(!frames.is_empty(), "{name}");
        eprintln!(
            "{name}: {} events, {} stacks, peak allocated {}, peak reserved {}, start {} / {}",
            t.events.len(),
            t.stacks.len(),
            t.peak_allocated(),
            t.peak_reserved(),
            imported.initial_allocated,
            imported.initial_reserved
        );
    }
}
