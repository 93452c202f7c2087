//! `cargo gpumem devices`, `run --device cuda` and `device: cuda` scenarios: without a
//! driver (a reason, exit 2 or an ignored trial, never a panic) and through the fake driver
//! (`fake-cuda-driver`, a test double of libcuda.so.1 backed by host memory), which exercises
//! the real dynamic loading, `cuMemAlloc` / `cuMemFree`, driver OOM and driver sampling.

use crate::Project;

const MIB: u64 = 1 << 20;

/// The blog's Node cycle scaled down: 4 MiB tensors, 300 iterations.
const SMALL_CYCLE: &str = r#"name: small_cycle
device: cuda
python: "3.11"
vary:
  gc_every: [0, 10]
workload: |
  class Node:
      def __init__(self, T):
          self.tensor = T
          self.link = None

  for i in range(300):
      A = torch.zeros(2**20, device="cuda")
      B = torch.zeros(2**20, device="cuda")
      a, b = Node(A), Node(B)
      a.link, b.link = b, a
      if gc_every and i % gc_every == 0:
          gc.collect()
  torch.cuda.empty_cache()
expect:
  - when: { gc_every: 0 }
    oom: true
  - when: { gc_every: 10 }
    oom: false
    peak_allocated: "<= 100 MiB"
"#;

/// Whether this machine has a CUDA driver of its own (then the no-driver tests cannot run).
fn real_driver_installed() -> bool {
    if gpumem_harness::cuda::driver_loadable().is_ok() {
        eprintln!("skipped: a CUDA driver is installed on this machine");
        return true;
    }
    false
}

/// The environment that puts the fake driver in front of the loader: a device of
/// `capacity` bytes whose context takes `context` bytes, logging to `log`.
fn fake_driver(capacity: u64, context: u64, log: &std::path::Path) -> Vec<(&'static str, String)> {
    use fake_cuda_driver::env;
    vec![
        (
            "LD_LIBRARY_PATH",
            fake_cuda_driver::ld_library_path()
                .to_string_lossy()
                .into_owned(),
        ),
        (env::CAPACITY, capacity.to_string()),
        (env::CONTEXT_BYTES, context.to_string()),
        (env::LOG, log.to_string_lossy().into_owned()),
    ]
}

fn borrowed<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

fn json_lines(stdout: &str) -> Vec<serde_json::Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn devices_without_a_driver_says_so() {
    if real_driver_installed() {
        return;
    }
    let out = Project::new().gpumem(&["devices"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        out.stdout,
        "no CUDA driver found (libcuda.so.1 not loadable)\n"
    );
}

#[test]
fn run_on_cuda_without_a_driver_exits_2_with_the_reason() {
    if real_driver_installed() {
        return;
    }
    let project = Project::new();
    project.write("small_cycle.yaml", SMALL_CYCLE);
    project.write(
        "model.yaml",
        &SMALL_CYCLE.replace("device: cuda", "device: h100-80gb"),
    );
    for args in [
        &["run", "small_cycle.yaml"][..],
        &["run", "model.yaml", "--device", "cuda"],
        &["run", "model.yaml", "--device", "cuda:1"],
    ] {
        let out = project.gpumem(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.all());
        assert!(
            out.stderr.contains("needs a CUDA device: no driver found"),
            "{args:?}: {}",
            out.all()
        );
        assert!(!out.all().contains("panicked"), "{}", out.all());
        assert!(out.stdout.is_empty(), "{}", out.stdout);
    }
    let bad = project.gpumem(&["run", "model.yaml", "--device", "cuda:x"]);
    assert_eq!(bad.code, 2, "{}", bad.all());
    assert!(
        bad.stderr
            .contains("`--device cuda:x`: expected `cuda` or `cuda:N`"),
        "{}",
        bad.all()
    );
}

#[test]
fn cuda_trials_are_ignored_with_the_reason_without_a_driver() {
    if real_driver_installed() {
        return;
    }
    let project = Project::new();
    project.write("scenarios/small_cycle.yaml", SMALL_CYCLE);
    let out = project.gpumem(&["test"]);
    assert_eq!(out.code, 0, "{}", out.all());
    for variant in ["gc_every=0", "gc_every=10"] {
        let name = format!("small_cycle::{variant} ");
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains(&name) && l.ends_with("... ignored")),
            "{name}\n{}",
            out.all()
        );
        let reason =
            format!("ignored small_cycle::{variant}: needs a CUDA device: no driver found");
        assert!(out.stderr.contains(&reason), "{reason}\n{}", out.all());
    }
    // Asked to run ignored trials, each says why it cannot.
    let out = project.gpumem(&["test", "--", "--ignored"]);
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout
            .contains("ignored (needs a CUDA device: no driver found)"),
        "{}",
        out.all()
    );
    assert!(project.files_under("scenarios/snapshots").is_empty());
}

#[test]
fn devices_lists_the_fake_drivers_devices() {
    let project = Project::new();
    let log = project.path("driver.log");
    let env = fake_driver(256 * MIB, 0, &log);
    let out = project.gpumem_with(&["devices"], &borrowed(&env));
    assert_eq!(out.code, 0, "{}", out.all());
    assert_eq!(
        out.stdout,
        "CUDA driver 12.8 (12080)\ncuda:0  gpumem fake CUDA device 0  256 MiB total, 256 MiB free\n"
    );
    let mut none = env.clone();
    none.push((fake_cuda_driver::env::DEVICES, "0".to_string()));
    let out = project.gpumem_with(&["devices"], &borrowed(&none));
    assert_eq!(out.code, 0, "{}", out.all());
    assert!(
        out.stdout.contains(
            "no usable device: CUDA_ERROR_NO_DEVICE (no CUDA-capable device is detected)"
        ),
        "{}",
        out.all()
    );
    let project = Project::new();
    project.write("small_cycle.yaml", SMALL_CYCLE);
    let out = project.gpumem_with(&["run", "small_cycle.yaml"], &borrowed(&none));
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr
            .contains("needs a CUDA device: CUDA_ERROR_NO_DEVICE"),
        "{}",
        out.all()
    );
    let out = project.gpumem_with(
        &["run", "small_cycle.yaml", "--device", "cuda:1"],
        &borrowed(&env),
    );
    assert_eq!(out.code, 2, "{}", out.all());
    assert!(
        out.stderr
            .contains("needs CUDA device 1: the driver reports 1 device"),
        "{}",
        out.all()
    );
}

/// (OOM iteration, peak allocated, peak reserved) of a JSON report.
fn outcome(report: &serde_json::Value) -> (serde_json::Value, u64, u64) {
    (
        report["oom"]["iteration"].clone(),
        report["peak_allocated_bytes"].as_u64().unwrap(),
        report["peak_reserved_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn a_cuda_scenario_allocates_its_segments_through_the_fake_driver() {
    let project = Project::new();
    project.write("small_cycle.yaml", SMALL_CYCLE);
    let log = project.path("driver.log");
    let context = 16 * MIB;
    let env = fake_driver(256 * MIB, context, &log);
    let out = project.gpumem_with(&["run", "small_cycle.yaml", "--json"], &borrowed(&env));
    assert_eq!(out.code, 0, "{}", out.all());
    let reports = json_lines(&out.stdout);
    assert_eq!(reports.len(), 2);

    // The same workload on the model with the memory the driver leaves beside the context:
    // the driver's refusals reproduce the model's OOM iteration and peaks exactly.
    let model = project.gpumem(&["run", "small_cycle.yaml", "--json", "--device", "240 MiB"]);
    assert_eq!(model.code, 0, "{}", model.all());
    let model = json_lines(&model.stdout);
    for (real, model) in reports.iter().zip(&model) {
        assert_eq!(outcome(real), outcome(model), "{real}\n{model}");
    }
    assert_eq!(reports[0]["oom"]["iteration"], 30);
    assert!(
        reports[0]["oom"]["message"]
            .as_str()
            .unwrap()
            .contains("GPU 0 has a total capacity of 256.00 MiB"),
        "{}",
        reports[0]
    );
    assert!(reports[1]["oom"].is_null());

    // At every iteration end the driver's figure is the model's reserved bytes plus the
    // context: nothing else is on the fake card.
    for report in &reports {
        let driver = &report["driver"];
        assert_eq!(driver["device_name"], "gpumem fake CUDA device 0");
        assert_eq!(driver["total_bytes"], 256 * MIB);
        assert_eq!(driver["used_before_run"], context);
        let samples = driver["samples"].as_array().unwrap();
        assert!(samples.len() >= 30, "{}", samples.len());
        for sample in samples {
            let (model, used) = (
                sample["model_reserved"].as_u64().unwrap(),
                sample["driver_used"].as_u64().unwrap(),
            );
            assert_eq!(used, model + context, "{sample}");
        }
    }

    // Every segment was a real cuMemAlloc, written once, and freed by the end of the run;
    // the gc_every=0 variant's OOM shows as two refusals (the first try and the retry after
    // the cache was flushed).
    let log = std::fs::read_to_string(&log).unwrap();
    let count = |what: &str| log.lines().filter(|l| l.starts_with(what)).count();
    let segments: usize = reports
        .iter()
        .map(|r| r["peak_reserved_bytes"].as_u64().unwrap())
        .sum::<u64>() as usize;
    assert!(count("alloc ") >= segments / (20 * MIB as usize), "{log}");
    assert_eq!(count("alloc "), count("free "), "{log}");
    assert_eq!(count("alloc "), count("memset "), "{log}");
    assert_eq!(count("oom "), 2, "{log}");
    assert!(
        log.lines()
            .filter(|l| l.starts_with("alloc "))
            .all(|l| l == "alloc 20971520 0"),
        "{log}"
    );
}

#[test]
fn a_cuda_trial_runs_through_the_fake_driver_with_the_models_golden_timeline() {
    let project = Project::new();
    project.write("scenarios/small_cycle.yaml", SMALL_CYCLE);
    let log = project.path("driver.log");
    let env = fake_driver(256 * MIB, 16 * MIB, &log);
    let first = project.gpumem_with(&["test"], &borrowed(&env));
    assert_eq!(first.code, 1, "{}", first.all());
    assert!(
        first.stdout.contains("2 failed; 0 ignored"),
        "{}",
        first.all()
    );
    let accepted = project.gpumem(&["accept"]);
    assert_eq!(accepted.code, 0, "{}", accepted.all());
    let again = project.gpumem_with(&["test"], &borrowed(&env));
    assert_eq!(again.code, 0, "{}", again.all());
    let golden =
        std::fs::read_to_string(project.path("scenarios/snapshots/small_cycle@gc_every=0.snap"))
            .unwrap();
    assert!(
        golden.contains("device    cuda (a real GPU through the CUDA driver)"),
        "{golden}"
    );
    assert!(golden.contains("OOM at iteration 30"), "{golden}");
    // The driver's figures depend on the machine: they stay out of the golden text.
    assert!(!golden.contains("driver in use"), "{golden}");
}
