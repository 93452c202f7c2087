//! Overhead of the tracked allocation API per allocation, against raw cudarc calls.
//!
//! `cargo bench -p gpumem-harness --features cuda --bench tracked_alloc`
//!
//! Runs on the machine's CUDA driver when one is loadable, and always on the fake driver
//! (`fake-cuda-driver`, accounting only, so that the driver call itself costs little and the
//! wrapper's own cost shows): the bench runs itself again with the fake driver on
//! `LD_LIBRARY_PATH`. Each figure is the best of 5 rounds of N allocate-then-free pairs.

use std::hint::black_box;
use std::process::Command;
use std::time::{Duration, Instant};

use cudarc::driver::CudaContext;
use gpumem_harness::cuda::{Site, TrackedStream, Tracker, driver_loadable, tracked_device};

const CHILD: &str = "GPUMEM_BENCH_UNDER_FAKE_DRIVER";
const PAIRS: u32 = 100_000;
const ROUNDS: u32 = 5;
const BYTES: usize = 1 << 20;

fn main() {
    // cargo bench passes `--bench`; nothing to parse.
    let under_fake = std::env::var_os(CHILD).is_some();
    if under_fake {
        run("fake driver (accounting only)");
        return;
    }
    if driver_loadable().is_ok() {
        run("this machine's CUDA driver");
    } else {
        println!("no CUDA driver on this machine: measuring on the fake driver only");
    }
    let status = Command::new(std::env::current_exe().expect("the bench binary"))
        .env("LD_LIBRARY_PATH", fake_cuda_driver::ld_library_path())
        .env(CHILD, "1")
        .env(fake_cuda_driver::env::BACKING, "none")
        .env(fake_cuda_driver::env::CAPACITY, (64u64 << 30).to_string())
        .status()
        .expect("run the bench under the fake driver");
    assert!(status.success());
}

/// Best time per pair over the rounds, in nanoseconds.
fn best_ns(mut round: impl FnMut()) -> f64 {
    let mut best = Duration::MAX;
    for _ in 0..ROUNDS {
        let start = Instant::now();
        round();
        best = best.min(start.elapsed());
    }
    best.as_nanos() as f64 / PAIRS as f64
}

fn run(driver: &str) {
    let ctx = match CudaContext::new(0) {
        Ok(ctx) => ctx,
        Err(e) => {
            println!("{driver}: no device ({e:?})");
            return;
        }
    };
    let stream = ctx.default_stream();
    let raw = best_ns(|| {
        for _ in 0..PAIRS {
            // SAFETY: the memory is never read.
            let slice = unsafe { stream.alloc::<u8>(BYTES) }.unwrap();
            drop(black_box(slice));
        }
    });
    let tracker = Tracker::new(ctx.total_mem().unwrap() as u64);
    let tracked_stream = TrackedStream::new(stream.clone(), &tracker);
    let tracked = best_ns(|| {
        for _ in 0..PAIRS {
            // SAFETY: the memory is never read.
            let slice = unsafe { tracked_stream.alloc::<u8>(BYTES) }.unwrap();
            drop(black_box(slice));
        }
    });
    let events = tracker.timeline().events.len();
    // The recording alone, without any driver call: what the wrapper adds.
    let recording = best_ns(|| {
        let tracker = Tracker::new(1 << 40);
        let site = Site::caller(Some("bench"));
        for i in 0..PAIRS as u64 {
            tracker.record_pass_through_alloc(i << 20, BYTES as u64, site);
            tracker.record_pass_through_free(black_box(i << 20), site);
        }
    });
    println!(
        "{driver}: {} ({BYTES} bytes each)",
        ctx.name().unwrap_or_default()
    );
    println!("  raw cudarc alloc + free:                {raw:8.0} ns per pair");
    println!(
        "  TrackedStream alloc + free:             {tracked:8.0} ns per pair ({:+.0} ns, {events} events recorded)",
        tracked - raw
    );
    println!("  Tracker recording only (5 events):      {recording:8.0} ns per pair");
    // Through the caching-allocator model: after the first segment every pair is served from
    // the model's cache, with no driver call at all.
    let mut device = tracked_device(0).expect("the device");
    let model = best_ns(|| {
        for _ in 0..PAIRS {
            let a = device.alloc(BYTES as u64).unwrap();
            device.free(black_box(a));
        }
    });
    println!("  TrackedDevice (model) alloc + free:     {model:8.0} ns per pair (cached blocks)");
}
