//! Where inside an iteration a collection fires, and what the frames and cells made around
//! it keep alive: a call's cells in CPython's order, and 3.12's frame object for the running
//! function when a collection closes a garbage generator.

mod common;
#[allow(dead_code)]
mod probes;

use common::gc_counts::real_out;

/// A closure shaped like a hook that re-registers itself (`callback` cell -> function ->
/// closure tuple -> cells), 400 iterations from a `gc.collect()` after `pad` empty lists
/// (which shift where inside an iteration the count crosses the threshold): each gen-0
/// collection fires inside one iteration's allocations, several of them while
/// `make_callback`'s cells are being made, and the cells made before it survive into
/// generation 1 with the objects they hold. Which cell comes first decides whether the next
/// cycle is collected at the next gen-0 collection or waits in generation 1.
fn closure_cell_order(pad: u32) -> String {
    format!(
        "pad = [[] for j in range({pad})]
def make_callback(t):
    scale = lambda x: x.view(-1)

    def callback():
        return callback, scale(t)

    return callback

for i in range(400):
    cb = make_callback(torch.zeros(16, device='cuda'))
    cb()
"
    )
}

/// The probe's start counts, long-lived total, and (iteration, generation, objects
/// collected) of each automatic collection.
type ProbeRun = ([i64; 3], u64, Vec<(i64, u64, u64)>);

/// (iteration, generation, objects collected) of each automatic collection of
/// `closure_cell_order(pad)`, with the probe's start counts and long-lived total, measured
/// with `tests/calibration/probe.py` on 3.8.18 (cells by name: `callback`, `scale`, `t`) and
/// 3.11.7 (`MAKE_CELL` order `t`, `callback`, `scale`, shown by `dis`).
fn measured_closure_cell_order(minor: u8, pad: u32) -> Option<ProbeRun> {
    let collections = match (minor, pad) {
        (8, 0) => vec![(98, 0, 679), (212, 0, 784), (328, 0, 798)],
        (11, 0) => vec![(98, 0, 679), (212, 0, 784), (328, 0, 805)],
        (11, 3) => vec![(98, 0, 679), (212, 0, 789), (328, 0, 803)],
        (11, 4) => vec![(98, 0, 679), (212, 0, 790), (328, 0, 804)],
        _ => return None,
    };
    let long_lived = if minor == 8 { 6554 } else { 11288 };
    Some(([3, 0, 0], long_lived, collections))
}
/// The probe's run of `workload` on a real interpreter: start counts, long-lived total and
/// the automatic collections.
fn probe_collections(python: &std::path::Path, workload: &str) -> ProbeRun {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("workload.py");
    std::fs::write(&file, workload).expect("write workload");
    let probe = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/calibration/probe.py");
    let out = std::process::Command::new(python)
        .arg(probe)
        .arg(&file)
        .output()
        .expect("runs python");
    assert!(out.status.success(), "{python:?}: {out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("probe JSON");
    let count = |i: usize| json["start_counts"][i].as_i64().expect("a count");
    let collections = json["collections"]
        .as_array()
        .expect("collections")
        .iter()
        .map(|c| {
            let field = |k: &str| c[k].as_i64().expect("a number");
            (
                field("iteration"),
                field("generation") as u64,
                field("collected") as u64,
            )
        })
        .collect();
    let long_lived = json["long_lived_total"].as_u64().expect("long-lived total");
    ([count(0), count(1), count(2)], long_lived, collections)
}

/// A call makes its cells in CPython's order (`GcProfile::cells_in_localsplus_order`): by
/// name up to 3.10, parameters first from 3.11. Compared with each installed interpreter,
/// else with the recorded measurement.
#[test]
fn a_call_makes_its_cells_in_cpythons_order() {
    for minor in 8..=11u8 {
        for pad in 0..7 {
            let workload = closure_cell_order(pad);
            let (counts, long_lived, real) = match probes::interpreter(minor) {
                Some(python) => probe_collections(&python, &workload),
                None => match measured_closure_cell_order(minor, pad) {
                    Some(recorded) => recorded,
                    None => {
                        eprintln!(
                            "skipped: no CPython 3.{minor} installed and no recorded measurement with pad {pad}"
                        );
                        continue;
                    }
                },
            };
            let workload = format!("__gc_start__ = gc.get_count()\n{workload}");
            let model: Vec<(i64, u64, u64)> =
                common::run_model(&workload, &format!("3.{minor}"), counts, long_lived, 0)
                    .gc_events
                    .iter()
                    .filter(|e| e.automatic)
                    .map(|e| {
                        (
                            e.iteration.map_or(-1, i64::from),
                            u64::from(e.generation),
                            e.objects_collected,
                        )
                    })
                    .collect();
            assert_eq!(model, real, "3.{minor} pad {pad}");
        }
    }
}

/// Each pass leaves a `Loader` in a cycle with its started generator, then collects inside a
/// function, makes one object so the count is above 0, and reads how the count moves when
/// that function returns: how much it drops.
const GENERATOR_CLOSE_IN_A_FUNCTION: &str = "import gc
gc.disable()
class Marker:
    pass
def batches(owner):
    while True:
        yield 1
class Loader:
    def __init__(self):
        self.it = batches(self)
        next(self.it)
keep = []
def collect_in_a_function():
    gc.collect(0)
    keep.append(Marker())
    return gc.get_count()[0]
out = []
for i in range(3):
    Loader()
    inside = collect_in_a_function()
    out.append(inside - gc.get_count()[0])
";

/// Measured on 3.8.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0 and 3.14.10: only 3.12 frees a frame
/// object when the function that ran the collection returns.
fn measured_generator_close_counts(minor: u8) -> Vec<u64> {
    vec![u64::from(minor == 12); 3]
}

/// On 3.12 closing a suspended generator found in the garbage gives the running function's
/// frame a frame object, freed (counted down) at its return
/// (`GcProfile::generator_close_takes_running_frame`; the generators calibration was 2 of 12
/// on 3.12.1 without it).
#[test]
fn closing_a_garbage_generator_gives_the_running_frame_an_object_on_3_12() {
    for minor in 8..=15u8 {
        let measured = measured_generator_close_counts(minor);
        match probes::interpreter(minor) {
            Some(python) => assert_eq!(
                real_out(&python, GENERATOR_CLOSE_IN_A_FUNCTION),
                measured,
                "3.{minor}"
            ),
            None => eprintln!(
                "skipped: no CPython 3.{minor} installed; compared with the recorded measurement only"
            ),
        }
        let workload = format!(
            "{GENERATOR_CLOSE_IN_A_FUNCTION}assert out == {measured:?}, ' '.join([str(x) for x in out])\n"
        );
        common::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
    }
}
