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
