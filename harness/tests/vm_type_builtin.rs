//! `type(x)`: the object's class (user classes and the builtin types the model names),
//! compared with `is`/`==`, named by `__name__`, called to construct (`type(self)(...)`);
//! the three-argument form is refused, located. The script also runs on every installed
//! CPython 3.8 – 3.15, and the objects `type()` creates (none: it returns an existing
//! class) are measured there.

#[allow(dead_code)] // this file uses its own checks
mod probes;

use probes::{agrees_with_cpython, interpreter};
use std::process::Command;

const SCRIPT: &str = "
class Point:
    def __init__(self, x):
        self.x = x
    def moved(self):
        return type(self)(self.x + 1)
class Sub(Point):
    pass
p = Point(1)
s = Sub(2)
assert type(p) is Point
assert type(s) is Sub and type(s) is not Point
assert type(p) == Point and type(p) != Sub
assert type(p).__name__ == 'Point'
assert type(s).__name__ == 'Sub'
m = s.moved()
assert type(m) is Sub and m.x == 3
assert type(1) is int and type(1.5) is float and type('a') is str and type(True) is bool
assert type([]) is list and type(()) is tuple and type({}) is dict
assert type(Point) is type
assert type(type(p)(5)) is Point
";

#[test]
fn type_of_objects_agrees_with_cpython() {
    agrees_with_cpython("", 15, SCRIPT);
}

/// `type(x)` creates no object (measured on CPython 3.10 – 3.15: `d == 0`), and
/// `type(self)(...)` creates exactly the instance (`d == 1`), kept.
#[test]
fn type_creates_no_object_and_constructs_one_instance() {
    for (probe, expected) in [
        (
            "class P:\n    pass\np = P()\ndef probe():\n    keep.append(type(p))\n",
            0,
        ),
        (
            "class P:\n    pass\np = P()\ndef probe():\n    keep.append(type(p)())\n",
            1,
        ),
    ] {
        let workload = format!(
            "{}{probe}{}assert d == {expected}, d\n",
            probes::PRELUDE,
            probes::MEASURE
        );
        for python in ["3.10", "3.11", "3.12", "3.13", "3.14", "3.15"] {
            if let Err(e) = probes::run(python, &workload) {
                panic!("{probe} on {python}: {e}");
            }
        }
        for minor in 8..=15u8 {
            let Some(python) = interpreter(minor) else {
                eprintln!("skipped: CPython 3.{minor} is not installed");
                continue;
            };
            let script = format!("{}{probe}{}print(d)\n", probes::PRELUDE, probes::MEASURE);
            let out = Command::new(&python)
                .args(["-c", &script])
                .output()
                .expect("runs python");
            let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(real, expected.to_string(), "{probe} on CPython 3.{minor}");
        }
    }
}

#[test]
fn three_argument_type_is_refused_located() {
    let err = probes::run("3.11", "T = type('T', (), {})\n").expect_err("refused");
    let text = err.to_string();
    // Workload line 1 is line 5 of the scenario file; the call starts at column 5 + 2.
    assert!(text.contains("t.yaml:5:"), "{text}");
    assert!(text.contains("type(name, bases, dict)"), "{text}");
}
