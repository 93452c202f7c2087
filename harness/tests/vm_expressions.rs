//! Expressions of plain bodies run compiled (`vm/compile_expr.rs`, `vm/eval_expr.rs`), not
//! in the tree evaluator: the VM's process-wide count of compiled evaluations moves, and the
//! order in which operands are evaluated and temporaries are released is CPython's, checked
//! by scripts that log calls and `__del__` on the model and on every installed CPython
//! 3.8 – 3.13.

#[path = "common/del_log.rs"]
mod del_log;
#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

use gpumem_harness::python::expressions_run_compiled;

/// A loop of 200 passes in a function evaluates its test, its body's assignment and the
/// call inside compiled: at least 3 compiled evaluations per pass.
#[test]
fn a_function_body_evaluates_its_expressions_compiled() {
    let before = expressions_run_compiled();
    probes::run(
        "3.11",
        "
def step(x):
    return x + 1
def f(n):
    i = 0
    while i < n:
        i = step(i)
    return i
assert f(200) == 200
",
    )
    .expect("runs");
    assert!(
        expressions_run_compiled() - before >= 600,
        "only {} compiled evaluations",
        expressions_run_compiled() - before
    );
}

/// The shared `__del__` log (`T` logs its death only) and `mark`.
fn prelude() -> String {
    del_log::del_log(false, "")
}

/// Runs `body` after the prelude on the model and on every installed CPython.
fn agrees(body: &str) {
    probes::agrees_with_cpython("", 13, &format!("{}{body}", prelude()));
}

/// `f(a(), b())`: the callee, then the arguments left to right, then the call; keyword
/// values after positional ones; `and`/`or`, conditional expressions and comparisons
/// evaluate only what CPython evaluates.
#[test]
fn operands_are_evaluated_in_cpythons_order() {
    agrees(
        "
def f(x, y, z=0):
    log.append('f')
    return x + y + z
def get_f():
    log.append('callee')
    return f
def body():
    assert get_f()(mark('a', 1), mark('b', 2), z=mark('k', 3)) == 6
    assert log == ['callee', 'a', 'b', 'k', 'f'], log
    log.clear()
    v = mark('l', 0) or mark('r', 5)
    w = mark('x', 0) and mark('never', 1)
    u = mark('t', 1) if mark('c', True) else mark('never', 2)
    assert (v, w, u) == (5, 0, 1), (v, w, u)
    assert log == ['l', 'r', 'x', 'c', 't'], log
    log.clear()
    assert mark('left', 2) < mark('right', 3)
    assert [mark('i0', 1), (mark('i1', 2), mark('i2', 3))] == [1, (2, 3)]
    assert log == ['left', 'right', 'i0', 'i1', 'i2'], log
    log.clear()
body()
assert get_f()(mark('a', 1), mark('b', 2)) == 3
assert log == ['callee', 'a', 'b', 'f'], log
",
    );
}

/// A call's result that a statement drops is freed before the next statement; in `x.y.z`
/// the intermediate objects are released as each attribute is loaded; a left operand
/// whose right operand raises is released by the unwinding (the tree walker leaked it).
#[test]
fn temporaries_are_released_where_cpython_releases_them() {
    agrees(
        "
def holder():
    h = T('h')
    h.y = T('y')
    h.y.z = 7
    return h
def boom():
    raise ValueError('boom')
def body():
    T('dropped')
    log.append('next')
    assert log == ['del dropped', 'next'], log
    log.clear()
    v = holder().y.z
    log.append('after')
    assert v == 7
    assert log == ['del h', 'del y', 'after'], log
    log.clear()
    try:
        v = T('left') + boom()
    except ValueError:
        pass
    log.append('handled')
    assert 'del left' in log, log
body()
log.clear()
v = holder().y.z
log.append('after')
assert log == ['del h', 'del y', 'after'], log
",
    );
}

/// An error inside a compiled expression is located at its sub-expression.
#[test]
fn errors_keep_the_location_of_the_sub_expression() {
    let err = probes::run(
        "3.11",
        "
class A:
    pass
def f(a):
    return 1 + a.missing
f(A())
",
    )
    .expect_err("an AttributeError");
    let text = err.to_string();
    assert!(text.contains("AttributeError"), "{text}");
    // `a.missing` is on line 5 of the workload, line 9 of the scenario file (after its 4
    // header lines), at column 18 (the block's 2-space indent plus 16).
    assert!(text.contains("t.yaml:9:18:"), "{text}");
}
