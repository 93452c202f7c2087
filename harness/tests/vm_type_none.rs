//! `type(None)`: CPython's `NoneType`, the same object every time, named `NoneType`, usable
//! with `isinstance` (also in a tuple of types) and callable with no arguments (giving
//! `None`); and `type(Counter()).__name__`. Checked on the model and on every installed
//! CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses its own checks
mod probes;

use probes::{agrees_with_cpython, run};

const SCRIPT: &str = "
from collections import Counter
NoneType = type(None)
assert type(None) is NoneType and type(None) == NoneType
assert NoneType.__name__ == 'NoneType'
assert isinstance(None, NoneType) and not isinstance(0, NoneType)
assert isinstance(None, (int, NoneType)) and not isinstance('a', (int, NoneType))
assert NoneType() is None
def f(x=None):
    return isinstance(x, NoneType)
assert f() and not f(1)
assert type(Counter()).__name__ == 'Counter'
";

#[test]
fn none_type_agrees_with_cpython() {
    for python in ["3.8", "3.10", "3.11", "3.12", "3.13"] {
        if let Err(e) = run(python, SCRIPT) {
            panic!("on {python}: {e}");
        }
    }
    agrees_with_cpython("", 13, SCRIPT);
}

#[test]
fn none_type_takes_no_arguments() {
    let err = run("3.11", "x = type(None)(1)\n").expect_err("an error");
    assert!(
        err.to_string().contains("NoneType takes no arguments"),
        "{err}"
    );
}
