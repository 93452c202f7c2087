//! Any bytes: the pickle decoder and the snapshot reader either succeed or return a located
//! error; what they accept must convert to a Timeline and replay without panicking.
#![no_main]

use gpumem_harness::snapshot_format::{read_snapshot, replay::replay, to_timeline};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match read_snapshot(data, "fuzz.pickle") {
        Ok(snapshot) => {
            let _ = to_timeline(&snapshot);
            if snapshot.segments.len() < 64 {
                let _ = replay(&snapshot);
            }
        }
        Err(e) => assert!(e.location().is_some()),
    }
});
