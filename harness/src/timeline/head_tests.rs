//! The head keeps its events in compact records: a run whose iterations all leave the tail
//! into the head gives the timeline a run that keeps everything in the tail gives, event for
//! event.

use super::{Action, Category, Frame, GcEvent, Recorder, Timeline};

const ITERATIONS: u32 = 300;

/// Each iteration allocates a block that stays and a temporary, relabels the block of two
/// iterations back (already in the head when the tail holds one iteration), and every 5th
/// records a collector run; one event before the loop and one after it.
fn run(mut recorder: Recorder) -> Timeline {
    let stack = recorder.stacks().intern(vec![Frame {
        file: "h.yaml".into(),
        line: 3,
        name: "<module>".into(),
    }]);
    let reserved = 1u64 << 30;
    let mut allocated = 0;
    let record = |r: &mut Recorder, action, addr, size, allocated, category| {
        r.record(
            action, addr, size, 0, None, stack, allocated, reserved, category,
        );
    };
    record(&mut recorder, Action::SegmentAlloc, 0, reserved, 0, None);
    for i in 0..ITERATIONS {
        recorder.begin_iteration(i, allocated, reserved);
        let block = 0x1000 + u64::from(i) * 0x1000;
        allocated += 1024;
        let activation = Some(Category::Activation);
        record(
            &mut recorder,
            Action::Alloc,
            block,
            1024,
            allocated,
            activation,
        );
        if i >= 2 {
            recorder.relabel_allocation(block - 0x2000, Category::Gradient);
        }
        let temp = 0x1000_0000 + u64::from(i);
        record(
            &mut recorder,
            Action::Alloc,
            temp,
            512,
            allocated + 512,
            None,
        );
        record(
            &mut recorder,
            Action::FreeRequested,
            temp,
            512,
            allocated,
            None,
        );
        if i % 5 == 0 {
            let at = recorder.next_event();
            let event = GcEvent {
                iteration: Some(i),
                iterations_begun: i + 1,
                generation: 0,
                automatic: true,
                objects_collected: u64::from(i),
                tensors_alive_before: 0,
                tensors_alive_after: 0,
                device_tensors_freed: 0,
                bytes_freed: 0,
                event_index: 0,
                line: Some(3),
                counts_before: [0; 3],
            };
            recorder.gc_event(event, at);
        }
        recorder.end_iteration(allocated, reserved, 0, true);
    }
    record(
        &mut recorder,
        Action::SegmentFree,
        0,
        reserved,
        allocated,
        None,
    );
    recorder.finish()
}

#[test]
fn a_head_of_compact_records_gives_the_timeline_a_plain_list_gives() {
    let all_in_tail = run(Recorder::with_retention(1 << 30, usize::MAX, usize::MAX));
    let all_in_head = run(Recorder::with_retention(1 << 30, usize::MAX, 0));
    assert!(all_in_head.folded.is_none() && all_in_head.approximations.is_empty());
    assert_eq!(all_in_head.events.len(), 2 + 3 * ITERATIONS as usize);
    assert_eq!(all_in_head.events, all_in_tail.events);
    assert_eq!(all_in_head.iterations, all_in_tail.iterations);
    assert_eq!(all_in_head.gc_events, all_in_tail.gc_events);
    // The relabelling reached blocks already in the head; the last two stayed activations.
    let gradients = all_in_head
        .events
        .iter()
        .filter(|e| e.category == Some(Category::Gradient))
        .count();
    assert_eq!(gradients, ITERATIONS as usize - 2);
    assert_eq!(all_in_head.events[0].iteration, None);
    assert_eq!(all_in_head.events[4].iteration, Some(1));
    assert_eq!(all_in_head.events.last().map(|e| e.iteration), Some(None));
}
