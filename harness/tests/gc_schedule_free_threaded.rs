//! Free-threaded builds (`heap/free_threaded.rs`): what a collection leaves on the free lists,
//! in the model under `"3.13t"` and, where one was built, on a real free-threaded CPython 3.13
//! (`python3.13t` in `$GPUMEM_PYTHONS/bin` or `~/.cache/gpumem-pythons/bin`; skipped, with the
//! reason, where absent).

mod common;

use std::path::PathBuf;

/// The free-threaded 3.13 build, if one is linked where the calibration test looks.
fn python313t() -> Option<PathBuf> {
    let dir = std::env::var_os("GPUMEM_PYTHONS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/gpumem-pythons"))
        })?;
    let python = dir.join("bin").join("python3.13t");
    python.exists().then_some(python)
}

/// Runs `script` (which fills `out`) in the model under `version`, asserting `out == expected`,
/// and on the real free-threaded build when `version` is `"3.13t"`.
fn check(script: &str, version: &str, expected: &[u64]) {
    let workload = format!("{script}assert out == {expected:?}, out\n");
    common::run_model(&workload, version, [0, 0, 0], 11_000, 0);
    if version != "3.13t" {
        return;
    }
    match python313t() {
        Some(python) => assert_eq!(
            common::gc_counts::real_out(&python, &format!("import gc\n{script}")),
            expected,
            "free-threaded CPython 3.13 ({python:?})"
        ),
        None => eprintln!(
            "skipped: no python3.13t in $GPUMEM_PYTHONS/bin or ~/.cache/gpumem-pythons/bin \
             (a local --disable-gil build of 3.13)"
        ),
    }
}

/// Garbage holding `n` 2-tuples is collected by `gc.collect(0)`; then `n` new 2-tuples are
/// made. The 1000 kept lists lift the count above zero first (the freed garbage takes it
/// below), so the difference read is exact.
const REFILL: &str = "class C:
    pass
keep = []
out = []
for n in (100, 300):
    c = C()
    c.self = c
    c.items = [(c, i) for i in range(n)]
    del c
    gc.collect(0)
    keep.append([[] for _ in range(1000)])
    b = gc.get_count()[0]
    made = [(i, i) for i in range(n)]
    out.append(gc.get_count()[0] - b)
";

/// 3.13t's `gc_collect_main` clears the thread's free lists again after the garbage is
/// deleted, on every collection: the garbage's tuples do not stay cached, so each new tuple is
/// counted (`n`, plus the list and the 3-tuple `gc.get_count()` returns).
#[test]
fn a_free_threaded_collection_leaves_the_free_lists_empty() {
    check(REFILL, "3.13t", &[102, 302]);
}

/// The default build's generation-0 collection keeps what the garbage put on the free lists:
/// the new tuples reuse them and only the list is counted (measured on 3.13.x: `[1, 1]`).
#[test]
fn a_default_build_generation_0_collection_keeps_the_garbage_on_the_free_lists() {
    check(REFILL, "3.13", &[1, 1]);
}

/// The deallocations the clears record are counted too: after `gc.collect(0)` (the count
/// flushed just before) the count goes below zero by what the collection freed on 3.13.5t
/// (the release without gh-142048's fix); the 1001 lists made next lift it back. Measured on
/// 3.13.5t: `[899, 698]`. The first pass (`n = 0`) only settles what the free lists hold.
#[test]
fn a_free_threaded_collection_counts_each_cleared_free_list_entry_as_a_deallocation() {
    let script = "class C:
    pass
keep = []
out = []
for n in (0, 100, 300):
    c = C()
    c.self = c
    c.items = [(c, i) for i in range(n)]
    del c
    gc.get_count()
    gc.collect(0)
    keep.append([[] for _ in range(1000)])
    if n:
        out.append(gc.get_count()[0])
";
    check(script, "3.13t", &[899, 698]);
}

/// A module-level class statement's body function has deferred reference counting on 3.13t
/// (not `CO_NESTED`): dropped after the body runs, it stays until the next collection, so
/// each statement counts one more than on the default build. Measured on 3.13.5t
/// `[11, 9, 9]`, on 3.13.x `[10, 8, 8]` (the first from free lists `gc.collect()` emptied).
const CLASS_STATEMENTS: &str = "keep = []
out = []
gc.collect()
gc.get_count()
for r in range(3):
    b = gc.get_count()[0]
    class Node:
        def f(self):
            pass
    keep.append(Node)
    out.append(gc.get_count()[0] - b)
";

#[test]
fn a_module_level_class_body_function_lingers_until_the_next_collection() {
    check(CLASS_STATEMENTS, "3.13t", &[11, 9, 9]);
}

#[test]
fn a_default_build_frees_the_class_body_function_at_once() {
    check(CLASS_STATEMENTS, "3.13", &[10, 8, 8]);
}
