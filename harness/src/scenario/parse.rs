//! Reading a scenario file: the top-level keys, and the typed accessors every part of the schema
//! uses so that each message names the key, what was expected and what was found, at the node.

use super::model::{Device, PythonProfile, Scenario, VarValue, Workload};
use super::yaml_tree::{self, Node, Position, Value};
use super::{allocator, device, expect, limits, python_profile, replay, vary, workload};
use crate::error::{Error, InputErrorKind, Location};

/// The keys a scenario file may have at the top level, in the order the documentation lists them.
pub const TOP_LEVEL_KEYS: &[&str] = &[
    "name",
    "about",
    "device",
    "python",
    "vary",
    "workload",
    "replay",
    "expect",
    "limits",
    "allocator",
];

/// Reads and validates a scenario file. `display_path` is how the file is named in every message
/// (as the user typed it or relative to the workspace root; never made absolute).
pub fn load(path: &std::path::Path, display_path: &str) -> Result<Scenario, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(display_path, e))?;
    let mut scenario = parse(&text, display_path)?;
    // `replay:` is relative to the scenario file wherever the process runs.
    if let Some(replay) = &mut scenario.replay {
        replay.path = replay::beside(path, &replay.written);
        replay::confine(path, replay)?;
    }
    Ok(scenario)
}

/// Parses and validates the text of a scenario file.
pub fn parse(text: &str, display_path: &str) -> Result<Scenario, Error> {
    let root = yaml_tree::read(text, display_path)?;
    let cx = Context {
        file: display_path,
        text,
    };
    let entries = match &root.value {
        Value::Map(entries) => entries,
        Value::Null => {
            return Err(cx.error(
                root.at,
                format!(
                    "the file is empty; a scenario is a mapping with the keys {}",
                    TOP_LEVEL_KEYS.join(", ")
                ),
            ));
        }
        other => {
            return Err(cx.error(
                root.at,
                format!(
                    "expected a mapping with the keys {}, found {}",
                    TOP_LEVEL_KEYS.join(", "),
                    other.describe()
                ),
            ));
        }
    };
    let keys = cx.keys(entries, TOP_LEVEL_KEYS, "a scenario")?;

    let name_node = keys.required(
        "name",
        "missing `name`: every scenario needs a name usable in test names, e.g. `name: simple_cycle`",
        &cx,
        root.at,
    )?;
    let name = cx.identifier_like(name_node, "name")?;
    let about = match keys.get("about") {
        Some(node) => cx.string(node, "about")?.to_string(),
        None => String::new(),
    };

    // `vary` comes first: it may stand in for a missing top-level `python` or `device`.
    let vary = match keys.get("vary") {
        Some(node) => vary::parse_vary(&cx, node)?,
        None => Vec::new(),
    };
    let varied_python = vary::first_value_node(&vary, "python");
    let varied_device = vary::first_value_node(&vary, "device");

    let replay_node = keys.get("replay");
    let python = match (keys.get("python"), varied_python) {
        (Some(node), _) => python_profile::parse_python(&cx, node)?,
        (None, Some(node)) => {
            let version = python_profile::parse_varied_version(&cx, node)?;
            PythonProfile {
                version,
                start: crate::scenario::GcStartState::after_import_torch(version),
                start_given: false,
            }
        }
        // A replayed trace has no interpreter to model.
        (None, None) if replay_node.is_some() => PythonProfile {
            version: crate::scenario::PyVersion::minor(11),
            start: crate::scenario::GcStartState::after_import_torch(
                crate::scenario::PyVersion::minor(11),
            ),
            start_given: false,
        },
        (None, None) => {
            return Err(cx.error(
                root.at,
                "missing `python`: a scenario must say which CPython collector it models, \
                 e.g. `python: \"3.11\"` (3.8 to 3.13)",
            ));
        }
    };
    let device: Device = match (keys.get("device"), varied_device) {
        (Some(node), _) => device::parse_device(&cx, node)?,
        (None, Some(node)) => device::parse_device(&cx, node)?,
        (None, None) => {
            return Err(cx.error(
                root.at,
                format!(
                    "missing `device`: name a preset ({}) or give `{{ capacity: \"80 GiB\" }}`",
                    device::preset_names().join(", ")
                ),
            ));
        }
    };
    let vary = vary::validate_overrides(&cx, vary)?;
    // A replay's timeline is the recording's, made under the snapshot's own allocator
    // settings (which the replay reads from the file): settings given here would change
    // nothing it shows, so they are refused rather than ignored.
    if replay_node.is_some() {
        let at = keys
            .key_at("allocator")
            .or_else(|| vary::first_value_node(&vary, "allocator").map(|n| n.at));
        if let Some(at) = at {
            return Err(cx.error(
                at,
                "`allocator` does not apply to a `replay:` scenario: the recorded requests are \
                 replayed under the snapshot's own allocator settings, and its timeline is the \
                 recording's; set `PYTORCH_CUDA_ALLOC_CONF` when recording, or give `allocator` \
                 to a `workload` scenario",
            ));
        }
    }

    let (workload, replay) = match (keys.get("workload"), replay_node) {
        (Some(_), Some(_)) => {
            return Err(cx.error(
                keys.key_at("replay").unwrap_or(root.at),
                "a scenario has either `workload` (Python code to run) or `replay` (a recorded \
                 snapshot), not both",
            ));
        }
        (None, Some(node)) => {
            let at = keys.key_at("replay").unwrap_or(root.at);
            (
                Workload {
                    source: String::new(),
                    first_line: 1,
                    indent: 0,
                },
                Some(replay::parse_replay(&cx, at, node)?),
            )
        }
        (Some(node), None) => {
            let key_at = keys.key_at("workload").unwrap_or(root.at);
            (workload::parse_workload(&cx, key_at, node)?, None)
        }
        (None, None) => {
            return Err(cx.error(
                root.at,
                "missing `workload`: the Python code to run, written as a `|` block (or \
                 `replay: path/to/snapshot.pickle` to check a recorded snapshot)",
            ));
        }
    };

    let expect = match keys.get("expect") {
        Some(node) => expect::parse_expect(&cx, node, &vary)?,
        None => Vec::new(),
    };

    let limits = match keys.get("limits") {
        Some(node) => limits::parse_limits(&cx, node)?,
        None => limits::Limits::default(),
    };

    let allocator = match keys.get("allocator") {
        Some(node) => allocator::parse_allocator(&cx, node)?,
        None => String::new(),
    };

    Ok(Scenario {
        file: display_path.to_string(),
        allocator,
        name,
        about,
        device,
        python,
        vary: vary
            .into_iter()
            .map(|v| {
                (
                    v.name,
                    v.values.into_iter().map(|(value, _)| value).collect(),
                )
            })
            .collect(),
        workload,
        replay,
        expect,
        limits,
    })
}

/// What every part of the schema needs: the file's display name (for locations) and its text
/// (to look at how the workload scalar was written).
pub(crate) struct Context<'a> {
    pub file: &'a str,
    pub text: &'a str,
}

/// The entries of a mapping whose keys were checked against a known list.
pub(crate) struct Keys<'n> {
    entries: Vec<(&'n str, &'n Node, &'n Node)>,
}

impl<'n> Keys<'n> {
    /// Where key `key` is written, if it is present.
    pub fn key_at(&self, key: &str) -> Option<Position> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, k, _)| k.at)
    }

    pub fn get(&self, key: &str) -> Option<&'n Node> {
        self.entries
            .iter()
            .find(|(k, _, _)| *k == key)
            .map(|(_, _, v)| *v)
    }

    /// The value and the key node, for checks that report where their key was written.
    pub fn iter(&self) -> impl Iterator<Item = (&'n str, &'n Node, &'n Node)> + '_ {
        self.entries.iter().copied()
    }

    pub fn required(
        &self,
        key: &str,
        message: &str,
        cx: &Context<'_>,
        at: Position,
    ) -> Result<&'n Node, Error> {
        self.get(key).ok_or_else(|| cx.error(at, message))
    }
}

impl Context<'_> {
    pub fn location(&self, at: Position) -> Location {
        Location::new(self.file, at.line.max(1), at.column.max(1))
    }

    /// A schema error at a node.
    pub fn error(&self, at: Position, message: impl Into<String>) -> Error {
        Error::input(InputErrorKind::Schema, self.location(at), message)
    }

    /// Checks that every key of a mapping is a known one; `what` names the mapping in messages.
    pub fn keys<'n>(
        &self,
        entries: &'n [(Node, Node)],
        known: &[&str],
        what: &str,
    ) -> Result<Keys<'n>, Error> {
        let mut checked = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let Value::Str(name) = &key.value else {
                return Err(self.error(
                    key.at,
                    format!(
                        "expected a key of {what} ({}), found {}",
                        known.join(", "),
                        key.value.describe()
                    ),
                ));
            };
            if !known.contains(&name.as_str()) {
                return Err(self.error(
                    key.at,
                    match did_you_mean(name, known) {
                        Some(near) => format!(
                            "unknown key `{name}` in {what}: did you mean `{near}`? (expected one \
                             of: {})",
                            known.join(", ")
                        ),
                        None => format!(
                            "unknown key `{name}` in {what}; expected one of: {}",
                            known.join(", ")
                        ),
                    },
                ));
            }
            checked.push((name.as_str(), key, value));
        }
        Ok(Keys { entries: checked })
    }

    pub fn mapping<'n>(&self, node: &'n Node, what: &str) -> Result<&'n [(Node, Node)], Error> {
        match &node.value {
            Value::Map(entries) => Ok(entries),
            other => Err(self.expected(node, what, "a mapping", other)),
        }
    }

    pub fn string<'n>(&self, node: &'n Node, what: &str) -> Result<&'n str, Error> {
        match &node.value {
            Value::Str(s) => Ok(s),
            other => Err(self.expected(node, what, "a string", other)),
        }
    }

    pub fn boolean(&self, node: &Node, what: &str) -> Result<bool, Error> {
        match &node.value {
            Value::Bool(b) => Ok(*b),
            other => Err(self.expected(node, what, "true or false", other)),
        }
    }

    pub fn unsigned(&self, node: &Node, what: &str) -> Result<u64, Error> {
        match &node.value {
            Value::Int(i) => u64::try_from(*i).map_err(|_| {
                self.error(
                    node.at,
                    format!("`{what}` must be a whole number from 0 to {}", u64::MAX),
                )
            }),
            other => Err(self.expected(node, what, "a whole number", other)),
        }
    }

    /// A scalar usable as a `vary` value or `when` condition.
    pub fn var_value(&self, node: &Node, what: &str) -> Result<VarValue, Error> {
        Ok(match &node.value {
            Value::Null => VarValue::None,
            Value::Bool(b) => VarValue::Bool(*b),
            Value::Int(i) => VarValue::Int(i64::try_from(*i).map_err(|_| {
                self.error(node.at, format!("`{what}`: integer {i} is out of range"))
            })?),
            Value::Float(x) => VarValue::Float(*x),
            Value::Str(s) => VarValue::Str(s.clone()),
            other => {
                return Err(self.expected(
                    node,
                    what,
                    "a scalar (number, string, true/false or null)",
                    other,
                ));
            }
        })
    }

    /// `name`: letters, digits, `_` and `-`, starting with a letter or `_`, so that it reads well
    /// in test names and file names.
    pub fn identifier_like(&self, node: &Node, what: &str) -> Result<String, Error> {
        let s = self.string(node, what)?;
        let mut chars = s.chars();
        let starts_well = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if !starts_well
            || !s
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(self.error(
                node.at,
                format!(
                    "`{what}` must start with a letter or `_` and contain only letters, digits, \
                     `_` and `-` (it names tests and golden files), found {s:?}"
                ),
            ));
        }
        Ok(s.to_string())
    }

    pub fn expected(&self, node: &Node, what: &str, expected: &str, found: &Value) -> Error {
        self.error(
            node.at,
            format!("`{what}`: expected {expected}, found {}", found.describe()),
        )
    }
}

/// The known name closest to a typo, when it is close: at most one edit per three characters
/// (so `exepct` finds `expect`, but `foo` finds nothing).
pub(crate) fn did_you_mean<'k>(typed: &str, known: &[&'k str]) -> Option<&'k str> {
    known
        .iter()
        .map(|k| (edit_distance(typed, k), *k))
        .filter(|(d, k)| *d > 0 && *d <= k.chars().count().div_ceil(3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance, with a swap of two neighbours counted as one edit.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

#[cfg(test)]
mod suggestion_tests {
    use super::did_you_mean;

    #[test]
    fn close_typos_get_a_suggestion_and_far_ones_do_not() {
        let known = ["name", "about", "expect", "workload", "peak_allocated"];
        assert_eq!(did_you_mean("exepct", &known), Some("expect"));
        assert_eq!(
            did_you_mean("peak_alocated", &known),
            Some("peak_allocated")
        );
        assert_eq!(did_you_mean("workloads", &known), Some("workload"));
        assert_eq!(did_you_mean("zzz", &known), None);
    }
}
