//! `import`, `from ... import`, `def`, `async def`, `class` and lambdas run as VM
//! instructions (`vm/compile_defs.rs`, run by `vm/eval_defs.rs`), not as tree-walker
//! leaves: each script logs the order in which decorators, defaults and bases are evaluated
//! and objects are released (`__del__`), and asserts it on the model and on every installed
//! CPython 3.8 – 3.13; the object counts of making functions are checked against a table
//! measured with CPython.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the count tables
mod probes;

use gpumem_harness::python::{expressions_evaluated_by_tree, statements_run_by_tree};

const LOG: &str = "
log = []
class T:
    def __init__(self, name):
        self.name = name
        log.append('new ' + name)
    def __del__(self):
        log.append('del ' + self.name)
def mark(name, value):
    log.append(name)
    return value
def deco(name):
    log.append('deco ' + name)
    def apply(f):
        log.append('apply ' + name)
        return f
    return apply
";

/// A script of imports, decorated functions with defaults, an `async def`, classes with
/// a base and a decorator, and lambdas runs no statement as a tree-walker leaf and
/// evaluates no sub-expression with the tree evaluator.
#[test]
fn imports_defs_classes_and_lambdas_run_without_the_tree_walker() {
    let _serial = probes::serial();
    let (leaves, tree) = (statements_run_by_tree(), expressions_evaluated_by_tree());
    probes::run(
        "3.11",
        "
import math
import os
from functools import partial
from collections import OrderedDict as OD
def ident(f):
    return f
@ident
@ident
def f(a, b=2, *, c=3):
    return a + b + c
async def co(x=1):
    return x
class Base:
    def __init__(self, v=0):
        self.v = v
@ident
class Sub(Base):
    scale = 2
    def get(self):
        return self.v * self.scale
square = lambda x, k=2: x ** k
assert f(1) == 6
assert f(1, 1, c=1) == 3
assert Sub(4).get() == 8
assert square(3) == 9 and square(2, 3) == 8
assert math.sqrt(16.0) == 4.0
assert partial(f, 1)(c=0) == 3
d = OD()
",
    )
    .expect("runs");
    assert_eq!(
        statements_run_by_tree(),
        leaves,
        "a statement ran as a leaf"
    );
    assert_eq!(
        expressions_evaluated_by_tree(),
        tree,
        "the tree evaluator ran"
    );
}

/// The counters are honest: a lambda whose default is a dict display of more than 15
/// pairs still evaluates that default with the tree evaluator, and the count moves.
#[test]
fn a_sub_expression_left_to_the_tree_evaluator_is_counted() {
    let _serial = probes::serial();
    let tree = expressions_evaluated_by_tree();
    let pairs: Vec<String> = (0..16).map(|i| format!("{i}: {i}")).collect();
    let script = format!("f = lambda xs={{{}}}: xs\n", pairs.join(", "));
    probes::run("3.11", &script).expect("runs");
    assert!(expressions_evaluated_by_tree() > tree);
}

/// `def`: decorators top to bottom, then the defaults (positional, then keyword-only),
/// then the decorators applied bottom to top, then the name is bound (CPython's order).
#[test]
fn def_evaluates_decorators_then_defaults_and_applies_bottom_up() {
    probes::agrees_with_cpython(
        "",
        13,
        &format!(
            "{LOG}
@deco('outer')
@deco('inner')
def f(a=mark('a', 1), b=mark('b', 2), *, c=mark('c', 3)):
    return a + b + c
assert log == ['deco outer', 'deco inner', 'a', 'b', 'c', 'apply inner', 'apply outer'], log
assert f() == 6 and f(0, c=0) == 2
log.clear()
async def co(x=mark('x', 5)):
    return x
assert log == ['x'], log
c = co()
try:
    c.send(None)
except StopIteration as e:
    assert e.value == 5
"
        ),
    );
}

/// Defaults are evaluated once, when the function is made, and held by it: the default's
/// object dies with the function.
#[test]
fn defaults_are_made_once_and_die_with_the_function() {
    probes::agrees_with_cpython(
        "",
        13,
        &format!(
            "{LOG}
def make():
    def g(x=T('default')):
        return x
    return g
g = make()
assert log == ['new default'], log
assert g() is g()
log.append('calls')
del g
assert log == ['new default', 'calls', 'del default'], log
"
        ),
    );
}

/// When a decorator raises, the name is not bound and the decorators not yet applied are
/// released; the function it was given lives on in the raising frame, which the caught
/// exception's traceback holds until the handler ends.
#[test]
fn a_raising_decorator_releases_the_function_and_binds_nothing() {
    probes::agrees_with_cpython(
        "",
        13,
        &format!(
            "{LOG}
def boom(f):
    raise ValueError('boom')
try:
    @deco('outer')
    @boom
    def h(x=T('held')):
        return x
except ValueError:
    log.append('caught')
assert log == ['deco outer', 'new held', 'caught', 'del held'], log
try:
    h
    assert False, 'h is bound'
except NameError:
    pass
"
        ),
    );
}

/// A lambda is a new function object per evaluation, its defaults evaluated each time.
#[test]
fn a_lambda_is_made_per_evaluation_with_its_defaults() {
    probes::agrees_with_cpython(
        "",
        13,
        &format!(
            "{LOG}
def makers():
    out = []
    i = 0
    while i < 2:
        out.append(lambda v=mark('default', i): v)
        i += 1
    return out
fs = makers()
assert fs[0] is not fs[1]
assert fs[0]() == 0 and fs[1]() == 1
assert log == ['default', 'default'], log
held = lambda x=T('lam'): x
del held
assert log[-2:] == ['new lam', 'del lam'], log
"
        ),
    );
}

/// `class`: decorators, then the base, then the body; the decorators are applied to the
/// new class before its name is bound.
#[test]
fn class_evaluates_decorators_then_the_base_then_the_body() {
    probes::agrees_with_cpython(
        "",
        13,
        &format!(
            "{LOG}
class Base:
    pass
@deco('c')
class C(mark('base', Base)):
    log.append('body')
    def m(self):
        return 1
assert log == ['deco c', 'base', 'body', 'apply c'], log
assert C().m() == 1
"
        ),
    );
}

/// Imports bind their names (`as` names too), and an import in a function body binds a
/// local.
#[test]
fn imports_bind_their_names() {
    probes::agrees_with_cpython(
        "",
        13,
        "
import os
import math as m
from collections import deque, OrderedDict as OD
assert m.floor(2.5) == 2
assert len(deque([1, 2])) == 2
def local_import():
    import math
    return math.ceil(1.5)
assert local_import() == 2
try:
    math
    assert False, 'math is bound'
except NameError:
    pass
",
    );
}

/// Errors keep their location: an unknown import and a class statement with keywords are
/// refused at the alias and at the arguments.
#[test]
fn refusals_are_located() {
    let err = probes::run("3.11", "x = 1\nfrom math import no_such_name\n")
        .map(drop)
        .expect_err("refused")
        .to_string();
    assert!(
        err.contains("t.yaml:6:") && err.contains("unsupported"),
        "{err}"
    );
    let err = probes::run(
        "3.11",
        "class M:\n    pass\nclass C(M, metaclass=M):\n    pass\n",
    )
    .map(drop)
    .expect_err("refused")
    .to_string();
    assert!(
        err.contains("t.yaml:7:10") && err.contains("unsupported"),
        "{err}"
    );
}

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured on 3.8.18 – 3.13 after
/// the prelude (free lists warm): a kept function counts 1 (its defaults tuple and
/// keyword-defaults dict come from free lists or are constants), a kept closure 2 (the
/// function and the cell it holds; its 1-tuple comes from the free list).
const PROBES: &[probes::Probe] = &[
    (
        "def with defaults kept",
        "def probe():\n    def g(a=1, b=2, *, c=3):\n        return a\n    keep.append(g)\n",
        1,
        1,
    ),
    (
        "def with computed defaults kept",
        "def probe():\n    n = 5\n    def g(a=n, b=n):\n        return a\n    keep.append(g)\n",
        1,
        1,
    ),
    (
        "decorated def kept",
        "def ident(f):\n    return f\ndef probe():\n    @ident\n    def g():\n        pass\n    keep.append(g)\n",
        1,
        1,
    ),
    (
        "lambda kept",
        "def probe():\n    keep.append(lambda: 0)\n",
        1,
        1,
    ),
    (
        "closure kept",
        "def probe():\n    x = 1\n    def g():\n        return x\n    keep.append(g)\n",
        2,
        2,
    ),
    (
        "lambda dropped",
        "def probe():\n    f = lambda x=1: x\n",
        0,
        0,
    ),
];

#[test]
fn function_making_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_function_making_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
