//! The Rust API and the CUDA backend through the real dynamic-loading path, on the fake
//! driver (`fake-cuda-driver`, a test double of libcuda.so.1 backed by host memory).
//!
//! The dynamic loader reads `LD_LIBRARY_PATH` when a process starts, so each test runs
//! itself again in a child process with the fake driver's folder on that path and checks
//! that the child passed. Tests that need a real GPU are in `cuda_real_gpu.rs`.

use std::process::Command;

use cudarc::driver::CudaContext;
use gpumem_harness::cuda::{self, CudaDriverMemory, TrackedStream, Tracker};
use gpumem_harness::timeline::Action;

/// Set in the child process that runs under the fake driver.
const CHILD: &str = "GPUMEM_TEST_UNDER_FAKE_DRIVER";
const MIB: u64 = 1 << 20;

/// In the parent: runs test `name` in a child under the fake driver with `env`, asserts it
/// passed and returns false. In the child: returns true (run the test's body).
fn under_fake_driver(name: &str, env: &[(&str, String)]) -> bool {
    if std::env::var_os(CHILD).is_some() {
        return true;
    }
    let output = Command::new(std::env::current_exe().expect("the test binary"))
        .args([name, "--exact", "--nocapture", "--test-threads=1"])
        .env("LD_LIBRARY_PATH", fake_cuda_driver::ld_library_path())
        .env(CHILD, "1")
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .output()
        .expect("run the test binary again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "{name} under the fake driver:\n{text}"
    );
    assert!(text.contains("1 passed"), "{name} did not run:\n{text}");
    false
}

fn capacity(bytes: u64) -> (&'static str, String) {
    (fake_cuda_driver::env::CAPACITY, bytes.to_string())
}

#[test]
fn tracked_stream_records_cudarc_allocations_with_their_sites() {
    if !under_fake_driver(
        "tracked_stream_records_cudarc_allocations_with_their_sites",
        &[capacity(64 * MIB)],
    ) {
        return;
    }
    let ctx = CudaContext::new(0).expect("the fake device");
    let tracker = Tracker::new(ctx.total_mem().unwrap() as u64);
    let stream = TrackedStream::new(ctx.default_stream(), &tracker);
    let weights = stream
        .alloc_zeros_labelled::<f32>(1 << 20, "weights")
        .unwrap();
    for _ in 0..4 {
        tracker.iteration(|| {
            let activations = stream
                .alloc_zeros_labelled::<f32>(2 << 20, "activations")
                .unwrap();
            let grads = stream.clone_htod(&vec![0u8; 3 << 20]).unwrap();
            assert_eq!(activations.len(), 2 << 20);
            drop((activations, grads));
        });
    }
    let timeline = tracker.timeline();
    gpumem_harness::assert_memory!(
        timeline,
        peak_allocated == "15 MiB",
        steady_state,
        leak_per_iteration <= "0 B",
        oom = false,
    );
    gpumem_harness::assert_golden!("tracked_stream_steady", timeline);
    drop(weights);
    assert_eq!(tracker.allocated_bytes(), 0);
    // Every allocation and free reached the driver: its free memory is back to the start.
    let (free, total) = ctx.mem_get_info().unwrap();
    assert_eq!(free, total);
}

#[test]
fn a_driver_out_of_memory_is_recorded_as_the_timelines_oom() {
    if !under_fake_driver(
        "a_driver_out_of_memory_is_recorded_as_the_timelines_oom",
        &[capacity(16 * MIB)],
    ) {
        return;
    }
    let ctx = CudaContext::new(0).unwrap();
    let tracker = Tracker::new(16 * MIB);
    let stream = TrackedStream::new(ctx.default_stream(), &tracker);
    let mut kept = Vec::new();
    let mut error = None;
    for _ in 0..10 {
        let step = tracker.iteration(|| stream.alloc_zeros_labelled::<u8>(5 << 20, "kept"));
        match step {
            Ok(buffer) => kept.push(buffer),
            Err(e) => {
                error = Some(e);
                break;
            }
        }
    }
    let error = cuda::probe::describe(error.expect("the fourth 5 MiB allocation fails"));
    assert!(error.starts_with("CUDA_ERROR_OUT_OF_MEMORY"), "{error}");
    let timeline = tracker.timeline();
    assert_eq!(timeline.oom.as_ref().unwrap().iteration, Some(3));
    assert_eq!(timeline.iterations_completed(), 3);
    gpumem_harness::assert_memory!(timeline, oom = true, peak_allocated == "15 MiB");
}

#[test]
fn the_model_on_the_driver_flushes_and_retries_before_its_oom() {
    if !under_fake_driver(
        "the_model_on_the_driver_flushes_and_retries_before_its_oom",
        &[
            capacity(68 * MIB),
            (fake_cuda_driver::env::CONTEXT_BYTES, (4 * MIB).to_string()),
        ],
    ) {
        return;
    }
    // 64 MiB usable beside the context: two 30 MiB segments fit, then a 32 MiB request needs
    // the cached one returned to the driver first, and a 40 MiB request cannot be met at all.
    let mut device = cuda::tracked_device(0).expect("the fake device");
    let tracker = device.tracker().clone();
    let first = device.alloc(30 * MIB).unwrap();
    let kept = device.alloc(30 * MIB).unwrap();
    device.free(first);
    let retried = tracker.iteration(|| device.alloc(32 * MIB)).unwrap();
    assert_eq!(device.allocator().stats().num_alloc_retries, 1);
    let oom = tracker.iteration(|| device.alloc(40 * MIB)).unwrap_err();
    // torch's message with the driver's figures (the context's 4 MiB count as in use).
    for part in [
        "GPU 0 has a total capacity of 68.00 MiB of which 2.00 MiB is free",
        "this process has 66.00 MiB memory in use",
        "62.00 MiB is allocated by PyTorch",
    ] {
        assert!(oom.message.contains(part), "{}", oom.message);
    }
    let timeline = tracker.timeline();
    let actions: Vec<Action> = timeline.events.iter().map(|e| e.action).collect();
    assert_eq!(
        actions
            .iter()
            .filter(|a| **a == Action::SegmentFree)
            .count(),
        1
    );
    assert_eq!(actions.last(), Some(&Action::Oom));
    device.free(kept);
    device.free(retried);
    device.empty_cache();
    let memory: &CudaDriverMemory = device.allocator().device();
    assert_eq!(memory.driver_used().unwrap(), 4 * MIB);
}
