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
    (
        "WeakValueDictionary entry kept",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakValueDictionary()\nn = [0]\ndef probe():\n    n[0] += 1\n    o = C()\n    keep.append(o)\n    d[n[0]] = o\n",
        2,
        2,
    ),
    (
        "WeakValueDictionary entry whose value dies",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakValueDictionary()\nn = [0]\ndef probe():\n    n[0] += 1\n    o = C()\n    d[n[0]] = o\n",
        0,
        0,
    ),
    (
        "WeakKeyDictionary entry kept",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakKeyDictionary()\ndef probe():\n    o = C()\n    keep.append(o)\n    d[o] = 1\n",
        2,
        2,
    ),
    (
        "WeakKeyDictionary entry whose key dies",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakKeyDictionary()\ndef probe():\n    o = C()\n    d[o] = 1\n",
        0,
        0,
    ),
    (
        "WeakSet item kept",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakSet()\ndef probe():\n    o = C()\n    keep.append(o)\n    d.add(o)\n",
        2,
        2,
    ),
    (
        "WeakSet item that dies",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakSet()\ndef probe():\n    o = C()\n    d.add(o)\n",
        0,
        0,
    ),
    (
        "WeakValueDictionary get",
        "import weakref\nclass C:\n    pass\nd = weakref.WeakValueDictionary()\no = C()\nd[1] = o\ndef probe():\n    keep.append(d.get(1))\n",
        0,
        0,
    ),
];

/// `gc.get_count()` of constructing each weak container, measured on CPython 3.8 – 3.15.
const CONSTRUCTORS: &[(&str, [i64; 8])] = &[
    ("WeakValueDictionary", [5, 6, 6, 5, 5, 5, 4, 4]),
    ("WeakKeyDictionary", [5, 5, 5, 4, 5, 5, 3, 3]),
    ("WeakSet", [6, 6, 6, 5, 6, 6, 4, 4]),
];

fn constructor_probe(name: &str) -> String {
    format!("import weakref\ndef probe():\n    keep.append(weakref.{name}())\n")
}

#[test]
fn weak_container_constructions_count_as_measured_per_version() {
    for (name, counts) in CONSTRUCTORS {
        for (i, expected) in counts.iter().enumerate() {
            let python = format!("3.{}", i + 8);
            if python == "3.8" {
                continue;
            }
            let workload = format!(
                "{}{}{}assert d == {expected}, d\n",
                probes::PRELUDE,
                constructor_probe(name),
                probes::MEASURE
            );
            if let Err(e) = probes::run(&python, &workload) {
                panic!("{name} on {python}: {e}");
            }
        }
    }
}

#[test]
fn measured_weak_container_constructions_match_installed_interpreters() {
    let mut compared = 0;
    for (name, counts) in CONSTRUCTORS {
        for (i, expected) in counts.iter().enumerate() {
            let minor = i as u8 + 8;
            let Some(python) = probes::interpreter(minor) else {
                eprintln!("skipped: CPython 3.{minor} is not installed");
                continue;
            };
            let script = format!(
                "{}{}{}print(d)\n",
                probes::PRELUDE,
                constructor_probe(name),
                probes::MEASURE
            );
            let out = std::process::Command::new(&python)
                .args(["-c", &script])
                .output()
                .expect("runs python");
            let real: i64 = String::from_utf8_lossy(&out.stdout)
                .trim()
                .parse()
                .expect("a count");
            assert_eq!(real, *expected, "{name} on 3.{minor}");
            compared += 1;
        }
    }
    if compared == 0 {
        eprintln!("skipped: no CPython found; the constructions were not re-measured");
    }
}

#[test]
fn weak_value_dictionary_entries_vanish_when_their_tensor_dies() {
    ok("import torch, weakref, gc
cache = weakref.WeakValueDictionary()
a = torch.empty(256, device='cuda')
b = torch.empty(256, device='cuda')
cache['a'] = a
cache['b'] = b
assert len(cache) == 2 and 'a' in cache and cache['a'] is a
assert cache.get('b') is b and cache.get('zz') is None and cache.get('zz', 3) == 3
assert sorted(cache.keys()) == ['a', 'b']
assert len(cache.values()) == 2 and len(cache.items()) == 2
del a
assert 'a' not in cache and len(cache) == 1
try:
    cache['a']
    raise AssertionError('found')
except KeyError:
    pass
assert torch.cuda.memory_allocated() == 1024, 'the dictionary does not keep the tensor'
class Node:
    pass
n = Node()
n.self = n
n.t = b
cache['n'] = n
del n, b
assert 'n' in cache, 'a cycle is only freed by the collector'
gc.collect()
assert 'n' not in cache and len(cache) == 0
assert torch.cuda.memory_allocated() == 0
c = torch.empty(4, device='cuda')
cache['c'] = c
assert cache.pop('c') is c and len(cache) == 0
cache['c'] = c
del cache['c']
assert len(cache) == 0
keys = []
cache['c'] = c
for k in cache:
    keys.append(k)
assert keys == ['c']
");
}

#[test]
fn weak_key_dictionaries_and_weak_sets_forget_dead_objects() {
    ok("import weakref
class C:
    pass
a = C()
b = C()
d = weakref.WeakKeyDictionary()
d[a] = [1]
d[b] = [2]
assert d[a] == [1] and len(d) == 2 and b in d
del a
assert len(d) == 1 and d.get(b) == [2]
s = weakref.WeakSet()
s.add(b)
s.add(b)
x = C()
s.add(x)
assert len(s) == 2 and x in s
del x
assert len(s) == 1
s.discard(b)
assert len(s) == 0
try:
    s.remove(b)
    raise AssertionError('removed')
except KeyError:
    pass
items = []
s.add(b)
for y in s:
    items.append(y)
assert items == [b]
");
}

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
            "import weakref\nd = weakref.WeakMethod\n",
            "t.yaml:6:",
            "WeakMethod",
        ),
        ("from weakref import proxy\n", "t.yaml:5:", "proxy"),
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
