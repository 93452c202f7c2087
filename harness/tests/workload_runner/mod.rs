//! Runs a workload as a one-variant scenario on the modelled H100 under CPython 3.11: the
//! torch tests state PyTorch's bytes as `assert`s inside the workload, so running it is the
//! test. Each test binary uses a subset, hence `dead_code` is allowed per function.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// Runs every variant of the workload; the first error (parse, unsupported, failed
/// `assert`, out of memory) as text.
#[allow(dead_code)]
pub fn run(workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    for v in s.variants() {
        run_variant(&s, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Runs the workload and panics with its error.
#[allow(dead_code)]
pub fn ok(workload: &str) {
    if let Err(e) = run(workload) {
        panic!("{e}");
    }
}

/// Runs the workload, which must fail; returns the error text.
#[allow(dead_code)]
pub fn fails(workload: &str) -> String {
    match run(workload) {
        Ok(()) => panic!("the workload ran, but an error was expected"),
        Err(e) => e,
    }
}
