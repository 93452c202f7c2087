//! `with` in plain function bodies and the module body runs on the VM (`vm/with_blocks.rs`,
//! compiled by `compile.rs`'s `with_items` as generator bodies are): `__enter__`/`__exit__`
//! with the exception's details, suppression by a true `__exit__` result, `return`,
//! `break` and `continue` out of a `with` (the exit called with `None` x3), `with a, b`,
//! `with` inside `try` and `try` inside `with`, an exit that raises; and the objects a
//! `with` creates and frees, against every installed CPython 3.8 – 3.13.

mod probes;

/// Each way into and out of a `with` block, checked by the script itself on the model and
/// on every installed CPython.
#[test]
fn ways_out_of_with_blocks_run_as_cpython_runs_them() {
    probes::agrees_with_cpython(
        "",
        13,
        r#"
import sys
log = []

class M:
    def __init__(self, name, suppress=False):
        self.name = name
        self.suppress = suppress
    def __enter__(self):
        log.append(('enter', self.name))
        return self.name
    def __exit__(self, t, v, tb):
        log.append(('exit', self.name, t.__name__ if t else None, str(v) if v else None, tb is not None))
        return self.suppress

def plain():
    with M('a') as x:
        log.append(x)
    return 'done'
assert plain() == 'done'
assert log == [('enter', 'a'), 'a', ('exit', 'a', None, None, False)], log
log.clear()

def suppressed():
    with M('s', True):
        raise ValueError('boom')
    return 'after'
assert suppressed() == 'after'
assert log == [('enter', 's'), ('exit', 's', 'ValueError', 'boom', True)], log
assert sys.exc_info()[0] is None
log.clear()

def not_suppressed():
    try:
        with M('n'):
            raise KeyError('k')
    except KeyError as e:
        log.append(('caught', type(e).__name__))
        return 1
assert not_suppressed() == 1
assert log == [('enter', 'n'), ('exit', 'n', 'KeyError', "'k'", True), ('caught', 'KeyError')], log
log.clear()

def ret_out():
    with M('r'):
        return 'r'
    log.append('never')
assert ret_out() == 'r'
assert log == [('enter', 'r'), ('exit', 'r', None, None, False)], log
log.clear()

def loop_out():
    out = []
    for i in range(4):
        with M(i):
            if i == 1:
                continue
            if i == 2:
                break
            out.append(i)
    return out
assert loop_out() == [0], loop_out()
assert log == [('enter', 0), ('exit', 0, None, None, False), ('enter', 1), ('exit', 1, None, None, False), ('enter', 2), ('exit', 2, None, None, False)], log
log.clear()

def nested():
    with M('a') as a, M('b', True) as b:
        log.append((a, b))
        raise ValueError('in')
    return 'ok'
assert nested() == 'ok'
assert log == [('enter', 'a'), ('enter', 'b'), ('a', 'b'), ('exit', 'b', 'ValueError', 'in', True), ('exit', 'a', None, None, False)], log
log.clear()

def nested_outer_suppresses():
    with M('a', True), M('b'):
        raise ValueError('in')
    return 'ok'
assert nested_outer_suppresses() == 'ok'
assert log == [('enter', 'a'), ('enter', 'b'), ('exit', 'b', 'ValueError', 'in', True), ('exit', 'a', 'ValueError', 'in', True)], log
log.clear()

def try_in_with():
    with M('w'):
        try:
            raise ValueError('x')
        except ValueError:
            log.append('handled')
        finally:
            log.append('fin')
    return 'ok'
assert try_in_with() == 'ok'
assert log == [('enter', 'w'), 'handled', 'fin', ('exit', 'w', None, None, False)], log
log.clear()

def with_in_try_finally():
    try:
        with M('w'):
            return 'from with'
    finally:
        log.append('fin')
assert with_in_try_finally() == 'from with'
assert log == [('enter', 'w'), ('exit', 'w', None, None, False), 'fin'], log
log.clear()

def finally_overrides():
    for i in range(3):
        try:
            with M(i):
                return i
        finally:
            if i == 0:
                continue
    return 'loop'
assert finally_overrides() == 1, finally_overrides()
log.clear()

class Raises:
    def __enter__(self):
        return self
    def __exit__(self, t, v, tb):
        raise RuntimeError('from exit')

def exit_raises():
    try:
        with Raises():
            raise ValueError('body')
    except RuntimeError as e:
        return (str(e), type(e.__context__).__name__)
assert exit_raises() == ('from exit', 'ValueError'), exit_raises()

def exit_raises_normal():
    try:
        with Raises():
            return 'body'
    except RuntimeError as e:
        return str(e)
assert exit_raises_normal() == 'from exit'

def exc_info_in_exit():
    seen = []
    class E:
        def __enter__(self):
            return self
        def __exit__(self, t, v, tb):
            seen.append(sys.exc_info()[0].__name__ if sys.exc_info()[0] else None)
            return True
    with E():
        raise IndexError('i')
    with E():
        pass
    return seen
r = exc_info_in_exit()
assert r[1] is None, r

def in_except():
    try:
        raise KeyError('outer')
    except KeyError:
        with M('e', True):
            raise ValueError('inner')
        return sys.exc_info()[0].__name__
assert in_except() == 'KeyError'
log.clear()

with M('module'):
    x = 1
assert log == [('enter', 'module'), ('exit', 'module', None, None, False)]
log.clear()
for k in range(3):
    with M(k):
        if k == 1:
            break
assert log == [('enter', 0), ('exit', 0, None, None, False), ('enter', 1), ('exit', 1, None, None, False)]
"#,
    );
}

/// The managers the probes use.
macro_rules! managers {
    () => {
        "class M:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, v, tb):\n        return False\nclass S:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, v, tb):\n        return True\nclass K:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, v, tb):\n        keep.append(v)\n        return True\nclass X:\n    def __enter__(self):\n        return self\n    def __exit__(self, t, v, tb):\n        raise KeyError('exit')\nm = M()\ns = S()\n"
    };
}

/// (name, probe, objects counted on <= 3.10, on >= 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, `~/.pyenv/versions/3.X*/bin/python`). A
/// suppressed exception frees all it created; one an `__exit__` keeps holds its traceback
/// (and, on <= 3.10, the frame); an exit that raises keeps the body's exception as its
/// `__context__`.
const PROBES: &[probes::Probe] = &[
    (
        "with exits normally",
        concat!(managers!(), "def probe():\n    with m:\n        pass\n"),
        0,
        0,
    ),
    (
        "with suppresses the exception",
        concat!(
            managers!(),
            "def probe():\n    with s:\n        raise ValueError('x')\n"
        ),
        0,
        0,
    ),
    (
        "exit keeps the exception",
        concat!(
            managers!(),
            "def probe():\n    with K():\n        raise ValueError('x')\n"
        ),
        2,
        3,
    ),
    (
        "return out of with",
        concat!(
            managers!(),
            "def f():\n    with m:\n        return [1]\ndef probe():\n    keep.append(f())\n"
        ),
        0,
        0,
    ),
    (
        "with in try, caught",
        concat!(
            managers!(),
            "def probe():\n    try:\n        with m:\n            raise ValueError('x')\n    except ValueError as e:\n        keep.append(e)\n"
        ),
        2,
        3,
    ),
    (
        "exit raises, caught",
        concat!(
            managers!(),
            "def probe():\n    try:\n        with X():\n            raise ValueError('x')\n    except KeyError as e:\n        keep.append(e)\n"
        ),
        6,
        8,
    ),
    (
        "with a, b entered value kept",
        concat!(
            managers!(),
            "def probe():\n    with M() as a, M() as b:\n        keep.append(b)\n"
        ),
        1,
        1,
    ),
    (
        "break out of with in a loop",
        concat!(
            managers!(),
            "def probe():\n    for i in range(3):\n        with m:\n            if i == 1:\n                break\n"
        ),
        0,
        0,
    ),
];

#[test]
fn model_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
