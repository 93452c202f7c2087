//! Any bytes as a scenario file (YAML with a Python workload): parsing either succeeds or
//! returns a located error, and every variant it accepts runs (under small budgets, so a
//! runaway workload ends quickly) to a timeline, a located error, or a budget error; never a
//! panic, a hang or unbounded memory.
#![no_main]

use gpumem_harness::error::Error;
use gpumem_harness::harness::engine::run_trial;
use gpumem_harness::scenario::{self, Limits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut scenario = match scenario::parse(&text, "fuzz.yaml") {
        Ok(s) => s,
        Err(e) => {
            assert!(e.location().is_some(), "{e}");
            return;
        }
    };
    // A replay names a file on this machine: not what this target explores.
    if scenario.replay.is_some() {
        return;
    }
    let small = Limits {
        steps: Some(20_000),
        memory: Some(64 << 20),
        seconds: Some(2.0),
        records: None,
    };
    scenario.limits = Limits {
        steps: scenario.limits.steps.map(|s| s.min(20_000)),
        memory: scenario.limits.memory.map(|m| m.min(64 << 20)),
        seconds: Some(2.0),
        records: scenario.limits.records.map(|r| r.min(8 << 20)),
    }
    .merged_over(small);
    for variant in scenario.variants().iter().take(4) {
        match run_trial(&scenario, variant) {
            Ok(_) => {}
            Err(e @ Error::Input { .. }) => assert!(e.location().is_some()),
            Err(e) => panic!("not an input error: {e}"),
        }
    }
});
