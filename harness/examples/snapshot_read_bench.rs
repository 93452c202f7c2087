//! Reads and summarizes a large snapshot; prints throughput and peak memory.
//!
//! `cargo run --release --example snapshot_read_bench -- [CORPUS_FILE] [TARGET_MB]`
//! builds a snapshot of about TARGET_MB (default 200) by repeating CORPUS_FILE's trace
//! (default: the largest corpus file), then reads it in a child process so that peak memory
//! (VmHWM) counts the read alone. With python3 present it times `pickle.load` on the same
//! file, and `_memory_viz.py stats` when `GPUMEM_MEMORY_VIZ` names that script.

use gpumem_harness::snapshot_format::{encode_snapshot, read_snapshot_file, to_timeline};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--read") {
        read_and_summarize(Path::new(&args[2]));
        return;
    }
    let source = args.get(1).map(PathBuf::from).unwrap_or_else(|| {
        // `../shared` of the repository root (one level further up from a nested worktree).
        let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        crate_dir
            .ancestors()
            .skip(2)
            .take(2)
            .map(|a| a.join("shared/corpus/torch-snapshots/wedson_medium_128_training.pickle"))
            .find(|p| p.is_file())
            .expect("give a snapshot file: the corpus is not next to the repository")
    });
    let target_mb: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(200);
    let big = std::env::temp_dir().join(format!("gpumem-bench-{target_mb}mb.pickle"));
    let size = make_big_snapshot(&source, &big, target_mb << 20);
    println!(
        "file: {} ({:.1} MB) from {}",
        big.display(),
        size as f64 / 1e6,
        source.display()
    );

    let me = std::env::current_exe().expect("own path");
    let status = Command::new(me)
        .arg("--read")
        .arg(&big)
        .status()
        .expect("child");
    assert!(status.success());

    let py = "import pickle, sys, time, resource\n\
              t = time.perf_counter()\n\
              with open(sys.argv[1], 'rb') as f: d = pickle.load(f)\n\
              dt = time.perf_counter() - t\n\
              n = sum(len(x) for x in d['device_traces'])\n\
              print(f'python3 pickle.load: {dt:.2f} s, {int(sys.argv[2]) / 1e6 / dt:.1f} MB/s, '\n\
                    f'peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, {n} entries')\n";
    match Command::new("python3")
        .args(["-c", py])
        .arg(&big)
        .arg(size.to_string())
        .status()
    {
        Ok(_) => {}
        Err(e) => println!("python3 not available: {e}"),
    }
    if let Ok(script) = std::env::var("GPUMEM_MEMORY_VIZ") {
        let t = Instant::now();
        let out = Command::new("python3")
            .arg(&script)
            .arg("stats")
            .arg(&big)
            .output();
        match out {
            Ok(o) if o.status.success() => println!(
                "python3 _memory_viz.py stats: {:.2} s (pickle.load included)",
                t.elapsed().as_secs_f64()
            ),
            Ok(o) => println!(
                "_memory_viz.py stats failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => println!("_memory_viz.py not runnable: {e}"),
        }
    }
    if std::env::var_os("GPUMEM_BENCH_KEEP").is_none() {
        let _ = std::fs::remove_file(&big);
    }
}

/// Repeats the source trace until the encoded file reaches `target` bytes; time stamps move
/// on with each copy so the trace stays ordered.
fn make_big_snapshot(source: &Path, out: &Path, target: u64) -> u64 {
    let mut snapshot = read_snapshot_file(source, "source").expect("source snapshot");
    let one = encode_snapshot(&snapshot).len() as u64;
    let copies = (target / one.max(1)).max(1);
    let trace = snapshot.device_traces[0].clone();
    let span = trace.iter().filter_map(|e| e.time_us).max().unwrap_or(0)
        - trace.iter().filter_map(|e| e.time_us).min().unwrap_or(0)
        + 1;
    for copy in 1..copies as i64 {
        snapshot.device_traces[0].extend(trace.iter().cloned().map(|mut e| {
            e.time_us = e.time_us.map(|t| t + copy * span);
            e
        }));
    }
    let bytes = encode_snapshot(&snapshot);
    std::fs::write(out, &bytes).expect("write");
    bytes.len() as u64
}

fn read_and_summarize(path: &Path) {
    let size = std::fs::metadata(path).expect("file").len();
    let t = Instant::now();
    if std::env::var_os("GPUMEM_BENCH_DECODE_ONLY").is_some() {
        let file = std::io::BufReader::new(std::fs::File::open(path).expect("file"));
        let doc =
            gpumem_harness::snapshot_format::pickle::decode(file, "big.pickle").expect("decode");
        println!("decode only: {:.2} s", t.elapsed().as_secs_f64());
        drop(doc);
    }
    let t = Instant::now();
    let snapshot = read_snapshot_file(path, "big.pickle").expect("read");
    let read_s = t.elapsed().as_secs_f64();
    let read_hwm = vm_hwm_kib();
    let imported = to_timeline(&snapshot);
    let peak_allocated = imported.timeline.peak_allocated();
    let peak_reserved = imported.timeline.peak_reserved();
    let dt = t.elapsed().as_secs_f64();
    let hwm = vm_hwm_kib();
    println!(
        "  of which reading the snapshot: {read_s:.2} s, peak RSS {} MiB by then",
        read_hwm / 1024
    );
    println!(
        "gpumem read+summarize: {dt:.2} s, {:.1} MB/s, peak RSS {} MiB ({:.2}x the file), \
         {} events, {} stacks, peak allocated {peak_allocated}, peak reserved {peak_reserved}",
        size as f64 / 1e6 / dt,
        hwm / 1024,
        (hwm * 1024) as f64 / size as f64,
        imported.timeline.events.len(),
        imported.timeline.stacks.len(),
    );
}

/// Peak resident memory of this process so far (KiB), 0 where /proc is absent.
fn vm_hwm_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| {
                l.split_whitespace()
                    .nth(1)
                    .and_then(|k| k.parse::<u64>().ok())
            })
        })
        .unwrap_or(0)
}
