//! The README's "Supported PyTorch surface" table, checked against the model: every function
//! that a module row names must be an attribute of that module in a workload, so the table
//! cannot promise what the model does not have. (Methods, written in parentheses after their
//! class, are left to the tests of each feature.)

use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;

/// The rows whose first column is a module path, with the top-level names of their
/// "functions" column: backticked identifiers outside parentheses (dotted names walk
/// attributes).
fn module_rows(readme: &str) -> Vec<(String, Vec<String>)> {
    let table = readme
        .split("## Supported PyTorch surface")
        .nth(1)
        .expect("the README has a supported-surface section");
    let mut rows = Vec::new();
    for line in table.lines().skip_while(|l| !l.starts_with('|')) {
        if !line.starts_with('|') {
            break;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(module), Some(functions)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Some(module) = module.strip_prefix('`').and_then(|m| m.strip_suffix('`')) else {
            continue;
        };
        let mut names = Vec::new();
        let mut depth = 0usize;
        for (i, piece) in functions.split('`').enumerate() {
            if i % 2 == 0 {
                for c in piece.chars() {
                    match c {
                        '(' => depth += 1,
                        ')' => depth = depth.saturating_sub(1),
                        _ => {}
                    }
                }
            } else if depth == 0
                && piece
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_' || c == '.')
            {
                names.push(piece.to_string());
            }
        }
        rows.push((module.to_string(), names));
    }
    rows
}

/// Runs `import torch; _ = PATH` and returns the error, if any.
fn resolve(path: &str) -> Result<(), String> {
    let yaml = format!(
        "name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n  import torch\n  _ = {path}\n"
    );
    let s = scenario::parse(&yaml, "t.yaml").map_err(|e| e.to_string())?;
    let v = s.variants().remove(0);
    run_variant(&s, &v).map(|_| ()).map_err(|e| e.to_string())
}

#[test]
fn every_function_the_readme_lists_for_a_module_resolves_in_it() {
    let rows = module_rows(include_str!("../../README.md"));
    assert!(rows.len() >= 8, "module rows found: {rows:?}");
    let mut missing = Vec::new();
    let mut checked = 0;
    for (module, names) in &rows {
        for name in names {
            checked += 1;
            let path = format!("{module}.{name}");
            if let Err(e) = resolve(&path) {
                missing.push(format!("{path}: {e}"));
            }
        }
    }
    assert!(checked > 60, "only {checked} names checked");
    assert!(
        missing.is_empty(),
        "the README lists what the model lacks:\n{}",
        missing.join("\n")
    );
}

#[test]
fn a_name_the_model_lacks_is_caught() {
    assert!(resolve("torch.nn.Linear").is_ok());
    assert!(resolve("torch.nn.NoSuchLayer").is_err());
}
