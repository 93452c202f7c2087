//! The language and torch pieces the round-12 leak reports needed (see
//! `user_reports_round12.rs`): string repetition (`"=" * 40`, `"C" * n`), a bound method's
//! `__self__`/`__func__` (functionals that reach the module behind `self.forward`), and
//! `Tensor.type()` with no argument.

#[allow(dead_code)] // this file uses its own checks
mod probes;

use probes::{agrees_with_cpython, run};

/// `str * int` and `int * str` as CPython computes them, including zero and negative counts.
#[test]
fn string_repetition_agrees_with_cpython() {
    agrees_with_cpython(
        "",
        13,
        r#"
assert "ab" * 3 == "ababab" and 2 * "xy" == "xyxy" and "=" * 0 == "" and "-" * -4 == ""
line = "=" * 10
assert len(line) == 10 and line.count("=") == 10
assert "C" * (3 % 7 + 1) + "O" == "CCCCO"
n = 2
s = "ab"
s *= n
assert s == "abab"
"#,
    );
}

/// A bound method's `__self__` is its receiver, `__func__` the plain function, and the
/// function's attributes (`__name__`, ones set on the function) read through the method,
/// a missing one with the function's AttributeError, as CPython forwards it.
#[test]
fn bound_method_attributes_agree_with_cpython() {
    agrees_with_cpython(
        "",
        13,
        r#"
class Model:
    def forward(self, x):
        return x
def tagged(x):
    return x
m = Model()
f = m.forward
assert f.__self__ is m and f.__func__ is Model.forward and f.__name__ == "forward"
assert f.__func__(m, 3) == 3
Model.forward.tag = "fast"
assert m.forward.tag == "fast"
try:
    f.missing
    assert False
except AttributeError as e:
    assert str(e) == "'function' object has no attribute 'missing'", str(e)
"#,
    );
}

/// `t.type()` is the legacy type name of the tensor's dtype and device.
#[test]
fn tensor_type_without_arguments_names_the_legacy_type() {
    let ok = run(
        "3.11",
        r#"
import torch
a = torch.zeros(4, device="cuda")
b = torch.zeros(4, dtype=torch.int64)
c = torch.zeros(2, dtype=torch.float16, device="cuda")
assert a.type() == "torch.cuda.FloatTensor" and b.type() == "torch.LongTensor"
assert c.type() == "torch.cuda.HalfTensor"
"#,
    );
    assert!(ok.is_ok(), "{:?}", ok.err().map(|e| e.to_string()));
    // A conversion through `type(dtype)` is modelled since (tests/torch_tensor_type.rs).
    let converted = run(
        "3.11",
        "import torch\na = torch.zeros(4)\nb = a.type(torch.float16)\nassert b.type() == 'torch.HalfTensor'\n",
    );
    assert!(
        converted.is_ok(),
        "{:?}",
        converted.err().map(|e| e.to_string())
    );
}
