//! Two hot paths of the blog's workloads taken off the tree evaluator: a lambda's
//! body runs as compiled ops (`vm/lambda_body.rs`), and `name.attr = value` in a function
//! body reads `name` by slot or cell (`vm/store_fast.rs`, `FastCode::Attr`). Both must
//! behave as before: the scripts are checked on the model (3.10, 3.11, 3.12) and on every
//! installed CPython 3.8 – 3.13, and the tensors they make are freed where CPython frees them.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `ok` and `run`
mod probes;

use gpumem_harness::python::{
    expressions_evaluated_by_tree, expressions_run_compiled, stores_resolved_to_slots,
};

const LAMBDAS: &str = "
log = []
class Probe:
    def __init__(self, name, rank):
        self.name = name
        self.rank = rank
    def __del__(self):
        log.append(self.name)
def make(n):
    scale = n * 2
    return lambda x, y=3: x * scale + y + n
f = make(5)
assert f(1) == 18, f(1)
assert f(1, 0) == 15
assert (lambda: [1, 2][-1])() == 2
pick = lambda a, b: a if a.rank < b.rank else b
kept = pick(Probe('a', 1), Probe('b', 2))
assert log == ['b'], log
del kept
assert log == ['b', 'a'], log
def outer():
    count = 0
    def bump():
        nonlocal count
        count += 1
        return count
    twice = lambda: bump() + bump()
    return twice()
assert outer() == 3
try:
    (lambda: missing_name)()
except NameError:
    log.append('raised')
assert log[-1] == 'raised'
";

/// Lambda bodies run compiled: no sub-expression of these lambdas reaches the tree
/// evaluator, their results and the order objects die in agree with CPython.
#[test]
fn lambda_bodies_run_compiled_and_agree_with_cpython() {
    let _serial = probes::serial();
    let (tree, compiled) = (expressions_evaluated_by_tree(), expressions_run_compiled());
    probes::run("3.11", LAMBDAS).expect("runs");
    assert_eq!(
        expressions_evaluated_by_tree(),
        tree,
        "a lambda body fell back to the tree evaluator"
    );
    // Six lambda calls (`f` twice, the list one, `pick`, `twice`, the raising one), each
    // one compiled evaluation, besides the module's own statements.
    assert!(expressions_run_compiled() - compiled >= 6 + 20);
    probes::agrees_with_cpython("", 13, LAMBDAS);
}

/// A view made in a lambda (the blog's awaitable callback) holds its base's storage while
/// it lives, and every byte is back once the lambda's result and its input are gone.
#[test]
fn a_lambda_returning_a_view_keeps_the_storage_until_released() {
    let _serial = probes::serial();
    probes::ok(
        "
MB = 1024 * 1024
class Holder:
    def __init__(self, dim):
        self.dim = dim
        self.callback = lambda t: t.view(-1, self.dim)
h = Holder(4)
v = h.callback(torch.zeros(256 * 1024, device='cuda'))
assert v.shape == (64 * 1024, 4), v.shape
assert torch.cuda.memory_allocated() == MB, torch.cuda.memory_allocated()
del v
assert torch.cuda.memory_allocated() == 0
",
    );
}

const ATTRIBUTES: &str = "
log = []
def note(x):
    log.append(x)
    return x
class Box:
    pass
def on_local():
    b = Box()
    b.x = note(1)
    b.y = b.x + 1
    return b.x, b.y
assert on_local() == (1, 2)
def on_cell():
    b = Box()
    b.x = note(2)
    get = lambda: b.x
    b.x = 3
    return get()
assert on_cell() == 3
def on_free():
    b = Box()
    def inner():
        b.z = note(4)
    inner()
    return b.z
assert on_free() == 4
def unbound_local():
    b = Box()
    del b
    b.x = note('value first')
try:
    unbound_local()
except UnboundLocalError:
    log.append('unbound')
def unbound_free():
    def inner():
        b.x = note('value before the cell')
    try:
        inner()
    except NameError:
        log.append('free unbound')
    b = Box()
unbound_free()
assert log == [1, 2, 4, 'value first', 'unbound', 'value before the cell', 'free unbound'], log
";

/// `name.attr = value` on a local, a cell and a free variable: the value is evaluated
/// before the object is read (an unbound name raises after the value's side effects), as
/// `STORE_ATTR` does; the stores are resolved when the bodies are compiled.
#[test]
fn attribute_stores_on_locals_and_cells_agree_with_cpython() {
    let _serial = probes::serial();
    let before = stores_resolved_to_slots();
    probes::run("3.11", ATTRIBUTES).expect("runs");
    // Seven attribute stores (b.x and b.y in on_local, both b.x in on_cell, b.z in inner,
    // b.x in unbound_local and in unbound_free's inner) besides the four stores resolved to
    // slots before (`b =` in on_local and unbound_local, `get =`, `del b`; the other `b`s
    // are cells).
    let resolved = stores_resolved_to_slots() - before;
    assert!(
        resolved >= 11,
        "attribute stores were not resolved: {resolved}"
    );
    probes::agrees_with_cpython("", 13, ATTRIBUTES);
}
