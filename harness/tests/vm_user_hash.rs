//! Instances whose class defines `__hash__`/`__eq__` as dict keys and set members:
//! `__hash__` called once per insert or lookup, `__eq__` only on an entry of equal hash
//! that is not the probe itself, the frames of those calls counted as CPython counts them;
//! `__hash__ = None`, a class with only `__eq__` and a `__hash__` returning a non-int raise
//! CPython's `TypeError` (3.14's words from 3.14); a tuple holding a user key and a frozen
//! dataclass key are refused, located.

#[allow(dead_code)] // this file uses `run_model` through `gc_counts` only
mod common;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `interpreter`, `ok` and `run`
mod probes;

/// Checked on the model (3.10 – 3.12) and on every installed CPython 3.8 – 3.15.
const CALLS: &str = "
calls = []
class K:
    def __init__(self, v):
        self.v = v
    def __hash__(self):
        calls.append('h')
        return self.v % 2
    def __eq__(self, other):
        calls.append('e')
        return isinstance(other, K) and self.v == other.v
a, b, c = K(1), K(3), K(1)
d = {}
d[a] = 1
assert calls == ['h'], calls
d[b] = 2
assert calls == ['h', 'h', 'e'] and len(d) == 2, calls
calls.clear()
assert d[c] == 1 and calls == ['h', 'e'], calls
calls.clear()
assert a in d and calls == ['h'], calls
calls.clear()
d[c] = 3
assert d[a] == 3 and list(d)[0] is a and len(d) == 2, calls
assert calls == ['h', 'e', 'h'], calls
calls.clear()
assert d.get(K(5)) is None and calls == ['h', 'e', 'e'], calls
calls.clear()
assert d.pop(K(3)) == 2 and len(d) == 1 and calls == ['h', 'e', 'e'], calls
calls.clear()
s = {a, b}
assert calls == ['h', 'h', 'e'] and len(s) == 2, calls
calls.clear()
assert c in s and calls == ['h', 'e'], calls
calls.clear()
s.add(c)
assert len(s) == 2 and calls == ['h', 'e'], calls
calls.clear()
s.discard(K(3))
assert len(s) == 1 and calls == ['h', 'e', 'e'], calls
calls.clear()
assert hash(K(5)) == 1 and calls == ['h'], calls
class M:
    def __hash__(self):
        return -1
assert hash(M()) == -2
class E(K):
    pass
assert {E(2): 0}[E(2)] == 0
";

#[test]
fn hash_and_eq_are_called_as_cpython_calls_them() {
    probes::agrees_with_cpython("", 15, CALLS);
    for python in ["3.8", "3.13", "3.14", "3.15"] {
        if let Err(e) = probes::run(python, CALLS) {
            panic!("model on {python}: {e}");
        }
    }
}

/// The gen-0 count after storing a user key in a new dict, looking an equal one up, a set
/// display of two colliding keys, and keeping both: up to 3.10 the first `__hash__` and
/// the first `__eq__` call each leave a frame (kept as its code's zombie frame).
const COUNTS: &str = "class K:
    def __init__(self, v):
        self.v = v
    def __hash__(self):
        return self.v % 2
    def __eq__(self, other):
        return self.v == other.v
a, b, c = K(1), K(3), K(1)
out = []
gc.collect()
gc.get_count()
x = gc.get_count()[0]
d = {a: 1}
out.append(gc.get_count()[0] - x)
x = gc.get_count()[0]
d[c]
out.append(gc.get_count()[0] - x)
x = gc.get_count()[0]
s = {a, b}
out.append(gc.get_count()[0] - x)
x = gc.get_count()[0]
keep = [d, s]
out.append(gc.get_count()[0] - x)
";

#[test]
fn the_frames_of_hash_and_eq_calls_are_counted_as_cpython_counts_them() {
    // Measured with CPython 3.8.18, 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0, 3.14, 3.15.
    common::gc_counts::check_against_measured_and_installed(
        &format!("import gc\n{COUNTS}"),
        |minor| {
            if minor <= 10 {
                vec![2, 1, 1, 1]
            } else {
                vec![1, 0, 1, 1]
            }
        },
        probes::interpreter,
    );
}

#[test]
fn unhashable_classes_and_bad_hashes_raise_cpythons_type_error() {
    let script = |dict_words: &str, set_words: &str| {
        format!(
            "class N:
    __hash__ = None
class Q:
    def __eq__(self, other):
        return True
class Bad:
    def __hash__(self):
        return 'x'
for bad, name, inner in [(N(), 'N', \"unhashable type: 'N'\"), (Q(), 'Q', \"unhashable type: 'Q'\"), (Bad(), 'Bad', '__hash__ method should return an integer')]:
    for f, words in [(lambda: {{bad: 1}}, {dict_words}), (lambda: {{bad}}, {set_words}), (lambda: hash(bad), inner)]:
        try:
            f()
            assert False
        except TypeError as e:
            assert str(e) == words, (str(e), words)
"
        )
    };
    let old = script("inner", "inner");
    let new = script(
        "\"cannot use '%s' as a dict key (%s)\" % (name, inner)",
        "\"cannot use '%s' as a set element (%s)\" % (name, inner)",
    );
    for (minor, text) in [(10u8, &old), (13, &old), (14, &new), (15, &new)] {
        if let Err(e) = probes::run(&format!("3.{minor}"), text) {
            panic!("model on 3.{minor}: {e}");
        }
        match probes::interpreter(minor) {
            Some(python) => {
                let out = std::process::Command::new(&python)
                    .args(["-c", text])
                    .output()
                    .expect("runs python");
                assert!(out.status.success(), "3.{minor}: {out:?}");
            }
            None => eprintln!("skipped: CPython 3.{minor} is not installed"),
        }
    }
}

#[test]
fn a_dict_keyed_by_user_keys_holds_their_tensors_until_the_entry_goes() {
    let t = probes::ok(
        "import torch
class Key:
    def __init__(self, name):
        self.name = name
        self.buf = torch.zeros(256, device='cuda')
    def __hash__(self):
        return len(self.name)
    def __eq__(self, other):
        return self.name == other.name
cache = {Key('ab'): 1, Key('cd'): 2}
assert torch.cuda.memory_allocated() == 2 * 1024
cache[Key('ab')] = 3
assert torch.cuda.memory_allocated() == 2 * 1024 and len(cache) == 2 and cache[Key('ab')] == 3
del cache[Key('cd')]
assert torch.cuda.memory_allocated() == 1024, torch.cuda.memory_allocated()
cache.clear()
assert torch.cuda.memory_allocated() == 0
",
    );
    assert!(!t.events.is_empty());
}

#[test]
fn dataclass_hashing_follows_eq_and_frozen() {
    // `eq=True` (the default) without `frozen`: `__hash__ = None`; `eq=False`: identity.
    probes::agrees_with_cpython(
        "",
        15,
        "from dataclasses import dataclass
@dataclass
class P:
    x: int
try:
    {P(1): 0}
    assert False
except TypeError:
    pass
@dataclass(eq=False)
class I:
    x: int
i = I(1)
assert {i: 0}[i] == 0 and I(1) not in {i: 0}
",
    );
}

#[test]
fn what_the_model_does_not_hash_is_refused_located() {
    for (script, what) in [
        (
            "class K:\n    def __hash__(self):\n        return 1\nd = {(K(), 1): 0}\n",
            "a tuple holding an instance with its own `__hash__`",
        ),
        (
            "from dataclasses import dataclass\n@dataclass(frozen=True)\nclass P:\n    x: int\ns = {P(1)}\n",
            "a frozen dataclass",
        ),
    ] {
        let e = probes::run("3.12", script).expect_err(script).to_string();
        assert!(
            e.contains("unsupported") && e.contains(what) && e.contains("t.yaml:"),
            "{e}"
        );
    }
}
