//! ≤ 3.10 frame objects (`heap/zombie_frames.rs`) and the allocations a collection makes for
//! the functions in `gc.callbacks` (`heap/gc_callbacks.rs`): each rule checked against figures
//! measured on CPython 3.8.18 – 3.10.13 and, where installed, against each interpreter now
//! (skipped, with the reason, where absent).

mod common;
#[allow(dead_code)]
mod probes;

/// The model runs `script` (which ends by asserting its `out` equals the expected counts) under
/// each of `minors`; each installed interpreter prints `out`, which must equal the same figures.
fn check_against_measured_and_installed(script: &str, minors: &[u8], expected: &[u64]) {
    for &minor in minors {
        let workload = format!("{script}assert out == {expected:?}, out\n");
        common::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
        match probes::interpreter(minor) {
            Some(python) => assert_eq!(
                common::gc_counts::real_out(&python, &format!("import gc\n{script}")),
                expected,
                "CPython 3.{minor} ({python:?})"
            ),
            None => eprintln!("skipped: CPython 3.{minor} is not installed"),
        }
    }
}

/// `frame_dealloc` parks a dying frame as its code's zombie frame whenever that slot is empty,
/// whichever frame the slot served. Here the frame that took `f`'s zombie (the first call's)
/// stays alive in `keep`'s traceback while 201 other frames of `f` die at once after a full
/// collection emptied the free list: one is parked and 200 fill the free list, so none is freed
/// and the count drops only by the 201 exceptions and 201 tracebacks (401 with the loop's
/// iterator). A model that keeps the slot for the frame that took it frees the 201st frame
/// instead (402, derived), and the next call of `f` then takes a free-list frame.
#[test]
fn a_dying_frame_refills_its_code_zombie_slot_whichever_frame_took_it() {
    let script = "out = []
class Box:
    pass
def f(box):
    try:
        raise ValueError
    except ValueError as e:
        box.e = e
keep = Box()
f(keep)
boxes = [Box() for j in range(201)]
for b in boxes:
    f(b)
gc.collect()
pad = [[] for j in range(600)]
b0 = gc.get_count()[0]
for b in boxes:
    b.e = None
b1 = gc.get_count()[0]
out.append(b0 - b1)
x = Box()
f(x)
out.append(gc.get_count()[0] - b1)
";
    check_against_measured_and_installed(script, &[8, 9, 10], &[401, 4]);
}

/// Each collection builds an info dict for its "start" and "stop" callback phases. After a full
/// collection emptied the dict free list, the "stop" phase's dict is counted and left on the
/// list, so the next gen-0 collection's phases and then the first new `{}` take it: [0, 2]
/// with one callback, [1, 3] without (measured on 3.8.18 – 3.15.2). The real run registers
/// `def cb(phase, info): pass`; the model is told of it by `python.start.gc_callbacks`.
#[test]
fn a_collection_builds_an_info_dict_for_its_callbacks() {
    let script = "out = []
gc.collect()
gc.collect(0)
d1 = {}
out.append(gc.get_count()[0])
d2 = {}
out.append(gc.get_count()[0])
";
    let register = "def cb(phase, info):\n    pass\ngc.callbacks.append(cb)\n";
    for minor in 8..=15u8 {
        let python = format!("3.{minor}");
        for (callbacks, expected) in [(1, [0, 2]), (0, [1, 3])] {
            let workload = format!("{script}assert out == {expected:?}, out\n");
            common::run_model_with_callbacks(&workload, &python, [0, 0, 0], 11_000, 0, callbacks);
            match probes::interpreter(minor) {
                Some(real) => {
                    let prelude = if callbacks == 1 { register } else { "" };
                    assert_eq!(
                        common::gc_counts::real_out(
                            &real,
                            &format!("import gc\n{prelude}{script}")
                        ),
                        expected,
                        "CPython {python} ({real:?}), {callbacks} callback(s)"
                    );
                }
                None => eprintln!("skipped: CPython {python} is not installed"),
            }
        }
    }
}
