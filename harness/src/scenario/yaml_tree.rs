//! A YAML document read into a small tree whose every node knows where it was written.
//!
//! The schema is checked on this tree rather than through derived `Deserialize` impls, so that
//! every message can say in our own words what was expected, and every error points at the
//! offending node. serde-saphyr does the YAML parsing, with strict booleans and its default
//! budget (bounded memory and depth on hostile input).

use crate::error::{Error, InputErrorKind, Location};
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::{MessageFormatter, Spanned};
use std::fmt;

/// Where a node starts: 1-based line and column (in characters), and its byte offset in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Position {
    pub line: u32,
    pub column: u32,
    pub byte_offset: Option<usize>,
}

impl Position {
    fn from_saphyr(location: &serde_saphyr::Location) -> Self {
        Position {
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
            byte_offset: location
                .span()
                .byte_offset()
                .and_then(|b| usize::try_from(b).ok()),
        }
    }
}

/// One YAML node with where it is used (`at`) and, for aliases, where it is defined.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Node {
    pub value: Value,
    pub at: Position,
    pub defined: Position,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Seq(Vec<Node>),
    /// Entries in file order.
    Map(Vec<(Node, Node)>),
}

impl Value {
    /// How a value is named in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            Value::Null => "nothing (null)".to_string(),
            Value::Bool(b) => format!("the boolean {b}"),
            Value::Int(i) => format!("the integer {i}"),
            Value::Float(x) => format!("the number {x}"),
            Value::Str(s) if s.chars().count() > 40 => "a long string".to_string(),
            Value::Str(s) => format!("the string {s:?}"),
            Value::Seq(_) => "a list".to_string(),
            Value::Map(_) => "a mapping".to_string(),
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let spanned = Spanned::<Value>::deserialize(deserializer)?;
        Ok(Node {
            value: spanned.value,
            at: Position::from_saphyr(&spanned.referenced),
            defined: Position::from_saphyr(&spanned.defined),
        })
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Int(v.into()))
    }
    fn visit_i128<E>(self, v: i128) -> Result<Value, E> {
        Ok(Value::Int(v))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        i128::try_from(v)
            .map(Value::Int)
            .map_err(|_| E::custom("integer out of range"))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::Float(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::Str(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Value, E> {
        Err(E::custom(
            "binary values are not supported in scenario files",
        ))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Node>()? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Node>()? {
            let value = map.next_value::<Node>()?;
            entries.push((key, value));
        }
        Ok(Value::Map(entries))
    }
}

/// How deeply collections may nest. A scenario needs about 5 levels; serde-saphyr's default (64)
/// is more than the recursive tree reader can take on a 2 MiB thread stack in a debug build
/// (measured: it overflows between 50 and 60 levels), so the budget is tightened to this.
pub(crate) const MAX_DEPTH: usize = 24;

/// Parses `text` as one YAML document. YAML-level problems (syntax, duplicate keys, budget)
/// become `Error::Input` of kind `Yaml`, located where serde-saphyr found them.
pub(crate) fn read(text: &str, display_path: &str) -> Result<Node, Error> {
    // serde-saphyr's default budget (node, event, alias and scalar-size limits), with less depth.
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_DEPTH;
    let options = serde_saphyr::options! {
        strict_booleans: true,
        with_snippet: false,
        budget: Some(budget),
    };
    serde_saphyr::from_str_with_options::<Node>(text, options).map_err(|err| {
        let plain = err.without_snippet();
        let (line, column) = plain
            .location()
            .filter(|l| l.line() > 0)
            .map(|l| {
                (
                    u32::try_from(l.line()).unwrap_or(u32::MAX),
                    u32::try_from(l.column()).unwrap_or(u32::MAX).max(1),
                )
            })
            .unwrap_or((1, 1));
        let message = serde_saphyr::DefaultMessageFormatter.format_message(plain);
        // Control characters could come from the input; show them escaped.
        let message: String = message
            .chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_debug().collect()
                } else {
                    c.to_string()
                }
            })
            .collect::<String>();
        let message = if message.starts_with("budget breached") {
            format!("{message} (scenario files may nest at most {MAX_DEPTH} levels and hold at most 250 000 nodes)")
        } else {
            message
        };
        Error::input(
            InputErrorKind::Yaml,
            Location::new(display_path, line, column),
            message,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_carry_their_positions() {
        let node = read("a: 1\nb:\n  - x\n  - 2.5\nc: |\n  hi\n", "t.yaml").unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("expected a map, got {node:?}")
        };
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].0.value, Value::Str("a".into()));
        assert_eq!((entries[0].0.at.line, entries[0].0.at.column), (1, 1));
        assert_eq!(entries[0].1.value, Value::Int(1));
        assert_eq!((entries[0].1.at.line, entries[0].1.at.column), (1, 4));
        let Value::Seq(items) = &entries[1].1.value else {
            panic!("expected a list")
        };
        assert_eq!((items[1].at.line, items[1].at.column), (4, 5));
        assert_eq!(items[1].value, Value::Float(2.5));
        // A block scalar's node starts at its first content character.
        assert_eq!(entries[2].1.value, Value::Str("hi\n".into()));
        assert_eq!((entries[2].1.at.line, entries[2].1.at.column), (6, 3));
    }

    #[test]
    fn strict_booleans_leave_yes_a_string() {
        let node = read("a: yes\nb: true\n", "t.yaml").unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("expected a map")
        };
        assert_eq!(entries[0].1.value, Value::Str("yes".into()));
        assert_eq!(entries[1].1.value, Value::Bool(true));
    }

    #[test]
    fn yaml_errors_are_located() {
        let err = read("a: 1\nb: [1, 2\n", "s.yaml").unwrap_err();
        let text = err.to_string();
        assert!(text.starts_with("s.yaml:"), "{text}");
        assert!(text.contains("YAML error"), "{text}");
        let err = read("a: 1\na: 2\n", "s.yaml").unwrap_err();
        assert!(err.to_string().contains("duplicate"), "{err}");
    }
}
