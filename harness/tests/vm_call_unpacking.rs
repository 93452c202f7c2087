//! Calls with `*`/`**` arguments run compiled (`vm/compile_call_ex.rs`): a script using
//! only them leaves the tree-fallback count at 0; values, the order operands are evaluated
//! and released, the error messages and the objects CPython makes for the call (gen-0
//! counts) are checked against every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `interpreter` and `run`
mod probes;

const FORMS: &str = "
def check(ok, what):
    if not ok:
        raise AssertionError(what)
def f(*args, **kw):
    return (args, kw)
def h(a, b=2, *rest, k=0, **kw):
    return a + b + k + len(rest) + len(kw)
class C:
    def m(self, *args, **kw):
        return len(args) * 10 + len(kw)
def run(n):
    a = [1, 2]
    kw = {'x': 1}
    o = C()
    i = 0
    while i < n:
        r1 = f(*a, i, *range(2), k=1, **kw)
        r2 = h(*(5,), **{'k': 3})
        r3 = o.m(*a, **kw)
        r4 = f(**kw, y=2)
        r5 = f(*a)
        i = i + 1
    check(r1 == ((1, 2, 2, 0, 1), {'k': 1, 'x': 1}), 'f star')
    check(r2 == 10, 'h')
    check(r3 == 21, 'method')
    check(r4 == ((), {'x': 1, 'y': 2}), 'kw order')
    check(r5 == ((1, 2), {}), 'lone star')
run(3)
";

#[test]
fn the_forms_run_compiled_and_agree_with_cpython() {
    let _serial = probes::serial();
    assert!(probes::runs_compiled(FORMS) >= 20);
    probes::agrees_with_cpython("", 13, FORMS);
}

/// Callee first, then the operands left to right, each `*x` read to its end (a generator
/// runs there) before the next operand; when the call returns the argument tuple releases
/// its items last first, then the keyword dict. 3.9+ only: 3.8 reads every `*` operand
/// after the last one (`BUILD_TUPLE_UNPACK_WITH_CALL`), which the model does not follow.
#[test]
fn operands_are_read_and_released_in_cpythons_order() {
    let _serial = probes::serial();
    probes::agrees_with_cpython(
        "import sys\nif sys.version_info < (3, 9):\n    sys.exit(0)\n",
        13,
        "
log = []
class T:
    def __init__(self, name):
        self.name = name
        log.append('new ' + name)
    def __del__(self):
        log.append('del ' + self.name)
def mark(name, value):
    log.append(name)
    return value
def gen():
    log.append('gen')
    yield 1
def callee(*args, **kw):
    log.append('call')
def body():
    mark('f', callee)(T('a'), *gen(), *mark('l', [T('b')]), k=T('c'), **mark('kw', {'z': 1}))
    assert log == ['f', 'new a', 'gen', 'new b', 'l', 'new c', 'kw', 'call',
                   'del b', 'del a', 'del c'], log
body()
",
    );
}

/// The errors name the callee as each version does; an error drops what was gathered.
#[test]
fn errors_are_cpythons() {
    let _serial = probes::serial();
    probes::agrees_with_cpython(
        "",
        13,
        "
import sys
new = sys.version_info >= (3, 9)
log = []
class T:
    def __del__(self):
        log.append('del')
def h(a=0, x=0):
    return a
class O:
    def m(self, x=0):
        return x
def star_int():
    h(T(), *5)
def lone_star():
    h(*5, x=T())
def splat_int():
    h(**5)
def splat_list():
    h(**[1])
def twice_before():
    h(x=1, **{'x': 1})
def twice_after():
    h(**{'x': 1}, x=2)
def twice_splat():
    d = {'x': 1}
    h(**d, **d)
def method_star():
    O().m(*5)
def not_strings():
    h(**{1: 2})
def message(thunk):
    try:
        thunk()
    except TypeError as e:
        return str(e)
    return None
def body():
    assert message(star_int) == ('Value' if new else 'h() argument') + ' after * must be an iterable, not int'
    assert log == ['del'], log
    assert message(lone_star) == ('__main__.h' if new else 'h') + '() argument after * must be an iterable, not int'
    # Up to 3.11 the keyword dict of this call is never released (CPython's leak).
    assert log == (['del', 'del'] if sys.version_info >= (3, 12) else ['del']), log
    assert message(splat_int) == ('__main__.h' if new else 'h') + '() argument after ** must be a mapping, not int'
    assert message(splat_list).endswith('argument after ** must be a mapping, not list')
    assert message(twice_before) == ('__main__.h' if new else 'h') + \"() got multiple values for keyword argument 'x'\"
    assert message(twice_after).endswith(\"() got multiple values for keyword argument 'x'\")
    assert message(twice_splat).endswith(\"() got multiple values for keyword argument 'x'\")
    assert message(method_star) == ('__main__.O.m' if new else 'm') + '() argument after * must be an iterable, not int'
    assert message(not_strings) == ('' if new else 'h() ') + 'keywords must be strings'
body()
",
    );
}

const COUNTS: &str = r#"def h(a=0, b=0, c=0, d=0, x=0, y=0):
    return None
def g(*a, **k):
    return None
class O:
    def m(self, a=0, b=0, c=0, x=0):
        return None
o = O()
t = (1, 2)
l = [1, 2]
d = {'x': 1}
e = {'y': 2}
def c1():
    h(*t)
def c2():
    h(*l)
def c3():
    h(1, *t)
def c4():
    h(*t, *t)
def c5():
    h(**d)
def c6():
    h(y=1, **d)
def c7():
    h(**d, y=1)
def c8():
    h(**d, **e)
def c9():
    h(*t, **d)
def c10():
    o.m(*t)
def c11():
    o.m(**d)
def c12():
    g(*t)
def c13():
    g(**d)
def c14():
    h(*t, x=1)
def c15():
    h(1, y=1, **d)
def c16():
    h(*[1, 2])
out = []
for make in (c1, c2, c3, c4, c5, c6, c7, c8, c9, c10, c11, c12, c13, c14, c15, c16):
    make()
    make()
    gc.collect()
    gc.get_count()
    b = gc.get_count()[0]
    make()
    out.append(gc.get_count()[0] - b)
"#;

/// The objects a call site makes, measured with `gc.get_count()` after `gc.collect()`
/// (free lists empty) on CPython 3.8.18 – 3.13.0, in the order of `COUNTS`' calls.
fn measured(minor: u8) -> Vec<u64> {
    if minor <= 8 {
        vec![0, 1, 1, 2, 1, 3, 3, 2, 1, 1, 2, 2, 2, 2, 3, 2]
    } else {
        vec![0, 1, 1, 2, 2, 2, 3, 2, 2, 0, 2, 2, 3, 2, 2, 2]
    }
}

#[test]
fn call_sites_count_cpythons_objects() {
    let _serial = probes::serial();
    for minor in 8..=13u8 {
        let expected = measured(minor);
        let workload = format!("import gc\n{COUNTS}assert out == {expected:?}, out\n");
        if let Err(e) = probes::run(&format!("3.{minor}"), &workload) {
            panic!("model 3.{minor}: {e}");
        }
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let out = std::process::Command::new(&python)
            .args(["-c", &workload])
            .output()
            .expect("runs python");
        assert!(
            out.status.success(),
            "CPython 3.{minor}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
