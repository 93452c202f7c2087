//! Pending golden files (`*.snap.new`) and the decisions on them: accept or reject.
//!
//! The files are insta's, so accepting does what `cargo insta accept` does: the pending file
//! becomes the golden file without its review-only `assertion_line` field. The golden file is
//! replaced atomically (written beside it, then renamed), so an interrupted accept never
//! leaves a half-written golden file.

use super::golden;
use crate::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// One pending golden file and the golden file it would replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingSnapshot {
    /// `<dir>/<name>.snap.new`.
    pub pending: PathBuf,
    /// `<dir>/<name>.snap` (may not exist yet).
    pub golden: PathBuf,
    /// The trial it belongs to: `<scenario>::<variant>` or `<scenario>`.
    pub trial: String,
}

impl PendingSnapshot {
    /// The pending file for `pending` (a path ending in `.snap.new`), or `None` for other files.
    pub fn from_path(pending: &Path) -> Option<PendingSnapshot> {
        let file_name = pending.file_name()?.to_str()?;
        let stem = file_name.strip_suffix(".snap.new")?;
        if stem.is_empty() {
            return None;
        }
        let trial = match stem.split_once('@') {
            Some((scenario, variant)) => format!("{scenario}::{variant}"),
            None => stem.to_string(),
        };
        Some(PendingSnapshot {
            pending: pending.to_path_buf(),
            golden: pending.with_file_name(format!("{stem}.snap")),
            trial,
        })
    }

    /// Whether `filter` selects this snapshot: a substring of the trial name or of the
    /// pending file's path as `display` shows it. No filter selects all.
    pub fn matches(&self, filter: Option<&str>, display: &str) -> bool {
        match filter {
            None => true,
            Some(f) => self.trial.contains(f) || display.contains(f),
        }
    }

    /// Refuses a pending or golden file that is a symbolic link (or not a regular file).
    pub fn refuse_links(&self) -> Result<(), Error> {
        golden::refuse_link(&self.pending)
            .and_then(|()| golden::refuse_link(&self.golden))
            .map_err(Error::Usage)
    }

    /// Golden text now on disk (empty when there is none) and the pending text.
    pub fn texts(&self) -> (String, String) {
        let old = golden::read_snapshot_text(&self.golden).unwrap_or_default();
        let new = golden::read_snapshot_text(&self.pending).unwrap_or_default();
        (old, new)
    }

    /// Makes the pending file the golden file.
    pub fn accept(&self) -> Result<(), Error> {
        self.refuse_links()?;
        let text =
            std::fs::read_to_string(&self.pending).map_err(|e| Error::io(&self.pending, e))?;
        write_atomically(&self.golden, &without_review_fields(&text))?;
        std::fs::remove_file(&self.pending).map_err(|e| Error::io(&self.pending, e))
    }

    /// Deletes the pending file and keeps the golden file as it is.
    pub fn reject(&self) -> Result<(), Error> {
        self.refuse_links()?;
        std::fs::remove_file(&self.pending).map_err(|e| Error::io(&self.pending, e))
    }
}

/// Every pending file in `snapshot_dirs` (absent folders are skipped), sorted by path.
pub fn find_pending(snapshot_dirs: &[PathBuf]) -> Result<Vec<PendingSnapshot>, Error> {
    let mut found = Vec::new();
    for dir in snapshot_dirs {
        if !dir.is_dir() {
            continue;
        }
        for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
            let path = entry.map_err(|e| Error::io(dir, e))?.path();
            // Links are listed (not followed) so that accepting or reviewing them is refused
            // with their name rather than skipped silently.
            let listed = std::fs::symlink_metadata(&path)
                .is_ok_and(|m| m.is_file() || m.file_type().is_symlink());
            if listed && let Some(pending) = PendingSnapshot::from_path(&path) {
                found.push(pending);
            }
        }
    }
    found.sort_by(|a, b| a.pending.cmp(&b.pending));
    Ok(found)
}

/// The snapshot text with `assertion_line` removed from its front matter (insta keeps that
/// field in pending files only).
fn without_review_fields(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut separators = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "---" && separators < 2 {
            separators += 1;
        } else if separators == 1 && line.starts_with("assertion_line:") {
            continue;
        }
        out.push_str(line);
    }
    out
}

/// Writes `contents` to a temporary file beside `path`, flushes it, and renames it over `path`.
pub fn write_atomically(path: &Path, contents: &str) -> Result<(), Error> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temporary = dir.join(format!(".{file_name}.{}.tmp", std::process::id()));
    let written = std::fs::File::create(&temporary).and_then(|mut file| {
        file.write_all(contents.as_bytes())?;
        file.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&temporary, path)) {
        let _ = std::fs::remove_file(&temporary);
        return Err(Error::io(path, e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PENDING: &str = "---\nsource: harness/src/harness/golden.rs\nassertion_line: 112\n\
        description: simple_cycle::gc_every=100\ninput_file: scenarios/simple_cycle.yaml\n---\n\
        peak allocated: 1 GiB\nassertion_line: stays in the body\n";

    #[test]
    fn recognises_pending_files_and_their_trials() {
        let p = PendingSnapshot::from_path(Path::new("/s/simple@gc_every=100.snap.new")).unwrap();
        assert_eq!(p.trial, "simple::gc_every=100");
        assert_eq!(p.golden, Path::new("/s/simple@gc_every=100.snap"));
        let plain = PendingSnapshot::from_path(Path::new("/s/plain.snap.new")).unwrap();
        assert_eq!(plain.trial, "plain");
        assert!(PendingSnapshot::from_path(Path::new("/s/plain.snap")).is_none());
        assert!(plain.matches(None, ""));
        assert!(plain.matches(Some("pla"), ""));
        assert!(!plain.matches(Some("simple"), "scenarios/snapshots/plain.snap.new"));
    }

    #[test]
    fn accept_strips_review_fields_and_removes_the_pending_file() {
        let dir = tempfile::tempdir().unwrap();
        let pending_path = dir.path().join("simple_cycle@gc_every=100.snap.new");
        std::fs::write(&pending_path, PENDING).unwrap();
        let found = find_pending(&[dir.path().to_path_buf(), dir.path().join("absent")]).unwrap();
        assert_eq!(found.len(), 1);
        found[0].accept().unwrap();
        assert!(!pending_path.exists());
        let golden =
            std::fs::read_to_string(dir.path().join("simple_cycle@gc_every=100.snap")).unwrap();
        assert!(!golden.contains("assertion_line: 112"), "{golden}");
        assert!(golden.contains("assertion_line: stays in the body"));
        assert!(golden.contains("input_file: scenarios/simple_cycle.yaml"));
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn accepted_file_reads_back_as_the_pending_text() {
        let dir = tempfile::tempdir().unwrap();
        let pending_path = dir.path().join("a.snap.new");
        std::fs::write(dir.path().join("a.snap"), "---\nsource: x\n---\nold line\n").unwrap();
        std::fs::write(&pending_path, PENDING).unwrap();
        let pending = PendingSnapshot::from_path(&pending_path).unwrap();
        let (old, new) = pending.texts();
        assert_eq!(old, "old line");
        assert!(new.starts_with("peak allocated: 1 GiB"));
        pending.accept().unwrap();
        assert_eq!(golden::read_snapshot_text(&pending.golden).unwrap(), new);
    }

    #[test]
    fn reject_keeps_the_golden_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.snap"), "---\n---\nkept\n").unwrap();
        std::fs::write(dir.path().join("a.snap.new"), PENDING).unwrap();
        let found = find_pending(&[dir.path().to_path_buf()]).unwrap();
        found[0].reject().unwrap();
        assert!(!dir.path().join("a.snap.new").exists());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.snap")).unwrap(),
            "---\n---\nkept\n"
        );
    }
}
