//! Class decorators and `dataclasses`: a decorator applies to the class object after the body
//! ran (bottom-up for several, the result bound to the name), and the generation-0 counts
//! of decorated class statements against real CPython.

mod probes;

use probes::{ok, run};

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.15
/// (with a base, so that 3.15 counts as 3.11 – 3.14 do).
const PROBES: &[probes::Probe] = &[
    (
        "decorated class returned as is",
        "class B:\n    pass\ndef deco(c):\n    return c\ndef probe():\n    @deco\n    class C(B):\n        pass\n    keep.append(C)\n",
        2,
        2,
    ),
    (
        "class replaced by its decorator",
        "class B:\n    pass\ndef deco(c):\n    keep.append(c)\n    return 1\ndef probe():\n    @deco\n    class C(B):\n        pass\n    keep.append(C)\n",
        2,
        2,
    ),
    (
        "class with two decorators",
        "class B:\n    pass\ndef deco(c):\n    return c\ndef probe():\n    @deco\n    @deco\n    class C(B):\n        pass\n    keep.append(C)\n",
        2,
        2,
    ),
    (
        "dataclass instance",
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: int\n    y: int = 1\ndef probe():\n    keep.append(C(1))\n",
        1,
        1,
    ),
    (
        "dataclass instance by keyword",
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: int\ndef probe():\n    keep.append(C(x=1))\n",
        1,
        1,
    ),
    (
        "dataclass instance with a default_factory",
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: list = dataclasses.field(default_factory=list)\n    y: int = 0\ndef probe():\n    keep.append(C())\n",
        2,
        2,
    ),
    (
        "frozen dataclass instance",
        "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass C:\n    x: int\ndef probe():\n    keep.append(C(1))\n",
        1,
        1,
    ),
    (
        "dataclasses.replace",
        "import dataclasses\n@dataclasses.dataclass(frozen=True)\nclass C:\n    x: int\n    y: list = dataclasses.field(default_factory=list)\nc = C(1)\ndef probe():\n    keep.append(dataclasses.replace(c, x=2))\n",
        1,
        1,
    ),
];

#[test]
fn decorated_class_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_decorated_class_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn class_decorators_apply_bottom_up_after_the_body_and_bind_the_result() {
    ok("order = []
def first(c):
    order.append('first')
    c.tag = c.tag + 'f'
    return c
def second(c):
    order.append('second')
    c.tag = 'b' + c.tag
    return c
def make(label):
    order.append(label)
    return second
@first
@make('evaluated')
class A:
    order.append('body')
    tag = ''
assert order == ['evaluated', 'body', 'second', 'first'], order
assert A.tag == 'bf', A.tag
");
}

#[test]
fn a_class_decorator_may_return_something_else() {
    ok("def replace(c):
    return ['replaced']
@replace
class A:
    pass
assert A == ['replaced']
");
}

#[test]
fn an_error_in_a_class_decorator_is_located() {
    let e = run(
        "3.11",
        "def bad(c):\n    return c.missing\n@bad\nclass A:\n    pass\n",
    )
    .expect_err("the decorator raises");
    let text = e.to_string();
    assert!(text.contains("AttributeError"), "{text}");
}

#[test]
fn dataclass_init_binds_fields_defaults_and_a_new_object_per_default_factory() {
    ok("import dataclasses
from dataclasses import dataclass, field
@dataclass
class Batch:
    x: int
    y: int = 2
    items: list = field(default_factory=list)
a = Batch(1)
b = Batch(1, 3, items=[1])
assert (a.x, a.y, a.items) == (1, 2, [])
assert (b.x, b.y, b.items) == (1, 3, [1])
c = Batch(1)
c.items.append(5)
assert a.items == [], 'each instance gets its own list'
assert Batch.y == 2
assert a == Batch(1) and a != b
assert [f.name for f in dataclasses.fields(a)] == ['x', 'y', 'items']
assert dataclasses.is_dataclass(Batch) and dataclasses.is_dataclass(a) and not dataclasses.is_dataclass(1)
@dataclasses.dataclass(eq=False)
class P:
    x: int
p = P(1)
assert p != P(1) and p == p
");
}

#[test]
fn dataclass_instances_keep_their_tensors_and_asdict_copies_them() {
    let t = ok("import torch, dataclasses
@dataclasses.dataclass
class Out:
    logits: torch.Tensor
    extra: list = dataclasses.field(default_factory=list)
o = Out(torch.empty(1024, 1024, device='cuda'))
del_me = torch.cuda.memory_allocated()
assert del_me == 4 * 1024 * 1024
d = dataclasses.asdict(o)
assert torch.cuda.memory_allocated() == 8 * 1024 * 1024, 'asdict deep-copies the tensor'
assert d['logits'] is not o.logits and d['extra'] == []
t = dataclasses.astuple(o)
assert torch.cuda.memory_allocated() == 12 * 1024 * 1024
del d, t
assert torch.cuda.memory_allocated() == 4 * 1024 * 1024
del o
assert torch.cuda.memory_allocated() == 0
");
    assert!(!t.events.is_empty());
}

#[test]
fn frozen_dataclasses_refuse_assignment_with_cpythons_error() {
    ok("import dataclasses
@dataclasses.dataclass(frozen=True)
class F:
    x: int
f = F(1)
try:
    f.x = 2
    raise AssertionError('assigned')
except dataclasses.FrozenInstanceError as e:
    assert str(e) == \"cannot assign to field 'x'\", str(e)
try:
    f.y = 2
    raise AssertionError('assigned')
except AttributeError as e:
    pass
assert f.x == 1
g = dataclasses.replace(f, x=5)
assert g.x == 5 and f.x == 1
");
}

#[test]
fn dataclass_errors_follow_cpython_per_version() {
    for (python, missing, order) in [
        (
            "3.9",
            "TypeError: __init__() missing 1 required positional argument: 'x'",
            "TypeError: non-default argument 'y' follows default argument",
        ),
        (
            "3.11",
            "TypeError: C.__init__() missing 1 required positional argument: 'x'",
            "TypeError: non-default argument 'y' follows default argument",
        ),
        (
            "3.13",
            "TypeError: C.__init__() missing 1 required positional argument: 'x'",
            "TypeError: non-default argument 'y' follows default argument 'x'",
        ),
    ] {
        let e = run(
            python,
            "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: int\nC()\n",
        )
        .expect_err("missing argument");
        assert!(e.to_string().contains(missing), "{python}: {e}");
        let e = run(
            python,
            "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: int = 0\n    y: int\n",
        )
        .expect_err("field order");
        assert!(e.to_string().contains(order), "{python}: {e}");
    }
    let e = run(
        "3.11",
        "import dataclasses\n@dataclasses.dataclass\nclass C:\n    x: list = []\n",
    )
    .expect_err("mutable default");
    assert!(
        e.to_string().contains("ValueError: mutable default <class 'list'> for field x is not allowed: use default_factory"),
        "{e}"
    );
    let e = run(
        "3.9",
        "import dataclasses\n@dataclasses.dataclass(kw_only=True)\nclass C:\n    x: int\n",
    )
    .expect_err("kw_only before 3.10");
    let text = e.to_string();
    assert!(
        text.contains("TypeError: dataclass() got an unexpected keyword argument 'kw_only'"),
        "{text}"
    );
    assert!(text.contains("t.yaml:"), "located: {text}");
}

#[test]
fn kw_only_fields_and_inherited_fields_bind_as_cpython_binds_them() {
    ok("import dataclasses
@dataclasses.dataclass
class Base:
    a: int
    b: int = 0
@dataclasses.dataclass
class Child(Base):
    c: int = 5
x = Child(1, 2, 3)
assert (x.a, x.b, x.c) == (1, 2, 3)
assert [f.name for f in dataclasses.fields(Child)] == ['a', 'b', 'c']
@dataclasses.dataclass(kw_only=True)
class K:
    a: int
    b: int = 1
k = K(a=3)
assert (k.a, k.b) == (3, 1)
try:
    K(3)
    raise AssertionError('positional accepted')
except TypeError:
    pass
");
}
