//! `expect:` — blocks of checks, each optionally limited to some variants by `when`.

use super::model::{ByteBound, Check, Comparison, ExpectBlock, Expectation};
use super::parse::Context;
use super::vary::VaryVar;
use super::yaml_tree::{Node, Value};
use crate::error::Error;
use crate::units::parse_bytes;

/// The keys of an `expect` block: `when` and the checks.
pub const BLOCK_KEYS: &[&str] = &[
    "when",
    "oom",
    "peak_allocated",
    "peak_reserved",
    "steady_state",
    "leak_per_iteration",
    "cycles",
];

pub(crate) fn parse_expect(
    cx: &Context<'_>,
    node: &Node,
    vary: &[VaryVar<'_>],
) -> Result<Vec<ExpectBlock>, Error> {
    let blocks = match &node.value {
        Value::Seq(items) => items,
        other => {
            return Err(cx.expected(
                node,
                "expect",
                "a list of blocks such as `- oom: false`",
                other,
            ));
        }
    };
    blocks
        .iter()
        .map(|block| parse_block(cx, block, vary))
        .collect()
}

fn parse_block(cx: &Context<'_>, node: &Node, vary: &[VaryVar<'_>]) -> Result<ExpectBlock, Error> {
    let entries = cx.mapping(node, "expect")?;
    let keys = cx.keys(entries, BLOCK_KEYS, "an `expect` block")?;
    let when = match keys.get("when") {
        Some(when) => parse_when(cx, when, vary)?,
        None => Vec::new(),
    };
    let mut checks = Vec::new();
    for (key, key_node, value) in keys.iter() {
        let check = match key {
            "when" => continue,
            "oom" => Check::Oom(cx.boolean(value, key)?),
            "peak_allocated" => Check::PeakAllocated(bound(cx, value, key)?),
            "peak_reserved" => Check::PeakReserved(bound(cx, value, key)?),
            "leak_per_iteration" => Check::LeakPerIteration(bound(cx, value, key)?),
            "steady_state" => steady_state(cx, value)?,
            "cycles" => match &value.value {
                Value::Str(s) if s == "none" => Check::CyclesNone,
                other => {
                    return Err(cx.expected(value, key, "`none`", other));
                }
            },
            // `keys` admitted only BLOCK_KEYS; a new key must be handled above.
            other => {
                return Err(cx.error(key_node.at, format!("unhandled check `{other}`")));
            }
        };
        checks.push(Expectation {
            check,
            location: cx.location(key_node.at),
        });
    }
    if checks.is_empty() {
        return Err(cx.error(
            node.at,
            format!(
                "this `expect` block has no checks; add one of {}",
                BLOCK_KEYS[1..].join(", ")
            ),
        ));
    }
    Ok(ExpectBlock {
        when,
        checks,
        location: cx.location(node.at),
    })
}

/// `when: { gc_every: 100 }`: names must be `vary` variables and values among their values.
fn parse_when(
    cx: &Context<'_>,
    node: &Node,
    vary: &[VaryVar<'_>],
) -> Result<Vec<(String, super::model::VarValue)>, Error> {
    let entries = cx.mapping(node, "when")?;
    let mut when = Vec::with_capacity(entries.len());
    for (key, value_node) in entries {
        let var = match &key.value {
            Value::Str(name) => vary.iter().find(|v| &v.name == name),
            _ => None,
        };
        let Some(var) = var else {
            let names: Vec<&str> = vary.iter().map(|v| v.name.as_str()).collect();
            let known = if names.is_empty() {
                "this scenario has no `vary`".to_string()
            } else {
                format!("the `vary` variables are: {}", names.join(", "))
            };
            return Err(cx.error(
                key.at,
                format!(
                    "`when` names {}, which is not a `vary` variable; {known}",
                    key.value.describe()
                ),
            ));
        };
        let value = cx.var_value(value_node, &format!("when.{}", var.name))?;
        if !var.values.iter().any(|(v, _)| *v == value) {
            let values: Vec<String> = var.values.iter().map(|(v, _)| show(v)).collect();
            return Err(cx.error(
                value_node.at,
                format!(
                    "`when.{}` is {}, which is not among its `vary` values: {}",
                    var.name,
                    show(&value),
                    values.join(", ")
                ),
            ));
        }
        when.push((var.name.clone(), value));
    }
    Ok(when)
}

/// A value as YAML would show it, so that `"3.11"` and `3.11` read differently in messages.
fn show(value: &super::model::VarValue) -> String {
    match value {
        super::model::VarValue::Str(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

/// `steady_state: true` or `steady_state: { warmup: 5, tolerance: "1 MiB" }`.
fn steady_state(cx: &Context<'_>, node: &Node) -> Result<Check, Error> {
    const DEFAULT_WARMUP: u32 = 1;
    match &node.value {
        Value::Bool(true) => Ok(Check::SteadyState {
            warmup: DEFAULT_WARMUP,
            tolerance: 0,
        }),
        Value::Bool(false) => Err(cx.error(
            node.at,
            "`steady_state: false` checks nothing; remove the key instead",
        )),
        Value::Map(entries) => {
            let keys = cx.keys(entries, &["warmup", "tolerance"], "`steady_state`")?;
            let warmup = match keys.get("warmup") {
                Some(n) => u32::try_from(cx.unsigned(n, "steady_state.warmup")?).map_err(|_| {
                    cx.error(n.at, "`steady_state.warmup` is too large (iterations)")
                })?,
                None => DEFAULT_WARMUP,
            };
            let tolerance = match keys.get("tolerance") {
                Some(n) => byte_quantity(cx, n, "steady_state.tolerance")?,
                None => 0,
            };
            Ok(Check::SteadyState { warmup, tolerance })
        }
        other => Err(cx.expected(
            node,
            "steady_state",
            "true or `{ warmup: N, tolerance: \"1 MiB\" }`",
            other,
        )),
    }
}

fn byte_quantity(cx: &Context<'_>, node: &Node, what: &str) -> Result<u64, Error> {
    match &node.value {
        Value::Int(n) => Err(cx.error(
            node.at,
            format!("`{what}`: {}", crate::units::missing_unit(&n.to_string())),
        )),
        Value::Str(text) => {
            parse_bytes(text).map_err(|message| cx.error(node.at, format!("`{what}`: {message}")))
        }
        other => Err(cx.expected(node, what, "a byte quantity such as \"1 MiB\"", other)),
    }
}

/// A bound such as `"<= 52 GiB"` at a node.
fn bound(cx: &Context<'_>, node: &Node, what: &str) -> Result<ByteBound, Error> {
    match &node.value {
        Value::Str(text) => {
            parse_bound(text).map_err(|message| cx.error(node.at, format!("`{what}`: {message}")))
        }
        other => Err(cx.expected(node, what, "a bound such as \"<= 52 GiB\"", other)),
    }
}

/// Parses `"<= 52 GiB"`: a comparison (`<`, `<=`, `>`, `>=`, `==`) then a byte quantity.
pub fn parse_bound(text: &str) -> Result<ByteBound, String> {
    let t = text.trim();
    let (op, rest) = [
        ("<=", Comparison::Le),
        (">=", Comparison::Ge),
        ("==", Comparison::Eq),
        ("<", Comparison::Lt),
        (">", Comparison::Gt),
    ]
    .into_iter()
    .find_map(|(prefix, op)| t.strip_prefix(prefix).map(|rest| (op, rest)))
    .ok_or_else(|| {
        format!(
            "expected a bound such as \"<= 52 GiB\" (one of <, <=, >, >=, == then a byte \
             quantity), found {text:?}"
        )
    })?;
    let bytes = parse_bytes(rest).map_err(|e| format!("in bound {text:?}: {e}"))?;
    Ok(ByteBound { op, bytes })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::GIB;

    #[test]
    fn bounds_accept_every_comparison() {
        let cases = [
            ("<= 52 GiB", Comparison::Le, 52 * GIB),
            ("< 1 MiB", Comparison::Lt, 1 << 20),
            (">10GiB", Comparison::Gt, 10 * GIB),
            (">= 0 B", Comparison::Ge, 0),
            ("== 0 B", Comparison::Eq, 0),
        ];
        for (text, op, bytes) in cases {
            assert_eq!(parse_bound(text), Ok(ByteBound { op, bytes }), "{text}");
        }
    }

    #[test]
    fn bounds_reject_missing_operator_and_bad_units() {
        assert!(parse_bound("52 GiB").unwrap_err().contains("one of <, <="));
        assert!(
            parse_bound("<= 52 parsecs")
                .unwrap_err()
                .contains("unknown unit \"parsecs\"")
        );
        assert!(parse_bound("<=").is_err());
    }

    #[test]
    fn a_bound_without_a_unit_is_refused_with_a_suggestion() {
        let err = parse_bound("<= 256").unwrap_err();
        assert!(
            err.contains("\"256\" has no unit: write \"256 B\" for bytes"),
            "{err}"
        );
        let scenario = "name: t\ndevice: a100-40gb\npython: \"3.11\"\nworkload: |\n  x = 1\n\
                        expect:\n  - steady_state: { tolerance: 4096 }\n";
        let err = crate::scenario::parse(scenario, "t.yaml")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("t.yaml:7:"), "{err}");
        assert!(err.contains("write \"4096 B\""), "{err}");
    }
}
