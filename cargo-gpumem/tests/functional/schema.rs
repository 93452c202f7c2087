//! Validates `run --json` lines against `harness/schema/run-report.schema.json`.
//!
//! The validator implements the JSON Schema keywords that file uses (`type`, `const`, `enum`,
//! `required`, `properties`, `additionalProperties`, `items`, `oneOf`, `$ref` to `#/$defs/..`,
//! `minimum`, `maximum`) and panics on any other keyword, so a schema edit that relies on an
//! unimplemented keyword cannot pass unchecked.

use serde_json::Value;

const ANNOTATIONS: [&str; 5] = ["$schema", "$id", "title", "description", "$defs"];

fn schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../harness/schema/run-report.schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).expect("schema")
}

/// Panics with the failing JSON path when `line` does not satisfy the schema.
pub fn assert_valid_run_json(line: &str) {
    let value: Value = serde_json::from_str(line).expect("one JSON object per line");
    let schema = schema();
    if let Err(e) = validate(&schema, &schema, &value, "$") {
        panic!("{e}\nin: {}", &line[..line.len().min(2000)]);
    }
}

fn validate(root: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let rules = schema.as_object().expect("a schema is an object");
    for (keyword, rule) in rules {
        match keyword.as_str() {
            k if ANNOTATIONS.contains(&k) => {}
            "$ref" => {
                let name = rule
                    .as_str()
                    .and_then(|r| r.strip_prefix("#/$defs/"))
                    .expect("local $ref");
                validate(root, &root["$defs"][name], value, at)?;
            }
            "type" => {
                let types: Vec<&str> = match rule {
                    Value::String(t) => vec![t.as_str()],
                    Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
                    _ => panic!("bad type rule"),
                };
                if !types.iter().any(|t| has_type(value, t)) {
                    return Err(format!("{at}: expected {types:?}, found {value}"));
                }
            }
            "const" if value != rule => {
                return Err(format!("{at}: expected {rule}, found {value}"));
            }
            "const" => {}
            "enum" => {
                if !rule.as_array().expect("enum list").contains(value) {
                    return Err(format!("{at}: {value} is not one of {rule}"));
                }
            }
            "minimum" | "maximum" => {
                if let Some(n) = value.as_f64() {
                    let bound = rule.as_f64().expect("numeric bound");
                    if (keyword == "minimum" && n < bound) || (keyword == "maximum" && n > bound) {
                        return Err(format!("{at}: {n} is outside the {keyword} {bound}"));
                    }
                }
            }
            "required" => {
                if let Some(object) = value.as_object() {
                    for name in rule.as_array().expect("required list") {
                        let name = name.as_str().expect("required name");
                        if !object.contains_key(name) {
                            return Err(format!("{at}: missing `{name}`"));
                        }
                    }
                }
            }
            "properties" => {
                if let Some(object) = value.as_object() {
                    for (name, sub) in rule.as_object().expect("properties") {
                        if let Some(field) = object.get(name) {
                            validate(root, sub, field, &format!("{at}.{name}"))?;
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(object) = value.as_object() {
                    let known = schema.get("properties").and_then(Value::as_object);
                    for (name, field) in object {
                        if known.is_some_and(|k| k.contains_key(name)) {
                            continue;
                        }
                        match rule {
                            Value::Bool(false) => {
                                return Err(format!("{at}: unexpected field `{name}`"));
                            }
                            Value::Bool(true) => {}
                            sub => validate(root, sub, field, &format!("{at}.{name}"))?,
                        }
                    }
                }
            }
            "items" => {
                if let Some(items) = value.as_array() {
                    for (i, item) in items.iter().enumerate() {
                        validate(root, rule, item, &format!("{at}[{i}]"))?;
                    }
                }
            }
            "oneOf" => {
                let matching = rule
                    .as_array()
                    .expect("oneOf list")
                    .iter()
                    .filter(|sub| validate(root, sub, value, at).is_ok())
                    .count();
                if matching != 1 {
                    return Err(format!("{at}: {value} matches {matching} of oneOf"));
                }
            }
            other => panic!("schema keyword `{other}` is not implemented by this validator"),
        }
    }
    Ok(())
}

fn has_type(value: &Value, name: &str) -> bool {
    match name {
        "null" => value.is_null(),
        "boolean" => value.is_boolean(),
        "integer" => value.is_i64() || value.is_u64(),
        "number" => value.is_number(),
        "string" => value.is_string(),
        "array" => value.is_array(),
        "object" => value.is_object(),
        other => panic!("unknown type `{other}`"),
    }
}

#[test]
fn the_validator_rejects_what_the_schema_forbids() {
    let schema = schema();
    let bad = serde_json::json!({ "schema_version": 2 });
    assert!(validate(&schema, &schema, &bad, "$").is_err());
    let missing = serde_json::json!({ "schema_version": 1 });
    let err = validate(&schema, &schema, &missing, "$").unwrap_err();
    assert!(err.contains("missing `scenario`"), "{err}");
}
