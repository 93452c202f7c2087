//! Scenario folders of a repository that is not a cargo workspace (a PyTorch project).
//!
//! Without a `Cargo.toml`, the root is the nearest folder, from the current directory up to
//! the repository root (the first folder holding `.git`), that holds a `scenarios/` folder, a
//! `gpumem.toml`, or a `pyproject.toml` with a `[tool.gpumem]` table. Both files name extra
//! folders, relative to the file:
//!
//! ```toml
//! # gpumem.toml                      # pyproject.toml
//! scenarios = ["gpu/scenarios"]      # [tool.gpumem]
//!                                    # scenarios = ["gpu/scenarios"]
//! ```
//!
//! A single string is accepted for one folder. Unknown keys are errors (a typo must not
//! silently drop a folder).

use crate::error::Error;
use std::path::{Path, PathBuf};

/// The configuration file of a repository without cargo.
pub const CONFIG_FILE: &str = "gpumem.toml";

/// Where a search for scenario folders went, for the "no scenarios" message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SearchedPlaces {
    /// Folders looked at, nearest first.
    pub folders: Vec<PathBuf>,
}

/// The root found from `start` and the folders its configuration names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundRoot {
    pub root: PathBuf,
    pub declared: Vec<PathBuf>,
    pub searched: SearchedPlaces,
    /// The root holds a `Cargo.toml`: ask `cargo metadata` about it.
    pub cargo_manifest: Option<PathBuf>,
}

/// Walks from `start` up to the repository root (or the filesystem root when there is no
/// `.git`) and returns the first folder that holds a `Cargo.toml` or looks like a gpumem
/// root. When none does, the root is `start` with nothing declared, and `searched` lists
/// every folder looked at.
pub fn find_root(start: &Path) -> Result<FoundRoot, Error> {
    let mut searched = SearchedPlaces::default();
    for folder in start.ancestors() {
        searched.folders.push(folder.to_path_buf());
        let manifest = folder.join("Cargo.toml");
        if manifest.is_file() {
            return Ok(FoundRoot {
                root: folder.to_path_buf(),
                declared: Vec::new(),
                searched,
                cargo_manifest: Some(manifest),
            });
        }
        let declared = declared_folders(folder)?;
        if let Some(declared) = declared {
            return Ok(FoundRoot {
                root: folder.to_path_buf(),
                declared,
                searched,
                cargo_manifest: None,
            });
        }
        if folder.join(super::discovery::DEFAULT_SCENARIO_DIR).is_dir() {
            return Ok(FoundRoot {
                root: folder.to_path_buf(),
                declared: Vec::new(),
                searched,
                cargo_manifest: None,
            });
        }
        if folder.join(".git").exists() {
            break;
        }
    }
    Ok(FoundRoot {
        root: start.to_path_buf(),
        declared: Vec::new(),
        searched,
        cargo_manifest: None,
    })
}

/// The folders that `folder/gpumem.toml` or `folder/pyproject.toml`'s `[tool.gpumem]` name,
/// or `None` when neither configures gpumem.
pub fn declared_folders(folder: &Path) -> Result<Option<Vec<PathBuf>>, Error> {
    let mut found: Option<Vec<PathBuf>> = None;
    let config = folder.join(CONFIG_FILE);
    if config.is_file() {
        let table = read_table(&config)?;
        found
            .get_or_insert_with(Vec::new)
            .extend(folders_of(&table, &config, folder, "")?);
    }
    let pyproject = folder.join("pyproject.toml");
    if pyproject.is_file() {
        let table = read_table(&pyproject)?;
        if let Some(gpumem) = table.get("tool").and_then(|t| t.get("gpumem")) {
            let Some(gpumem) = gpumem.as_table() else {
                return Err(config_error(&pyproject, "`tool.gpumem` must be a table"));
            };
            found.get_or_insert_with(Vec::new).extend(folders_of(
                gpumem,
                &pyproject,
                folder,
                "tool.gpumem.",
            )?);
        }
    }
    Ok(found)
}

fn read_table(path: &Path) -> Result<toml::Table, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.parse::<toml::Table>()
        .map_err(|e| config_error(path, &e.to_string().replace('\n', " ")))
}

/// The `scenarios` entry of `table` (a string or a list of strings), each folder checked.
fn folders_of(
    table: &toml::Table,
    file: &Path,
    base: &Path,
    prefix: &str,
) -> Result<Vec<PathBuf>, Error> {
    if let Some(unknown) = table.keys().find(|k| k.as_str() != "scenarios") {
        return Err(config_error(
            file,
            &format!("unknown key `{prefix}{unknown}`; the only key is `{prefix}scenarios`"),
        ));
    }
    let names: Vec<&str> = match table.get("scenarios") {
        None => Vec::new(),
        Some(toml::Value::String(one)) => vec![one.as_str()],
        Some(toml::Value::Array(list)) => list
            .iter()
            .map(|v| {
                v.as_str().ok_or_else(|| {
                    config_error(
                        file,
                        &format!("`{prefix}scenarios` must list folder paths (strings)"),
                    )
                })
            })
            .collect::<Result<_, _>>()?,
        Some(_) => {
            return Err(config_error(
                file,
                &format!("`{prefix}scenarios` must be a folder path or a list of them"),
            ));
        }
    };
    names
        .into_iter()
        .map(|name| {
            let dir = base.join(name);
            if dir.is_dir() {
                Ok(dir)
            } else {
                Err(config_error(
                    file,
                    &format!(
                        "scenario folder `{name}` named in `{prefix}scenarios` does not exist"
                    ),
                ))
            }
        })
        .collect()
}

fn config_error(file: &Path, message: &str) -> Error {
    Error::Usage(format!("{}: {message}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_folder_with_scenarios_is_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(repo.join("scenarios")).unwrap();
        std::fs::create_dir_all(repo.join("src/model")).unwrap();
        let found = find_root(&repo.join("src/model")).unwrap();
        assert_eq!(found.root, repo);
        assert!(found.declared.is_empty());
    }

    #[test]
    fn the_search_stops_at_the_repository_root() {
        let dir = tempfile::tempdir().unwrap();
        let outer = dir.path();
        std::fs::create_dir_all(outer.join("scenarios")).unwrap();
        std::fs::create_dir_all(outer.join("repo/.git")).unwrap();
        std::fs::create_dir_all(outer.join("repo/src")).unwrap();
        let found = find_root(&outer.join("repo/src")).unwrap();
        assert_eq!(found.root, outer.join("repo/src"));
        assert_eq!(
            found.searched.folders,
            [outer.join("repo/src"), outer.join("repo")]
        );
    }

    #[test]
    fn pyproject_and_gpumem_toml_name_folders() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path();
        std::fs::create_dir_all(repo.join("gpu/a")).unwrap();
        std::fs::create_dir_all(repo.join("gpu/b")).unwrap();
        std::fs::write(
            repo.join("pyproject.toml"),
            "[project]\nname = \"m\"\n[tool.gpumem]\nscenarios = [\"gpu/a\"]\n",
        )
        .unwrap();
        std::fs::write(repo.join("gpumem.toml"), "scenarios = \"gpu/b\"\n").unwrap();
        let found = find_root(repo).unwrap();
        assert_eq!(found.declared, [repo.join("gpu/b"), repo.join("gpu/a")]);
    }

    #[test]
    fn a_pyproject_without_a_gpumem_table_is_not_a_root() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("pyproject.toml"),
            "[project]\nname = \"m\"\n",
        )
        .unwrap();
        assert_eq!(declared_folders(dir.path()).unwrap(), None);
    }

    #[test]
    fn typos_and_missing_folders_are_configuration_errors() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("gpumem.toml"), "scenario = \"x\"\n").unwrap();
        let err = declared_folders(dir.path()).unwrap_err().to_string();
        assert!(err.contains("unknown key `scenario`"), "{err}");
        std::fs::write(dir.path().join("gpumem.toml"), "scenarios = [\"nope\"]\n").unwrap();
        let err = declared_folders(dir.path()).unwrap_err().to_string();
        assert!(
            err.contains("`nope`") && err.contains("does not exist"),
            "{err}"
        );
        std::fs::write(dir.path().join("gpumem.toml"), "scenarios = [\n").unwrap();
        let err = declared_folders(dir.path()).unwrap_err();
        assert_eq!(err.exit_code(), crate::exit_code::BAD_INPUT);
    }
}
