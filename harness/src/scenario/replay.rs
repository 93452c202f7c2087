//! `replay: path/to/snapshot.pickle` — a scenario whose timeline is a recorded PyTorch memory
//! snapshot rather than a workload run on the model, so that a recorded run gets a golden
//! timeline and expectations like any scenario.
//!
//! The path is relative to the scenario file. `device` (and `vary: { device: [...] }`)
//! still matters: the snapshot's requests are replayed through the allocator model on that
//! device's capacity, and when they would not fit the timeline records the out-of-memory
//! error (so `oom:` expectations judge the device). `python` may be left out, and `vary` over
//! `python` only repeats the same timeline: a trace has no interpreter to model.

use super::model::ReplaySource;
use super::parse::Context;
use super::yaml_tree::{Node, Position};
use crate::error::Error;
use std::path::{Path, PathBuf};

/// Reads the `replay` value; `key_at` is where `replay:` is written.
pub(crate) fn parse_replay(
    cx: &Context<'_>,
    key_at: Position,
    node: &Node,
) -> Result<ReplaySource, Error> {
    let written = cx.string(node, "replay")?.trim();
    if written.is_empty() {
        return Err(cx.error(
            key_at,
            "`replay` names no file: give the snapshot's path relative to this file, e.g. \
             `replay: snapshots/train.pickle`",
        ));
    }
    if Path::new(written).is_absolute() {
        return Err(cx.error(
            node.at,
            format!(
                "`replay: {written}` is absolute; give the path relative to the scenario file so \
                 that the scenario works on every machine"
            ),
        ));
    }
    let display = beside(Path::new(cx.file), written)
        .to_string_lossy()
        .replace('\\', "/");
    Ok(ReplaySource {
        written: written.to_string(),
        path: PathBuf::from(&display),
        display,
        location: cx.location(key_at),
    })
}

/// Refuses a `replay:` path that resolves (links followed) outside the scenario's package: the
/// nearest folder above the scenario file holding `Cargo.toml` or `.git`, else the scenario
/// file's own folder. A scenario file from elsewhere must not read arbitrary files.
pub(crate) fn confine(scenario_file: &Path, replay: &ReplaySource) -> Result<(), Error> {
    let Ok(target) = replay.path.canonicalize() else {
        // Missing: reading it reports the error; nothing outside is read.
        return Ok(());
    };
    let Ok(file) = scenario_file.canonicalize() else {
        return Ok(());
    };
    let folder = file.parent().unwrap_or(Path::new("/"));
    let root = folder
        .ancestors()
        .find(|d| d.join("Cargo.toml").is_file() || d.join(".git").exists())
        .unwrap_or(folder);
    if target.starts_with(root) {
        return Ok(());
    }
    Err(Error::input(
        crate::error::InputErrorKind::Schema,
        replay.location.clone(),
        format!(
            "`replay: {}` resolves to a file outside the package that holds this scenario file; \
             a replayed snapshot must be inside the package or workspace",
            replay.written
        ),
    ))
}

/// `written` relative to the folder of `scenario_file`.
pub(crate) fn beside(scenario_file: &Path, written: &str) -> PathBuf {
    match scenario_file.parent() {
        Some(folder) if !folder.as_os_str().is_empty() => folder.join(written),
        _ => PathBuf::from(written),
    }
}
