//! `device: { ..., context: "..." }`: the CUDA context's bytes are taken from the modelled
//! device before the workload runs, so an allocation that fits the card without a context
//! runs out of memory with one; bad values are located errors.

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

fn run(device: &str, workload: &str) -> Result<(), String> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let text = format!("name: t\ndevice: {device}\npython: \"3.11\"\nworkload: |\n{body}");
    let s = scenario::parse(&text, "t.yaml").map_err(|e| e.to_string())?;
    for v in s.variants() {
        run_variant(&s, &v).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Allocates 1.5 GiB and records whether it ran out of memory, and the message.
const ALLOCATE: &str = "oom = False
try:
    x = torch.empty(3 * 256 * 1024 * 1024, dtype=torch.float16, device='cuda')
except torch.cuda.OutOfMemoryError as e:
    oom = True
    message = str(e)
assert torch.cuda.memory_allocated() == (0 if oom else 1536 * 1024 * 1024)
";

#[test]
fn the_context_takes_device_memory_before_the_workload() {
    run(
        "{ capacity: \"2 GiB\" }",
        &format!("{ALLOCATE}assert not oom\n"),
    )
    .unwrap();
    run(
        "{ capacity: \"2 GiB\", context: \"768 MiB\" }",
        &format!(
            "{ALLOCATE}assert oom
# The context counts as this process's non-PyTorch memory.
assert 'of which 1.25 GiB is free' in message, message
assert 'this process has 768.00 MiB memory in use' in message, message
"
        ),
    )
    .unwrap();
    run(
        "{ preset: h100-80gb, context: \"530 MiB\" }",
        "assert torch.cuda.memory_allocated() == 0\n",
    )
    .unwrap();
}

#[test]
fn bad_context_values_are_located_errors() {
    let e = run("{ capacity: \"1 GiB\", context: \"2 GiB\" }", "x = 1\n").unwrap_err();
    assert!(
        e.contains("t.yaml:2:") && e.contains("must be below the device's capacity"),
        "{e}"
    );
    let e = run("{ capacity: \"1 GiB\", context: 500 }", "x = 1\n").unwrap_err();
    assert!(e.contains("`device.context`"), "{e}");
    let e = run("{ preset: cuda, context: \"500 MiB\" }", "x = 1\n").unwrap_err();
    assert!(e.contains("applies to a modelled device"), "{e}");
    let e = run("{ preset: h100-80gb, capacity: \"1 GiB\" }", "x = 1\n").unwrap_err();
    assert!(e.contains("either `preset` or `capacity`"), "{e}");
}

/// The run's approximation notes state the context the scenario gave, and say the context
/// is not modelled only when none was given.
#[test]
fn the_approximation_notes_name_the_context_when_one_is_given() {
    let notes = |device: &str| {
        let text = format!("name: t\ndevice: {device}\npython: \"3.11\"\nworkload: |\n  x = 1\n");
        let s = scenario::parse(&text, "t.yaml").expect("parses");
        let v = s.variants().remove(0);
        run_variant(&s, &v).expect("runs").approximations.join("\n")
    };
    let with = notes("{ capacity: \"2 GiB\", context: \"768 MiB\" }");
    assert!(with.contains("`device.context` (768.00 MiB)"), "{with}");
    let without = notes("{ capacity: \"2 GiB\" }");
    assert!(
        without.contains("the CUDA context and other processes are not modelled"),
        "{without}"
    );
}
