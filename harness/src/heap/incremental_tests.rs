//! Rule-derived tests of the 3.14.0 – 3.14.4 incremental collector: each expected number is
//! worked out by hand, in the doc comment, from the rules listed (numbered, with their `gc.c`
//! lines) in `docs/incremental-collector.md`.

use super::*;
use crate::heap::{Attrs, Class, GcProfile, ObjKind, Sym, Value};
use crate::scenario::PyVersion;

fn heap(outside: u64) -> Heap {
    let version = PyVersion {
        minor: 14,
        patch: Some(2),
        free_threaded: false,
    };
    Heap::new(GcProfile::for_version(version), [0, 0, 0], outside)
}

fn class(h: &mut Heap) -> ObjId {
    h.insert(ObjKind::Class(Class {
        name: Sym(0),
        base: None,
        attrs: Vec::new(),
    }))
}

/// A two-instance cycle that the caller holds (one reference to each instance).
fn cycle(h: &mut Heap, class: ObjId) -> [ObjId; 2] {
    let mut ids = [ObjId(0); 2];
    for id in &mut ids {
        let kind = ObjKind::Instance {
            class,
            attrs: Attrs::Inline(Vec::new()),
        };
        h.count_allocation(&kind);
        h.incref(Value::Obj(class));
        *id = h.insert(kind);
    }
    for (i, j) in [(0, 1), (1, 0)] {
        h.incref(Value::Obj(ids[j]));
        if let ObjKind::Instance {
            attrs: Attrs::Inline(items),
            ..
        } = h.kind_mut(ids[i])
        {
            items.push((Sym(1), Value::Obj(ids[j])));
        }
    }
    ids
}

fn drop_cycle(h: &mut Heap, ids: [ObjId; 2]) {
    for id in ids {
        h.decref_id(id);
    }
}

/// Live instances (the class excluded): the cycles not yet freed.
fn instances(h: &Heap) -> usize {
    h.live_kinds()
        .filter(|k| matches!(k, ObjKind::Instance { .. }))
        .count()
}

#[test]
fn every_automatic_collection_is_an_increment_reported_as_generation_1() {
    let mut h = heap(0);
    assert_eq!(h.thresholds, [2000, 10, 0]);
    assert_eq!(h.due_collection(), Some(1));
    h.enabled = false;
    assert_eq!(h.due_collection(), None);
}

/// The first increment of a pass is the MARK step: it marks and frees nothing, so a dropped
/// cycle survives it and is freed by the next increment.
#[test]
fn the_mark_step_frees_nothing_and_the_next_increment_frees_young_garbage() {
    let mut h = heap(0);
    let c = class(&mut h);
    let ids = cycle(&mut h, c);
    drop_cycle(&mut h, ids);
    let mark = h.run_collection(1, |_, _| {});
    assert_eq!((mark.generation, mark.collected), (1, 0));
    assert_eq!(instances(&h), 2);
    let next = h.run_collection(1, |_, _| {});
    assert_eq!((next.generation, next.collected), (1, 2));
    assert_eq!(instances(&h), 0);
}

/// A cycle that is alive at an increment moves to the visited space; dropped afterwards, it
/// is not in any later increment of that pass. It is freed only once the spaces flip
/// (`completed_scavenge`), the next MARK step leaves it unmarked in the pending space, and an
/// increment pulls it in.
#[test]
fn a_cycle_alive_at_an_increment_waits_for_the_next_pass() {
    let mut h = heap(0);
    let c = class(&mut h);
    h.run_collection(1, |_, _| {}); // MARK (the class moves to the visited space)
    let held = cycle(&mut h, c);
    // Collect phase: young (the held cycle) survives into the visited space; the pending
    // space is empty, so the pass completes and the spaces flip.
    let out = h.run_collection(1, |_, _| {});
    assert_eq!(out.collected, 0);
    assert_eq!(h.get(held[0]).generation, 2, "pending after the flip");
    drop_cycle(&mut h, held);
    // MARK: the dropped cycle is not reachable, so it stays pending; nothing freed.
    assert_eq!(h.run_collection(1, |_, _| {}).collected, 0);
    assert_eq!(instances(&h), 2);
    // work_to_do = -2 (the class, marked and subtracted twice, rule 6) + 0 new + 0 heap
    // fraction < 0: the increment stops at once (rule 5)...
    assert_eq!(h.run_collection(1, |_, _| {}).collected, 0);
    assert_eq!(h.incremental_state().work_to_do, -2);
    // ... and the pass does not complete while the cycle is pending. Three new objects make
    // work_to_do = -2 + 3 = 1 > 0, the young size: the next increment pulls the cycle (1
    // object and the 1 it reaches, rule 7).
    h.count_raw_allocations(3);
    let freed = h.run_collection(1, |_, _| {});
    assert_eq!(freed.collected, 2, "pulled from the pending space");
    assert_eq!(instances(&h), 0);
}

/// Steady state of a loop that makes one two-instance cycle per iteration and keeps only the
/// current one (the previous one is dropped); one class object besides; threshold 2000.
/// Derivation from the rules (increment k runs when the count reaches 2002, every 1001
/// iterations; "visited" and "pending" are the two old spaces):
/// - #1, MARK: work_to_do = 2002 new + min(2003/100, 2 x 2002) = 2022 (rule 4), minus 2 x 3
///   marked (the class and the live cycle go to visited, rule 6) = 2016. Nothing is freed:
///   1000 dropped cycles stay young.
/// - #2, collect: work_to_do = 2016 + 2002 + 4005/100 = 4058 > the 4002 young objects, but
///   pending is empty (rule 7). Frees 4000 (2000 dropped cycles); the live cycle joins
///   visited, where the cycle live at #1 (dropped since) also is; work_to_do = 4058 - 4002
///   (rule 8). Pending is empty: the spaces flip, so both are pending, work_to_do = 0 and the
///   next step is a MARK (rule 9).
/// - #3, MARK: work_to_do = 2002 + 2007/100 - 2 x 3 = 2016; the live cycle and the class go to
///   visited; the two dropped cycles stay pending, unmarked. Nothing freed.
/// - #4, collect: work_to_do = 2016 + 2002 + 4009/100 = 4058 > 4002 young, so both pending
///   cycles are pulled in: 4004 freed; flip again with the cycle live at #3 (now dropped) and
///   the live one.
///
/// From #4 on it repeats: just before each collect step 2000 dropped young cycles, 2 dropped
/// pending cycles, 1 dropped visited cycle and the live one are in memory: 4008 instances,
/// twice the generational collector's 1000-cycle sawtooth at the same threshold.
#[test]
fn steady_state_uncollected_cycles_of_one_cycle_per_iteration() {
    let mut h = heap(0);
    let c = class(&mut h);
    let mut current = cycle(&mut h, c);
    let mut peak = 0;
    let mut collected = Vec::new();
    for _ in 0..20_000 {
        let next = cycle(&mut h, c);
        drop_cycle(&mut h, current);
        current = next;
        if h.counts[0] > h.thresholds[0] {
            peak = peak.max(instances(&h));
            collected.push(h.run_collection(1, |_, _| {}).collected);
        }
    }
    assert_eq!(peak, 4008, "2003 dropped cycles and the live one");
    // MARK steps free nothing; collect steps free 4000 young and 4 pending instances.
    assert!(collected.len() >= 18);
    assert_eq!(collected[..2], [0, 4000]);
    for pair in collected.chunks_exact(2).skip(1) {
        assert_eq!(pair, [0, 4004], "{collected:?}");
    }
}

/// Rule 4's cap: the heap fraction is at most twice the new objects. A heap of 100 001
/// objects (the class and 100 000 of the interpreter's own) gives 100 001 / 10 / 10 = 1000,
/// capped at 2 x 3 new = 6: work_to_do = 3 + 6 = 9, then the MARK step subtracts twice the
/// 100 001 it marks (rule 6): 9 - 200 002.
#[test]
fn the_heap_fraction_is_capped_at_twice_the_new_objects() {
    let mut h = heap(100_000);
    class(&mut h);
    h.count_raw_allocations(3);
    h.run_collection(1, |_, _| {});
    assert_eq!(h.incremental_state().work_to_do, 9 - 200_002);
}

/// Rule 5: while `work_to_do` is negative an increment does nothing, not even collect the young
/// generation. With 1000 of the interpreter's own objects (a heap of 1001):
/// - MARK: work_to_do = 0 new + min(1001/100, 0) = 0, minus 2 x 1001 marked = -2002.
/// - A cycle is made (2 new) and dropped. Next increment: -2002 + 2 + min(1003/100, 4) = -1996
///   < 0: nothing is freed, the dropped cycle stays.
/// - 2000 more allocations: -1996 + 2000 + min(1003/100, 4000) = 14 >= 0: the increment
///   collects the young generation and frees the cycle.
#[test]
fn a_negative_work_to_do_skips_the_increment_young_garbage_included() {
    let mut h = heap(1000);
    let c = class(&mut h);
    h.run_collection(1, |_, _| {});
    assert_eq!(h.incremental_state().work_to_do, -2002);
    let ids = cycle(&mut h, c);
    drop_cycle(&mut h, ids);
    let skipped = h.run_collection(1, |_, _| {});
    assert_eq!((skipped.generation, skipped.collected), (1, 0));
    assert_eq!(h.incremental_state().work_to_do, -1996);
    assert_eq!(instances(&h), 2);
    assert_eq!(
        h.counts[0], 0,
        "the young count restarts even when nothing runs"
    );
    h.count_raw_allocations(2000);
    assert_eq!(h.run_collection(1, |_, _| {}).collected, 2);
    assert_eq!(instances(&h), 0);
}

/// Rule 8: an increment subtracts its own size from `work_to_do`, and nothing else. Two
/// cycles A and B are held through a pass (1000 of the interpreter's own objects besides):
/// - MARK: 4 new + min(1005/100, 8) = 12, minus 2 x 1005 marked (class, A, B, the 1000) =
///   -1998.
/// - 2000 allocations: -1998 + 2000 + 10 = 12; the increment is empty (young and pending
///   are), the pass completes: class, A and B become pending, work_to_do = 0 (rule 9).
/// - A and B are dropped; 2 allocations; MARK: 2 + min(1005/100, 4) = 6, minus 2 x 1001
///   (class and the 1000) = -1996.
/// - 1987 allocations: -1996 + 1987 + min(1005/100, 3974) = 1: the increment pulls A (2
///   objects, rule 7) and stops, frees it, and owes 1 - 2 = -1. B stays pending.
#[test]
fn an_increment_pays_exactly_its_size() {
    let mut h = heap(1000);
    let c = class(&mut h);
    let a = cycle(&mut h, c);
    let b = cycle(&mut h, c);
    h.run_collection(1, |_, _| {});
    assert_eq!(h.incremental_state().work_to_do, -1998);
    h.count_raw_allocations(2000);
    assert_eq!(h.run_collection(1, |_, _| {}).collected, 0);
    assert_eq!(h.incremental_state().work_to_do, 0);
    assert_eq!(h.get(a[0]).generation, 2, "pending after the pass");
    drop_cycle(&mut h, a);
    drop_cycle(&mut h, b);
    h.count_raw_allocations(2);
    h.run_collection(1, |_, _| {});
    assert_eq!(h.incremental_state().work_to_do, -1996);
    h.count_raw_allocations(1987);
    assert_eq!(h.run_collection(1, |_, _| {}).collected, 2);
    assert_eq!(h.incremental_state().work_to_do, -1);
    assert_eq!(instances(&h), 2, "B is still pending");
}
