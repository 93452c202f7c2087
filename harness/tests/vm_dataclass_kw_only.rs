//! `dataclasses.KW_ONLY` (3.10+, `python/dataclasses.rs`): the `_: KW_ONLY` pseudo-field is
//! no field, the fields after it are keyword-only (alone, with `field(kw_only=False)`
//! overriding it, and with `kw_only=True` on the decorator), checked against CPython
//! 3.10 – 3.15; before 3.10 the name does not exist.

#[allow(dead_code)] // this file uses `run` and `interpreter`
mod probes;

const SCRIPT: &str = "
import dataclasses
from dataclasses import dataclass, field, KW_ONLY
@dataclass
class Config:
    lr: float
    _: KW_ONLY
    steps: int = 10
    name: str = 'run'
c = Config(0.1, steps=3)
assert c.lr == 0.1 and c.steps == 3 and c.name == 'run'
assert [f.name for f in dataclasses.fields(Config)] == ['lr', 'steps', 'name']
assert [f.kw_only for f in dataclasses.fields(Config)] == [False, True, True]
try:
    Config(0.1, 3)
    raise AssertionError('a keyword-only field was passed by position')
except TypeError:
    pass
@dataclass
class Mixed:
    a: int
    _: dataclasses.KW_ONLY
    b: int
    c: int = field(default=0, kw_only=False)
m = Mixed(1, 5, b=2)
assert (m.a, m.b, m.c) == (1, 2, 5)
";

fn check(minor: u8) {
    let workload = SCRIPT;
    if let Err(e) = probes::run(&format!("3.{minor}"), workload) {
        panic!("on 3.{minor}: {e}");
    }
    match probes::interpreter(minor) {
        Some(python) => {
            let out = std::process::Command::new(&python)
                .args(["-c", workload])
                .output()
                .expect("runs python");
            assert!(
                out.status.success(),
                "CPython 3.{minor}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        None => eprintln!("skipped: CPython 3.{minor} is not installed"),
    }
}

#[test]
fn fields_after_kw_only_are_keyword_only_as_in_cpython() {
    for minor in 10..=15 {
        check(minor);
    }
}

#[test]
fn kw_only_before_3_10_is_cpython_s_import_error() {
    let err = probes::run("3.9", SCRIPT)
        .map(|_| ())
        .expect_err("no KW_ONLY on 3.9")
        .to_string();
    assert!(
        err.contains("ImportError: cannot import name 'KW_ONLY'"),
        "{err}"
    );
    if let Some(python) = probes::interpreter(9) {
        let out = std::process::Command::new(&python)
            .args(["-c", "from dataclasses import KW_ONLY"])
            .output()
            .expect("runs python");
        assert!(String::from_utf8_lossy(&out.stderr).contains("ImportError"));
    }
}

#[test]
fn two_kw_only_markers_are_refused_located() {
    let err = probes::run(
        "3.11",
        "from dataclasses import dataclass, KW_ONLY\n@dataclass\nclass A:\n    _: KW_ONLY\n    a: int = 0\n    __: KW_ONLY\n",
    )
    .map(|_| ())
    .expect_err("refused")
    .to_string();
    assert!(err.contains("unsupported: two `KW_ONLY`"), "{err}");
    assert!(err.contains("t.yaml:"), "{err}");
}
