//! `vary:` — named lists of values whose cartesian product gives the scenario's variants, and
//! the expectations that apply to one variant.

use super::model::{Device, Expectation, PythonProfile, Scenario, VarValue, Variant};
use super::parse::Context;
use super::yaml_tree::{Node, Value};
use super::{allocator, device, python_profile};
use crate::error::Error;

/// More variants than this is almost certainly a mistake (and would take hours to run).
pub const MAX_VARIANTS: usize = 4096;

/// Python keywords, which a workload cannot use as variable names.
const PYTHON_KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// One `vary` variable while parsing: its values keep their nodes for located errors.
pub(crate) struct VaryVar<'n> {
    pub name: String,
    pub values: Vec<(VarValue, &'n Node)>,
}

pub(crate) fn parse_vary<'n>(cx: &Context<'_>, node: &'n Node) -> Result<Vec<VaryVar<'n>>, Error> {
    let entries = cx.mapping(node, "vary")?;
    let mut vars: Vec<VaryVar<'n>> = Vec::with_capacity(entries.len());
    let mut product: usize = 1;
    for (key, list) in entries {
        let name = match &key.value {
            Value::Str(name) if is_python_identifier(name) => name.clone(),
            other => {
                return Err(cx.error(
                    key.at,
                    format!(
                        "`vary` names become Python variables: expected an identifier such as \
                         `gc_every`, found {}",
                        other.describe()
                    ),
                ));
            }
        };
        // `python: all`: one variant per distinct collector behaviour.
        if name == "python" && matches!(&list.value, Value::Str(s) if s == "all") {
            let values: Vec<(VarValue, &'n Node)> = python_profile::VERSION_MATRIX
                .iter()
                .map(|v| (VarValue::Str((*v).to_string()), list))
                .collect();
            product = product.saturating_mul(values.len());
            vars.push(VaryVar { name, values });
            continue;
        }
        let items = match &list.value {
            Value::Seq(items) if !items.is_empty() => items,
            other => {
                return Err(cx.expected(
                    list,
                    &format!("vary.{name}"),
                    "a non-empty list of values",
                    other,
                ));
            }
        };
        let mut values: Vec<(VarValue, &'n Node)> = Vec::with_capacity(items.len());
        for item in items {
            let value = cx.var_value(item, &format!("vary.{name}"))?;
            if values.iter().any(|(v, _)| *v == value) {
                return Err(cx.error(
                    item.at,
                    format!("`vary.{name}` lists the value {value} twice"),
                ));
            }
            // Variants are named by their printed values (test names, golden files): values
            // that print alike would be two trials sharing one golden file.
            let printed = value.to_string();
            if let Some((other, _)) = values.iter().find(|(v, _)| v.to_string() == printed) {
                return Err(cx.error(
                    item.at,
                    format!(
                        "`vary.{name}`: {} and {} both print as `{printed}`, and variants are named by their printed values; keep one of them",
                        describe(other),
                        describe(&value)
                    ),
                ));
            }
            if let Some(c) = printed.chars().find(|c| c.is_control()) {
                return Err(cx.error(
                    item.at,
                    format!(
                        "`vary.{name}`: the value {printed:?} contains the control character {c:?}; variant values name tests and golden files"
                    ),
                ));
            }
            values.push((value, item));
        }
        product = product.saturating_mul(values.len());
        if product > MAX_VARIANTS {
            return Err(cx.error(
                key.at,
                format!("`vary` gives more than {MAX_VARIANTS} variants; vary fewer values"),
            ));
        }
        vars.push(VaryVar { name, values });
    }
    Ok(vars)
}

/// The node of the first value of variable `name`, if it is varied.
pub(crate) fn first_value_node<'n>(vars: &[VaryVar<'n>], name: &str) -> Option<&'n Node> {
    vars.iter()
        .find(|v| v.name == name)
        .and_then(|v| v.values.first())
        .map(|(_, node)| *node)
}

/// Checks that varied `python` and `device` values are versions and devices.
pub(crate) fn validate_overrides<'n>(
    cx: &Context<'_>,
    vars: Vec<VaryVar<'n>>,
) -> Result<Vec<VaryVar<'n>>, Error> {
    for var in &vars {
        for (_, node) in &var.values {
            match var.name.as_str() {
                // Values that `python: all` expanded are known versions; check the rest.
                "python" if !matches!(&node.value, Value::Str(s) if s == "all") => {
                    python_profile::parse_version(cx, node)?;
                }
                "device" => {
                    device::parse_device(cx, node)?;
                }
                "allocator" => {
                    allocator::parse_allocator(cx, node)?;
                }
                _ => {}
            }
        }
    }
    Ok(vars)
}

/// A value with its type, for messages about values that print alike.
fn describe(value: &VarValue) -> String {
    match value {
        VarValue::None => "null".to_string(),
        VarValue::Bool(b) => format!("the boolean {b}"),
        VarValue::Int(i) => format!("the integer {i}"),
        VarValue::Float(x) => format!("the number {x:?}"),
        VarValue::Str(s) => format!("the string {s:?}"),
    }
}

fn is_python_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !PYTHON_KEYWORDS.contains(&name)
}

impl Scenario {
    /// Every combination of the `vary` values, first variable varying slowest; one variant with
    /// no values when there is no `vary`. A varied `python` or `device` overrides the top level.
    pub fn variants(&self) -> Vec<Variant> {
        let mut combinations: Vec<Vec<(String, VarValue)>> = vec![Vec::new()];
        for (name, values) in &self.vary {
            combinations = combinations
                .into_iter()
                .flat_map(|prefix| {
                    values.iter().map(move |value| {
                        let mut combination = prefix.clone();
                        combination.push((name.clone(), value.clone()));
                        combination
                    })
                })
                .collect();
        }
        combinations
            .into_iter()
            .map(|values| {
                let python = self.python_for(&values);
                let device = self.device_for(&values);
                Variant {
                    values,
                    device,
                    python,
                }
            })
            .collect()
    }

    /// The checks of every `expect` block whose `when` matches the variant, in file order.
    pub fn expectations_for(&self, variant: &Variant) -> Vec<&Expectation> {
        self.expect
            .iter()
            .filter(|block| {
                block
                    .when
                    .iter()
                    .all(|(name, value)| variant.get(name) == Some(value))
            })
            .flat_map(|block| block.checks.iter())
            .collect()
    }

    /// The allocator settings a variant runs with: a varied `allocator` (text or null)
    /// overrides the top-level `allocator:`.
    pub fn allocator_for(&self, variant: &Variant) -> String {
        match variant.get("allocator") {
            Some(VarValue::Str(text)) => allocator::normalise(text),
            Some(VarValue::None) => String::new(),
            _ => self.allocator.clone(),
        }
    }

    fn python_for(&self, values: &[(String, VarValue)]) -> PythonProfile {
        let varied = values.iter().find_map(|(name, value)| match value {
            VarValue::Str(s) if name == "python" => python_profile::version_from_str(s),
            _ => None,
        });
        match varied {
            // The default start state is the version's own (see `after_import_torch`).
            Some(version) if !self.python.start_given => PythonProfile {
                version,
                start: super::GcStartState::after_import_torch(version),
                start_given: false,
            },
            Some(version) => PythonProfile {
                version,
                ..self.python.clone()
            },
            None => self.python.clone(),
        }
    }

    fn device_for(&self, values: &[(String, VarValue)]) -> Device {
        values
            .iter()
            .find_map(|(name, value)| match value {
                // A varied card keeps the file's context size when it fits.
                VarValue::Str(s) if name == "device" => device::device_from_str(s).map(|mut d| {
                    if d.cuda_ordinal().is_none() && self.device.context < d.capacity {
                        d.context = self.device.context;
                    }
                    d
                }),
                _ => None,
            })
            .unwrap_or_else(|| self.device.clone())
    }
}
