//! The expression forms `vm/compile_expr_more.rs` compiles (chained comparisons, dict and
//! set displays, constant tuples, f-strings, `:=`) run on the VM without the tree
//! evaluator (its fallback count stays put), and evaluate and release their operands in
//! CPython's order, checked by scripts that log `__del__` on the model and on every
//! installed CPython 3.8 – 3.13.

#[path = "common/del_log.rs"]
mod del_log;
#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

use gpumem_harness::python::expressions_evaluated_by_tree;

const FORMS: &str = "
def check(ok, what):
    if not ok:
        raise AssertionError(what)
def f(n):
    i = 0
    total = 0
    while 0 <= i < n:
        d = {'i': i, i: [i]}
        s = {i, i + 1}
        t = (1, 'a', (2.5, None))
        text = f'{i}:{d[\"i\"]!r:>3} {t}'
        if (k := len(s)) == 2:
            total = total + k
        i = i + 1
    check(total == 2 * n, 'total')
    check(text == '4:  4 (1, \\'a\\', (2.5, None))', text)
    check(1 < 2 > 0 != 5, 'chain')
    check(not (1 < 0 < 5), 'short')
f(5)
";

/// A script using only the forms compiled here: the tree evaluator evaluates no
/// sub-expression of it, while compiled evaluations happen.
#[test]
fn the_forms_run_without_the_tree_evaluator() {
    let _serial = probes::serial();
    assert!(probes::runs_compiled(FORMS) >= 50);
}

/// The fallback count is honest: a form not compiled yet (a dict display of more than 15
/// pairs) moves it.
#[test]
fn a_form_left_to_the_tree_evaluator_is_counted() {
    let _serial = probes::serial();
    let tree = expressions_evaluated_by_tree();
    let pairs: Vec<String> = (0..16).map(|i| format!("{i}: i")).collect();
    probes::run(
        "3.11",
        &format!(
            "def f(i):\n    g = {{{}}}\n    return g\nf(1)\n",
            pairs.join(", ")
        ),
    )
    .expect("runs");
    assert!(expressions_evaluated_by_tree() > tree);
}

/// The shared `__del__` log (`T` logs its birth and death) with `<` on `T` that logs and
/// compares by `rank`, and `mark`.
fn prelude() -> String {
    let lt = "    def __lt__(self, other):
        log.append('lt ' + self.name + ' ' + other.name)
        return rank[self.name] < rank[other.name]
";
    let rank = "rank = {'a': 1, 'b': 2, 'c': 3, 'z': 26, 'never': 0}
";
    format!("{}{rank}", del_log::del_log(true, lt))
}

/// Runs `body` after the prelude, one test at a time, on the model and on every installed
/// CPython.
fn agrees(body: &str) {
    let _serial = probes::serial();
    probes::agrees_with_cpython("", 13, &format!("{}{body}", prelude()));
}

/// `a < b < c`: each link releases its left operand after comparing; a false link
/// releases its right operand and evaluates nothing more; after the last link the
/// operands go left to right.
#[test]
fn chained_comparisons_short_circuit_and_release_in_cpythons_order() {
    agrees(
        "
def body():
    r = T('a') < T('b') < T('c')
    assert r is True
    assert log == ['new a', 'new b', 'lt a b', 'del a', 'new c', 'lt b c', 'del b', 'del c'], log
    log.clear()
    r = T('b') < T('a') < T('never')
    assert r is False
    assert log == ['new b', 'new a', 'lt b a', 'del b', 'del a'], log
    log.clear()
    r = T('a') < T('z') < T('c')
    assert r is False
    assert log == ['new a', 'new z', 'lt a z', 'del a', 'new c', 'lt z c', 'del z', 'del c'], log
    log.clear()
body()
",
    );
}

/// Dict displays: key then value, pair by pair; the dict keeps the last value of a
/// repeated key (the replaced one dies when the display's operands are released); an
/// unhashable key fails only after every pair was evaluated, and the operands die top
/// first (the model runs `__del__` at the end of a statement, so the log is checked after
/// the handler rather than in it). Set displays: the items in order; an unhashable one fails at its turn.
#[test]
fn dict_and_set_displays_evaluate_and_release_in_cpythons_order() {
    agrees(
        "
def body():
    k = T('k')
    d = {k: T('v1'), T('k2'): T('v2'), k: T('v3')}
    assert log == ['new k', 'new v1', 'new k2', 'new v2', 'new v3', 'del v1'], log
    assert len(d) == 2 and d[k].name == 'v3'
    del d, k
    log.clear()
    try:
        d = {T('k0'): T('v0'), []: T('v1'), T('k2'): T('v2')}
    except TypeError:
        pass
    assert log == ['new k0', 'new v0', 'new v1', 'new k2', 'new v2',
                   'del v2', 'del k2', 'del v1', 'del v0', 'del k0'], log
    log.clear()
    try:
        s = {T('a'), [], T('c')}
    except TypeError:
        pass
    assert log == ['new a', 'new c', 'del c', 'del a'], log
body()
",
    );
}

/// f-strings format and release each field before evaluating the next (the model writes
/// an instance as `<F object>`, CPython with its address: only the ends are compared; the
/// model runs `__del__` at the end of a statement, so `probe` ends one before logging); `:=` binds the
/// value and keeps it as the expression's value; a constant tuple is one shared object.
#[test]
fn fstrings_walrus_and_constant_tuples_behave_as_in_cpython() {
    agrees(
        "
class F:
    def __init__(self, name):
        self.name = name
    def __del__(self):
        log.append('del ' + self.name)
def tup():
    return (1, 'x', (2, 3))
def probe(name):
    pending = 0
    log.append(name)
    return pending
def body():
    s = f'<{F(\"a\")}|{probe(\"after a\")}|{F(\"b\")}> {probe(\"after b\"):>3} {3.5!r} {\"q\"!r}'
    assert s.startswith('<<') and s.endswith(\">   0 3.5 'q'\"), s
    assert log == ['del a', 'after a', 'del b', 'after b'], log
    log.clear()
    if (n := len([1, 2, 3])) > 2:
        assert n == 3
    v = (m := T('w')).name
    assert v == 'w' and m.name == 'w'
    assert log == ['new w'], log
    assert tup() is tup()
body()
",
    );
}
