//! `collections.Counter`: construction from an iterable, a string, a mapping and keywords,
//! missing keys as 0 (not stored), `update`, `subtract`, `most_common` (ties in insertion
//! order), `total` (3.10+), `isinstance`/`type`; results checked on the model and on every
//! installed CPython 3.8 – 3.13, and the objects a kept Counter counts (one) measured there.

#[allow(dead_code)] // this file uses its own checks
mod probes;

use probes::{agrees_with_cpython, interpreter, run};
use std::process::Command;

const SCRIPT: &str = "
from collections import Counter
import sys
c = Counter([3, 1, 3, 2, 1, 3])
assert c[3] == 3 and c[1] == 2 and c[2] == 1
assert c[7] == 0 and 7 not in c and len(c) == 3
assert c.most_common(2) == [(3, 3), (1, 2)]
assert c.most_common() == [(3, 3), (1, 2), (2, 1)]
t = Counter('abca')
assert t['a'] == 2 and list(t) == ['a', 'b', 'c']
assert Counter(b=2, a=2).most_common(1) == [('b', 2)]
m = Counter({'x': 2})
m.update(['x', 'y'])
m.update({'y': 5})
assert m == {'x': 3, 'y': 6}
m.subtract(['x', 'x', 'x', 'x'])
assert m['x'] == -1
m['z'] += 1
assert m['z'] == 1
assert isinstance(c, Counter) and isinstance(c, dict) and type(c) is Counter
if sys.version_info >= (3, 10):
    assert c.total() == 6
";

#[test]
fn counter_results_agree_with_cpython() {
    for python in ["3.8", "3.9", "3.10", "3.11", "3.12", "3.13"] {
        if let Err(e) = run(python, SCRIPT) {
            panic!("on {python}: {e}");
        }
    }
    agrees_with_cpython("", 13, SCRIPT);
}

/// A kept `Counter(...)` counts one object on CPython 3.8 – 3.13 (measured; free lists
/// full), whether built from a list, a mapping or nothing.
#[test]
fn a_kept_counter_is_one_object() {
    for (probe, expected) in [
        ("def probe():\n    keep.append(Counter(lst))\n", 1),
        ("def probe():\n    keep.append(Counter())\n", 1),
        ("def probe():\n    keep.append(Counter({1: 2}))\n", 1),
        ("def probe():\n    keep.append(c0[7])\n", 0),
    ] {
        let setup = "from collections import Counter\nlst = [1, 2, 2, 3]\nc0 = Counter(lst)\n";
        let workload = format!(
            "{}{setup}{probe}{}assert d == {expected}, d\n",
            probes::PRELUDE,
            probes::MEASURE
        );
        for python in ["3.8", "3.10", "3.11", "3.12", "3.13"] {
            if let Err(e) = run(python, &workload) {
                panic!("{probe} on {python}: {e}");
            }
        }
        for minor in 8..=13u8 {
            let Some(python) = interpreter(minor) else {
                eprintln!("skipped: CPython 3.{minor} is not installed");
                continue;
            };
            let script = format!(
                "{}{setup}{probe}{}print(d)\n",
                probes::PRELUDE,
                probes::MEASURE
            );
            let out = Command::new(&python)
                .args(["-c", &script])
                .output()
                .expect("runs python");
            let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(real, expected.to_string(), "{probe} on CPython 3.{minor}");
        }
    }
}
