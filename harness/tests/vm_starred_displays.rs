//! Starred displays (`[*a, b]`, `(x, *y)`, `{*a, *b}`) and folded constant set displays
//! run compiled (`vm/compile_expr_starred.rs`): a script using only them leaves the
//! tree-fallback count at 0; values, the order items are read and released, and an error's
//! releases are CPython's, checked against every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `run`
mod probes;

const FORMS: &str = "
def check(ok, what):
    if not ok:
        raise AssertionError(what)
def f(n):
    a = [1, 2]
    i = 0
    while i < n:
        l = [*a, i, *range(2)]
        t = (i, *a)
        s = {*a, 3, *t}
        nested = [*[*a, *(4,)], *{5}]
        k = {1, 2, 3}
        i = i + 1
    check(l == [1, 2, 2, 0, 1], 'list')
    check(t == (2, 1, 2), 'tuple')
    check(s == {1, 2, 3}, 'set')
    check(nested == [1, 2, 4, 5], 'nested')
    check(k == {3, 2, 1} and len(k) == 3, 'constant set')
    check([*()] == [] and (*[],) == (), 'empty')
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

/// Items are evaluated left to right, each `*x` read to its end before the next item.
#[test]
fn starred_displays_read_and_release_in_cpythons_order() {
    let _serial = probes::serial();
    probes::agrees_with_cpython(
        "",
        13,
        "
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
def body():
    r = [T('a'), *mark('spread', [T('b')]), T('c')]
    assert log == ['new a', 'new b', 'spread', 'new c'], log
    assert [x.name for x in r] == ['a', 'b', 'c']
    del r
    log.clear()
    s = {*mark('x', [1]), *mark('y', (2,))}
    assert log == ['x', 'y'] and s == {1, 2}, log
body()
",
    );
}

/// A non-iterable `*` operand fails at its turn and the items read so far die last first
/// (CPython releases the list they were gathered in from its end). 3.9+ only: 3.8's
/// `BUILD_TUPLE_UNPACK` evaluates every operand before spreading any (`never` would be
/// made), which the model does not follow (an approximation on 3.8, said here).
#[test]
fn a_bad_starred_operand_releases_the_items_read_last_first() {
    let _serial = probes::serial();
    probes::agrees_with_cpython(
        "import sys\nif sys.version_info < (3, 9):\n    sys.exit(0)\n",
        13,
        "
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
def body():
    try:
        r = (T('a'), T('b'), *mark('bad', 5), T('never'))
    except TypeError as e:
        assert 'iterable' in str(e), str(e)
    assert log == ['new a', 'new b', 'bad', 'del b', 'del a'], log
body()
",
    );
}
