//! `cargo gpumem run FILE --python-matrix`: a scenario's variants run under every CPython
//! collector the model knows, one summary line per version, so that a difference between
//! releases (a cycle that is harmless on 3.13 and an OOM on 3.14.0 - 3.14.4) shows at a glance.

use crate::error::Error;
use crate::run::run_variant;
use crate::scenario::{GcStartState, PythonProfile, Scenario, VERSION_MATRIX, Variant};
use crate::timeline::Timeline;

/// One line per version of [`VERSION_MATRIX`] for `variant`: outcome, peak allocated,
/// automatic and explicit collections, bytes the cycle collector freed.
pub fn matrix_lines(scenario: &Scenario, variant: &Variant) -> Result<Vec<String>, Error> {
    let mut lines = Vec::with_capacity(VERSION_MATRIX.len());
    for text in VERSION_MATRIX {
        let version =
            crate::scenario::version_from_str(text).expect("the matrix lists known versions");
        let mut v = variant.clone();
        v.python = if variant.python.start_given {
            PythonProfile {
                version,
                ..variant.python.clone()
            }
        } else {
            PythonProfile {
                version,
                start: GcStartState::after_import_torch(version),
                start_given: false,
            }
        };
        let timeline = run_variant(scenario, &v)?;
        lines.push(format!("python {text:<7} {}", summary(&timeline)));
    }
    Ok(lines)
}

/// `OOM at iteration 844`/`completed 3000 iterations`, peak, collections, cycle-freed bytes.
fn summary(timeline: &Timeline) -> String {
    let outcome = match &timeline.oom {
        Some(oom) => match oom.iteration {
            Some(i) => format!("OOM at iteration {i}"),
            None => "OOM".to_string(),
        },
        None => format!("completed {} iterations", timeline.iteration_count()),
    };
    let automatic: u64 = (0..3).map(|g| timeline.collections(true, g)).sum();
    let explicit = timeline.collections_total() - automatic;
    let freed = timeline.collector_freed().1;
    format!(
        "{outcome:<28} peak {:>10}  collections {automatic:>4} automatic {explicit:>4} explicit  cycle-freed {}",
        crate::units::Bytes(timeline.peak_allocated()).to_string(),
        crate::units::Bytes(freed),
    )
}
