use super::*;
use crate::check::evaluate;
use crate::check::fixture::{self, Builder, FILE, bound, expectation};
use crate::scenario::{Check, Comparison};
use crate::units::{GIB, MIB};

/// The seed blog's cycle workload, scaled: two 256 MiB tensors per iteration held by a cycle,
/// collected by `gc.collect()` every `gc_every` iterations (line 17).
fn sawtooth(iterations: u32, gc_every: u32) -> Timeline {
    sawtooth_with_temporary(iterations, gc_every, None)
}

/// As [`sawtooth`], with a 1 KiB temporary allocated and freed at once in one iteration.
fn sawtooth_with_temporary(iterations: u32, gc_every: u32, temporary_in: Option<u32>) -> Timeline {
    let mut b = Builder::new(80 * GIB);
    b.timeline
        .approximations
        .push("tensor values are not computed".to_string());
    b.alloc(512, 5); // held for the whole run
    let mut garbage = Vec::new();
    for i in 0..iterations {
        b.begin();
        garbage.push(b.alloc(256 * MIB, 12));
        garbage.push(b.alloc(256 * MIB, 13));
        let scratch = b.alloc(512, 14);
        b.free(scratch);
        if temporary_in == Some(i) {
            let tmp = b.alloc(1024, 15);
            b.free(tmp);
        }
        if i % gc_every == gc_every - 1 {
            let freed = std::mem::take(&mut garbage);
            b.gc(2, false, &freed, 17);
        }
        b.end();
    }
    let freed = u64::from(iterations / gc_every) * 2 * u64::from(gc_every);
    b.cycle_report(freed, 256 * MIB, 12);
    b.finish()
}

fn checks() -> Vec<crate::scenario::Expectation> {
    vec![
        expectation(Check::Oom(false), 20),
        expectation(Check::PeakAllocated(bound(Comparison::Le, 52 * GIB)), 21),
        expectation(Check::CyclesNone, 22),
    ]
}

fn render(timeline: &Timeline) -> (String, Vec<Verdict>) {
    let expectations = checks();
    let refs: Vec<_> = expectations.iter().collect();
    let verdicts = evaluate(&refs, timeline);
    let text = golden_text(&fixture::scenario(), &fixture::variant(), timeline);
    (text, verdicts)
}

#[test]
fn golden_text_is_deterministic_and_has_every_section() {
    let t = sawtooth(300, 100);
    let (first, _) = render(&t);
    let (second, _) = render(&t.clone());
    assert_eq!(first, second);
    for section in [
        "scenario  leaky",
        "variant   gc_every=100,mode=eager",
        "python    3.11",
        "device    h100-80gb, 80 GiB (85899345920 bytes)",
        "== outcome\ncompleted 300 iterations",
        "== peaks\nallocated  50.00 GiB (53687092224 bytes), 62.5% of the device",
        "at iteration 99, workload:9 in <module>",
        "== allocated at iteration ends",
        "growth per iteration after iteration 0 (least squares):",
        "== collections",
        "explicit  gen2       3, in iterations 99, 199, 299",
        "freed by the collector: 150 GiB (161061273600 bytes) in 600 device tensors",
        "first freed at iteration 99 (gen2, gc.collect(), line 12): 50 GiB",
        "cycle  Node -[link]-> Node -[link]-> Node\nholds  Node.tensor → tensor\n",
        "float32[67108864], 600 x 256 MiB = 150 GiB (161061273600 bytes), allocated at workload:7, first in iteration 0",
        "== allocated memory",
        "== top allocation sites live at the peak",
        "== approximations\n- tensor values are not computed",
    ] {
        assert!(first.contains(section), "missing {section:?} in\n{first}");
    }
    assert!(!first.contains("0x"), "addresses leaked:\n{first}");
    assert!(first.ends_with('\n') && !first.contains(" \n"));
    // Verdicts are the trial's result, not part of the timeline; file lines move with edits
    // above the workload.
    assert!(!first.contains("== checks"), "{first}");
    assert!(
        !first.contains("PASS") && !first.contains("FAIL"),
        "{first}"
    );
    assert!(!first.contains(&format!("{FILE}:14")), "{first}");
}

#[test]
fn lines_added_above_the_workload_leave_the_golden_text_alone() {
    let t = sawtooth(300, 100);
    let (base, _) = render(&t);
    // The same run after three lines were added to `about:`: the workload (from line 6) and
    // every frame and collection line in it move down by three. (The fixture's line-5 block
    // stands for a position outside the workload, which keeps its file line.)
    let mut shifted = t.clone();
    shifted.stacks = t.stacks.map_frames(|f| crate::timeline::Frame {
        line: if f.line >= 6 { f.line + 3 } else { f.line },
        ..f.clone()
    });
    for g in &mut shifted.gc_events {
        g.line = g.line.map(|l| l + 3);
    }
    let mut scenario = fixture::scenario();
    scenario.workload.first_line += 3;
    assert_eq!(golden_text(&scenario, &fixture::variant(), &shifted), base);
    // The human report keeps file lines, so it does move.
    assert_ne!(
        human_report(&scenario, &fixture::variant(), &shifted, &[]),
        human_report(&fixture::scenario(), &fixture::variant(), &t, &[])
    );
}

#[test]
fn golden_text_ignores_changes_that_do_not_move_memory() {
    let (base, _) = render(&sawtooth(300, 100));
    let (with_temporary, _) = render(&sawtooth_with_temporary(300, 100, Some(5)));
    assert_eq!(base, with_temporary);
    // ... but a temporary at the peak moves the peak, and the text says so.
    let (at_peak, _) = render(&sawtooth_with_temporary(300, 100, Some(99)));
    assert_ne!(base, at_peak);
    assert!(at_peak.contains("workload:10 in <module>"), "{at_peak}");
}

#[test]
fn long_runs_compress_and_thirty_thousand_iterations_stay_short() {
    // Equal iteration ends: one row.
    let mut b = Builder::new(80 * GIB);
    let kept = b.alloc(512 * MIB, 5);
    let _ = kept;
    for _ in 0..1000 {
        b.begin();
        let a = b.alloc(MIB, 9);
        b.free(a);
        b.end();
    }
    let (text, _) = render(&b.finish());
    assert!(
        text.contains("iterations 0-999  512 MiB (536870912 bytes)"),
        "{text}"
    );

    let t = sawtooth(30_000, 100);
    let (text, _) = render(&t);
    let lines = text.lines().count();
    assert!(lines <= 150, "{lines} lines:\n{text}");
    assert!(text.contains("iterations 0-999 "), "{text}");
    assert!(text.contains("iterations 29000-29999"), "{text}");
    // Each chart column squeezes five teeth: solid at the bottom, a swing above.
    assert!(text.contains(&format!("|{}\n", ":".repeat(60))), "{text}");
    assert!(text.contains(&format!("|{}\n", "#".repeat(60))), "{text}");
    assert!(text.contains("explicit  gen2     300, in iterations 99, 199, 299, 399, 499, ..."));
}

#[test]
fn oom_runs_render_the_message_and_the_interrupted_iteration() {
    let mut b = Builder::new(4 * GIB);
    for _ in 0..3 {
        b.begin();
        b.alloc(GIB, 12);
        b.end();
    }
    b.begin();
    b.oom(2 * GIB, 12);
    let t = b.finish();
    let (text, verdicts) = render(&t);
    assert!(!verdicts[0].passed);
    assert!(
        text.contains(
            "OOM at iteration 3 after 3 completed iterations: requested 2 GiB (2147483648 bytes) \
             at workload:7 in <module>\n  CUDA out of memory. Tried to allocate 2.00 GiB."
        ),
        "{text}"
    );
    assert!(
        text.contains("iteration 3 did not complete: reached 3 GiB allocated"),
        "{text}"
    );
}

#[test]
fn human_report_leads_with_verdicts_and_their_locations() {
    let t = sawtooth(30, 10);
    let expectations = checks();
    let refs: Vec<_> = expectations.iter().collect();
    let verdicts = evaluate(&refs, &t);
    let text = human_report(&fixture::scenario(), &fixture::variant(), &t, &verdicts);
    let first = text.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        "leaky [gc_every=100,mode=eager]: FAILED (1 of 3 checks failed), python 3.11, h100-80gb"
    );
    assert!(
        text.contains(&format!("FAIL cycles ({FILE}:22:5)")),
        "{text}"
    );
    // Lowest end: iteration 9 after a collection (only the 512-byte block of line 5); highest:
    // iteration 28, nine 512 MiB blocks.
    assert!(
        text.contains("allocated at iteration ends: 512 B to 4.50 GiB"),
        "{text}"
    );
}

#[test]
fn json_report_has_every_field_with_its_value() {
    let t = sawtooth(30, 10);
    let (_, verdicts) = render(&t);
    let v = json_report(&fixture::scenario(), &fixture::variant(), &t, &verdicts);
    for field in [
        "scenario",
        "variant",
        "python",
        "device",
        "device_capacity_bytes",
        "outcome",
        "oom",
        "iterations_completed",
        "peak_allocated_bytes",
        "peak_reserved_bytes",
        "gc_events",
        "cycle_freed",
        "cycle_paths",
        "checks",
        "approximations",
    ] {
        assert!(v.get(field).is_some(), "missing {field}");
    }
    assert_eq!(v["scenario"], "leaky");
    assert_eq!(v["variant"]["gc_every"], 100);
    assert_eq!(v["variant"]["mode"], "eager");
    assert_eq!(v["python"], "3.11");
    assert_eq!(v["device"], "h100-80gb");
    assert_eq!(v["device_capacity_bytes"], 80 * GIB);
    assert_eq!(v["outcome"], "completed");
    assert!(v["oom"].is_null());
    assert_eq!(v["iterations_completed"], 30);
    assert_eq!(v["peak_allocated_bytes"], t.peak_allocated());
    assert_eq!(v["peak_reserved_bytes"], t.peak_reserved());
    assert_eq!(v["gc_events"].as_array().map(Vec::len), Some(3));
    let gc = &v["gc_events"][0];
    assert_eq!(gc["iteration"], 9);
    assert_eq!(gc["generation"], 2);
    assert_eq!(gc["automatic"], false);
    assert_eq!(gc["bytes_freed"], 20 * 256 * MIB);
    assert_eq!(gc["device_tensors_freed"], 20);
    assert_eq!(gc["line"], 17);
    for key in [
        "objects_collected",
        "tensors_alive_before",
        "tensors_alive_after",
    ] {
        assert!(gc[key].is_u64(), "{key}");
    }
    assert_eq!(v["cycle_freed"]["tensors"], 60);
    assert_eq!(v["cycle_freed"]["bytes"], 60 * 256 * MIB);
    assert_eq!(v["cycle_paths"][0]["holder_path"], "Node.tensor");
    assert_eq!(
        v["cycle_paths"][0]["alloc_site"],
        format!("{FILE}:12 in <module>")
    );
    assert_eq!(v["checks"][2]["name"], "cycles");
    assert_eq!(v["checks"][2]["passed"], false);
    assert_eq!(v["checks"][0]["location"], format!("{FILE}:20:5"));
    assert_eq!(v["approximations"][0], "tensor values are not computed");
}

#[test]
fn json_report_of_an_oom_run() {
    let mut b = Builder::new(GIB);
    b.begin();
    b.oom(2 * GIB, 12);
    let t = b.finish();
    let v = json_report(&fixture::scenario(), &fixture::variant(), &t, &[]);
    assert_eq!(v["outcome"], "oom");
    assert_eq!(v["oom"]["iteration"], 0);
    assert_eq!(v["oom"]["requested_bytes"], 2 * GIB);
    assert_eq!(
        v["oom"]["message"],
        "CUDA out of memory. Tried to allocate 2.00 GiB."
    );
    assert_eq!(v["iterations_completed"], 0);
    // Serialized directly, the struct keeps the variant in `vary` order.
    let line = serde_json::to_string(&JsonReport::new(
        &fixture::scenario(),
        &fixture::variant(),
        &t,
        &[],
    ))
    .unwrap_or_default();
    assert!(
        line.contains(r#""variant":{"gc_every":100,"mode":"eager"}"#),
        "{line}"
    );
    assert!(!line.contains('\n'));
}

#[test]
fn empty_timeline_renders_without_panicking() {
    let t = Timeline::default();
    let text = golden_text(&fixture::scenario(), &fixture::variant(), &t);
    assert!(
        text.contains("completed (the trace marks no iterations)"),
        "{text}"
    );
    assert!(text.contains("nothing allocated"));
    let _ = human_report(&fixture::scenario(), &fixture::variant(), &t, &[]);
}

#[test]
fn labelled_allocations_show_their_category_at_the_peak() {
    use crate::timeline::Category;
    let mut b = Builder::new(80 * GIB);
    b.begin();
    b.alloc_as(64 * MIB, 3, Category::Parameter);
    b.alloc_as(64 * MIB, 9, Category::Gradient);
    b.alloc_as(128 * MIB, 10, Category::OptimizerState);
    b.end();
    let timeline = b.finish();
    let (text, _) = render(&timeline);
    // Line 10 of the file is line 5 of the workload (which starts on line 6); line 3 is
    // above the workload and keeps its file position.
    assert!(
        text.contains("128 MiB      1 x  optimizer_state  workload:5 in <module>"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            " 64 MiB      1 x  parameter        {FILE}:3 in <module>"
        )),
        "{text}"
    );
    assert!(
        text.contains("by category: parameter 64 MiB, gradient 64 MiB, optimizer_state 128 MiB"),
        "{text}"
    );
    let json = serde_json::to_value(json::JsonReport::new(
        &fixture::scenario(),
        &fixture::variant(),
        &timeline,
        &[],
    ))
    .unwrap();
    assert_eq!(json["sites_at_peak"][0]["category"], "optimizer_state");
    assert_eq!(json["bytes_at_peak_by_category"][1]["category"], "gradient");
    assert_eq!(json["bytes_at_peak_by_category"][1]["bytes"], 64 * MIB);
    // Unlabelled timelines (recorded snapshots) keep the old layout and no totals line.
    let (plain, _) = render(&sawtooth(3, 1));
    assert!(!plain.contains("by category"), "{plain}");
}

#[test]
fn a_reference_path_is_written_once_above_every_tensor_it_held() {
    let mut t = sawtooth(100, 100);
    // Same path, another tensor: listed under the first path, not as a second path.
    let mut other = t.cycle_reports[0].clone();
    other.tensor = "float16[1024]".to_string();
    t.cycle_reports.push(other);
    // A tensor freed with collected objects, with no path of its own.
    let mut pathless = t.cycle_reports[0].clone();
    pathless.holder_path.clear();
    pathless.cycle.clear();
    t.cycle_reports.push(pathless);
    let (text, _) = render(&t);
    assert_eq!(
        text.matches("cycle  Node -[link]-> Node").count(),
        1,
        "{text}"
    );
    assert!(
        text.contains("holds  Node.tensor → tensor\n  float32[67108864], ")
            && text.contains("\n  float16[1024], "),
        "{text}"
    );
    assert!(
        text.contains("freed together with collected objects (no reference path recorded)\n  "),
        "{text}"
    );
    assert!(!text.contains(" <- "), "{text}");
}
