//! Golden timelines stored and compared by insta.
//!
//! Each variant's golden text is an insta *named* snapshot next to its scenario:
//! `<scenario folder>/snapshots/<scenario>@<variant>.snap` (or `<scenario>.snap` without
//! `vary`), with the scenario file as insta's input file. Because the files are plain insta
//! snapshots, `cargo insta review` / `accept` / `reject` work on them as well as
//! `cargo gpumem review`.
//!
//! insta decides what to write: locally a mismatch leaves a pending `.snap.new`; when it
//! detects CI (`CI` set to anything but `""`, `0`, `false`) it writes nothing; `INSTA_UPDATE`
//! and `INSTA_FORCE_PASS` keep their insta meaning. The harness only adds a diff made with
//! `similar` to the trial's failure message, and turns insta's panic into that message.

use super::diff;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Once;

/// The golden file of a scenario variant: `<dir>/<scenario>@<variant>.snap`.
pub fn snapshot_file(snapshot_dir: &Path, scenario: &str, variant: &str) -> PathBuf {
    snapshot_dir.join(format!("{}.snap", snapshot_name(scenario, variant)))
}

/// The name insta sees (its file name without `.snap`): the variant's name with the
/// characters a Windows checkout cannot have in a file name replaced, so that every golden
/// file can be checked out everywhere. `/` and `\` become `__` (as insta does); `:` becomes
/// `=`, which keeps allocator settings readable (`max_split_size_mb=128`); `<>"|?*` and
/// control characters become `_`. Variants that map to the same name are refused by
/// [`check_file_names`].
pub fn snapshot_name(scenario: &str, variant: &str) -> String {
    if variant.is_empty() {
        file_safe(scenario)
    } else {
        format!("{}@{}", file_safe(scenario), file_safe(variant))
    }
}

/// [`snapshot_name`]'s character mapping, for one part of the name.
fn file_safe(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '/' | '\\' => out.push_str("__"),
            ':' => out.push('='),
            '<' | '>' | '"' | '|' | '?' | '*' => out.push('_'),
            c if c.is_control() && c != '\0' => out.push('_'),
            c => out.push(c),
        }
    }
    out
}

/// Longest file name most file systems accept, in bytes.
const MAX_FILE_NAME_BYTES: usize = 255;

/// Checks that every variant of a scenario gets a golden file of its own with a name the
/// file system accepts (pending name included), before anything is written.
pub fn check_file_names(
    display: &str,
    scenario: &str,
    variants: &[crate::scenario::Variant],
) -> Result<(), String> {
    let mut seen: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    for variant in variants {
        let variant_name = variant.name();
        let name = snapshot_name(scenario, &variant_name);
        let pending = format!("{name}.snap.new");
        if pending.len() > MAX_FILE_NAME_BYTES {
            return Err(format!(
                "{display}: the golden file name of variant `{variant_name}` would be {} bytes long, over the {MAX_FILE_NAME_BYTES} a file name may have; use shorter `vary` values or scenario name",
                pending.len()
            ));
        }
        if name.contains('\0') {
            return Err(format!(
                "{display}: variant `{}` would give a golden file name with a NUL character",
                variant_name.escape_debug()
            ));
        }
        if let Some(other) = seen.insert(name.clone(), variant_name.clone()) {
            return Err(format!(
                "{display}: variants `{other}` and `{variant_name}` would share the golden file {name}.snap; make their `vary` values differ in more than the characters a file name cannot hold (`/\\:<>\"|?*`)"
            ));
        }
    }
    Ok(())
}

/// The pending file insta writes beside a golden file.
pub fn pending_file(snapshot_file: &Path) -> PathBuf {
    snapshot_file.with_extension("snap.new")
}

/// What insta should know about one golden assertion.
#[derive(Debug, Clone)]
pub struct GoldenTarget<'a> {
    /// Absolute folder of the golden files.
    pub snapshot_dir: &'a Path,
    /// The scenario's `name`.
    pub scenario: &'a str,
    /// [`crate::scenario::Variant::name`], empty without `vary`.
    pub variant: &'a str,
    /// Absolute path of the scenario file (stored relative to the workspace by insta).
    pub input_file: &'a Path,
    /// Shown by review tools.
    pub description: String,
}

/// The result of comparing a rendering with its golden file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoldenOutcome {
    /// The golden file exists and matches (or insta was told to pass or update in place).
    Matched,
    /// Missing or different: the trial fails with this.
    Mismatch(GoldenMismatch),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoldenMismatch {
    /// The golden file that is missing or differs.
    pub snapshot: PathBuf,
    /// Whether it existed.
    pub existed: bool,
    /// Whether insta left a pending `.snap.new` (not under CI).
    pub pending_written: bool,
    /// `-old/+new` diff of the golden text (all `+` lines when there was no golden file).
    pub diff: String,
}

impl GoldenMismatch {
    /// A message for the trial's failure section; `display` shows paths workspace-relative.
    pub fn message(&self, display: impl Fn(&Path) -> String) -> String {
        let what = if self.existed {
            "golden timeline differs from"
        } else {
            "no golden timeline yet at"
        };
        let next = if self.pending_written {
            format!(
                "pending file written: {} (review with `cargo gpumem review`, or `cargo gpumem accept`)",
                display(&pending_file(&self.snapshot))
            )
        } else {
            "no file written (CI detected or INSTA_UPDATE forbids it)".to_string()
        };
        format!(
            "{what} {}\n{next}\n{}",
            display(&self.snapshot),
            self.diff.trim_end()
        )
    }
}

/// Compares `text` with the golden file through insta.
///
/// insta must already know the workspace root (see [`super::prepare_process`]). An `Err` is an
/// insta failure that is not a mismatch, such as a file that could not be written.
pub fn assert_golden(target: &GoldenTarget<'_>, text: &str) -> Result<GoldenOutcome, String> {
    let file = snapshot_file(target.snapshot_dir, target.scenario, target.variant);
    refuse_link(&file)?;
    refuse_link(&pending_file(&file))?;
    let old_text = read_snapshot_text(&file);
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(target.snapshot_dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_input_file(target.input_file);
    settings.set_description(target.description.clone());
    settings.set_omit_expression(true);
    settings.set_raw_info(&info(target));
    // insta joins `name@suffix`; both parts mapped as `snapshot_file` does.
    if !target.variant.is_empty() {
        settings.set_snapshot_suffix(file_safe(target.variant));
    }
    let name = file_safe(target.scenario);
    let result = quietly(|| {
        catch_unwind(AssertUnwindSafe(|| {
            settings.bind(|| insta::assert_snapshot!(name.as_str(), text));
        }))
    });
    match result {
        Ok(()) => Ok(GoldenOutcome::Matched),
        Err(payload) => {
            let message = panic_message(payload.as_ref());
            if !message.starts_with("snapshot assertion for") {
                let reason = message.lines().next().unwrap_or_default();
                return Err(format!(
                    "cannot compare or write the golden file {}: {reason} (is the folder writable?)",
                    file.display()
                ));
            }
            let pending = pending_file(&file);
            if pending.is_file() {
                name_the_scenario_as_source(&pending);
            }
            Ok(GoldenOutcome::Mismatch(GoldenMismatch {
                existed: old_text.is_some(),
                pending_written: pending.is_file(),
                // Coloured as in `review` when the report goes to a terminal that wants colour.
                diff: if console::colors_enabled() {
                    diff::coloured(old_text.as_deref().unwrap_or(""), text)
                } else {
                    diff::unified(old_text.as_deref().unwrap_or(""), text)
                },
                snapshot: file,
            }))
        }
    }
}

/// Golden and pending files are regular files, never followed through a symbolic link: a
/// link could make the harness read or overwrite any file the user can reach.
pub fn refuse_link(path: &Path) -> Result<(), String> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => Err(format!(
            "{} is a symbolic link; golden and pending files must be regular files (remove the link)",
            path.display()
        )),
        Ok(meta) if !meta.is_file() => Err(format!(
            "{} is not a regular file; golden and pending files must be regular files",
            path.display()
        )),
        _ => Ok(()),
    }
}

/// insta records the file of its assertion macro as `source:`, which for a harness taken from
/// the package registry is a path on the machine that wrote the file. Golden files name the
/// scenario file there instead (the `input_file`, relative to the workspace), so they hold no
/// machine path and review tools show which scenario a file belongs to.
fn name_the_scenario_as_source(pending: &Path) {
    let Ok(text) = std::fs::read_to_string(pending) else {
        return;
    };
    let Some(input) = text.lines().find_map(|l| l.strip_prefix("input_file: ")) else {
        return;
    };
    let rewritten: String = text
        .lines()
        .map(|l| {
            if l.starts_with("source: ") {
                format!("source: {input}")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let rewritten = if text.ends_with('\n') {
        rewritten + "\n"
    } else {
        rewritten
    };
    if rewritten != text {
        // Best effort: the pending file stays as insta wrote it if it cannot be rewritten.
        let _ = super::pending::write_atomically(pending, &rewritten);
    }
}

/// The body of an insta snapshot file, as insta normalises it; `None` when absent or unreadable.
pub fn read_snapshot_text(path: &Path) -> Option<String> {
    if !path.is_file() {
        return None;
    }
    if let Some(text) = insta::Snapshot::from_file(path)
        .ok()
        .and_then(|s| s.as_text().map(|t| t.to_string()))
        .filter(|t| !t.is_empty())
    {
        return Some(text);
    }
    // insta reads some hand-edited headers as a legacy format; take the body after the
    // front matter instead.
    let raw = std::fs::read_to_string(path).ok()?;
    let body = raw
        .strip_prefix("---\n")
        .and_then(|rest| rest.split_once("\n---\n").map(|(_, body)| body))
        .or_else(|| raw.strip_prefix("---\n---\n"))
        .unwrap_or(&raw);
    Some(body.trim_end().to_string())
}

fn info(target: &GoldenTarget<'_>) -> insta::internals::Content {
    use insta::internals::Content;
    let mut fields = vec![(
        Content::from("scenario"),
        Content::from(target.scenario.to_string()),
    )];
    if !target.variant.is_empty() {
        fields.push((
            Content::from("variant"),
            Content::from(target.variant.to_string()),
        ));
    }
    Content::Map(fields)
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panicked".to_string()
    }
}

thread_local! {
    static SILENCED: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with the panic hook silent on this thread: insta reports a mismatch by panicking,
/// and the default hook would print a `thread panicked at insta/...` line for an expected
/// outcome. Panics on other threads, or outside `f`, are reported as usual.
fn quietly<R>(f: impl FnOnce() -> R) -> R {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !SILENCED.with(Cell::get) {
                previous(info);
            }
        }));
    });
    SILENCED.with(|s| s.set(true));
    let result = f();
    SILENCED.with(|s| s.set(false));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_files_name_the_scenario_as_their_source() {
        let dir = tempfile::tempdir().unwrap();
        let pending = dir.path().join("a.snap.new");
        std::fs::write(
            &pending,
            "---\nsource: ../../.cargo/registry/src/gpumem-harness/src/harness/golden.rs\nassertion_line: 120\ninput_file: scenarios/a.yaml\n---\nbody\n",
        )
        .unwrap();
        name_the_scenario_as_source(&pending);
        let text = std::fs::read_to_string(&pending).unwrap();
        assert!(text.contains("\nsource: scenarios/a.yaml\n"), "{text}");
        assert!(!text.contains(".cargo"), "{text}");
        assert!(text.ends_with("---\nbody\n"), "{text}");
    }

    #[test]
    fn names_follow_insta_conventions() {
        let dir = Path::new("/w/scenarios/snapshots");
        assert_eq!(
            snapshot_file(dir, "simple_cycle", "gc_every=100,python=3.11"),
            dir.join("simple_cycle@gc_every=100,python=3.11.snap")
        );
        assert_eq!(snapshot_file(dir, "plain", ""), dir.join("plain.snap"));
        assert_eq!(snapshot_name("a/b", "x=c\\d"), "a__b@x=c__d");
        // Every golden name can be checked out on Windows, and stays readable.
        assert_eq!(
            snapshot_name("frag", "allocator=max_split_size_mb:128"),
            "frag@allocator=max_split_size_mb=128"
        );
        assert_eq!(snapshot_name("s", "v=<a>|\"b\"?*\t"), "s@v=_a___b____");
        for c in snapshot_name("s", "a:b<c>d\"e|f?g*h\u{1}").chars() {
            assert!(!":<>\"|?*\\/".contains(c) && !c.is_control(), "{c:?}");
        }
        assert_eq!(
            pending_file(&dir.join("plain.snap")),
            dir.join("plain.snap.new")
        );
    }

    #[test]
    fn mismatch_message_names_files_and_shows_the_diff() {
        let mismatch = GoldenMismatch {
            snapshot: PathBuf::from("/w/scenarios/snapshots/a.snap"),
            existed: true,
            pending_written: true,
            diff: "-old\n+new\n".into(),
        };
        let text =
            mismatch.message(|p| super::super::discovery::relative_display(Path::new("/w"), p));
        assert!(text.starts_with("golden timeline differs from scenarios/snapshots/a.snap\n"));
        assert!(text.contains("pending file written: scenarios/snapshots/a.snap.new"));
        assert!(text.ends_with("-old\n+new"));
    }

    #[test]
    fn a_changed_rendering_is_a_mismatch_with_a_diff() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = dir.path().join("snapshots");
        std::fs::create_dir_all(&snapshots).unwrap();
        let input = dir.path().join("a.yaml");
        std::fs::write(&input, "name: a\n").unwrap();
        std::fs::write(
            snapshots.join("a@n=1.snap"),
            "---\nsource: x\n---\npeak 1 GiB\nsame\n",
        )
        .unwrap();
        let target = GoldenTarget {
            snapshot_dir: &snapshots,
            scenario: "a",
            variant: "n=1",
            input_file: &input,
            description: "a::n=1".into(),
        };
        assert_eq!(
            assert_golden(&target, "peak 1 GiB\nsame\n"),
            Ok(GoldenOutcome::Matched)
        );
        let Ok(GoldenOutcome::Mismatch(m)) = assert_golden(&target, "peak 2 GiB\nsame\n") else {
            panic!("expected a mismatch");
        };
        assert!(m.existed);
        assert_eq!(m.snapshot, snapshots.join("a@n=1.snap"));
        assert_eq!(m.diff, "@@ -1,2 +1,2 @@\n-peak 1 GiB\n+peak 2 GiB\n same\n");
    }

    #[test]
    fn insta_reads_the_golden_file_under_its_mapped_name() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = dir.path().join("snapshots");
        std::fs::create_dir_all(&snapshots).unwrap();
        let input = dir.path().join("a.yaml");
        std::fs::write(&input, "name: a\n").unwrap();
        std::fs::write(
            snapshots.join("a@alloc=max_split_size_mb=128.snap"),
            "---\nsource: x\n---\nbody\n",
        )
        .unwrap();
        let target = GoldenTarget {
            snapshot_dir: &snapshots,
            scenario: "a",
            variant: "alloc=max_split_size_mb:128",
            input_file: &input,
            description: "a::alloc=max_split_size_mb:128".into(),
        };
        assert_eq!(assert_golden(&target, "body\n"), Ok(GoldenOutcome::Matched));
    }
}
