//! Objects as dict keys: instances, functions, classes, tensors and modules hashed by
//! identity (`object.__hash__`), as CPython does; unhashable keys (`list`, `dict`, `set`,
//! instances whose class sets `__eq__` without `__hash__`, tuples holding one) raise its
//! `TypeError`; a tuple holding a key with a user `__hash__` is refused, located (lone
//! user keys are in `vm_user_hash.rs`, keys equal by value in `vm_dict_value_keys.rs`).

#[allow(dead_code)] // this file uses `unhashable` only
mod common;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `ok` and `run`
mod probes;

/// Checked with `msg` (`common/unhashable.rs`) on the model and on every installed CPython.
const BODY: &str = "
class A:
    pass
def f():
    pass
a, b = A(), A()
d = {a: 1, f: 2, A: 3, None: 4}
d[b] = 5
assert d[a] == 1 and d[f] == 2 and d[A] == 3 and d[None] == 4 and d[b] == 5
assert a in d and len(d) == 5
d[a] = 6
assert d[a] == 6 and len(d) == 5
assert dict([(a, 1)])[a] == 1
assert {k: 1 for k in (a, b)}[b] == 1
del d[b]
assert b not in d
assert d.get(A()) is None
for bad, name in [([1], 'list'), ({}, 'dict'), ({1}, 'set')]:
    try:
        d[bad] = 1
        assert False
    except TypeError as e:
        assert str(e) == msg(name, name), str(e)
class E:
    def __eq__(self, other):
        return True
try:
    d = {E(): 1}
    assert False
except TypeError as e:
    assert str(e) == msg('E', 'E'), str(e)
try:
    d = {(1, [2]): 1}
    assert False
except TypeError as e:
    assert str(e) == msg('tuple', 'list'), str(e)
";

#[test]
fn identity_keys_and_unhashable_keys_behave_as_in_cpython() {
    let script = common::unhashable::with_msg(BODY);
    probes::agrees_with_cpython("", 15, &script);
    for python in ["3.13", "3.14", "3.15"] {
        if let Err(e) = probes::run(python, &script) {
            panic!("model on {python}: {e}");
        }
    }
}

#[test]
fn a_dict_keyed_by_tensors_keeps_them_alive() {
    // `cache[x] = f(x)`: both the key tensor and the value are held by the dict.
    probes::ok(
        "import torch
cache = {}
def f(x):
    return x * 2
for _ in range(3):
    x = torch.zeros(256, device='cuda')
    cache[x] = f(x)
del x
assert torch.cuda.memory_allocated() == 6 * 1024, torch.cuda.memory_allocated()
assert len(cache) == 3
cache.clear()
assert torch.cuda.memory_allocated() == 0
",
    );
}

#[test]
fn a_tuple_holding_a_key_with_a_user_hash_is_refused_where_stored() {
    // A lone user key is hashed by its `__hash__` (`vm_user_hash.rs`).
    let script = "class K:\n    def __hash__(self):\n        return 1\nd = {(K(), 1): 0}\n";
    let e = probes::run("3.12", script).expect_err(script).to_string();
    assert!(
        e.contains("unsupported") && e.contains("its own `__hash__`") && e.contains("t.yaml:"),
        "{e}"
    );
}
