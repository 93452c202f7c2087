//! `sys.version_info` follows the scenario's `python:` version (a struct sequence compared
//! with tuples item by item, indexed, sliced, read by field), is one untracked object that
//! reading creates nothing for, and version checks choose the branch CPython of that release
//! chooses. Tuple ordering (`(1, 2) < (1, 3)`) is checked against every installed CPython.

#[allow(dead_code)] // this file uses part of the shared probes
mod probes;

use probes::{
    Probe, agrees_with_cpython, model_matches_table, table_matches_installed_interpreters,
};

/// Holds on every release (the model on 3.10 – 3.12, each installed CPython 3.8 – 3.13).
const SCRIPT: &str = "
import gc
import sys
v = sys.version_info
assert v is sys.version_info
assert v.major == 3 and v[0] == 3 and len(v) == 5
assert isinstance(v, tuple) and not gc.is_tracked(v)
assert v.releaselevel == 'final' and v.serial == 0
assert v >= (3, 8) and v > (3, 7, 99) and v < (4,) and v <= (3, v.minor, v.micro, 'final', 0)
assert v[:2] == (3, v.minor) and v[:2] != (3, v.minor + 1)
major, minor, micro, level, serial = v
assert (major, minor) == v[:2]
assert (1, 2) < (1, 3) and (1, 2) < (1, 2, 0) and not (1, 2) < (1, 2) and (2,) > (1, 9, 9)
assert [1, 2] <= [1, 2] and ('a', 1) < ('b', 0) and (1, (2, 3)) < (1, (2, 4))
assert repr(v).startswith('sys.version_info(major=3, minor=')
";

#[test]
fn version_info_agrees_with_cpython() {
    agrees_with_cpython("", 13, SCRIPT);
}

/// The fields are the scenario's release: 3.10's check takes the old branch, 3.11's the new.
#[test]
fn fields_follow_the_scenario_version() {
    for (python, minor, micro) in [("3.10", 10, 0), ("3.11", 11, 0), ("3.12.4", 12, 4)] {
        let workload = format!(
            "
import sys
assert sys.version_info[:3] == (3, {minor}, {micro}), sys.version_info
if sys.version_info >= (3, 11):
    branch = 'new'
else:
    branch = 'old'
assert branch == ('new' if {minor} >= 11 else 'old')
assert repr(sys.version_info) == \"sys.version_info(major=3, minor={minor}, micro={micro}, releaselevel='final', serial=0)\", repr(sys.version_info)
"
        );
        if let Err(e) = probes::run(python, &workload) {
            panic!("on {python}: {e}");
        }
    }
}

/// Reading, comparing and slicing create nothing (the slice's 2-tuple comes from the tuple
/// free list): measured 0 on CPython 3.8 – 3.13.
const PROBES: &[Probe] = &[
    (
        "version_info compared",
        "import sys\ndef probe():\n    keep.append(sys.version_info >= (3, 8))\n",
        0,
        0,
    ),
    (
        "version_info sliced",
        "import sys\ndef probe():\n    keep.append(sys.version_info[:2])\n",
        0,
        0,
    ),
    (
        "version_info field",
        "import sys\ndef probe():\n    keep.append(sys.version_info.minor)\n",
        0,
        0,
    ),
];

#[test]
fn reading_creates_nothing() {
    model_matches_table(PROBES);
}

#[test]
fn counts_agree_with_installed_interpreters() {
    table_matches_installed_interpreters(PROBES);
}

#[test]
fn unordered_items_are_refused_located() {
    let err = probes::run("3.11", "x = (1, None) < (1, 2)\n").expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("t.yaml:5:"), "{text}");
    assert!(text.contains("TypeError"), "{text}");
}
