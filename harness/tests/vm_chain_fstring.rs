//! Chained comparisons whose value is the deciding link's result (not a bool), and
//! f-strings with self-documenting fields (`{x=}`) and nested fields in a spec
//! (`{x:>{w}}`): compiled (`vm/compile_expr_more.rs`), so a script using them leaves the
//! tree-fallback count at 0, with CPython's values and evaluation order, checked against
//! every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

const FORMS: &str = "
def check(ok, what):
    if not ok:
        raise AssertionError(what)
def f(n):
    x = 3
    w = 5
    name = 'ab'
    out = ''
    i = 0
    while 0 <= i < n < 10:
        out = f'{x=}|{x = }|{name=}|{x=:>4}|{x=!s}|{i:>{w}}|{2.5:{w}.{x - 1}f}|{name!r:^{w + 2}}'
        i = i + 1
    check(out == \"x=3|x = 3|name='ab'|x=   3|x=3|    2| 2.50| 'ab'  \", out)
    check((1 < 2 < 3) is True, 'true chain')
    check((3 < 2 < 1) is False, 'false chain')
    check((1 < 2 in [2]) is True, 'last link')
f(3)
";

/// A script using only these forms: no sub-expression goes to the tree evaluator, and it
/// agrees with CPython.
#[test]
fn the_forms_run_compiled_and_agree_with_cpython() {
    let _serial = probes::serial();
    assert!(probes::runs_compiled(FORMS) >= 20);
    probes::agrees_with_cpython("", 13, FORMS);
}

/// A field's value is evaluated before the nested fields of its spec, each in turn, and
/// formatted after them; the self-documenting text is written before the value.
#[test]
fn nested_spec_fields_are_evaluated_after_the_value() {
    let _serial = probes::serial();
    probes::agrees_with_cpython(
        "",
        13,
        "
log = []
def mark(name, value):
    log.append(name)
    return value
def body():
    s = f'[{mark(\"v\", 7):>{mark(\"w\", 4)}}|{mark(\"a\", 1)=}|{mark(\"p\", 2.0):{mark(\"q\", 6)}.{mark(\"r\", 2)}f}]'
    assert s == \"[   7|mark(\\\"a\\\", 1)=1|  2.00]\", s
    assert log == ['v', 'w', 'a', 'p', 'q', 'r'], log
body()
",
    );
}

/// The value of a chain is its deciding link's result: a tensor comparison's bool tensor
/// as the last link (it allocates and keeps its memory while the value lives), the first
/// false link's result otherwise; a multi-element tensor result in a middle link raises
/// CPython's ambiguity error and releases it. Model only: no torch in the test's CPython.
#[test]
fn a_chain_yields_its_last_comparison_s_value() {
    let _serial = probes::serial();
    probes::ok(
        "
import torch
t = torch.zeros(1024, 256, device='cuda')
before = torch.cuda.memory_allocated()
r = 0 < 1 < t
assert r.shape == t.shape and r.dtype == torch.bool
assert torch.cuda.memory_allocated() - before == 1024 * 256
del r
assert torch.cuda.memory_allocated() == before
r = 1 < 0 < t
assert r is False
try:
    t == t == t
    raise AssertionError('no error')
except RuntimeError as e:
    assert 'ambiguous' in str(e), str(e)
assert torch.cuda.memory_allocated() == before
",
    );
}
