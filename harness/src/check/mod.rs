//! Expectations to verdicts. Each verdict's message says what was expected, what was measured
//! and where in the workload it happened, so a failing check points at the line to fix.
//!
//! Semantics of each check:
//! - `oom`: whether the timeline ended in an out-of-memory error.
//! - `peak_allocated` / `peak_reserved`: the bound against the highest allocated / reserved
//!   bytes; evaluated on OOM runs too (the peak before the failure).
//! - `steady_state { warmup, tolerance }`: allocated bytes at the end of every completed
//!   iteration after the first `warmup` stay within `tolerance` of the first of them.
//! - `leak_per_iteration`: the least-squares slope of allocated bytes at the end of the
//!   completed iterations after iteration 0, rounded to whole bytes. The slope is *signed*: a
//!   shrinking run has a negative slope, which satisfies `<` and `<=` bounds and fails `>` and
//!   `>=` bounds.
//! - `cycles: none`: the cycle collector freed no device bytes.
//!
//! Steady-state and leak checks need `warmup + 2` completed iterations (leak: 3) and fail,
//! rather than pass vacuously, on shorter runs.

pub mod locate;
pub mod series;

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod tests;

use crate::error::Location;
use crate::scenario::{ByteBound, Check, Comparison, Expectation};
use crate::timeline::Timeline;
use crate::units::Bytes;
use locate::{PeakSite, exact_bytes, signed_bytes};
use series::{Band, Boundary, TooFewIterations};

/// The outcome of one expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// "oom", "peak_allocated", "peak_reserved", "steady_state", "leak_per_iteration", "cycles".
    pub name: String,
    pub passed: bool,
    /// What was expected, what was measured, and where.
    pub message: String,
    /// Where the check is written in the scenario file.
    pub location: Location,
}

/// Judges each expectation against the timeline, in the order given.
pub fn evaluate(checks: &[&Expectation], timeline: &Timeline) -> Vec<Verdict> {
    checks
        .iter()
        .map(|expectation| {
            let (name, passed, message) = judge(&expectation.check, timeline);
            Verdict {
                name: name.to_string(),
                passed,
                message,
                location: expectation.location.clone(),
            }
        })
        .collect()
}

fn judge(check: &Check, timeline: &Timeline) -> (&'static str, bool, String) {
    match check {
        Check::Oom(expected) => {
            let (passed, message) = oom(*expected, timeline);
            ("oom", passed, message)
        }
        Check::PeakAllocated(bound) => {
            let site = locate::peak_allocated_site(timeline);
            let (passed, message) = peak("peak allocated", *bound, site, timeline);
            ("peak_allocated", passed, message)
        }
        Check::PeakReserved(bound) => {
            let site = locate::peak_reserved_site(timeline);
            let (passed, message) = peak("peak reserved", *bound, site, timeline);
            ("peak_reserved", passed, message)
        }
        Check::SteadyState { warmup, tolerance } => {
            let (passed, message) = steady_state(*warmup, *tolerance, timeline);
            ("steady_state", passed, message)
        }
        Check::LeakPerIteration(bound) => {
            let (passed, message) = leak_per_iteration(*bound, timeline);
            ("leak_per_iteration", passed, message)
        }
        Check::CyclesNone => {
            let (passed, message) = cycles_none(timeline);
            ("cycles", passed, message)
        }
    }
}

fn oom(expected: bool, timeline: &Timeline) -> (bool, String) {
    let completed = timeline.iterations_completed();
    match (&timeline.oom, expected) {
        (None, false) => (
            true,
            format!(
                "no OOM, as expected: {}",
                if timeline.iterations.is_empty() {
                    "the trace completed".to_string()
                } else {
                    format!(
                        "completed {completed} {}",
                        locate::plural(completed as usize, "iteration")
                    )
                }
            ),
        ),
        (None, true) => (
            false,
            format!(
                "expected an OOM, measured none: completed {completed} iterations with peak \
                 allocated {} and peak reserved {} of {}",
                Bytes(timeline.peak_allocated()),
                Bytes(timeline.peak_reserved()),
                Bytes(timeline.device_capacity)
            ),
        ),
        (Some(report), _) => {
            let when = locate::oom_when(timeline, report.iteration);
            let line = timeline
                .stacks
                .get(report.stack)
                .first()
                .map(|f| format!(" at {}", locate::frame_label(f)))
                .unwrap_or_default();
            let what = format!(
                "OOM{when}{line} requesting {}",
                Bytes(report.requested_bytes)
            );
            if expected {
                (true, format!("{what}, as expected"))
            } else {
                (
                    false,
                    format!("expected no OOM, measured {what}: {}", report.message),
                )
            }
        }
    }
}

fn peak(
    what: &str,
    bound: ByteBound,
    site: Option<PeakSite>,
    timeline: &Timeline,
) -> (bool, String) {
    let measured = site.as_ref().map_or(0, |s| s.bytes);
    let passed = bound.holds(measured);
    let place = match &site {
        Some(site) => format!(" at {}", site.describe(timeline)),
        None => " (nothing was allocated)".to_string(),
    };
    let message = if passed {
        format!("{what} {}{place}; bound {bound}", exact_bytes(measured))
    } else {
        format!(
            "expected {what} {bound}, measured {}{place}",
            exact_bytes(measured)
        )
    };
    (passed, message)
}

fn too_few(check: &str, shortage: TooFewIterations, timeline: &Timeline) -> String {
    let ended = if timeline.oom.is_some() {
        " before the OOM"
    } else {
        ""
    };
    format!(
        "{check} needs at least {} completed iterations to judge, measured {}{ended}",
        shortage.needed, shortage.completed
    )
}

fn steady_state(warmup: u32, tolerance: u64, timeline: &Timeline) -> (bool, String) {
    let boundaries = series::completed_boundaries(timeline);
    let band = match series::steady_band(&boundaries, warmup, tolerance) {
        Ok(band) => band,
        Err(shortage) => return (false, too_few("steady state", shortage, timeline)),
    };
    let Band {
        reference,
        first_exit,
        widest,
        last,
    } = band;
    let expected = format!(
        "allocated at the end of iterations {}-{} within ±{} of iteration {}'s {}",
        reference.iteration,
        last.iteration,
        Bytes(tolerance),
        reference.iteration,
        exact_bytes(reference.allocated)
    );
    match first_exit {
        None => (
            true,
            format!(
                "{expected}: widest move {} at iteration {}",
                signed_bytes(widest.1),
                widest.0.iteration
            ),
        ),
        Some((exit, delta)) => (
            false,
            format!(
                "expected {expected}; iteration {} ended at {}, {} from the reference ({} \
                 beyond the tolerance); widest move {} at iteration {}, last iteration {} ended \
                 at {}",
                exit.iteration,
                exact_bytes(exit.allocated),
                signed_bytes(delta),
                Bytes((delta.unsigned_abs() - tolerance as u128).min(u64::MAX as u128) as u64),
                signed_bytes(widest.1),
                widest.0.iteration,
                last.iteration,
                Bytes(last.allocated)
            ),
        ),
    }
}

/// A signed comparison: the slope may be negative, the bound's bytes never are.
fn signed_holds(bound: ByteBound, measured: i64) -> bool {
    let (m, b) = (measured as i128, bound.bytes as i128);
    match bound.op {
        Comparison::Lt => m < b,
        Comparison::Le => m <= b,
        Comparison::Gt => m > b,
        Comparison::Ge => m >= b,
        Comparison::Eq => m == b,
    }
}

fn leak_per_iteration(bound: ByteBound, timeline: &Timeline) -> (bool, String) {
    let boundaries = series::completed_boundaries(timeline);
    let slope = match series::growth_per_iteration(&boundaries) {
        Ok(slope) => slope,
        Err(shortage) => return (false, too_few("leak per iteration", shortage, timeline)),
    };
    let passed = signed_holds(bound, slope.bytes_per_iteration);
    let span = |b: Boundary| format!("{} at iteration {}", Bytes(b.allocated), b.iteration);
    let measured = format!(
        "{} per iteration ({} bytes, least squares over iterations {}-{}: {} to {})",
        signed_bytes(slope.bytes_per_iteration as i128),
        slope.bytes_per_iteration,
        slope.first.iteration,
        slope.last.iteration,
        span(slope.first),
        span(slope.last)
    );
    let message = if passed {
        format!("growth {measured}; bound {bound}")
    } else {
        format!("expected growth per iteration {bound}, measured {measured}")
    };
    (passed, message)
}

fn cycles_none(timeline: &Timeline) -> (bool, String) {
    let freeing: Vec<_> = timeline
        .gc_events
        .iter()
        .filter(|g| g.bytes_freed > 0)
        .collect();
    let Some(first) = freeing.first() else {
        return (
            true,
            format!(
                "the cycle collector freed no device memory in {} collections",
                timeline.collections_total()
            ),
        );
    };
    let (tensors, bytes) = timeline.collector_freed();
    let when = locate::gc_event_label(timeline, first);
    let trigger = if first.automatic {
        "automatic"
    } else {
        "gc.collect()"
    };
    let line = first
        .line
        .map(|l| format!(", line {l}"))
        .unwrap_or_default();
    let mut message = format!(
        "expected no device memory freed by the cycle collector, measured {} in {} tensors \
         over {} collections; first at {when} (generation {}, {trigger}{line}) freeing {}",
        exact_bytes(bytes),
        tensors,
        freeing.len(),
        first.generation,
        Bytes(first.bytes_freed)
    );
    if let Some(path) = timeline.cycle_reports.first() {
        let site = timeline
            .stacks
            .get(path.alloc_site)
            .first()
            .map(|f| format!(", allocated at {}", locate::frame_label(f)))
            .unwrap_or_default();
        message.push_str(&format!(
            "; held by {} in the cycle {} ({} of {}{site})",
            path.holder_path,
            path.cycle,
            path.tensor,
            Bytes(path.bytes_each)
        ));
    }
    (false, message)
}
