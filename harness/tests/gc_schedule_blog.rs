//! The model reproduces CPython's measured collection schedules for the two workloads of
//! the reference-cycle blog post (reference/cpython-gc.md §4): iterations and generations of
//! the automatic collections, peak and end-of-run live tensors, on CPython 3.8 – 3.13.
//!
//! The measured runs used a `__slots__` stand-in tensor (identical, iteration for iteration,
//! to real torch tensors on 3.11), 5000 iterations, and started the loop with the gen-0
//! count at 23 (3.8), 22 (3.9, 3.10) or 19 (3.11 – 3.13) after a `gc.collect()`, with about
//! 11 000 long-lived objects. The workloads below start from the same state.

mod common;

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

const SIMPLE: &str = include_str!("workloads/simple_leak.py");
const AWAITABLE: &str = include_str!("workloads/awaitable_leak.py");

/// The gen-0 count at the first iteration in the measured runs.
fn measured_count_at_loop(minor: u8) -> u64 {
    match minor {
        8 => 23,
        9 | 10 => 22,
        _ => 19,
    }
}

struct Schedule {
    gen0: Vec<u32>,
    gen1: Vec<u32>,
    gen2: usize,
    peak_alive: u64,
    end_alive: u64,
}

fn run_model(workload: &str, minor: u8, start_count: u64, gc_every: u32) -> Timeline {
    common::run_model(
        workload,
        &format!("3.{minor}"),
        [start_count as i64, 0, 0],
        11_000,
        gc_every,
    )
}

/// The model's own count of GC objects the workload allocates before its loop (the class
/// statements), read from an explicit collection placed where the loop starts.
fn preamble_cost(workload: &str, minor: u8) -> u64 {
    let preamble = workload.split("for i in range").next().expect("a loop");
    let timeline = run_model(&format!("{preamble}gc.collect()\n"), minor, 0, 0);
    timeline
        .gc_events
        .last()
        .expect("the explicit collection")
        .counts_before[0]
}

fn run(workload: &str, minor: u8, gc_every: u32) -> Schedule {
    // The measured count at the first iteration is for `simple`; both workloads ran from the
    // same state before their class statements.
    let start = measured_count_at_loop(minor) - preamble_cost(SIMPLE, minor);
    let timeline = run_model(workload, minor, start, gc_every);
    let auto = |g: u8| -> Vec<u32> {
        timeline
            .gc_events
            .iter()
            .filter(|e| e.automatic && e.generation == g)
            .map(|e| e.iteration.expect("inside the loop"))
            .collect()
    };
    let (peak_alive, end_alive) = common::peak_and_end_alive(&timeline);
    Schedule {
        gen0: auto(0),
        gen1: auto(1),
        gen2: auto(2).len(),
        peak_alive,
        end_alive,
    }
}

fn gaps(its: &[u32]) -> Vec<u32> {
    its.windows(2).map(|w| w[1] - w[0]).collect()
}

/// One row of the measured table (slots stand-in).
struct Measured {
    minors: &'static [u8],
    workload: &'static str,
    gen0_first: &'static [u32],
    gap: (u32, u32),
    gen0_runs: usize,
    gen1: &'static [u32],
    peak_alive: (u64, u64),
    end_alive: (u64, u64),
}

const MEASURED: &[Measured] = &[
    Measured {
        minors: &[8, 9, 10],
        workload: SIMPLE,
        gen0_first: &[112, 242, 372],
        gap: (130, 130),
        gen0_runs: 35,
        // Re-measured with the stand-in that allocates torch's keyword dict (3.8.18 – 3.10.13,
        // `tests/calibration.rs`): instance dicts kept in cycles empty the dict free list, so
        // the factory's dict is a new object and the gen-1 runs come 2 iterations earlier a
        // cycle than with the old stand-in's 1544, 3106, 4668. Peak alive re-measured the
        // same way: 286 (was 300 – 302, before the earlier gen-1 runs).
        gen1: &[1544, 3104, 4664],
        peak_alive: (286, 286),
        end_alive: (156, 162),
    },
    Measured {
        minors: &[8, 9, 10],
        workload: AWAITABLE,
        gen0_first: &[82, 190, 301],
        gap: (111, 112),
        gen0_runs: 42,
        gen1: &[1304, 2642, 3980],
        peak_alive: (122, 123),
        end_alive: (26, 27),
    },
    Measured {
        minors: &[11, 12],
        workload: SIMPLE,
        gen0_first: &[170, 345, 520],
        gap: (175, 176),
        gen0_runs: 26,
        gen1: &[2097, 4200],
        peak_alive: (382, 386),
        end_alive: (214, 216),
    },
    Measured {
        minors: &[11, 12],
        workload: AWAITABLE,
        gen0_first: &[111, 246, 385],
        gap: (139, 140),
        gen0_runs: 33,
        gen1: &[1645, 3325],
        peak_alive: (152, 153),
        end_alive: (147, 147),
    },
    Measured {
        minors: &[13],
        workload: SIMPLE,
        gen0_first: &[495, 995, 1495],
        gap: (500, 500),
        gen0_runs: 10,
        gen1: &[],
        peak_alive: (1028, 1028),
        end_alive: (34, 34),
    },
    Measured {
        minors: &[13],
        workload: AWAITABLE,
        gen0_first: &[328, 716, 1114],
        gap: (398, 400),
        gen0_runs: 11,
        gen1: &[4713],
        peak_alive: (411, 411),
        end_alive: (287, 287),
    },
];

/// Gaps between consecutive automatic collections (any generation).
fn all_gaps(s: &Schedule) -> Vec<u32> {
    let mut all: Vec<u32> = s.gen0.iter().chain(&s.gen1).copied().collect();
    all.sort();
    gaps(&all)
}

#[test]
fn the_model_reproduces_the_measured_schedules_without_explicit_collections() {
    for m in MEASURED {
        let name = if m.workload == SIMPLE {
            "simple"
        } else {
            "awaitable"
        };
        for &minor in m.minors {
            let s = run(m.workload, minor, 0);
            let context = format!(
                "3.{minor} {name}: model gen0 {:?}, gen1 {:?}",
                s.gen0, s.gen1
            );
            // Collection iterations: within one iteration of the measured ones (the start
            // count is known to ±1 object, and 3.12+ run a due collection at the next
            // eval-breaker check).
            for (model, measured) in s.gen0.iter().zip(m.gen0_first) {
                assert!(
                    model.abs_diff(*measured) <= 1,
                    "{context}: first gen0 collections {:?} vs measured {:?}",
                    &s.gen0[..3],
                    m.gen0_first
                );
            }
            // Steady-state gaps (the first gap is still shaped by the start state and is
            // covered by the first collections above).
            for g in all_gaps(&s).into_iter().skip(1) {
                assert!(
                    (m.gap.0 - 1..=m.gap.1 + 1).contains(&g),
                    "{context}: gap {g} outside the measured {:?}",
                    m.gap
                );
            }
            assert_eq!(
                s.gen0.len(),
                m.gen0_runs,
                "{context}: number of gen0 collections"
            );
            assert_eq!(
                s.gen1.len(),
                m.gen1.len(),
                "{context}: number of gen1 collections"
            );
            for (model, measured) in s.gen1.iter().zip(m.gen1) {
                assert!(
                    model.abs_diff(*measured) <= 3,
                    "{context}: gen1 at {model}, measured {measured}"
                );
            }
            assert_eq!(
                s.gen2, 0,
                "{context}: no automatic full collection with 11 000 long-lived objects"
            );
            assert!(
                (m.peak_alive.0.saturating_sub(3)..=m.peak_alive.1 + 3).contains(&s.peak_alive),
                "{context}: peak alive {} vs measured {:?}",
                s.peak_alive,
                m.peak_alive
            );
            assert!(
                (m.end_alive.0.saturating_sub(3)..=m.end_alive.1 + 3).contains(&s.end_alive),
                "{context}: end alive {} vs measured {:?}",
                s.end_alive,
                m.end_alive
            );
        }
    }
}

/// With `gc.collect()` every 100 iterations every explicit collection is a full one; the
/// measured runs had no automatic collection except, on 3.8 – 3.10, in `awaitable`.
#[test]
fn explicit_collections_every_100_iterations_keep_the_peak_bounded() {
    for minor in 8..=13u8 {
        let simple = run(SIMPLE, minor, 100);
        assert!(
            simple.gen0.is_empty() && simple.gen1.is_empty(),
            "3.{minor} simple: {:?} {:?}",
            simple.gen0,
            simple.gen1
        );
        assert!(
            (199..=203).contains(&simple.peak_alive),
            "3.{minor} simple: peak {}",
            simple.peak_alive
        );
        assert_eq!(simple.end_alive, 200, "3.{minor} simple: end alive");
        let awaitable = run(AWAITABLE, minor, 100);
        if minor >= 11 {
            assert!(
                awaitable.gen0.is_empty(),
                "3.{minor} awaitable: {:?}",
                awaitable.gen0
            );
            assert!(
                (99..=101).contains(&awaitable.peak_alive),
                "3.{minor} awaitable: peak {}",
                awaitable.peak_alive
            );
            assert_eq!(awaitable.end_alive, 99, "3.{minor} awaitable: end alive");
        } else {
            // The free lists are empty after each full collection, so every dict and tuple
            // counts and an automatic gen 0 comes at 88 mod 100 (measured), freeing that
            // period's cycles: 87 alive at the peak, 12 at the end (measured on 3.8 and 3.10
            // with tests/calibration/probe.py).
            assert!(
                !awaitable.gen0.is_empty() && awaitable.gen0.iter().all(|i| i % 100 == 88),
                "3.{minor} awaitable: {:?}",
                awaitable.gen0
            );
            assert!(
                (86..=88).contains(&awaitable.peak_alive),
                "3.{minor} awaitable: peak {}",
                awaitable.peak_alive
            );
            assert!(
                (11..=13).contains(&awaitable.end_alive),
                "3.{minor} awaitable: end alive {}",
                awaitable.end_alive
            );
        }
    }
}

/// Without the pre-loop `gc.collect()` (as the blog's `__main__` runs), a 3.11 process that
/// imported torch starts at counts (284, 6, 0) with full free lists, the scenario default.
/// Measured for simple_leak: G0 at 102, 278, 453, G1 at 979. (The awaitable run of the same
/// measurement, G0 at 68, 196, 334, started from a count about 60 higher than this state
/// explains, probably after other work in the same process; it is not used here.)
#[test]
fn the_default_start_state_reproduces_the_measured_schedule_after_import_torch() {
    for (workload, gen0, gen1) in [(SIMPLE, [102, 278, 453], 979)] {
        let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
        let yaml = format!(
            "name: main\ndevice: h100-80gb\npython: \"3.11\"\nvary:\n  gc_every: [0]\nworkload: |\n{body}"
        );
        let scenario = scenario::parse(&yaml, "main.yaml").expect("parses");
        let timeline = run_variant(&scenario, &scenario.variants()[0]).expect("runs");
        let auto = |g: u8| -> Vec<u32> {
            timeline
                .gc_events
                .iter()
                .filter(|e| e.automatic && e.generation == g)
                .filter_map(|e| e.iteration)
                .collect()
        };
        let (model0, model1) = (auto(0), auto(1));
        for (m, measured) in model0.iter().zip(gen0) {
            assert!(
                m.abs_diff(measured) <= 1,
                "gen0 {:?} vs measured {gen0:?}",
                &model0[..3]
            );
        }
        assert!(
            model1.first().is_some_and(|m| m.abs_diff(gen1) <= 2),
            "gen1 {model1:?} vs measured {gen1}"
        );
    }
}
