use super::*;
use crate::allocator::{AllocatorConfig, CachingAllocator, SimulatedDevice};
use crate::snapshot_format::replay::replay;
use crate::snapshot_format::{corpus, read_snapshot, to_timeline};
use crate::timeline::{Frame, MemoryEvent};

#[test]
fn corpus_snapshots_survive_a_write_and_read_round_trip() {
    for (name, bytes) in corpus::all() {
        let original = read_snapshot(&bytes[..], name).unwrap();
        let written = encode_snapshot(&original);
        let again = read_snapshot(&written[..], "again.pickle").unwrap();
        assert_eq!(again.segments.len(), original.segments.len(), "{name}");
        for (a, b) in again.segments.iter().zip(&original.segments) {
            assert_eq!(
                (a.address, a.total_size, a.allocated_size, a.blocks.len()),
                (b.address, b.total_size, b.allocated_size, b.blocks.len()),
                "{name}"
            );
            assert_eq!(again.stacks.get(a.frames), original.stacks.get(b.frames));
        }
        let (ta, tb) = (&again.device_traces[0], &original.device_traces[0]);
        assert_eq!(ta.len(), tb.len());
        for (a, b) in ta.iter().zip(tb) {
            assert_eq!(
                (&a.action, a.addr, a.size, a.time_us),
                (&b.action, b.addr, b.size, b.time_us)
            );
            assert_eq!(
                a.frames.map(|f| again.stacks.get(f)),
                b.frames.map(|f| original.stacks.get(f))
            );
        }
        assert_eq!(
            again.allocator_settings, original.allocator_settings,
            "{name}"
        );
        assert_eq!(again.annotations, original.annotations, "{name}");
        // Memoized strings and stacks keep the file near the original's size.
        assert!(
            written.len() < bytes.len() * 2,
            "{name}: {} vs {}",
            written.len(),
            bytes.len()
        );
    }
}

/// A Timeline as a model run makes it: requests through the allocator model on a simulated
/// device, each with a workload stack.
pub(crate) fn model_run_timeline() -> Timeline {
    let mut model =
        CachingAllocator::new(SimulatedDevice::new(8 << 30), AllocatorConfig::default());
    let mut timeline = Timeline {
        device_capacity: 8 << 30,
        ..Timeline::default()
    };
    let stack = |t: &mut Timeline, line: u32, name: &str| {
        t.stacks.intern(vec![
            Frame {
                file: "scenarios/train.yaml".into(),
                line,
                name: name.into(),
            },
            Frame {
                file: "scenarios/train.yaml".into(),
                line: 3,
                name: "<module>".into(),
            },
        ])
    };
    let mut events = Vec::new();
    let mut live: Vec<u64> = Vec::new();
    let sizes = [
        4000,
        3 << 20,
        700_000,
        25 << 20,
        512,
        9 << 20,
        1 << 20,
        64 << 20,
    ];
    for step in 0..60u64 {
        let size = sizes[(step as usize * 7) % sizes.len()] + step * 1000;
        let s = stack(&mut timeline, 10 + (step % 4) as u32, "forward");
        events.clear();
        let addr = model.malloc(size, 0, &mut events).unwrap();
        push(&mut timeline, &model, &events, s);
        live.push(addr);
        if step % 3 == 2 {
            let victim = live.remove((step as usize) % live.len());
            events.clear();
            model.free(victim, &mut events).unwrap();
            let s = stack(&mut timeline, 20, "backward");
            push(&mut timeline, &model, &events, s);
        }
        if step == 40 {
            events.clear();
            model.empty_cache(&mut events);
            push(&mut timeline, &model, &events, StackId::default());
        }
    }
    timeline
}

fn push(
    t: &mut Timeline,
    model: &CachingAllocator<SimulatedDevice>,
    events: &[crate::allocator::AllocatorEvent],
    stack: StackId,
) {
    // Stats are those after the whole call; intermediate events get the same values except
    // segment events, which are replayed to keep allocated and reserved exact per event.
    let s = model.stats();
    let mut reserved = s.reserved_bytes;
    let mut allocated = s.allocated_bytes;
    let mut out = Vec::new();
    for e in events.iter().rev() {
        out.push(MemoryEvent {
            action: e.action,
            addr: e.addr,
            size: e.size,
            stream: e.stream,
            stack,
            iteration: None,
            allocated,
            reserved,
            device_free: e.device_free,
            category: None,
        });
        match e.action {
            Action::SegmentAlloc => reserved -= e.size,
            Action::SegmentFree => reserved += e.size,
            Action::Alloc => {
                allocated -= model
                    .segments()
                    .iter()
                    .flat_map(|s| s.blocks.iter())
                    .find(|b| b.address == e.addr)
                    .map_or(0, |b| b.size)
            }
            Action::FreeCompleted => {}
            _ => {}
        }
    }
    out.reverse();
    t.events.extend(out);
}

#[test]
fn an_exported_model_run_reads_back_with_the_same_memory_and_replays_exactly() {
    let timeline = model_run_timeline();
    let bytes = export_timeline(&timeline);
    assert_eq!(&bytes[..2], &[0x80, 4]);
    let snapshot = read_snapshot(&bytes[..], "run.pickle").unwrap();
    let final_allocated: u64 = snapshot.segments.iter().map(|s| s.allocated_size).sum();
    let final_reserved: u64 = snapshot.segments.iter().map(|s| s.total_size).sum();
    let last = timeline.events.last().unwrap();
    assert_eq!(
        (final_allocated, final_reserved),
        (last.allocated, last.reserved)
    );
    let imported = to_timeline(&snapshot);
    assert_eq!(imported.timeline.peak_reserved(), timeline.peak_reserved());
    assert_eq!(imported.timeline.events.len(), timeline.events.len());
    // Stacks are the workload's (file, line, function).
    let first = imported
        .timeline
        .stacks
        .get(imported.timeline.events[1].stack);
    assert_eq!(&*first[0].file, "scenarios/train.yaml");
    // The trace starts empty and allocates its segments: the replay predicts them too.
    let report = replay(&snapshot);
    assert!(report.counts.segments_total > 3, "{report:?}");
    assert!(report.exact(), "{}", report.summary());
    let mut imported = imported;
    assert!(crate::snapshot_format::replay::apply_exact_series(
        &mut imported,
        &report
    ));
    assert_eq!(
        imported.timeline.peak_allocated(),
        timeline.peak_allocated()
    );
}

/// `_memory_viz.py` from a torch wheel, when this machine has one: `GPUMEM_MEMORY_VIZ`, or
/// the file inside a torch that python3 imports.
fn memory_viz() -> Result<std::path::PathBuf, String> {
    if let Ok(path) = std::env::var("GPUMEM_MEMORY_VIZ") {
        let path = std::path::PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "GPUMEM_MEMORY_VIZ={} is not a file",
                path.display()
            ))
        };
    }
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u; s = u.find_spec('torch'); \
             print(s.submodule_search_locations[0] if s else '')",
        ])
        .output()
        .map_err(|e| format!("python3 is not runnable: {e}"))?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let path = std::path::PathBuf::from(dir).join("cuda/_memory_viz.py");
    if path.is_file() {
        Ok(path)
    } else {
        Err(
            "set GPUMEM_MEMORY_VIZ to torch/cuda/_memory_viz.py (from a torch wheel) or \
             install torch for python3"
                .to_string(),
        )
    }
}

#[test]
fn pytorch_memory_viz_accepts_an_exported_run_and_agrees_on_its_totals() {
    let script = match memory_viz() {
        Ok(p) => p,
        Err(reason) => {
            eprintln!("skipped: _memory_viz.py not found: {reason}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("run.pickle");
    let timeline = model_run_timeline();
    std::fs::write(&file, export_timeline(&timeline)).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new("python3")
            .arg(&script)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    let path = file.to_str().unwrap();
    let stats = run(&["stats", path]);
    let last = timeline.events.last().unwrap();
    let fmt = |n: u64| {
        let mut x = n as f64;
        for unit in ["", "Ki", "Mi", "Gi", "Ti"] {
            if x < 1024.0 {
                return format!("{x:3.1}{unit}B");
            }
            x /= 1024.0;
        }
        format!("{x:.1}PiB")
    };
    assert!(
        stats.contains(&format!("total_reserved: {}\n", fmt(last.reserved))),
        "{stats}"
    );
    // Its "total_allocated" counts the requested bytes of live blocks; "total_free" the rest.
    let mut live = std::collections::HashMap::new();
    for e in &timeline.events {
        match e.action {
            Action::Alloc => {
                live.insert(e.addr, e.size);
            }
            Action::FreeCompleted => {
                live.remove(&e.addr);
            }
            _ => {}
        }
    }
    let requested: u64 = live.values().sum();
    assert!(
        stats.contains(&format!("total_allocated: {}\n", fmt(requested))),
        "{stats}"
    );
    assert!(
        stats.contains(&format!("total_free: {} (", fmt(last.reserved - requested))),
        "{stats}"
    );
    let html = dir.path().join("trace.html");
    run(&["trace_plot", path, "-o", html.to_str().unwrap()]);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("snapshot.pickle") && page.contains("Active Memory Timeline"));
    let trace = run(&["trace", path]);
    assert!(trace.contains("cudaMalloc"), "{trace}");
    run(&[
        "segment_plot",
        path,
        "-o",
        dir.path().join("seg.html").to_str().unwrap(),
    ]);
}
