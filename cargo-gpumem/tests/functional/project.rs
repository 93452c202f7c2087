//! A temporary cargo workspace and a way to run `cargo gpumem` in it.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary workspace (a virtual manifest unless a test writes its own `Cargo.toml`).
pub struct Project {
    dir: tempfile::TempDir,
}

/// What a `cargo gpumem` run printed and returned.
#[derive(Debug)]
pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// stdout then stderr, for assertions that do not care where a line went.
    pub fn all(&self) -> String {
        format!("{}{}", self.stdout, self.stderr)
    }
}

impl Default for Project {
    fn default() -> Project {
        Project::new()
    }
}

impl Project {
    pub fn new() -> Project {
        let project = Project {
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        project.write("Cargo.toml", "[workspace]\nresolver = \"2\"\n");
        project
    }

    /// A repository without any cargo file (a PyTorch project): only a `.git` folder, which
    /// bounds the upward search for scenarios as a real repository root does.
    pub fn without_cargo() -> Project {
        let project = Project {
            dir: tempfile::tempdir().expect("temporary directory"),
        };
        std::fs::create_dir_all(project.path(".git")).expect("create .git");
        project
    }

    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    pub fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    pub fn write(&self, relative: &str, contents: &str) -> &Project {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("create folder");
        std::fs::write(path, contents).expect("write file");
        self
    }

    pub fn exists(&self, relative: &str) -> bool {
        self.path(relative).exists()
    }

    /// Files under `relative` (recursively, relative to it, sorted); empty when absent.
    pub fn files_under(&self, relative: &str) -> Vec<String> {
        let base = self.path(relative);
        let mut found = Vec::new();
        collect(&base, &base, &mut found);
        found.sort();
        found
    }

    /// Runs `cargo gpumem <args>` in the workspace root.
    pub fn gpumem(&self, args: &[&str]) -> Output {
        self.gpumem_with(args, &[])
    }

    /// Runs `cargo gpumem <args>` with extra environment variables (an empty value removes one).
    pub fn gpumem_with(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.gpumem_in(self.root(), args, env)
    }

    /// Runs `cargo gpumem <args>` in `cwd`.
    pub fn gpumem_in(&self, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        let binary = Path::new(env!("CARGO_BIN_EXE_cargo-gpumem"));
        let bin_dir = binary.parent().expect("binary folder");
        let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
            std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
        ))
        .expect("PATH");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let mut command = Command::new(cargo);
        command
            .arg("gpumem")
            .args(args)
            .current_dir(cwd)
            .env("PATH", path)
            .env("NO_COLOR", "1")
            .env("CARGO_TERM_COLOR", "never");
        for key in [
            "CI",
            "TF_BUILD",
            "INSTA_UPDATE",
            "INSTA_FORCE_PASS",
            "INSTA_OUTPUT",
            "INSTA_WORKSPACE_ROOT",
            "INSTA_PENDING_DIR",
            "INSTA_REQUIRE_FULL_MATCH",
            "RUST_BACKTRACE",
            "CLICOLOR_FORCE",
        ] {
            command.env_remove(key);
        }
        // An empty value removes the variable (e.g. the default `NO_COLOR`).
        for (key, value) in env {
            if value.is_empty() {
                command.env_remove(key);
            } else {
                command.env(key, value);
            }
        }
        let output = command.output().expect("run cargo gpumem");
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

fn collect(base: &Path, dir: &Path, found: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(base, &path, found);
        } else if let Ok(relative) = path.strip_prefix(base) {
            found.push(relative.to_string_lossy().replace('\\', "/"));
        }
    }
}
