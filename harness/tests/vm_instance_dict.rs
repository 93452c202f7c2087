//! `vars(obj)`, `obj.__dict__` and the names of functions and classes (`instance_dict.rs`,
//! `scope.rs`): what they return, that the dict is the instance's own storage (writes go
//! both ways, a tensor in it lives as long as the instance), and the objects they make,
//! counted against real CPython 3.8 – 3.15.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the table helpers
mod probes;

/// Reads and writes through `__dict__` and `vars()`, assignment of `__dict__`, the errors
/// CPython raises, and qualified names, checked on the model and every installed CPython.
#[test]
fn vars_and_dunder_dict_read_and_write_the_instance_attributes() {
    probes::agrees_with_cpython(
        "",
        15,
        "
import gc, sys
class Box:
    def __init__(self, a):
        self.a = a
        self.b = 2
b = Box(1)
d = vars(b)
assert d is b.__dict__ and d is vars(b)
assert d == {'a': 1, 'b': 2}, d
assert list(d.items()) == [('a', 1), ('b', 2)]
d['c'] = 3
assert b.c == 3
b.e = 5
assert d['e'] == 5 and sorted(d) == ['a', 'b', 'c', 'e']
del d['a']
assert not hasattr(b, 'a')
for k, v in b.__dict__.items():
    assert getattr(b, k) == v
if sys.version_info < (3, 14):
    assert not gc.is_tracked(Box(1).__dict__)
assert gc.is_tracked(Box([]).__dict__)

fresh = Box(7)
fresh.__dict__ = {'z': 9}
assert fresh.z == 9 and not hasattr(fresh, 'a')
fresh.y = 1
assert vars(fresh) == {'z': 9, 'y': 1}
try:
    fresh.__dict__ = [1]
    raise AssertionError('a list was taken as __dict__')
except TypeError:
    pass

class Empty:
    pass
e = Empty()
assert vars(e) == {}
e.x = 1
assert e.__dict__ == {'x': 1}

class Slotted:
    __slots__ = ('a',)
try:
    Slotted().__dict__
    raise AssertionError('a slotted instance has a __dict__')
except AttributeError:
    pass
try:
    vars(1)
    raise AssertionError('vars(1) worked')
except TypeError:
    pass

def top():
    pass
def outer():
    def inner():
        pass
    return inner
class Outer:
    class Inner:
        def method(self):
            return lambda: 0
    def get(self):
        return 1
assert top.__qualname__ == 'top' and top.__name__ == 'top'
assert outer().__qualname__ == 'outer.<locals>.inner'
assert outer().__name__ == 'inner'
assert Outer.get.__qualname__ == 'Outer.get'
assert Outer.Inner.method.__qualname__ == 'Outer.Inner.method'
assert Outer.Inner().method().__qualname__ == 'Outer.Inner.method.<locals>.<lambda>'
assert Outer.Inner.__qualname__ == 'Outer.Inner' and Outer.Inner.__name__ == 'Inner'
assert Outer.__module__ == '__main__' and top.__module__ == '__main__'
",
    );
}

/// The dict `__dict__` returns is where the instance keeps its attributes: a tensor put in
/// it is freed with the instance, and one dropped from it is freed at once.
#[test]
fn a_tensor_in_the_instance_dict_lives_as_long_as_the_instance() {
    for python in ["3.10", "3.11", "3.12"] {
        let workload = "
class Holder:
    def __init__(self):
        self.x = torch.zeros(1024, device='cuda')
h = Holder()
vars(h)['y'] = torch.zeros(2048, device='cuda')
assert torch.cuda.memory_allocated() == 12288, torch.cuda.memory_allocated()
del h.__dict__['x']
assert torch.cuda.memory_allocated() == 8192, torch.cuda.memory_allocated()
h.__dict__ = {}
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
h.z = torch.zeros(256, device='cuda')
d = h.__dict__
del h
assert torch.cuda.memory_allocated() == 1024, torch.cuda.memory_allocated()
del d
assert torch.cuda.memory_allocated() == 0
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

/// What is refused is refused where it is written, never answered wrongly.
#[test]
fn vars_without_an_argument_and_of_a_class_are_refused_located() {
    for (workload, words) in [
        (
            "x = 1\nv = vars()\n",
            "unsupported: `vars()` without an argument",
        ),
        (
            "class C:\n    pass\nv = vars(C)\n",
            "unsupported: `vars(cls)` and `cls.__dict__`",
        ),
        (
            "class C:\n    pass\ndef f():\n    class C:\n        pass\n    return C\nq = C.__qualname__\n",
            "unsupported: `__qualname__` of class `C`",
        ),
    ] {
        let err = probes::run("3.11", workload)
            .map(|_| ())
            .expect_err("refused")
            .to_string();
        assert!(err.contains(words), "{err}");
        assert!(err.contains("t.yaml:"), "located: {err}");
    }
}

const A: &str = "class A:
    def __init__(self):
        self.a = 1
        self.b = 2
";

/// (name, probe, count on ≤ 3.10, on ≥ 3.11), measured on 3.8 – 3.15 with `probes::PRELUDE`
/// (free lists filled) and `probes::MEASURE`. The third call of each probe finds the dict
/// free list emptied by the first two, so each dict made is counted: up to 3.10 every
/// instance makes one at its first store; from 3.11 only reading `__dict__` makes one.
const PROBES: &[probes::Probe] = &[
    (
        "100 instances kept",
        "def probe():\n    keep.append([A() for i in range(100)])\n",
        200,
        100,
    ),
    (
        "100 instances kept after reading __dict__",
        "def probe():\n    out = []\n    for i in range(100):\n        o = A()\n        o.__dict__\n        out.append(o)\n    keep.append(out)\n",
        200,
        200,
    ),
    (
        "100 __dict__ kept, instances dropped",
        "def probe():\n    keep.append([A().__dict__ for i in range(100)])\n",
        100,
        100,
    ),
    (
        "vars of an instance kept",
        "def probe():\n    keep.append(vars(A()))\n",
        0,
        0,
    ),
    (
        "__dict__ assigned",
        "def probe():\n    o = A()\n    o.__dict__ = {'z': 1}\n    keep.append(o)\n",
        1,
        1,
    ),
];

fn with_class(probes: &[probes::Probe]) -> Vec<probes::Probe> {
    probes
        .iter()
        .map(|&(name, probe, legacy, modern)| {
            let code: &'static str = Box::leak(format!("{A}{probe}").into_boxed_str());
            (name, code, legacy, modern)
        })
        .collect()
}

#[test]
fn the_model_counts_the_dicts_as_the_table_says() {
    probes::model_matches_table(&with_class(PROBES));
}

#[test]
fn the_table_agrees_with_installed_interpreters() {
    probes::table_matches_installed_interpreters(&with_class(PROBES));
}
