//! The real snapshots of `../shared/corpus/torch-snapshots/` (outside the repository), for
//! tests. A test that needs them prints why it skipped when they are absent.

use std::path::PathBuf;

pub const FILES: [&str; 4] = [
    "wedson_medium_128_inference.pickle",
    "wedson_medium_128_training.pickle",
    "magma_memory_snapshot.pickle",
    "bcrafton_memory_snapshot.pickle",
];

/// The corpus folder, or `None` (after printing the reason) when it is absent.
pub fn dir() -> Option<PathBuf> {
    // `../shared` of the repository root; a git worktree nested one level deeper finds the
    // same folder one level further up.
    let crate_dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let found = crate_dir
        .ancestors()
        .skip(2)
        .take(2)
        .map(|a| a.join("shared/corpus/torch-snapshots"))
        .find(|d| d.join(FILES[0]).is_file());
    if found.is_some() {
        found
    } else {
        eprintln!(
            "skipped: the snapshot corpus ../shared/corpus/torch-snapshots/ is absent next to \
             the repository"
        );
        None
    }
}

/// Reads every corpus file's bytes: (name, bytes).
pub fn all() -> Vec<(&'static str, Vec<u8>)> {
    let Some(dir) = dir() else {
        return Vec::new();
    };
    FILES
        .iter()
        .filter_map(|f| std::fs::read(dir.join(f)).ok().map(|b| (*f, b)))
        .collect()
}
