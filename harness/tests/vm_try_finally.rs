//! `try` / `except` / `else` / `finally` and `raise` in plain function bodies and the
//! module body run on the VM (`vm/compile_try.rs`, `vm/plain_try.rs`): `return`, `break`
//! and `continue` through `finally` and out of `except` clauses as CPython runs them, the
//! stack of handled exceptions (`sys.exc_info()`, bare `raise`, `__context__`), and the
//! objects an exception creates and frees, against every installed CPython 3.8 – 3.13.

mod probes;

/// Each way out of each block, checked by the script itself on the model and on every
/// installed CPython.
#[test]
fn ways_out_of_try_blocks_run_as_cpython_runs_them() {
    probes::agrees_with_cpython(
        "",
        13,
        r#"
import sys
log = []

def ret_in_finally_overrides():
    try:
        return 'try'
    finally:
        log.append('fin')
        return 'finally'
assert ret_in_finally_overrides() == 'finally'
assert log == ['fin'], log

def ret_in_finally_swallows():
    try:
        raise ValueError('lost')
    finally:
        return 'swallowed'
assert ret_in_finally_swallows() == 'swallowed'
assert sys.exc_info()[0] is None

def break_in_finally():
    out = []
    for i in range(3):
        try:
            out.append(i)
            raise KeyError(i)
        finally:
            out.append('f')
            break
    out.append('after')
    return out
assert break_in_finally() == [0, 'f', 'after'], break_in_finally()

def continue_in_finally():
    out = []
    for i in range(3):
        try:
            if i == 1:
                raise KeyError(i)
            out.append(i)
        finally:
            out.append('f')
            continue
    return out
assert continue_in_finally() == [0, 'f', 'f', 2, 'f'], continue_in_finally()

def return_through_finally_in_loop():
    out = []
    for i in range(5):
        try:
            try:
                if i == 2:
                    return out
            finally:
                out.append(('inner', i))
        finally:
            out.append(('outer', i))
    return None
assert return_through_finally_in_loop() == [('inner', 0), ('outer', 0), ('inner', 1), ('outer', 1), ('inner', 2), ('outer', 2)]

def break_continue_through_finally():
    out = []
    i = 0
    while True:
        i += 1
        try:
            if i == 2:
                continue
            if i == 4:
                break
            out.append(i)
        finally:
            out.append('f%d' % i)
    else:
        out.append('never')
    return out
assert break_continue_through_finally() == [1, 'f1', 'f2', 3, 'f3', 'f4'], break_continue_through_finally()

def else_and_finally(fail):
    out = []
    try:
        if fail:
            raise ValueError('v')
        out.append('body')
    except ValueError as e:
        out.append('except ' + str(e))
    else:
        out.append('else')
    finally:
        out.append('finally')
    return out
assert else_and_finally(False) == ['body', 'else', 'finally']
assert else_and_finally(True) == ['except v', 'finally']

def name_is_deleted():
    try:
        raise ValueError('x')
    except ValueError as e:
        pass
    try:
        e
    except NameError:
        return 'deleted'
    return 'kept'
assert name_is_deleted() == 'deleted'

def clauses_in_order(exc):
    try:
        raise exc
    except KeyError:
        return 'key'
    except (IndexError, ValueError) as e:
        return 'tuple ' + type(e).__name__
    except Exception:
        return 'any'
assert clauses_in_order(KeyError('k')) == 'key'
assert clauses_in_order(ValueError) == 'tuple ValueError'
assert clauses_in_order(TypeError) == 'any'

def unmatched_goes_on():
    try:
        try:
            raise TypeError('t')
        except ValueError:
            return 'wrong'
        finally:
            log.append('inner finally')
    except TypeError as e:
        return str(e)
log.clear()
assert unmatched_goes_on() == 't'
assert log == ['inner finally'], log

def nested_in_except_keeps_outer():
    try:
        raise KeyError('outer')
    except KeyError:
        try:
            raise ValueError('inner')
        except ValueError:
            assert sys.exc_info()[0] is ValueError
        assert sys.exc_info()[0] is KeyError
        try:
            raise
        except KeyError as k:
            return k.args[0]
assert nested_in_except_keeps_outer() == 'outer'

def chained():
    try:
        try:
            raise KeyError('a')
        except KeyError:
            raise ValueError('b')
    except ValueError as e:
        return type(e.__context__).__name__, e.__cause__, e.__suppress_context__
assert chained() == ('KeyError', None, False), chained()

def raise_from():
    try:
        try:
            raise KeyError('a')
        except KeyError as k:
            raise ValueError('b') from k
    except ValueError as e:
        return type(e.__cause__).__name__, e.__suppress_context__
assert raise_from() == ('KeyError', True)

def raise_from_none():
    try:
        try:
            raise KeyError('a')
        except KeyError:
            raise ValueError('b') from None
    except ValueError as e:
        return e.__cause__, e.__suppress_context__, type(e.__context__).__name__
assert raise_from_none() == (None, True, 'KeyError')

def finally_sees_exception():
    try:
        try:
            raise KeyError('k')
        finally:
            log.append(sys.exc_info()[0].__name__)
    except KeyError:
        pass
    return sys.exc_info()[0]
log.clear()
assert finally_sees_exception() is None
assert log == ['KeyError'], log

def return_in_except():
    for i in range(3):
        try:
            raise ValueError(i)
        except ValueError as e:
            if i == 1:
                return i, sys.exc_info()[0]
    return None
assert return_in_except() == (1, ValueError)
assert sys.exc_info()[0] is None

def break_in_except():
    for i in range(3):
        try:
            raise ValueError(i)
        except ValueError:
            break
    return i, sys.exc_info()[0]
assert break_in_except() == (0, None)

def finally_return_value_first():
    order = []
    def value():
        order.append('value')
        return 1
    try:
        return value()
    finally:
        order.append('finally')
        log.append(order)
log.clear()
assert finally_return_value_first() == 1
assert log == [['value', 'finally']], log

def raise_in_finally_replaces():
    try:
        try:
            raise KeyError('k')
        finally:
            raise ValueError('v')
    except ValueError as e:
        return type(e.__context__).__name__
assert raise_in_finally_replaces() == 'KeyError'

total = 0
for i in range(4):
    try:
        if i == 3:
            break
        if i % 2:
            raise ValueError
        total += 10
    except ValueError:
        total += 1
        continue
    finally:
        total += 100
assert total == 421, total
"#,
    );
}

/// (name, probe, objects counted on <= 3.10, on >= 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, `~/.pyenv/versions/3.X*/bin/python`). A
/// swallowed exception frees all it created; an outer exception stays handled (and kept)
/// past a `try` inside its clause; the inner one keeps it as `__context__`.
const PROBES: &[probes::Probe] = &[
    (
        "return in finally drops the exception",
        "def f():\n    try:\n        raise ValueError('x')\n    finally:\n        return 1\ndef probe():\n    f()\n",
        0,
        0,
    ),
    (
        "break in finally drops the exception",
        "def probe():\n    for i in range(2):\n        try:\n            raise ValueError('x')\n        finally:\n            break\n",
        0,
        0,
    ),
    (
        "outer exception kept past a nested try",
        "def probe():\n    try:\n        raise KeyError('a')\n    except KeyError as k:\n        try:\n            raise ValueError('b')\n        except ValueError:\n            pass\n        keep.append(k)\n",
        2,
        3,
    ),
    (
        "inner exception kept with its context",
        "def probe():\n    try:\n        raise KeyError('a')\n    except KeyError:\n        try:\n            raise ValueError('b')\n        except ValueError as v:\n            keep.append(v)\n",
        4,
        5,
    ),
    (
        "returned from an except clause",
        "def f():\n    try:\n        raise ValueError('x')\n    except ValueError as e:\n        return e\ndef probe():\n    keep.append(f())\n",
        2,
        4,
    ),
    (
        "re-raised by finally, caught by the caller",
        "def f():\n    try:\n        raise ValueError('x')\n    finally:\n        pass\ndef probe():\n    try:\n        f()\n    except ValueError as e:\n        keep.append(e)\n",
        3,
        5,
    ),
    (
        "return through finally in a loop",
        "def f():\n    for i in range(3):\n        try:\n            return [i]\n        finally:\n            pass\ndef probe():\n    keep.append(f())\n",
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

/// Generator frames keep a stack of handled exceptions too: a `try` inside an `except`
/// clause around a `yield` hands the outer exception back when it ends (`sys.exc_info()`,
/// bare `raise`, `__context__`), as CPython's `PUSH_EXC_INFO`/`POP_EXCEPT` do.
#[test]
fn a_generator_keeps_the_outer_exception_past_a_nested_try() {
    probes::agrees_with_cpython(
        "",
        13,
        r#"
import sys
def gen():
    try:
        raise KeyError('outer')
    except KeyError:
        try:
            yield 1
            raise ValueError('inner')
        except ValueError:
            assert sys.exc_info()[0] is ValueError
            yield 2
        assert sys.exc_info()[0] is KeyError, sys.exc_info()
        yield 3
        try:
            raise
        except KeyError as k:
            yield k.args[0]
    yield sys.exc_info()[0]
assert list(gen()) == [1, 2, 3, 'outer', None]
assert sys.exc_info()[0] is None

def gen2():
    try:
        raise KeyError('a')
    except KeyError:
        try:
            yield 1
            raise ValueError('v')
        except ValueError as v:
            yield type(v.__context__).__name__
        yield sys.exc_info()[0].__name__
assert list(gen2()) == [1, 'KeyError', 'KeyError'], list(gen2())

def gen3():
    seen = []
    try:
        try:
            raise KeyError('a')
        except KeyError:
            try:
                yield 1
                raise ValueError('v')
            finally:
                seen.append(sys.exc_info()[0].__name__)
    except ValueError as e:
        yield type(e.__context__).__name__
    yield seen
    yield sys.exc_info()[0]
assert list(gen3()) == [1, 'KeyError', ['ValueError'], None], list(gen3())
"#,
    );
}
