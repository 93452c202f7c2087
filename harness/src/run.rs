//! Runs one variant of a scenario on the model and returns its timeline.

use crate::allocator::{DeviceMemory, SimulatedDevice};
use crate::error::Error;
use crate::heap::Value;
use crate::python::{self, Interpreter, SourceMap};
use crate::scenario::{Scenario, VarValue, Variant};
use crate::timeline::Timeline;

pub use crate::run_failure::Failure;

/// Runs `variant` of `scenario`: parses the workload, binds the `vary` values as globals,
/// and runs it on the CPython/PyTorch model with the variant's Python version and device.
/// An out-of-memory error ends the run normally (the timeline records it); workload errors
/// are returned with their place in the scenario file.
///
/// A scenario with `replay:` instead of a workload reads its snapshot and replays the
/// requests on the variant's device (see `scenario::replay`).
///
/// The workload runs on a thread of its own with a large stack: the interpreter recurses with
/// the workload's calls and expressions, and test runners' threads have small stacks.
pub fn run_variant(scenario: &Scenario, variant: &Variant) -> Result<Timeline, Error> {
    run_variant_keeping_output(scenario, variant).map_err(|failure| failure.error)
}

/// [`run_variant`], keeping what a failed workload printed before its error and the error's
/// Python traceback (see [`Failure`]).
pub fn run_variant_keeping_output(
    scenario: &Scenario,
    variant: &Variant,
) -> Result<Timeline, Box<Failure>> {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("gpumem-workload".into())
            .stack_size(WORKLOAD_STACK_BYTES)
            .spawn_scoped(scope, || run_on_this_thread(scenario, variant))
            .map_err(|e| Error::Usage(format!("could not start the workload thread: {e}")))?;
        worker.join().unwrap_or_else(|_| {
            Err(Error::Usage(format!(
                "internal error: the model panicked while running {} (please report it with the scenario file)",
                scenario.file
            ))
            .into())
        })
    })
}

/// Runs `f` (rendering a report, writing an export: work on the caller's thread after the
/// workload thread has finished) so that a panic in the model's own code does not abort the
/// command with a backtrace: the panic message is kept, the default hook's output is
/// silenced for this thread, and the caller gets an error that exits with
/// [`crate::exit_code::BAD_INPUT`] (2), like a panic inside the workload thread does.
pub fn contain_panic<T>(
    scenario_file: &str,
    doing: &str,
    f: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Error> {
    let caught = silenced(|| std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    caught.unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".to_string());
        Err(Error::Usage(format!(
            "internal error: the model panicked while {doing} for {scenario_file}: {message} (please report it with the scenario file)"
        )))
    })
}

thread_local! {
    static PANIC_HOOK_SILENCED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with the panic hook silent on this thread (other threads report as usual).
fn silenced<R>(f: impl FnOnce() -> R) -> R {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !PANIC_HOOK_SILENCED.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    let was = PANIC_HOOK_SILENCED.with(|s| s.replace(true));
    let result = f();
    PANIC_HOOK_SILENCED.with(|s| s.set(was));
    result
}

/// Stack of the workload thread: enough for CPython's 1000-call recursion limit and the
/// deepest expressions the interpreter accepts (address space, committed only as used).
const WORKLOAD_STACK_BYTES: usize = 512 << 20;

fn run_on_this_thread(scenario: &Scenario, variant: &Variant) -> Result<Timeline, Box<Failure>> {
    let real_device = variant.device.cuda_ordinal();
    if let (Some(_), Some(_)) = (&scenario.replay, real_device) {
        return Err(Error::Usage(format!(
            "{}: a `replay:` scenario runs on the allocator model only; `device: cuda` needs a workload",
            scenario.file
        ))
        .into());
    }
    if let Some(replay) = &scenario.replay {
        return Ok(crate::snapshot_format::check::replay_timeline(
            &replay.path,
            &replay.display,
            variant.device.capacity,
        )?);
    }
    let module = python::parse(&scenario.workload, &scenario.file)?;
    python::static_check::check_module(&module.body, scenario)?;
    let map = SourceMap::new(&scenario.workload, &scenario.file);
    let _exclusive = real_device.map(|_| crate::real_device::exclusive_use());
    let (device, finish_real_device): (Box<dyn DeviceMemory>, _) = match real_device {
        Some(ordinal) => {
            let opened = crate::real_device::open(ordinal, &scenario.file)?;
            (opened.memory, Some(opened.finish))
        }
        None => {
            let mut simulated = SimulatedDevice::new(variant.device.capacity);
            // The CUDA context is taken before the workload; the parser keeps it below the
            // capacity.
            if variant.device.context > 0 {
                let _ =
                    crate::allocator::DeviceMemory::malloc(&mut simulated, variant.device.context);
            }
            (Box::new(simulated), None)
        }
    };
    let mut interp = Interpreter::with_device(
        &module.body,
        map,
        variant.python.version,
        &variant.python.start,
        device,
    );
    interp.set_limits(scenario.limits);
    // Checked by `python::parse` above.
    interp.set_measured_loop(
        python::measured_loop::find(&scenario.workload.source, &module.body)
            .ok()
            .flatten(),
    );
    interp.set_module_loops(python::measured_loop::module_loops(&module.body));
    let allocator = scenario.allocator_for(variant);
    if !allocator.is_empty() {
        // Checked when the file was read.
        interp
            .configure_allocator(&allocator)
            .map_err(|e| Error::Usage(format!("{}: allocator: {e}", scenario.file)))?;
    }
    for (name, value) in &variant.values {
        let v = match value {
            VarValue::None => Value::None,
            VarValue::Bool(b) => Value::Bool(*b),
            VarValue::Int(i) => Value::Int(*i),
            VarValue::Float(f) => Value::Float(*f),
            VarValue::Str(s) => Value::Str(interp.names.intern(s)),
        };
        interp.set_global(name, v);
    }
    let ran = interp.run();
    let traceback = interp.take_uncaught_traceback();
    let mut timeline = interp.finish();
    // The device is released (its segments freed) with the interpreter, before the driver's
    // log is read.
    if let Some(finish) = finish_real_device {
        finish(&mut timeline)?;
    }
    if let Err(error) = ran {
        return Err(Box::new(Failure {
            error,
            printed: timeline.printed,
            traceback,
        }));
    }
    let version = variant.python.version;
    if !variant.python.start_given {
        let (origin, why) = if version == crate::scenario::PyVersion::minor(11) {
            (
                "measured after `import torch` on CPython 3.11".to_string(),
                "",
            )
        } else {
            (
                format!(
                    "derived for CPython {version} from the one measured after `import torch` on 3.11"
                ),
                "; torch could not be imported on other versions to measure theirs",
            )
        };
        timeline.approximations.push(format!(
            "The collector starts from the state {origin} (counts {:?}, {} long-lived objects{why}); collection iterations can shift by a few iterations against a real run.",
            variant.python.start.counts, variant.python.start.long_lived_total
        ));
    }
    match crate::heap::Collector::for_version(version) {
        crate::heap::Collector::Incremental => timeline.approximations.push(format!(
            "CPython {version}'s incremental collector is modelled from its source (Python/gc.c), not measured: no 3.14.0 - 3.14.4 interpreter was available. The MARK step starts from every object referenced from outside the tracked set rather than from CPython's global roots and thread stacks, and the heap size counts tracked objects only."
        )),
        crate::heap::Collector::FreeThreaded { .. } => timeline.approximations.push(format!(
            "CPython {version}: free-threaded collector with one workload thread, measured on a 3.13.5 free-threaded build (collections within two iterations); 3.14t's deferral of collections until the process's memory has grown (GH-133464) is not modelled."
        )),
        crate::heap::Collector::Generational => {}
    }
    Ok(timeline)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_while_rendering_becomes_an_exit_2_error_with_its_message() {
        let result: Result<(), Error> = contain_panic("s.yaml", "rendering the report", || {
            panic!("index out of bounds: the len is 3 but the index is 7")
        });
        let err = result.expect_err("the panic is an error");
        assert_eq!(err.exit_code(), crate::exit_code::BAD_INPUT);
        let text = err.to_string();
        assert!(
            text.starts_with("internal error: the model panicked while rendering the report for s.yaml: index out of bounds"),
            "{text}"
        );
        // Formatted panic messages (a String payload) are kept too, and the hook is
        // restored: a value passes through unchanged.
        let formatted: Result<(), Error> =
            contain_panic("s.yaml", "writing", || panic!("{} {}", "bad", 7));
        assert!(
            formatted
                .unwrap_err()
                .to_string()
                .contains("writing for s.yaml: bad 7")
        );
        assert_eq!(contain_panic("s.yaml", "x", || Ok(5)).unwrap(), 5);
        assert!(!PANIC_HOOK_SILENCED.with(std::cell::Cell::get));
    }
}
