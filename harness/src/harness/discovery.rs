//! Finding the scenario files of a cargo workspace, or of a repository without cargo.
//!
//! From the current directory up to the repository root, the first folder holding a
//! `Cargo.toml` makes a cargo workspace, and the first holding `scenarios/`, `gpumem.toml` or a
//! `pyproject.toml` with `[tool.gpumem]` makes a plain root (see [`super::config_file`]): a
//! PyTorch repository needs no Rust file.
//!
//! A cargo workspace comes from `cargo metadata` (so `--manifest-path`, `CARGO` and virtual
//! manifests behave as they do for cargo itself). Scenario folders are `scenarios/` at the
//! workspace root, the folders a `gpumem.toml` there names, plus any folder a package names
//! in its manifest:
//!
//! ```toml
//! [package.metadata.gpumem]
//! scenarios = "gpu-scenarios"   # relative to the package's Cargo.toml
//! ```
//!
//! Every `*.yaml` / `*.yml` file inside a folder or its subfolders (a catalogue such as
//! `scenarios/pitfalls/`) is one scenario; golden files live in the `snapshots/` subfolder of
//! the folder that holds the scenario. `snapshots/` and hidden folders are not searched. Discovery only reads directories: it never parses a
//! scenario, so it stays cheap when a runner starts the harness once per test.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// The folder name used at the workspace root when no package names another.
pub const DEFAULT_SCENARIO_DIR: &str = "scenarios";

/// Where golden files live, relative to their scenario folder.
pub const SNAPSHOT_DIR: &str = "snapshots";

/// A workspace and the scenario folders found in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Absolute workspace root (from `cargo metadata`).
    pub root: PathBuf,
    /// Existing scenario folders, absolute, each listed once, in discovery order.
    pub scenario_dirs: Vec<PathBuf>,
    /// Folders where `scenarios/` and the configuration files were looked for, nearest first.
    pub searched: Vec<PathBuf>,
    /// Whether the root is a cargo workspace (else a plain folder).
    pub is_cargo: bool,
}

/// One scenario file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioFile {
    /// Absolute path, used to read the file.
    pub path: PathBuf,
    /// Path relative to the workspace root with `/` separators: what messages and golden
    /// files show, so they do not depend on this machine.
    pub display: String,
    /// Absolute folder of this scenario's golden files.
    pub snapshot_dir: PathBuf,
}

impl Workspace {
    /// The workspace of `manifest_path`, or the one found from the current directory: a cargo
    /// workspace when a `Cargo.toml` comes first on the way up, else a plain folder.
    pub fn discover(manifest_path: Option<&Path>) -> Result<Workspace, Error> {
        if let Some(path) = manifest_path {
            return Workspace::discover_cargo(Some(path));
        }
        let cwd = std::env::current_dir().map_err(|e| Error::io(Path::new("."), e))?;
        Workspace::discover_from(&cwd)
    }

    /// [`Workspace::discover`] from `start` instead of the current directory.
    pub fn discover_from(start: &Path) -> Result<Workspace, Error> {
        let found = super::config_file::find_root(start)?;
        Ok(match &found.cargo_manifest {
            Some(manifest) => Workspace::discover_cargo(Some(manifest))?,
            None => {
                let mut workspace = Workspace::from_parts(found.root, found.declared);
                workspace.searched = found.searched.folders;
                workspace
            }
        })
    }

    /// Runs `cargo metadata --no-deps` (for `manifest_path`, or the current directory) and
    /// collects the scenario folders it declares.
    pub fn discover_cargo(manifest_path: Option<&Path>) -> Result<Workspace, Error> {
        let mut command = cargo_metadata::MetadataCommand::new();
        command.no_deps();
        if let Some(path) = manifest_path {
            command.manifest_path(path);
        }
        let metadata = command
            .exec()
            .map_err(|e| Error::Usage(format!("cannot read the cargo workspace: {e}")))?;
        let root = metadata.workspace_root.clone().into_std_path_buf();
        let mut declared = super::config_file::declared_folders(&root)?.unwrap_or_default();
        for package in metadata.workspace_packages() {
            let Some(value) = package
                .metadata
                .get("gpumem")
                .and_then(|g| g.get("scenarios"))
            else {
                continue;
            };
            let Some(folder) = value.as_str() else {
                return Err(Error::Usage(format!(
                    "{}: `package.metadata.gpumem.scenarios` must be a string (a folder path)",
                    package.manifest_path
                )));
            };
            let package_dir = package
                .manifest_path
                .parent()
                .map(|p| p.as_std_path().to_path_buf())
                .unwrap_or_else(|| root.clone());
            let dir = package_dir.join(folder);
            if !dir.is_dir() {
                return Err(Error::Usage(format!(
                    "{}: scenario folder `{folder}` named in `package.metadata.gpumem.scenarios` does not exist",
                    package.manifest_path
                )));
            }
            declared.push(dir);
        }
        let mut workspace = Workspace::from_parts(root, declared);
        workspace.is_cargo = true;
        Ok(workspace)
    }

    /// A workspace with the default folder (when it exists) and the `declared` ones.
    pub fn from_parts(root: PathBuf, declared: Vec<PathBuf>) -> Workspace {
        let mut scenario_dirs: Vec<PathBuf> = Vec::new();
        let default = root.join(DEFAULT_SCENARIO_DIR);
        let candidates = std::iter::once(default)
            .filter(|d| d.is_dir())
            .chain(declared);
        for dir in candidates {
            let key = dir.canonicalize().unwrap_or_else(|_| dir.clone());
            let seen = scenario_dirs
                .iter()
                .any(|d| d.canonicalize().unwrap_or_else(|_| d.clone()) == key);
            if !seen {
                scenario_dirs.push(dir);
            }
        }
        Workspace {
            searched: vec![root.clone()],
            root,
            scenario_dirs,
            is_cargo: false,
        }
    }

    /// "no scenarios" explained: where they were looked for and how to name other folders.
    pub fn where_looked(&self) -> String {
        let shown: Vec<String> = self
            .searched
            .iter()
            .map(|f| f.join(DEFAULT_SCENARIO_DIR).display().to_string())
            .collect();
        let mut text = format!(
            "looked for `{DEFAULT_SCENARIO_DIR}/` in {}",
            shown.join(", ")
        );
        if !self.scenario_dirs.is_empty() {
            let dirs: Vec<String> = self
                .scenario_dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect();
            text = format!("searched {} (no `*.yaml` scenario there)", dirs.join(", "));
        }
        if self.is_cargo {
            text.push_str(
                "; other folders are named by `[package.metadata.gpumem] scenarios` or `gpumem.toml`",
            );
        } else {
            text.push_str(
                "; other folders are named by `gpumem.toml` (`scenarios = [\"path\"]`) or \
                 `[tool.gpumem] scenarios` in `pyproject.toml`",
            );
        }
        text
    }

    /// The scenario files of every folder, sorted by path within each folder.
    pub fn scenario_files(&self) -> Result<Vec<ScenarioFile>, Error> {
        let mut files = Vec::new();
        for dir in &self.scenario_folders()? {
            let entries = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
            let mut paths: Vec<PathBuf> = Vec::new();
            for entry in entries {
                let path = entry.map_err(|e| Error::io(dir, e))?.path();
                if path.is_file() && is_scenario_file(&path) {
                    paths.push(path);
                }
            }
            paths.sort();
            files.extend(paths.into_iter().map(|path| ScenarioFile {
                display: self.display_path(&path),
                snapshot_dir: dir.join(SNAPSHOT_DIR),
                path,
            }));
        }
        Ok(files)
    }

    /// Absolute folders that may hold golden and pending files.
    pub fn snapshot_dirs(&self) -> Vec<PathBuf> {
        self.scenario_folders()
            .unwrap_or_else(|_| self.scenario_dirs.clone())
            .iter()
            .map(|d| d.join(SNAPSHOT_DIR))
            .collect()
    }

    /// Every scenario folder and its subfolders (not `snapshots/` nor hidden ones), sorted
    /// within each level.
    fn scenario_folders(&self) -> Result<Vec<PathBuf>, Error> {
        let mut out = Vec::new();
        for dir in &self.scenario_dirs {
            let mut pending = vec![dir.clone()];
            while let Some(folder) = pending.pop() {
                let mut children: Vec<PathBuf> = std::fs::read_dir(&folder)
                    .map_err(|e| Error::io(&folder, e))?
                    .filter_map(|entry| entry.ok().map(|e| e.path()))
                    // Linked folders are not followed: a link back into the tree (`a -> .`)
                    // would loop, and one out of it would run another tree's scenarios.
                    .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
                    .filter(|p| {
                        p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n != SNAPSHOT_DIR && !n.starts_with('.'))
                    })
                    .collect();
                children.sort();
                out.push(folder);
                pending.extend(children.into_iter().rev());
            }
        }
        Ok(out)
    }

    /// `path` relative to the workspace root with `/` separators (unchanged when outside).
    pub fn display_path(&self, path: &Path) -> String {
        relative_display(&self.root, path)
    }
}

/// `path` relative to `root` with `/` separators, or `path` as given when it is elsewhere.
pub fn relative_display(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

fn is_scenario_file(path: &Path) -> bool {
    matches!(
        path.extension().and_then(|e| e.to_str()),
        Some("yaml") | Some("yml")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn touch(path: &Path) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, "name: x\n").unwrap();
    }

    #[test]
    fn default_folder_is_used_only_when_present() {
        let dir = tempfile::tempdir().unwrap();
        let ws = Workspace::from_parts(dir.path().to_path_buf(), vec![]);
        assert!(ws.scenario_dirs.is_empty());
        std::fs::create_dir(dir.path().join("scenarios")).unwrap();
        let ws = Workspace::from_parts(dir.path().to_path_buf(), vec![]);
        assert_eq!(ws.scenario_dirs, vec![dir.path().join("scenarios")]);
    }

    #[test]
    fn declared_folders_follow_the_default_and_are_deduplicated() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        std::fs::create_dir_all(root.join("scenarios")).unwrap();
        std::fs::create_dir_all(root.join("crates/a/gpu")).unwrap();
        let ws = Workspace::from_parts(
            root.clone(),
            vec![
                root.join("crates/a/gpu"),
                root.join("crates/a/../../scenarios"),
            ],
        );
        assert_eq!(
            ws.scenario_dirs,
            vec![root.join("scenarios"), root.join("crates/a/gpu")]
        );
    }

    #[test]
    fn scenarios_in_subfolders_keep_their_golden_files_beside_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(&root.join("scenarios/top.yaml"));
        touch(&root.join("scenarios/pitfalls/deep.yaml"));
        touch(&root.join("scenarios/snapshots/not_a_scenario.yaml"));
        touch(&root.join("scenarios/.hidden/skip.yaml"));
        let ws = Workspace::from_parts(root.to_path_buf(), vec![]);
        let files = ws.scenario_files().unwrap();
        let shown: Vec<&str> = files.iter().map(|f| f.display.as_str()).collect();
        assert_eq!(
            shown,
            ["scenarios/top.yaml", "scenarios/pitfalls/deep.yaml"]
        );
        assert_eq!(
            files[1].snapshot_dir,
            root.join("scenarios/pitfalls/snapshots")
        );
        assert!(
            ws.snapshot_dirs()
                .contains(&root.join("scenarios/pitfalls/snapshots"))
        );
    }

    #[test]
    fn lists_yaml_files_sorted_with_relative_display_paths() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        touch(&root.join("scenarios/b.yaml"));
        touch(&root.join("scenarios/a.yml"));
        touch(&root.join("scenarios/notes.txt"));
        touch(&root.join("scenarios/snapshots/a.snap"));
        let ws = Workspace::from_parts(root.clone(), vec![]);
        let files = ws.scenario_files().unwrap();
        let shown: Vec<&str> = files.iter().map(|f| f.display.as_str()).collect();
        assert_eq!(shown, ["scenarios/a.yml", "scenarios/b.yaml"]);
        assert_eq!(files[0].snapshot_dir, root.join("scenarios/snapshots"));
    }

    #[test]
    fn discover_reads_package_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             [package.metadata.gpumem]\nscenarios = \"gpu\"\n[workspace]\n",
        )
        .unwrap();
        touch(&root.join("src/lib.rs"));
        touch(&root.join("gpu/one.yaml"));
        let ws = Workspace::discover(Some(&root.join("Cargo.toml"))).unwrap();
        let files = ws.scenario_files().unwrap();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].display, "gpu/one.yaml");
    }

    #[test]
    fn discover_rejects_a_missing_declared_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("Cargo.toml"),
            "[package]\nname = \"demo\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
             [package.metadata.gpumem]\nscenarios = \"nope\"\n[workspace]\n",
        )
        .unwrap();
        touch(&root.join("src/lib.rs"));
        let err = Workspace::discover(Some(&root.join("Cargo.toml"))).unwrap_err();
        assert!(err.to_string().contains("`nope`"), "{err}");
        assert_eq!(err.exit_code(), crate::exit_code::BAD_INPUT);
    }
}
