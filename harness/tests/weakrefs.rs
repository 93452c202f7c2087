//! `weakref.ref` and `weakref.finalize`: references that do not keep their target, cleared
//! when it dies (by reference counting or by the collector), callbacks and finalizers run
//! then, and their generation-0 counts against real CPython.

mod probes;

use probes::ok;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.15.
const PROBES: &[probes::Probe] = &[
    // The callback-less reference made by the first call is handed out again.
    (
        "plain weakref of a live object",
        "import weakref\nclass C:\n    pass\nc = C()\ndef probe():\n    keep.append(weakref.ref(c))\n",
        0,
        0,
    ),
    (
        "weakref of an object that dies",
        "import weakref\nclass C:\n    pass\ndef probe():\n    keep.append(weakref.ref(C()))\n",
        1,
        1,
    ),
    (
        "weakref with a callback",
        "import weakref\nclass C:\n    pass\nc = C()\ndef f(r):\n    pass\ndef probe():\n    keep.append(weakref.ref(c, f))\n",
        1,
        1,
    ),
    (
        "calling a weakref",
        "import weakref\nclass C:\n    pass\nc = C()\nr = weakref.ref(c)\ndef probe():\n    r()\n",
        0,
        0,
    ),
    (
        "finalizer that ran",
        "import weakref\nclass C:\n    pass\ndef f():\n    pass\ndef probe():\n    c = C()\n    keep.append(weakref.finalize(c, f))\n",
        1,
        1,
    ),
    (
        "finalizer of a live object",
        "import weakref\nclass C:\n    pass\ndef f():\n    pass\ndef probe():\n    c = C()\n    keep.append(c)\n    keep.append(weakref.finalize(c, f))\n",
        4,
        4,
    ),
];

#[test]
fn weakref_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_weakref_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn a_weakref_is_cleared_when_its_target_dies_and_runs_its_callback() {
    ok("
import weakref
import torch
class Box:
    pass
b = Box()
seen = []
r = weakref.ref(b, lambda ref: seen.append(ref() is None))
assert r() is b and weakref.ref(b) is not r
plain = weakref.ref(b)
assert weakref.ref(b) is plain, 'the plain reference is shared'
del b
assert r() is None and plain() is None
assert seen == [True], seen
t = torch.zeros(256, device='cuda')
w = weakref.ref(t)
assert w() is t
del t
assert w() is None and torch.cuda.memory_allocated() == 0
for bad in (1, [1], (1,), 'x', {}):
    try:
        weakref.ref(bad)
    except TypeError:
        pass
    else:
        assert False, 'not weakly referenceable'
");
}

/// How users debug a leak: the weak reference to a tensor held in a reference cycle stays
/// alive after `del`, and goes `None` only once the collector frees the cycle.
#[test]
fn a_weakref_to_a_tensor_in_a_cycle_clears_only_after_collection() {
    ok("
import gc
import weakref
import torch
gc.disable()
class Node:
    pass
n = Node()
n.me = n
n.t = torch.zeros(256, device='cuda')
w = weakref.ref(n.t)
del n
assert w() is not None, 'the cycle keeps the tensor'
assert torch.cuda.memory_allocated() == 1024
gc.collect()
assert w() is None, 'freed with its cycle'
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn a_finalizer_runs_once_when_its_target_dies() {
    ok("
import gc
import weakref
class Box:
    pass
log = []
def note(x):
    log.append(x)
b = Box()
f = weakref.finalize(b, note, 'gone')
assert f.alive
del b
assert log == ['gone'] and not f.alive, log
c = Box()
g = weakref.finalize(c, note, 'called')
assert g() is None and log == ['gone', 'called'] and not g.alive
assert g() is None and len(log) == 2, 'runs once'
del c
assert len(log) == 2
gc.disable()
d = Box()
d.me = d
weakref.finalize(d, note, 'collected')
del d
assert len(log) == 2, 'the cycle keeps it'
gc.collect()
assert log[-1] == 'collected', log
");
}

/// The documented pitfall: a finalizer owns its function and arguments, so one that refers
/// to its own target keeps the target (and its tensor) alive for good.
#[test]
fn a_finalizer_referring_to_its_target_keeps_it_alive() {
    ok("
import gc
import weakref
import torch
class Holder:
    pass
h = Holder()
h.t = torch.zeros(256, device='cuda')
f = weakref.finalize(h, print, h)
del h
gc.collect()
assert f.alive and torch.cuda.memory_allocated() == 1024, 'kept by its own finalizer'
");
}

/// The rest of `weakref` is refused before the run, at the name's location.
#[test]
fn the_rest_of_weakref_is_refused_with_its_location() {
    for (workload, at, name) in [
        (
            "import weakref\nd = weakref.WeakValueDictionary()\n",
            "t.yaml:6:",
            "WeakValueDictionary",
        ),
        ("from weakref import WeakSet\n", "t.yaml:5:", "WeakSet"),
    ] {
        let err = probes::run("3.11", workload)
            .expect_err("an unmodelled weakref name is refused")
            .to_string();
        assert!(
            err.contains(at) && err.contains(name) && err.contains("unsupported"),
            "{err}"
        );
    }
}
