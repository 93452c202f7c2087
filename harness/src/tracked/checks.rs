//! The scenario checks for a Rust program's timeline: [`assert_memory!`](crate::assert_memory)
//! builds the same [`Expectation`]s a scenario's `expect` block holds, judged by the same
//! `check::evaluate`, and [`assert_golden!`](crate::assert_golden) keeps the same kind of
//! golden text with insta.

use crate::check::Verdict;
use crate::error::Location;
use crate::scenario::{Check, Expectation, parse_bound};
use crate::timeline::Timeline;
use crate::units::parse_bytes;

/// `name op "bound"` of `assert_memory!`: `peak_allocated`, `peak_reserved` or
/// `leak_per_iteration`, with `<`, `<=`, `>`, `>=` or `==` and a byte quantity.
pub fn bound_check(name: &str, op: &str, bound: &str) -> Result<Check, String> {
    let bound = parse_bound(&format!("{op} {bound}"))
        .map_err(|e| format!("`{name} {op} {bound:?}`: {e}"))?;
    match name {
        "peak_allocated" => Ok(Check::PeakAllocated(bound)),
        "peak_reserved" => Ok(Check::PeakReserved(bound)),
        "leak_per_iteration" => Ok(Check::LeakPerIteration(bound)),
        other => Err(format!(
            "unknown check `{other}`: expected peak_allocated, peak_reserved, \
             leak_per_iteration (each with a bound), steady_state or oom"
        )),
    }
}

/// `steady_state` (warm-up 1 iteration, tolerance 0) or
/// `steady_state(warmup = N, tolerance = "1 MiB")`.
pub fn steady_state_check(warmup: u32, tolerance: &str) -> Result<Check, String> {
    let tolerance = parse_bytes(tolerance).map_err(|e| format!("`steady_state` tolerance: {e}"))?;
    Ok(Check::SteadyState { warmup, tolerance })
}

/// `oom = true|false`.
pub fn oom_check(expected: bool) -> Result<Check, String> {
    Ok(Check::Oom(expected))
}

/// Judges `checks` (written at `file:line:column`) against `timeline`; panics with every
/// failed check's message, like a failing scenario trial. Returns the verdicts otherwise.
#[track_caller]
pub fn assert_checks(
    timeline: &Timeline,
    checks: Vec<Result<Check, String>>,
    location: (&str, u32, u32),
) -> Vec<Verdict> {
    let (file, line, column) = location;
    let location = Location::new(file, line, column);
    let mut expectations = Vec::new();
    for check in checks {
        match check {
            Ok(check) => expectations.push(Expectation {
                check,
                location: location.clone(),
            }),
            Err(message) => panic!("{location}: assert_memory!: {message}"),
        }
    }
    let refs: Vec<&Expectation> = expectations.iter().collect();
    let verdicts = crate::check::evaluate(&refs, timeline);
    let failed: Vec<String> = verdicts
        .iter()
        .filter(|v| !v.passed)
        .map(|v| format!("  {} failed: {}", v.name, v.message))
        .collect();
    if !failed.is_empty() {
        panic!("{location}: memory checks failed:\n{}", failed.join("\n"));
    }
    verdicts
}

/// The golden text of a tracked timeline (see `report::tracked_golden_text`).
pub fn golden_text(name: &str, timeline: &Timeline) -> String {
    crate::report::tracked_golden_text(name, timeline)
}

/// Asserts the memory checks of a scenario's `expect` block on a [`Timeline`], panicking with
/// the failed checks' messages. Checks, separated by commas:
///
/// - `peak_allocated <= "2 GiB"`, `peak_reserved < "3 GiB"`, `leak_per_iteration <= "0 B"`
///   (`<`, `<=`, `>`, `>=`, `==`);
/// - `steady_state` or `steady_state(warmup = 5, tolerance = "1 MiB")`;
/// - `oom = false`.
///
/// ```
/// use gpumem_harness::tracked::TrackedDevice;
/// use gpumem_harness::allocator::SimulatedDevice;
///
/// let mut device = TrackedDevice::new(SimulatedDevice::new(1 << 30));
/// let tracker = device.tracker().clone();
/// for _ in 0..4 {
///     tracker.iteration(|| {
///         let a = device.alloc_labelled(4 << 20, "activations").unwrap();
///         device.free(a);
///     });
/// }
/// gpumem_harness::assert_memory!(
///     tracker.timeline(),
///     peak_allocated <= "4 MiB",
///     steady_state,
///     leak_per_iteration <= "0 B",
///     oom = false,
/// );
/// ```
#[macro_export]
macro_rules! assert_memory {
    ($timeline:expr $(, $($checks:tt)*)?) => {
        $crate::tracked::assert_checks(
            &$timeline,
            $crate::__memory_checks!([] $($($checks)*)?),
            (file!(), line!(), column!()),
        )
    };
}

/// The check list of [`assert_memory!`]: one check at a time into an accumulator, then a
/// `vec!` of them.
#[doc(hidden)]
#[macro_export]
macro_rules! __memory_checks {
    ([$($done:expr,)*]) => {
        ::std::vec![$($done),*]
    };
    ([$($done:expr,)*] steady_state ( warmup = $warmup:expr, tolerance = $tolerance:expr $(,)? ) $(, $($rest:tt)*)?) => {
        $crate::__memory_checks!(
            [$($done,)* $crate::tracked::steady_state_check($warmup, $tolerance),] $($($rest)*)?
        )
    };
    ([$($done:expr,)*] steady_state $(, $($rest:tt)*)?) => {
        $crate::__memory_checks!(
            [$($done,)* $crate::tracked::steady_state_check(1, "0 B"),] $($($rest)*)?
        )
    };
    ([$($done:expr,)*] oom = $expected:expr $(, $($rest:tt)*)?) => {
        $crate::__memory_checks!(
            [$($done,)* $crate::tracked::oom_check($expected),] $($($rest)*)?
        )
    };
    ([$($done:expr,)*] $name:ident $op:tt $bound:expr $(, $($rest:tt)*)?) => {
        $crate::__memory_checks!(
            [$($done,)* $crate::tracked::bound_check(stringify!($name), stringify!($op), $bound),]
            $($($rest)*)?
        )
    };
}

/// Compares a tracked timeline's golden text with the insta snapshot `name` next to the
/// calling test (`snapshots/<crate>__<name>.snap`), exactly as scenario trials keep theirs:
/// a new or changed text fails and is left as `.snap.new` for `cargo insta review`.
#[macro_export]
macro_rules! assert_golden {
    ($name:expr, $timeline:expr $(,)?) => {{
        let text = $crate::tracked::golden_text($name, &$timeline);
        $crate::__insta::assert_snapshot!($name, text);
    }};
}
