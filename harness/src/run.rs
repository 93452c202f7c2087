//! Runs one variant of a scenario on the model and returns its timeline.

use crate::allocator::{DeviceMemory, SimulatedDevice};
use crate::error::Error;
use crate::heap::Value;
use crate::python::{self, Interpreter, SourceMap};
use crate::scenario::{Scenario, VarValue, Variant};
use crate::timeline::Timeline;

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
            )))
        })
    })
}

/// Stack of the workload thread: enough for CPython's 1000-call recursion limit and the
/// deepest expressions the interpreter accepts (address space, committed only as used).
const WORKLOAD_STACK_BYTES: usize = 512 << 20;

fn run_on_this_thread(scenario: &Scenario, variant: &Variant) -> Result<Timeline, Error> {
    let real_device = variant.device.cuda_ordinal();
    if let (Some(_), Some(_)) = (&scenario.replay, real_device) {
        return Err(Error::Usage(format!(
            "{}: a `replay:` scenario runs on the allocator model only; `device: cuda` needs a workload",
            scenario.file
        )));
    }
    if let Some(replay) = &scenario.replay {
        return crate::snapshot_format::check::replay_timeline(
            &replay.path,
            &replay.display,
            variant.device.capacity,
        );
    }
    let module = python::parse(&scenario.workload, &scenario.file)?;
    let map = SourceMap::new(&scenario.workload, &scenario.file);
    let _exclusive = real_device.map(|_| crate::real_device::exclusive_use());
    let (device, finish_real_device): (Box<dyn DeviceMemory>, _) = match real_device {
        Some(ordinal) => {
            let opened = crate::real_device::open(ordinal, &scenario.file)?;
            (opened.memory, Some(opened.finish))
        }
        None => (
            Box::new(SimulatedDevice::new(variant.device.capacity)),
            None,
        ),
    };
    let mut interp = Interpreter::with_device(
        &module.body,
        map,
        variant.python.version,
        &variant.python.start,
        device,
    );
    interp.set_limits(scenario.limits);
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
    let mut timeline = interp.finish();
    // The device is released (its segments freed) with the interpreter, before the driver's
    // log is read.
    if let Some(finish) = finish_real_device {
        finish(&mut timeline)?;
    }
    ran?;
    if !variant.python.start_given {
        timeline.approximations.push(format!(
            "The collector starts from the state measured after `import torch` on CPython 3.11 (counts {:?}, {} long-lived objects); collection iterations can shift by a few iterations against a real run.",
            variant.python.start.counts, variant.python.start.long_lived_total
        ));
    }
    Ok(timeline)
}
