//! Dict keys compared by value (`python/dict_keys.rs`): numbers across `int`/`float`/`bool`
//! (one key, the first stored kept), tuples item by item (objects in them by identity),
//! frozensets, `None`; unhashable keys raise CPython's `TypeError` on every dict operation,
//! `[1] in d` included (3.14's wording from 3.14). The objects a keyed store or lookup makes
//! are counted as measured on CPython 3.8 – 3.15.

mod common;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `ok`, `run` and `interpreter`
mod probes;

/// Checked with `msg` (`common/unhashable.rs`) on the model (3.10 – 3.12, and 3.8, 3.13 –
/// 3.15 below) and on every installed CPython.
const BODY: &str = "
class A:
    pass
a = A()
d = {1.0: 'a', (1, 2): 'b', None: 'c', True: 'd', (a, 'x'): 'e', frozenset([1, 2]): 'f'}
assert len(d) == 5 and d[1] == 'd' and d[1.0] == 'd' and d[True] == 'd'
assert type(list(d)[0]) is float
assert d[(1, 2)] == 'b' and d[(1.0, 2)] == 'b' and d[None] == 'c'
assert d[(a, 'x')] == 'e' and (A(), 'x') not in d
assert d[frozenset([2, 1])] == 'f'
d[2] = 'g'
assert d[2.0] == 'g' and d.get(2.0) == 'g' and d.setdefault(2.0, 'h') == 'g'
assert d.pop(2.0) == 'g' and 2 not in d
del d[(1.0, 2.0)]
assert (1, 2) not in d and len(d) == 4
assert dict([((1, 2), 3), ((1.0, 2.0), 4)]) == {(1, 2): 4}
assert {k: 0 for k in [1, 1.0, True]} == {1: 0}
assert {(1, (2, 3)): 0}[(1, (2, 3))] == 0
def store(key):
    d[key] = 0
def remove(key):
    del d[key]
for f, name in [(lambda: [1] in d, 'list'), (lambda: d.get([1]), 'list'), (lambda: d[[1]], 'list'),
                (lambda: d.pop([1], 0), 'list'), (lambda: d.setdefault({}), 'dict'),
                (lambda: store({1}), 'set'), (lambda: remove([1]), 'list')]:
    try:
        f()
        assert False, name
    except TypeError as e:
        assert str(e) == msg(name, name), str(e)
try:
    (1, [2]) in d
    assert False
except TypeError as e:
    assert str(e) == msg('tuple', 'list'), str(e)
";

#[test]
fn keys_equal_by_value_find_one_entry_as_in_cpython() {
    let script = common::unhashable::with_msg(BODY);
    probes::agrees_with_cpython("", 15, &script);
    for python in ["3.8", "3.13", "3.14", "3.15"] {
        if let Err(e) = probes::run(python, &script) {
            panic!("model on {python}: {e}");
        }
    }
}

#[test]
fn a_tuple_key_holding_a_tensor_keeps_it_until_the_entry_goes() {
    // `cache[(x, step)] = y`: the key tuple holds `x`; an equal tuple built later finds the
    // entry, and deleting through it frees both tensors.
    probes::ok(
        "import torch
cache = {}
x = torch.zeros(256, device='cuda')
cache[(x, 1)] = x * 2
cache[(x, 1.0)] = x * 3
assert len(cache) == 1
del x
assert torch.cuda.memory_allocated() == 2 * 1024, torch.cuda.memory_allocated()
k = list(cache)[0]
del cache[(k[0], True)]
del k
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
",
    );
}

/// Measured on 3.8.18 – 3.13.0, 3.14 and 3.15 (each maker warm, counted right after
/// `gc.collect()`): a display with a new tuple key counts the tuple and the dict (2), one
/// with a float key the dict (1); looking up a constant tuple (equal by value or not) or an
/// int equal to a float key makes nothing; `(a, 1) in d` makes the tuple (1).
#[test]
fn keyed_stores_and_lookups_count_what_cpython_makes() {
    let script = common::gc_counts::kept_after_collection(
        "class A:\n    pass\na = A()\nd0 = {(1, 2): [0], 1.0: [1]}\n",
        "(lambda: {(a, 1): 0}, lambda: {1.0: a}, lambda: d0[(1, 2)], lambda: d0[(1.0, 2)], lambda: d0[1], lambda: (a, 1) in d0)",
        true,
    );
    common::gc_counts::check_against_measured_and_installed(
        &script,
        |_| vec![2, 1, 0, 0, 0, 1],
        probes::interpreter,
    );
}
