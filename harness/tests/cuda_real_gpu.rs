//! Checks that need a real NVIDIA GPU. Without one (no driver, or no device) every trial is
//! listed as ignored with the reason, decided before listing so that nextest shows it as
//! skipped. On a GPU machine: `cargo test -p gpumem-harness --features cuda --test cuda_real_gpu`.

use std::process::ExitCode;

use cudarc::driver::CudaContext;
use gpumem_harness::cuda::{self, TrackedStream, Tracker};
use gpumem_harness::scenario::Device;
use libtest_mimic::{Arguments, Failed, Trial};

const MIB: u64 = 1 << 20;
/// The seed scenarios; on any card they are compared with the model given the memory that
/// card had free when the run began.
const SEEDS: [&str; 2] = ["simple_cycle", "awaitable_callback"];

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let missing = cuda::unavailable(0);
    let mut trials = vec![
        Trial::test("tracked_stream_allocations_reach_the_card", tracked_stream),
        Trial::test("model_segments_are_real_allocations", model_segments),
    ];
    for seed in SEEDS {
        trials.push(Trial::test(format!("seed_{seed}_on_cuda"), move || {
            seed_scenario(seed)
        }));
    }
    let trials = trials
        .into_iter()
        .map(|t| t.with_ignored_flag(missing.is_some()))
        .collect();
    // One card: the trials would see each other's memory if they ran at the same time.
    let args = Arguments {
        test_threads: Some(1),
        ..args
    };
    if let Some(reason) = &missing {
        eprintln!("ignored (every trial): {reason}");
    }
    libtest_mimic::run(&args, trials).exit_code()
}

fn check(condition: bool, message: impl FnOnce() -> String) -> Result<(), Failed> {
    if condition {
        Ok(())
    } else {
        Err(message().into())
    }
}

fn driver_used(ctx: &CudaContext) -> Result<u64, Failed> {
    let (free, total) = ctx.mem_get_info().map_err(|e| format!("{e:?}"))?;
    Ok((total - free) as u64)
}

/// A 256 MiB allocation through the tracked stream shows in the driver's figure and leaves
/// it when dropped; the timeline records both.
fn tracked_stream() -> Result<(), Failed> {
    let ctx = CudaContext::new(0).map_err(|e| format!("{e:?}"))?;
    let tracker = Tracker::new(ctx.total_mem().map_err(|e| format!("{e:?}"))? as u64);
    let stream = TrackedStream::new(ctx.default_stream(), &tracker);
    ctx.synchronize().map_err(|e| format!("{e:?}"))?;
    let before = driver_used(&ctx)?;
    let buffer = stream
        .alloc_zeros_labelled::<u8>(256 * MIB as usize, "buffer")
        .map_err(|e| format!("{e:?}"))?;
    ctx.synchronize().map_err(|e| format!("{e:?}"))?;
    let during = driver_used(&ctx)?;
    check(during >= before + 256 * MIB, || {
        format!("driver use went from {before} to {during} bytes")
    })?;
    drop(buffer);
    let timeline = tracker.timeline();
    gpumem_harness::assert_memory!(timeline, peak_allocated == "256 MiB");
    check(tracker.allocated_bytes() == 0, || {
        "free not recorded".into()
    })
}

/// The caching-allocator model on the card: each segment is a cuMemAlloc the driver sees.
fn model_segments() -> Result<(), Failed> {
    let mut device = cuda::tracked_device(0)?;
    let before = device.allocator().device().driver_used()?;
    let a = device.alloc(100 * MIB).map_err(|e| e.message)?;
    let after = device.allocator().device().driver_used()?;
    check(after >= before + 100 * MIB, || {
        format!("driver use went from {before} to {after} bytes")
    })?;
    device.free(a);
    device.empty_cache();
    let end = device.allocator().device().driver_used()?;
    check(end < after, || {
        format!("empty_cache left {end} bytes in use")
    })
}

/// A seed scenario on the card next to the model: prints both outcomes (for the README's
/// record of real-hardware runs) and requires the same OOM outcome.
fn seed_scenario(name: &str) -> Result<(), Failed> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join(format!("scenarios/{name}.yaml"));
    let scenario = gpumem_harness::scenario::load(&path, &format!("scenarios/{name}.yaml"))
        .map_err(|e| e.to_string())?;
    for variant in scenario.variants() {
        let mut on_card = variant.clone();
        on_card.device = Device::cuda(0);
        let real =
            gpumem_harness::run::run_variant(&scenario, &on_card).map_err(|e| e.to_string())?;
        let driver = real.driver.as_ref().ok_or("no driver observation")?;
        // The model with the memory the card left to this process when the run began.
        let mut matched = variant.clone();
        matched.device = Device {
            preset: None,
            capacity: driver.total_bytes - driver.used_before_run,
            context: 0,
        };
        let model =
            gpumem_harness::run::run_variant(&scenario, &matched).map_err(|e| e.to_string())?;
        let describe = |t: &gpumem_harness::timeline::Timeline| {
            format!(
                "oom at {:?}, peak allocated {} B, peak reserved {} B",
                t.oom.as_ref().and_then(|o| o.iteration),
                t.peak_allocated(),
                t.peak_reserved()
            )
        };
        println!(
            "{name}::{}: cuda:0 ({}, {} B free at start) {}; model with that capacity {}",
            variant.name(),
            driver.device_name,
            matched.device.capacity,
            describe(&real),
            describe(&model)
        );
        check(model.oom.is_some() == real.oom.is_some(), || {
            format!(
                "{}: the model and the card disagree on the OOM",
                variant.name()
            )
        })?;
    }
    Ok(())
}
