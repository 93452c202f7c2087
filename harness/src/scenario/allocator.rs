//! `allocator:` — the caching allocator's `PYTORCH_CUDA_ALLOC_CONF` settings for a scenario,
//! as a mapping (`{ max_split_size_mb: 128, garbage_collection_threshold: 0.8 }`) or as the
//! environment variable's own text (`"max_split_size_mb:128"`), which is also how `vary`
//! gives them (`vary: { allocator: ["", "max_split_size_mb:128"] }`).
//!
//! The settings are kept as that text, normalised (`key:value` joined by commas): the model
//! applies them exactly as `torch.cuda.memory._set_allocator_settings` would before the
//! workload's first statement, and each value was checked with PyTorch's rules when the file
//! was read, at its own node.

use super::parse::Context;
use super::yaml_tree::{Node, Value};
use crate::error::Error;
use crate::python::allocator_settings::check_setting;

/// The keys of an `allocator:` mapping (the `PYTORCH_CUDA_ALLOC_CONF` options the allocator
/// model implements).
pub const ALLOCATOR_KEYS: &[&str] = &[
    "max_split_size_mb",
    "garbage_collection_threshold",
    "roundup_power2_divisions",
    "expandable_segments",
];

/// `allocator:` at the top level or one `vary.allocator` value: the normalised settings text
/// (empty for PyTorch's defaults).
pub(crate) fn parse_allocator(cx: &Context<'_>, node: &Node) -> Result<String, Error> {
    match &node.value {
        Value::Null => Ok(String::new()),
        Value::Str(text) => parse_text(cx, node, text),
        Value::Map(entries) => {
            let keys = cx.keys(entries, ALLOCATOR_KEYS, "`allocator`")?;
            let mut settings = Vec::new();
            for (key, _, value) in keys.iter() {
                let written = match (&value.value, key) {
                    (Value::Int(n), "max_split_size_mb" | "roundup_power2_divisions") => {
                        n.to_string()
                    }
                    (Value::Int(n), "garbage_collection_threshold") => n.to_string(),
                    (Value::Float(x), "garbage_collection_threshold") => format!("{x}"),
                    (Value::Bool(b), "expandable_segments") => {
                        if *b { "True" } else { "False" }.to_string()
                    }
                    (other, _) => {
                        let expected = match key {
                            "garbage_collection_threshold" => "a number between 0 and 1",
                            "expandable_segments" => "true or false",
                            _ => "a whole number",
                        };
                        return Err(cx.expected(
                            value,
                            &format!("allocator.{key}"),
                            expected,
                            other,
                        ));
                    }
                };
                let setting = format!("{key}:{written}");
                check(cx, value, &setting, &format!("allocator.{key}"))?;
                if setting != "expandable_segments:False" {
                    settings.push(setting);
                }
            }
            Ok(settings.join(","))
        }
        other => Err(cx.expected(
            node,
            "allocator",
            "a mapping such as `{ max_split_size_mb: 128 }` or a PYTORCH_CUDA_ALLOC_CONF text \
             such as \"max_split_size_mb:128\"",
            other,
        )),
    }
}

/// The environment variable's text form, checked one setting at a time.
fn parse_text(cx: &Context<'_>, node: &Node, text: &str) -> Result<String, Error> {
    for setting in settings_of(text) {
        check(cx, node, &setting, "allocator")?;
    }
    Ok(normalise(text))
}

/// The `key:value` settings of a text, trimmed.
fn settings_of(text: &str) -> impl Iterator<Item = String> + '_ {
    text.split(',')
        .map(str::trim)
        .filter(|o| !o.is_empty())
        .map(|option| match option.split_once(':') {
            Some((k, v)) => format!("{}:{}", k.trim(), v.trim()),
            None => option.to_string(),
        })
}

/// A checked settings text in the form the model applies: trimmed, without the default
/// `expandable_segments:False`.
pub(crate) fn normalise(text: &str) -> String {
    settings_of(text)
        .filter(|s| {
            !matches!(
                s.as_str(),
                "expandable_segments:False" | "expandable_segments:false"
            )
        })
        .collect::<Vec<_>>()
        .join(",")
}

fn check(cx: &Context<'_>, node: &Node, setting: &str, what: &str) -> Result<(), Error> {
    check_setting(setting).map_err(|message| {
        if message.starts_with("unsupported:") {
            cx.error(
                node.at,
                format!(
                    "unsupported: `{what}`: `expandable_segments: true` (segments that grow by \
                     mapping pages) is not modelled; remove it or set it to false"
                ),
            )
        } else {
            let message = message.strip_prefix("RuntimeError: ").unwrap_or(&message);
            cx.error(node.at, format!("`{what}`: {message} (PyTorch's check)"))
        }
    })
}

#[cfg(test)]
mod tests {
    fn scenario(lines: &str) -> Result<crate::scenario::Scenario, crate::error::Error> {
        let text =
            format!("name: t\npython: \"3.11\"\ndevice: h100-80gb\n{lines}workload: |\n  x = 1\n");
        crate::scenario::parse(&text, "s.yaml")
    }

    #[test]
    fn a_mapping_and_the_environment_text_give_the_same_settings() {
        let mapped = scenario(
            "allocator: { max_split_size_mb: 128, garbage_collection_threshold: 0.8, expandable_segments: false }\n",
        )
        .unwrap();
        assert_eq!(
            mapped.allocator,
            "max_split_size_mb:128,garbage_collection_threshold:0.8"
        );
        let text =
            scenario("allocator: \" max_split_size_mb: 128 ,garbage_collection_threshold:0.8\"\n")
                .unwrap();
        assert_eq!(text.allocator, mapped.allocator);
        assert_eq!(scenario("").unwrap().allocator, "");
    }

    #[test]
    fn bad_values_are_pytorchs_errors_at_their_node() {
        let error = |lines: &str| scenario(lines).unwrap_err().to_string();
        let e = error("allocator: { max_split_size_mb: 20 }\n");
        assert!(
            e.starts_with("s.yaml:4:33:") && e.contains("must be > 20"),
            "{e}"
        );
        let e = error("allocator:\n  garbage_collection_threshold: 1.5\n");
        assert!(
            e.starts_with("s.yaml:5:33:") && e.contains("too big"),
            "{e}"
        );
        let e = error("allocator: { roundup_power2_divisions: 3 }\n");
        assert!(e.contains("power of 2"), "{e}");
        let e = error("allocator: { max_split_size_mb: \"big\" }\n");
        assert!(
            e.contains("`allocator.max_split_size_mb`: expected a whole number"),
            "{e}"
        );
        let e = error("allocator: { max_split_size: 64 }\n");
        assert!(e.contains("did you mean `max_split_size_mb`"), "{e}");
        let e = error("allocator: { expandable_segments: true }\n");
        assert!(
            e.starts_with("s.yaml:4:35:") && e.contains(": unsupported: "),
            "{e}"
        );
        let e = error("vary:\n  allocator: [\"\", \"max_split_size_mb:8\"]\n");
        assert!(
            e.starts_with("s.yaml:5:19:") && e.contains("must be > 20"),
            "{e}"
        );
    }

    #[test]
    fn a_replay_scenario_refuses_allocator_settings_at_their_node() {
        let replay = |lines: &str| {
            let text = format!("name: t\ndevice: h100-80gb\n{lines}replay: trace.pickle\n");
            crate::scenario::parse(&text, "s.yaml")
                .unwrap_err()
                .to_string()
        };
        let e = replay("allocator: { max_split_size_mb: 128 }\n");
        assert!(
            e.starts_with("s.yaml:3:1:") && e.contains("does not apply to a `replay:` scenario"),
            "{e}"
        );
        let e = replay("vary:\n  allocator: [null, \"max_split_size_mb:128\"]\n");
        assert!(
            e.starts_with("s.yaml:4:15:") && e.contains("does not apply to a `replay:` scenario"),
            "{e}"
        );
    }

    #[test]
    fn a_varied_allocator_overrides_the_top_level_one() {
        let s = scenario(
            "allocator: { max_split_size_mb: 64 }\nvary:\n  allocator: [null, \"max_split_size_mb:128\", \"\"]\n",
        )
        .unwrap();
        let settings: Vec<String> = s.variants().iter().map(|v| s.allocator_for(v)).collect();
        assert_eq!(settings, vec!["", "max_split_size_mb:128", ""]);
        let plain = scenario("allocator: { max_split_size_mb: 64 }\n").unwrap();
        assert_eq!(
            plain.allocator_for(&plain.variants()[0]),
            "max_split_size_mb:64"
        );
    }
}
