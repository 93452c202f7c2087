//! `gc.get_objects`, `gc.get_referrers`, `gc.get_referents` and `gc.is_tracked`: what they
//! return (tracked objects only, youngest generation first, the result list left out of
//! itself; referents in `tp_traverse` order), that the lists they return keep every object
//! in them alive (a tensor found by a leak hunt stays allocated while the list lives), and
//! the objects they create, measured on CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses part of the shared probes
mod probes;

use probes::{
    Probe, agrees_with_cpython, model_matches_table, table_matches_installed_interpreters,
};

/// Runs on the model (3.10 – 3.12) and on every installed CPython: the asserts are the
/// behaviour measured there. The model has no module `__dict__` object, so a global's
/// referrers are checked by membership, not by length.
const SCRIPT: &str = "
import gc
class T:
    pass
def index_of(seq, obj):
    for i, o in enumerate(seq):
        if o is obj:
            return i
    return -1
gc.collect()
x = T()
y = T()
z = [x, y]
objs = gc.get_objects()
assert not any(o is objs for o in objs)
assert 0 <= index_of(objs, x) < index_of(objs, y) < index_of(objs, z)
young = gc.get_objects(0)
assert any(o is x for o in young) and any(o is z for o in young)
assert not any(o is x for o in gc.get_objects(generation=2))
assert len(gc.get_objects(-1)) == len(gc.get_objects())
refs = gc.get_referrers(x)
assert any(r is z for r in refs) and any(r is objs for r in refs)
assert not any(r is refs for r in refs)
assert gc.get_referrers(T()) == []
r = gc.get_referents(z)
assert len(r) == 2 and r[0] is y and r[1] is x
assert gc.get_referents([1, 'a', (2,)]) == [(2,), 'a', 1]
assert gc.get_referents((1, 2)) == [2, 1]
assert gc.get_referents({'p': 1, 'q': 2}) == [1, 2]
assert gc.get_referents({1: 'a', 2: 'b'}) == ['a', 1, 'b', 2]
assert gc.get_referents(1, 'a', None) == []
assert gc.get_referents(x) == [T]
assert len(gc.get_referents(z, [x])) == 3
c = [x]
assert gc.get_referents(c.append)[0] is c
assert gc.is_tracked([]) and gc.is_tracked(x) and gc.is_tracked({'a': []}) and gc.is_tracked(len)
assert not gc.is_tracked(1) and not gc.is_tracked('s') and not gc.is_tracked({}) and not gc.is_tracked({'a': 1})
assert not gc.is_tracked(None) and not gc.is_tracked(range(3))
try:
    gc.get_objects(3)
    assert False
except ValueError as e:
    assert str(e) == 'generation parameter must be less than the number of available generations (3)', str(e)
try:
    gc.get_objects(-2)
    assert False
except ValueError as e:
    assert str(e) == 'generation parameter cannot be negative', str(e)
try:
    gc.get_objects('a')
    assert False
except TypeError as e:
    assert str(e) == \"argument should be integer or None, not 'str'\", str(e)
";

#[test]
fn introspection_agrees_with_cpython() {
    agrees_with_cpython("", 13, SCRIPT);
}

/// The objects each call creates: its result list, from the list free list when it has
/// one (0, measured on 3.8 – 3.13 with the free lists full), a counted allocation when
/// `hold` has emptied it (1 each, measured: 3 for the three calls).
const PROBES: &[Probe] = &[
    (
        "get_objects kept",
        "def probe():\n    keep.append(gc.get_objects())\n",
        0,
        0,
    ),
    (
        "get_referrers kept",
        "a = [1]\ndef probe():\n    keep.append(gc.get_referrers(a))\n",
        0,
        0,
    ),
    (
        "get_referents kept",
        "a = [[], []]\ndef probe():\n    keep.append(gc.get_referents(a))\n",
        0,
        0,
    ),
    (
        "three results without a free list",
        "hold = [[] for _ in range(200)]\ndef probe():\n    keep.append(gc.get_objects())\n    keep.append(gc.get_referrers(hold))\n    keep.append(gc.get_referents(hold))\n",
        3,
        3,
    ),
];

#[test]
fn results_are_counted_as_cpython_counts_them() {
    model_matches_table(PROBES);
}

#[test]
fn counts_agree_with_installed_interpreters() {
    table_matches_installed_interpreters(PROBES);
}

/// The classic confusion: the list a leak hunt builds holds the tensor it found, so
/// deleting the tensor's name frees nothing until the list goes too.
#[test]
fn a_found_tensor_stays_allocated_while_the_list_lives() {
    for python in ["3.10", "3.11", "3.12"] {
        let workload = "
import gc
import torch
x = torch.zeros(1024, device='cuda')
model = [torch.ones(256, device='cuda')]
objs = gc.get_objects()
found = [o for o in objs if isinstance(o, torch.Tensor)]
assert len(found) == 2 and found[0] is x and found[1] is model[0], len(found)
held = torch.cuda.memory_allocated()
del x, found, model
assert torch.cuda.memory_allocated() == held
del objs
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

/// `gc.get_referrers(t)` names the containers that keep a tensor alive: the list holding
/// it and the instance `__dict__` (≤ 3.10) or the instance itself (≥ 3.11, inline values).
#[test]
fn referrers_of_a_tensor_name_what_holds_it() {
    for (python, holder) in [("3.10", "dict"), ("3.11", "Model"), ("3.12", "Model")] {
        let workload = format!(
            "
import gc
import torch
class Model:
    def __init__(self):
        self.w = torch.zeros(8, device='cuda')
m = Model()
cache = [m.w]
refs = gc.get_referrers(m.w)
names = [type(r).__name__ for r in refs]
assert names == ['{holder}', 'list'], names
assert any(r is cache for r in refs)
"
        );
        if let Err(e) = probes::run(python, &workload) {
            panic!("on {python}: {e}");
        }
    }
}

#[test]
fn referents_of_a_function_are_refused_located() {
    let err =
        probes::run("3.11", "def f():\n    pass\ngc.get_referents(f)\n").expect_err("refused");
    let text = err.to_string();
    assert!(text.contains("t.yaml:7:"), "{text}");
    assert!(text.contains("gc.get_referents of a `function`"), "{text}");
}
