//! `python:` — which CPython version's collector the workload runs under, and the collector's
//! state when the workload starts.

use super::model::{GcStartState, PyVersion, PythonProfile};
use super::parse::Context;
use super::yaml_tree::{Node, Value};
use crate::error::Error;

/// The CPython minor versions whose collector the model knows.
pub const SUPPORTED_MINORS: std::ops::RangeInclusive<u8> = 8..=15;

/// Minor versions that have a free-threaded build the model knows (`"3.13t"`, `"3.14t"`).
pub const FREE_THREADED_MINORS: std::ops::RangeInclusive<u8> = 13..=14;

/// One version per distinct collector behaviour, oldest first: what `vary: { python: all }`
/// and `--python-matrix` run. `"3.14.4"` stands for 3.14.0 - 3.14.4 (the incremental
/// collector), `"3.14"` for 3.14.5 and later (the generational collector again).
pub const VERSION_MATRIX: &[&str] = &[
    "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14.4", "3.14", "3.15", "3.13t", "3.14t",
];

/// The supported versions in words, for error messages.
pub fn supported_versions_text() -> String {
    format!(
        "\"3.{}\" to \"3.{}\" (\"3.14\" is 3.14.5 and later; \"3.14.0\" to \"3.14.4\" select the incremental collector those releases shipped), a patch release of any of them (\"3.11.7\"), and the free-threaded builds \"3.13t\" and \"3.14t\" (or a patch release, \"3.13.5t\"); `vary` also takes `python: all`",
        SUPPORTED_MINORS.start(),
        SUPPORTED_MINORS.end()
    )
}

impl GcStartState {
    /// The collector just after `import torch`, before the workload's first statement.
    ///
    /// Measured with torch 2.15 on CPython 3.11 only: `gc.get_count()` is (284, 6, 0) after the
    /// import and the oldest generation holds about 179 000 tracked objects. torch cannot be
    /// imported on this project's other interpreters, so the other versions' states are
    /// derived from that one, not measured:
    /// - the long-lived objects are taken to be the same 179 000 (the import creates the same
    ///   modules, classes and functions);
    /// - the counts are the same net allocations since the import's last collection of
    ///   generation 1 (6 x 700 + 284 = 4484 with 3.11's threshold 700), spread over the version's
    ///   own threshold: (4484 mod 2000, 4484 / 2000, 0) = (484, 2, 0) where threshold 0 is 2000
    ///   (3.13 and later, the incremental and free-threaded collectors' young count);
    /// - 3.8 - 3.12 share 3.11's threshold 700, hence its counts.
    pub fn after_import_torch(version: PyVersion) -> Self {
        const LONG_LIVED: u64 = 179_000;
        const NET_SINCE_GENERATION_1: u64 = 6 * 700 + 284;
        let threshold0 = crate::heap::GcProfile::for_version(version).thresholds[0];
        GcStartState {
            counts: [
                NET_SINCE_GENERATION_1 % threshold0,
                NET_SINCE_GENERATION_1 / threshold0,
                0,
            ],
            long_lived_total: LONG_LIVED,
            // Importing torch allocates and frees far more than the free lists hold.
            free_lists_full: true,
            count_below_zero: 0,
            gc_callbacks: 0,
        }
    }
}

/// `python: "3.11"` or `python: { version: "3.11", start: { counts: [..], long_lived_total: N } }`.
pub(crate) fn parse_python(cx: &Context<'_>, node: &Node) -> Result<PythonProfile, Error> {
    let Value::Map(entries) = &node.value else {
        let version = parse_version(cx, node)?;
        return Ok(PythonProfile {
            version,
            start: GcStartState::after_import_torch(version),
            start_given: false,
        });
    };
    let keys = cx.keys(entries, &["version", "start"], "`python`")?;
    let version_node = keys.required(
        "version",
        "missing `version` in `python`, e.g. `version: \"3.11\"`",
        cx,
        node.at,
    )?;
    let version = parse_version(cx, version_node)?;
    let Some(start_node) = keys.get("start") else {
        return Ok(PythonProfile {
            version,
            start: GcStartState::after_import_torch(version),
            start_given: false,
        });
    };
    let start_entries = cx.mapping(start_node, "python.start")?;
    let start_keys = cx.keys(
        start_entries,
        &["counts", "long_lived_total", "free_lists", "gc_callbacks"],
        "`python.start`",
    )?;
    let counts_node = start_keys.required(
        "counts",
        "missing `counts` in `python.start`: the three `gc.get_count()` values, e.g. [284, 6, 0]",
        cx,
        start_node.at,
    )?;
    let mut count_below_zero = 0;
    let counts = match &counts_node.value {
        Value::Seq(items) if items.len() == 3 => [
            match items[0].value {
                Value::Int(i) if i < 0 => {
                    let unfixed_free_threaded = matches!(
                        crate::heap::Collector::for_version(version),
                        crate::heap::Collector::FreeThreaded {
                            negative_count_fixed: false
                        }
                    );
                    if !unfixed_free_threaded {
                        return Err(cx.error(
                            items[0].at,
                            format!("`python.start.counts` starts at {i}: only a free-threaded build without the gh-142048 fix (3.13.0t - 3.13.10t, 3.14.0t - 3.14.1t) has a negative count"),
                        ));
                    }
                    count_below_zero = u64::try_from(-i).unwrap_or(u64::MAX);
                    0
                }
                _ => cx.unsigned(&items[0], "python.start.counts")?,
            },
            cx.unsigned(&items[1], "python.start.counts")?,
            cx.unsigned(&items[2], "python.start.counts")?,
        ],
        other => {
            return Err(cx.expected(
                counts_node,
                "python.start.counts",
                "a list of three whole numbers (gen 0, 1, 2)",
                other,
            ));
        }
    };
    let total_node = start_keys.required(
        "long_lived_total",
        "missing `long_lived_total` in `python.start`: tracked objects in the oldest generation",
        cx,
        start_node.at,
    )?;
    let free_lists_full = match start_keys.get("free_lists") {
        None => false,
        Some(node) => match cx.string(node, "python.start.free_lists")? {
            "full" => true,
            "empty" => false,
            other => {
                return Err(cx.error(
                    node.at,
                    format!("`python.start.free_lists` is {other:?}; expected \"full\" (a process that has been running) or \"empty\" (right after gc.collect())"),
                ));
            }
        },
    };
    Ok(PythonProfile {
        version,
        start: GcStartState {
            counts,
            long_lived_total: cx.unsigned(total_node, "python.start.long_lived_total")?,
            free_lists_full,
            count_below_zero,
            gc_callbacks: match start_keys.get("gc_callbacks") {
                None => 0,
                Some(node) => u32::try_from(cx.unsigned(node, "python.start.gc_callbacks")?)
                    .map_err(|_| {
                        cx.error(
                            node.at,
                            "`python.start.gc_callbacks` is too large".to_string(),
                        )
                    })?,
            },
        },
        start_given: true,
    })
}

/// The first value of a varied `python`: a version, or the first one of `python: all`.
pub(crate) fn parse_varied_version(cx: &Context<'_>, node: &Node) -> Result<PyVersion, Error> {
    match &node.value {
        Value::Str(s) if s == "all" => {
            Ok(version_from_str(VERSION_MATRIX[0]).expect("the matrix lists known versions"))
        }
        _ => parse_version(cx, node),
    }
}

/// A version written as a string (see [`supported_versions_text`]). Unquoted numbers are refused: YAML reads
/// `3.10` as the number 3.1, so a version must be quoted to mean what it says.
pub(crate) fn parse_version(cx: &Context<'_>, node: &Node) -> Result<PyVersion, Error> {
    let supported = supported_versions_text();
    let text = match &node.value {
        Value::Str(s) => s.trim(),
        Value::Float(x) => {
            let written = format!("{x}");
            // YAML reads `3.10` as 3.1, the likely intent.
            let (meant, hint) = if written == "3.1" {
                ("3.10".to_string(), " (YAML reads 3.10 as the number 3.1)")
            } else {
                (written.clone(), "")
            };
            return Err(cx.error(
                node.at,
                format!(
                    "the Python version must be a quoted string, found the number \
                     {written}{hint}; write it in quotes: \"{meant}\""
                ),
            ));
        }
        other => {
            return Err(cx.expected(
                node,
                "python",
                &format!("a version string: {supported}"),
                other,
            ));
        }
    };
    version_from_str(text).ok_or_else(|| {
        cx.error(
            node.at,
            format!("unsupported Python version {text:?}: the collector model covers {supported}"),
        )
    })
}

/// `"3.11"`, `"3.14.2"`, `"3.13t"` to a supported version; `None` for anything else.
pub fn version_from_str(text: &str) -> Option<PyVersion> {
    let digits = |m: &str| {
        (!m.is_empty() && m.len() <= 2 && m.chars().all(|c| c.is_ascii_digit()))
            .then(|| m.parse::<u8>().ok())
            .flatten()
    };
    let rest = text.trim().strip_prefix("3.")?;
    let (rest, free_threaded) = match rest.strip_suffix('t') {
        Some(r) => (r, true),
        None => (rest, false),
    };
    let (minor, patch) = match rest.split_once('.') {
        Some((m, p)) => (digits(m)?, Some(digits(p)?)),
        None => (digits(rest)?, None),
    };
    let supported = SUPPORTED_MINORS.contains(&minor)
        && (!free_threaded || FREE_THREADED_MINORS.contains(&minor));
    supported.then_some(PyVersion {
        minor,
        patch,
        free_threaded,
    })
}
