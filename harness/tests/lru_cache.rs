//! `functools.lru_cache` and `functools.cache`: the cache keeps argument keys and results
//! alive (tensors included) until eviction or `cache_clear()`, a cached method keeps every
//! `self`, and the generation-0 counts of hits and misses against real CPython.

mod probes;

use probes::ok;

const HEAD: &str = "import functools\nclass C:\n    pass\nn = [0]\n";

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.15.
/// A hit creates nothing that survives; a miss keeps only what the function made (the key
/// tuple comes from its free list); a full bounded cache frees what it evicts.
const PROBES: &[probes::Probe] = &[
    (
        "lru_cache hit on an int",
        "import functools\n@functools.lru_cache(maxsize=128)\ndef f(x):\n    return [x]\ndef probe():\n    f(1)\n",
        0,
        0,
    ),
    (
        "lru_cache miss keeping an object",
        "import functools\nclass C:\n    pass\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\ndef probe():\n    f(C())\n",
        1,
        1,
    ),
    (
        "lru_cache hit on an object",
        "import functools\nclass C:\n    pass\nc = C()\n@functools.lru_cache\ndef f(x):\n    return x\ndef probe():\n    f(c)\n",
        0,
        0,
    ),
    (
        "lru_cache miss by keyword keeping an object",
        "import functools\nclass C:\n    pass\nn = [0]\n@functools.lru_cache(maxsize=None)\ndef mk(i):\n    return C()\ndef probe():\n    n[0] += 1\n    mk(i=n[0])\n",
        1,
        1,
    ),
    (
        "full lru_cache evicting an object",
        "import functools\nclass C:\n    pass\nn = [0]\n@functools.lru_cache(maxsize=2)\ndef mk(i):\n    return C()\ndef probe():\n    n[0] += 1\n    mk(n[0])\n",
        0,
        0,
    ),
    (
        "lru_cache method hit",
        "import functools\nclass M:\n    @functools.lru_cache(maxsize=None)\n    def f(self, x):\n        return x\nm = M()\ndef probe():\n    m.f(1)\n",
        0,
        0,
    ),
    (
        "lru_cache method miss keeping an object",
        "import functools\nclass C:\n    pass\nn = [0]\nclass M:\n    @functools.lru_cache(maxsize=None)\n    def f(self, x):\n        return C()\nm = M()\ndef probe():\n    n[0] += 1\n    m.f(n[0])\n",
        1,
        1,
    ),
    (
        "lru_cache cache_info",
        "import functools\n@functools.lru_cache(maxsize=None)\ndef f(x):\n    return x\ndef probe():\n    keep.append(f.cache_info())\n",
        1,
        1,
    ),
];

#[test]
fn lru_cache_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_lru_cache_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn a_cached_function_keeps_the_tensors_it_returned_until_cache_clear() {
    ok(&format!(
        "{HEAD}import torch
@functools.lru_cache(maxsize=None)
def make(i):
    return torch.zeros(256, device='cuda')
a = make(1)
assert make(1) is a, 'a hit returns the stored result'
b = make(2)
del a, b
assert torch.cuda.memory_allocated() == 2048, 'the cache keeps both results'
info = make.cache_info()
assert info[0] == 1 and info[1] == 2 and info[2] is None and info[3] == 2, info
make.cache_clear()
assert torch.cuda.memory_allocated() == 0
assert make.cache_info()[3] == 0
"
    ));
}

#[test]
fn a_bounded_cache_frees_the_least_recently_used_result() {
    ok(&format!(
        "{HEAD}import torch
import weakref
@functools.lru_cache(maxsize=2)
def make(i):
    return torch.zeros(256, device='cuda')
first = make(1)
second = weakref.ref(make(2))
assert make(1) is first, 'a hit makes entry 1 the most recently used'
make(3)
assert second() is None, 'entry 2, least recently used, is evicted and freed'
assert torch.cuda.memory_allocated() == 2 * 1024, 'entries 1 and 3 are cached'
kept = weakref.ref(first)
del first
assert kept() is not None, 'the cache keeps entry 1'
make(2)
assert kept() is None, 'entry 1 evicted and freed'
assert torch.cuda.memory_allocated() == 2 * 1024
assert make.cache_info()[1] == 4
"
    ));
}

#[test]
fn a_cached_method_keeps_every_self_it_was_called_with() {
    ok(&format!(
        "{HEAD}import torch
import weakref
class Model:
    def __init__(self):
        self.w = torch.zeros(256, device='cuda')
    @functools.lru_cache(maxsize=None)
    def scaled(self, k):
        return k
m = Model()
r = weakref.ref(m)
assert m.scaled(2) == 2 and m.scaled(2) == 2
del m
gc.collect()
assert r() is not None, 'the cache key holds self'
assert torch.cuda.memory_allocated() == 1024
Model.scaled.cache_clear()
assert r() is None and torch.cuda.memory_allocated() == 0
"
    ));
}

#[test]
fn functools_cache_and_keyword_keys_are_separate_entries() {
    ok(&format!(
        "{HEAD}calls = []
@functools.cache
def f(x, y=0):
    calls.append((x, y))
    return x + y
assert f(1) == 1 and f(1) == 1 and f(x=1) == 1 and f(1, y=2) == 3 and f(1, y=2) == 3
assert calls == [(1, 0), (1, 0), (1, 2)], calls
assert f.cache_info()[3] == 3
@functools.lru_cache(maxsize=0)
def g(x):
    calls.append(x)
    return x
g(5)
g(5)
assert calls[-2:] == [5, 5], 'maxsize=0 caches nothing'
"
    ));
}

#[test]
fn lru_cache_typed_is_refused_with_its_location() {
    let err = probes::run(
        "3.11",
        "import functools\n@functools.lru_cache(typed=True)\ndef f(x):\n    return x\n",
    )
    .expect_err("typed=True is refused")
    .to_string();
    assert!(
        err.contains("t.yaml:6:") && err.contains("typed") && err.contains("unsupported"),
        "{err}"
    );
}
