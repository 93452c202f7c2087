//! Simple statements that `vm/compile_stmt.rs` compiles (augmented assignment to names and
//! attributes, annotated assignment, `del` of names and attributes, `assert`, `pass`,
//! `global`) run as VM instructions, not as tree-walker leaves, and evaluate and release
//! their operands in CPython's order, checked by scripts that log `__del__` on the model
//! and on every installed CPython 3.8 – 3.13.

#[path = "common/del_log.rs"]
mod del_log;
#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

use gpumem_harness::python::{expressions_evaluated_by_tree, statements_run_by_tree};

/// A function body using only compiled statements and expressions runs no statement as a
/// tree-walker leaf and evaluates no sub-expression with the tree evaluator: the script
/// counts as many leaves as its skeleton (none since `class` and `def` are compiled).
#[test]
fn the_statements_run_without_the_tree_walker() {
    let _serial = probes::serial();
    let skeleton = "
class H:
    pass
def f(n):
    return n
";
    let leaves = statements_run_by_tree();
    probes::run("3.11", skeleton).expect("runs");
    let skeleton_leaves = statements_run_by_tree() - leaves;
    let (leaves, tree) = (statements_run_by_tree(), expressions_evaluated_by_tree());
    probes::run(
        "3.11",
        "
class H:
    pass
counter = 0
def f(n):
    global counter
    h = H()
    h.total = 0
    i = 0
    while i < n:
        i += 1
        h.total += i * 2
        tmp: int = i
        pass
        del tmp
    counter += 1
    assert h.total == n * (n + 1), 'total'
    h.extra = 1
    del h.extra
    return h.total
f(10)
assert counter == 1
",
    )
    .expect("runs");
    assert_eq!(
        statements_run_by_tree() - leaves,
        skeleton_leaves,
        "a statement ran as a leaf"
    );
    assert_eq!(expressions_evaluated_by_tree(), tree);
}

/// The leaf count is honest: a statement not compiled yet (`del` of a parenthesized tuple
/// of targets) moves it.
#[test]
fn a_statement_left_to_the_tree_walker_is_counted() {
    let _serial = probes::serial();
    let leaves = statements_run_by_tree();
    probes::run(
        "3.11",
        "class H:\n    pass\nh = H()\nh.x = 1\ny = 2\ndel (h.x, y)\n",
    )
    .expect("runs");
    assert!(statements_run_by_tree() > leaves);
}

/// The shared `__del__` log (`T` logs its birth and death), `mark`, a plain class `H` and
/// `boom`, which raises.
fn prelude() -> String {
    let extra = "class H:
    pass
def boom():
    raise ValueError('boom')
";
    format!("{}{extra}", del_log::del_log(true, ""))
}

/// Runs `body` after the prelude, one test at a time, on the model and on every installed
/// CPython.
fn agrees(body: &str) {
    let _serial = probes::serial();
    probes::agrees_with_cpython("", 13, &format!("{}{body}", prelude()));
}

/// `x += v` and `o.a += v`: the container once, then the operand; the result holds what
/// it holds. When the operand raises, the current value and the container are released
/// (the tree walker's leaf leaked them).
#[test]
fn augmented_assignment_evaluates_and_releases_in_cpythons_order() {
    agrees(
        "
def body():
    n = 1
    n += mark('rhs', 2)
    h = H()
    h.v = 1
    mark('obj', h).v += mark('val', 2)
    assert (n, h.v) == (3, 3)
    assert log == ['rhs', 'obj', 'val'], log
    log.clear()
    x = (T('a'),)
    x += (T('b'),)
    del x
    assert log == ['new a', 'new b', 'del b', 'del a'], log
    log.clear()
    h.v = T('cur')
    try:
        h.v += boom()
    except ValueError:
        pass
    del h
    assert log == ['new cur', 'del cur'], log
body()
",
    );
}

/// `del o.a` releases the value at once; `x: T = v` stores; `assert` evaluates its
/// message only when the test is false, and raises `AssertionError(message)`.
#[test]
fn del_annotated_assignment_and_assert_behave_as_in_cpython() {
    agrees(
        "
def body():
    h = H()
    h.a = T('attr')
    del h.a
    log.append('after')
    assert log == ['new attr', 'del attr', 'after'], log
    log.clear()
    y: int = T('ann')
    del y
    assert log == ['new ann', 'del ann'], log
    log.clear()
    assert mark('test', 1), mark('never', 'msg')
    try:
        assert mark('test', 0), mark('msg', 'the message')
    except AssertionError as e:
        log.append(e.args[0])
    assert log == ['test', 'test', 'msg', 'the message'], log
body()
",
    );
}
