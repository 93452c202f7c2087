//! `limits: { steps: N, memory: "2 GiB", seconds: S, records: "48 MiB" }`: how much a workload
//! may run, and how much of a long run's timeline is kept in full.
//!
//! Scenario files come from bug reports and colleagues, so every run has a budget whether or
//! not the file gives one: the defaults (in `crate::python::budget`) are generous for real
//! workloads and stop runaway ones. A key given here replaces its default; the command line
//! can raise or lower each again ([`Limits::merged_over`]).

use super::parse::Context;
use super::yaml_tree::{Node, Value};
use crate::error::Error;
use serde::Serialize;

/// The keys of `limits`.
pub const LIMIT_KEYS: &[&str] = &["steps", "memory", "seconds", "records"];

/// Budgets a scenario sets; `None` keeps the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Limits {
    /// Statements executed plus loop and comprehension passes.
    pub steps: Option<u64>,
    /// Bytes of the model's own objects (the interpreter's heap, not the simulated GPU).
    pub memory: Option<u64>,
    /// Wall-clock seconds (not deterministic: a safety net, off unless given).
    pub seconds: Option<f64>,
    /// Bytes of full-detail records kept at each end of a long run (the iterations between
    /// are folded into summaries; see `timeline::Recorder`).
    pub records: Option<u64>,
}

impl Limits {
    /// `self`'s keys where given, else `base`'s (command-line limits over the file's).
    pub fn merged_over(self, base: Limits) -> Limits {
        Limits {
            steps: self.steps.or(base.steps),
            memory: self.memory.or(base.memory),
            seconds: self.seconds.or(base.seconds),
            records: self.records.or(base.records),
        }
    }

    /// `steps=N,memory=2GiB,seconds=S` (any subset), as the command line gives them.
    pub fn parse_assignments(text: &str) -> Result<Limits, String> {
        let mut limits = Limits::default();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let Some((key, value)) = part.split_once('=') else {
                return Err(format!(
                    "`{part}`: expected KEY=VALUE with KEY one of steps, memory, seconds, records"
                ));
            };
            let value = value.trim();
            match key.trim() {
                "steps" => limits.steps = Some(parse_count(value)?),
                "memory" => {
                    limits.memory = Some(parse_memory(value)?);
                }
                "seconds" => limits.seconds = Some(parse_seconds(value)?),
                "records" => limits.records = Some(parse_records(value)?),
                other => {
                    return Err(format!(
                        "unknown limit `{other}`; expected one of: {}",
                        LIMIT_KEYS.join(", ")
                    ));
                }
            }
        }
        Ok(limits)
    }
}

fn parse_count(text: &str) -> Result<u64, String> {
    text.replace('_', "")
        .parse::<u64>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("steps: expected a whole number above 0, found `{text}`"))
}

fn parse_memory(text: &str) -> Result<u64, String> {
    crate::units::parse_bytes(text)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| format!("memory: expected a size above 0 such as \"2 GiB\", found `{text}`"))
}

fn parse_records(text: &str) -> Result<u64, String> {
    crate::units::parse_bytes(text)
        .ok()
        .filter(|&b| b > 0)
        .ok_or_else(|| {
            format!("records: expected a size above 0 such as \"48 MiB\", found `{text}`")
        })
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .ok_or_else(|| format!("seconds: expected a number above 0, found `{text}`"))
}

/// Reads the `limits` mapping.
pub(crate) fn parse_limits(cx: &Context<'_>, node: &Node) -> Result<Limits, Error> {
    let entries = cx.mapping(node, "limits")?;
    let keys = cx.keys(entries, LIMIT_KEYS, "`limits`")?;
    let mut limits = Limits::default();
    for (key, _, value) in keys.iter() {
        let text = match &value.value {
            Value::Int(i) => i.to_string(),
            Value::Float(x) => x.to_string(),
            Value::Str(s) => s.clone(),
            other => {
                return Err(cx.expected(value, key, "a number or a size", other));
            }
        };
        let parsed = match key {
            "steps" => parse_count(&text).map(|n| limits.steps = Some(n)),
            "memory" => parse_memory(&text).map(|b| limits.memory = Some(b)),
            "records" => parse_records(&text).map(|b| limits.records = Some(b)),
            _ => parse_seconds(&text).map(|s| limits.seconds = Some(s)),
        };
        parsed.map_err(|message| cx.error(value.at, format!("limits.{message}")))?;
    }
    Ok(limits)
}
