//! List, set and dict comprehensions compiled to VM ops (`vm/compile_comp.rs`): scripts
//! using them run without the tree evaluator (its fallback count stays put), behave as on
//! every installed CPython 3.8 – 3.13 (the scripts' own asserts run there too), release
//! their loop variables and iterables in CPython's order (a `__del__` log), and count the
//! objects CPython counts (gen-0 counts read inside and after them, per version).

mod common;
#[path = "common/del_log.rs"]
mod del_log;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `interpreter` and `run`
mod probes;

use gpumem_harness::python::{expressions_evaluated_by_tree, expressions_run_compiled};

const FORMS: &str = "
def check(ok, what):
    if not ok:
        raise AssertionError(what)
def f(n):
    xs = [i for i in range(n)]
    check(xs == [0, 1, 2, 3], 'list')
    evens = {i % 2 for i in xs if i > 0}
    check(evens == {0, 1}, 'set')
    d = {k: v for k, v in [(1, 'a'), (2, 'b')]}
    check(d == {1: 'a', 2: 'b'}, 'dict')
    pairs = [(i, j) for i in range(3) if i != 1 for j in range(i) if j >= 0]
    check(pairs == [(2, 0), (2, 1)], 'several fors')
    grid = [[i * j for j in range(3)] for i in range(2)]
    check(grid == [[0, 0, 0], [0, 1, 2]], 'nested')
    i = 'outer'
    ys = [i + 1 for i in xs]
    check(i == 'outer', 'the loop variable is the comprehension\\'s own')
    check(ys == [1, 2, 3, 4], 'shadowed')
    total = 0
    zs = [(total := total + x) for x in xs]
    check(total == 6 and zs == [0, 1, 3, 6], 'walrus binds in the function')
    return len(xs)
f(4)
g = [c for c in ['a', 'b']]
";

/// A script using only compiled forms: the tree evaluator evaluates no sub-expression of
/// it, and the same script passes its asserts on every installed CPython.
#[test]
fn comprehensions_run_without_the_tree_evaluator() {
    let _serial = probes::serial();
    for python in ["3.8", "3.10", "3.11", "3.12", "3.13"] {
        let (tree, compiled) = (expressions_evaluated_by_tree(), expressions_run_compiled());
        probes::run(python, FORMS).expect("runs");
        assert_eq!(
            expressions_evaluated_by_tree(),
            tree,
            "{python}: a form fell back to the tree evaluator"
        );
        assert!(expressions_run_compiled() - compiled >= 20);
    }
    probes::agrees_with_cpython("", 13, FORMS);
}

/// Runs `body` after the `__del__` log, on the model and on every installed CPython.
fn agrees(body: &str) {
    let _serial = probes::serial();
    probes::agrees_with_cpython("", 13, &format!("{}{body}", del_log::del_log(true, "")));
}

/// The iterable dies when its loop ends (its last item lives on in the loop variable);
/// the loop variable dies when the comprehension ends, before the next statement; the
/// outer binding of the name comes back.
#[test]
fn loop_variables_and_iterables_die_when_cpython_frees_them() {
    agrees(
        "
def body():
    x = T('outer')
    r = [len(x.name) for x in [T('a'), T('b')]]
    log.append('after')
    assert r == [1, 1], r
    assert x.name == 'outer'
    assert log == ['new outer', 'new a', 'new b', 'del a', 'del b', 'after'], log
    log.clear()
    s = {y.name: len(y.name) for y in (T('c'), T('d')) if y.name != 'c'}
    log.append('after')
    assert s == {'d': 1}, s
    assert log == ['new c', 'new d', 'del c', 'del d', 'after'], log
    log.clear()
    n = [[z.name for z in [T(w)]] for w in ['e', 'f']]
    log.append('after')
    assert n == [['e'], ['f']], n
    assert log == ['new e', 'del e', 'new f', 'del f', 'after'], log
body()
",
    );
}

/// An element that raises: the partial container, the iterables and the loop variables
/// are released, the outer binding of the name comes back and the handler runs.
#[test]
fn an_error_in_an_element_unwinds_the_comprehension() {
    agrees(
        "
def body():
    x = T('outer')
    try:
        r = [T(x.name + '2') if x.name != 'b' else 1 // 0 for x in [T('a'), T('b')]]
    except ZeroDivisionError:
        log.append('caught')
    log.append('after')
    assert x.name == 'outer'
    assert 'del a2' in log and 'del a' in log and 'del b' in log, log
    assert log.index('after') > log.index('del b'), log
    log.clear()
body()
assert log == ['del outer'], log
",
    );
}

/// Closures made in a comprehension see its loop variable, as on CPython.
#[test]
fn closures_capture_the_loop_variable() {
    agrees(
        "
def body():
    fs = [lambda: i for i in range(3)]
    assert [f() for f in fs] == [2, 2, 2]
    gs = [(lambda j=i: j) for i in range(3)]
    assert [g() for g in gs] == [0, 1, 2]
body()
",
    );
}

/// Gen-0 counts read at the first element of list, set, dict and nested comprehensions
/// and after them, each run twice (the second run finds the zombie frame of ≤ 3.10), as
/// measured on CPython 3.8.18 – 3.13.0: ≤ 3.11 a function object per comprehension and,
/// when it uses a local of the enclosing function (`c0`), its closure tuple (`lc` against
/// `lc_free`: the tuple is freed onto the free list, so the count after keeps it); ≤ 3.10
/// the frame on the first run; from 3.12 none of them.
#[test]
fn comprehensions_count_what_cpython_counts() {
    let _serial = probes::serial();
    let script = "
out = []
def lc(d):
    gc.collect()
    c0 = gc.get_count()[0]
    r = [gc.get_count()[0] - c0 for i in d]
    out.append(r[0])
    out.append(gc.get_count()[0] - c0)
def lc_free(d):
    gc.collect()
    c0 = gc.get_count()[0]
    r = [gc.get_count()[0] for i in d]
    out.append(r[0] - c0)
    out.append(gc.get_count()[0] - c0)
def sc(d):
    gc.collect()
    c0 = gc.get_count()[0]
    r = {gc.get_count()[0] - c0 for i in d if i == 1}
    out.append(r.pop())
    out.append(gc.get_count()[0] - c0)
def dc(d):
    gc.collect()
    c0 = gc.get_count()[0]
    r = {i: gc.get_count()[0] - c0 for i in d}
    out.append(r[1])
    out.append(gc.get_count()[0] - c0)
def nested(d):
    gc.collect()
    c0 = gc.get_count()[0]
    r = [[gc.get_count()[0] - c0 for j in d] for i in d]
    out.append(r[0][0])
    out.append(gc.get_count()[0] - c0)
for f in (lc, lc_free, sc, dc, nested):
    f([1, 2])
    f([1, 2])
";
    let expected = |minor: u8| -> Vec<u64> {
        match minor {
            8..=10 => vec![6, 4, 5, 3, 5, 3, 4, 2, 6, 4, 5, 3, 6, 4, 5, 3, 11, 8, 9, 6],
            11 => vec![5, 3, 5, 3, 4, 2, 4, 2, 5, 3, 5, 3, 5, 3, 5, 3, 9, 6, 9, 6],
            _ => vec![3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 5, 4, 5, 4],
        }
    };
    for minor in 8..=13u8 {
        let tree = expressions_evaluated_by_tree();
        let workload = format!("{script}assert out == {:?}, out\n", expected(minor));
        common::run_model(&workload, &format!("3.{minor}"), [0, 0, 0], 11_000, 0);
        assert_eq!(expressions_evaluated_by_tree(), tree, "3.{minor}: fallback");
        match probes::interpreter(minor) {
            Some(python) => assert_eq!(
                common::gc_counts::real_out(&python, &format!("import gc\n{script}")),
                expected(minor),
                "CPython 3.{minor} ({python:?})"
            ),
            None => eprintln!("skipped: CPython 3.{minor} is not installed"),
        }
    }
}

/// An error inside a compiled comprehension is located at the failing sub-expression
/// (line and column of `1 // x`; the scenario indents the script by two), as in a body; a
/// comprehension in a class body binds nothing in the class namespace, and module-level
/// ones run on every modelled release.
#[test]
fn errors_are_located_and_every_scope_runs_them() {
    let _serial = probes::serial();
    let err = probes::run(
        "3.12",
        "xs = [1, 0]\nys = [x for x in xs]\nzs = [1 // x for x in xs]\n",
    )
    .expect_err("divides by zero");
    let text = err.to_string();
    assert!(text.contains("t.yaml:7:9"), "{text}");
    assert!(text.contains("ZeroDivisionError"), "{text}");
    let script = "
class C:
    ys = [y * 2 for y in [1, 2]]
assert C.ys == [2, 4]
assert not hasattr(C, 'y')
sq = {k: [v, v] for k, v in [(1, 2)]}
assert sq == {1: [2, 2]}
";
    for minor in 8..=15 {
        probes::run(&format!("3.{minor}"), script).expect("runs");
    }
    probes::agrees_with_cpython("", 13, script);
}
