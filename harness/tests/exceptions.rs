//! Exceptions in workloads: `try` / `except` / `else` / `finally`, `raise`, chaining,
//! tracebacks that keep frames and their locals, `sys.exc_info()`, `with` on user context
//! managers, and a caught `torch.OutOfMemoryError`. Behaviour is checked from inside the
//! workload with `assert`; the objects an exception creates are checked through the
//! modelled `gc.get_count()`, against counts measured with real CPython (and, where an
//! interpreter is installed, against that interpreter now).

mod probes;

use gpumem_harness::error::{Error, InputErrorKind};
use probes::{ok, run};

fn error_of(python: &str, workload: &str) -> Error {
    match run(python, workload) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, run by `~/.pyenv/versions/3.X*/bin/python`).
const PROBES: &[probes::Probe] = &[
    (
        "kept instance",
        "def probe():\n    keep.append(ValueError('x'))\n",
        1,
        1,
    ),
    (
        "raise and catch",
        "def probe():\n    try:\n        raise ValueError('x')\n    except ValueError as e:\n        pass\n",
        0,
        0,
    ),
    (
        "caught and kept",
        "def probe():\n    try:\n        raise ValueError('x')\n    except ValueError as e:\n        keep.append(e)\n",
        2,
        3,
    ),
    (
        "raised one call deeper",
        "def g():\n    raise ValueError('x')\ndef probe():\n    try:\n        g()\n    except ValueError as e:\n        keep.append(e)\n",
        3,
        5,
    ),
    (
        "raised two calls deeper",
        "def g():\n    raise ValueError('x')\ndef h():\n    g()\ndef probe():\n    try:\n        h()\n    except ValueError as e:\n        keep.append(e)\n",
        4,
        7,
    ),
    (
        "sys.exc_info() kept",
        "import sys\ndef probe():\n    try:\n        raise ValueError('x')\n    except ValueError:\n        keep.append(sys.exc_info())\n",
        2,
        3,
    ),
    (
        "traceback kept",
        "def probe():\n    try:\n        raise ValueError('x')\n    except ValueError as e:\n        keep.append(e.__traceback__)\n",
        1,
        2,
    ),
    (
        "raise x again",
        "def probe():\n    try:\n        try:\n            raise ValueError('a')\n        except ValueError as x:\n            raise x\n    except ValueError as e:\n        keep.append(e)\n",
        3,
        4,
    ),
    (
        "bare raise",
        "def probe():\n    try:\n        try:\n            raise ValueError('a')\n        except ValueError:\n            raise\n    except ValueError as e:\n        keep.append(e)\n",
        2,
        3,
    ),
    (
        "raise from",
        "def probe():\n    try:\n        raise KeyError('b') from ValueError('a')\n    except KeyError as e:\n        keep.append(e)\n",
        3,
        4,
    ),
    (
        "KeyError of a dict lookup",
        "def probe():\n    d = {}\n    try:\n        d['a']\n    except KeyError as e:\n        keep.append(e)\n",
        2,
        3,
    ),
];

#[test]
fn exception_objects_are_counted_as_cpython_counts_them() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

#[test]
fn try_except_else_finally_follow_python() {
    ok("
log = []
try:
    log.append('body')
except ValueError:
    log.append('handler')
else:
    log.append('else')
finally:
    log.append('finally')
assert log == ['body', 'else', 'finally'], log

log = []
try:
    raise KeyError('k')
except (ValueError, LookupError) as e:
    log.append('lookup')
    assert isinstance(e, KeyError)
    assert e.args == ('k',)
else:
    log.append('else')
assert log == ['lookup'], log

def unbound():
    try:
        raise ValueError('x')
    except ValueError as e:
        pass
    return e
try:
    unbound()
except NameError:
    pass
else:
    assert False, 'the as-name is deleted at the end of the handler'

def through_finally():
    for i in range(3):
        try:
            if i == 0:
                continue
            if i == 1:
                break
        finally:
            log.append(i)
    try:
        return 'try'
    finally:
        log.append('ran')
log = []
assert through_finally() == 'try'
assert log == [0, 1, 'ran'], log

def finally_wins():
    try:
        raise ValueError('lost')
    finally:
        return 'finally'
assert finally_wins() == 'finally'

class MyError(RuntimeError):
    def __init__(self, what, code):
        super().__init__(what)
        self.code = code
try:
    raise MyError('bad', 7)
except RuntimeError as e:
    assert e.code == 7 and e.args == ('bad',)
    assert str(e) == 'bad'
");
}

#[test]
fn model_errors_that_python_raises_are_catchable() {
    ok("
caught = []
try:
    {}['missing']
except KeyError:
    caught.append('key')
try:
    [1][5]
except IndexError:
    caught.append('index')
try:
    1 / 0
except ZeroDivisionError:
    caught.append('zero')
try:
    undefined_name
except NameError:
    caught.append('name')
try:
    assert False, 'm'
except AssertionError as e:
    assert e.args == ('m',)
    caught.append('assert')
assert caught == ['key', 'index', 'zero', 'name', 'assert'], caught
");
    // An unsupported construct is not an exception: it stops the run, located.
    let err = error_of("3.11", "try:\n    x = 1j\nexcept Exception:\n    pass\n");
    match &err {
        Error::Input { kind, location, .. } => {
            assert_eq!(*kind, InputErrorKind::Unsupported, "{err}");
            assert_eq!((location.line, location.column), (6, 11), "{err}");
        }
        other => panic!("{other}"),
    }
    // An uncaught exception ends the run with its type, message and place.
    let err = error_of("3.12", "def f():\n    raise ValueError('no luck')\nf()\n");
    let text = err.to_string();
    assert!(
        text.contains("ValueError: no luck") && text.contains("t.yaml:6:7"),
        "{text}"
    );
}

#[test]
fn chaining_sets_context_and_cause() {
    ok("
try:
    try:
        raise ValueError('a')
    except ValueError as a:
        raise KeyError('b')
except KeyError as b:
    assert isinstance(b.__context__, ValueError)
    assert b.__cause__ is None and not b.__suppress_context__
try:
    raise KeyError('b') from ValueError('a')
except KeyError as b:
    assert isinstance(b.__cause__, ValueError) and b.__suppress_context__
import sys
def inside():
    try:
        raise ValueError('x')
    except ValueError:
        t, v, tb = sys.exc_info()
        assert t is ValueError and isinstance(v, ValueError)
        assert tb.tb_frame is not None and tb.tb_next is None
    t, v, tb = sys.exc_info()
    assert t is None and v is None and tb is None
inside()
");
}

/// The classic leak: the caught exception's traceback keeps the frame, the frame its
/// locals, so the tensor outlives the call until the exception goes.
#[test]
fn a_stored_exception_keeps_the_frames_tensors_alive() {
    for python in ["3.10", "3.11", "3.12"] {
        run(
            python,
            "
saved = []
def step():
    activations = torch.zeros(1024, device='cuda')
    raise ValueError('bad batch')
def train():
    try:
        step()
    except ValueError as e:
        saved.append(e)
train()
assert torch.cuda.memory_allocated() == 4096
f = saved[0].__traceback__.tb_next.tb_frame
f.clear()
assert torch.cuda.memory_allocated() == 0
saved.clear()
def train_fixed():
    try:
        step()
    except ValueError as e:
        pass
train_fixed()
assert torch.cuda.memory_allocated() == 0
",
        )
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    }
}

/// `e` stored in a local of a frame on its own traceback is a cycle: freed only by the
/// collector (the reason for the implicit `del e`).
#[test]
fn an_exception_in_its_own_frame_is_a_cycle_the_collector_frees() {
    for python in ["3.10", "3.11", "3.12"] {
        run(
            python,
            "
gc.disable()
def step():
    x = torch.zeros(1024, device='cuda')
    try:
        raise ValueError('x')
    except ValueError as e:
        err = e
step()
assert torch.cuda.memory_allocated() == 4096
gc.collect()
assert torch.cuda.memory_allocated() == 0
",
        )
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    }
}

#[test]
fn a_caught_out_of_memory_error_lets_the_run_continue() {
    let timeline = ok("
keep = []
failures = 0
for i in range(8):
    try:
        keep.append(torch.zeros(2**26, device='cuda'))
    except torch.OutOfMemoryError as e:
        failures += 1
        assert isinstance(e, RuntimeError)
        assert str(e).startswith('CUDA out of memory. Tried to allocate 256.00 MiB.')
        assert 'PYTORCH_CUDA_ALLOC_CONF' in str(e)
        keep.clear()
assert failures == 1, failures
try:
    torch.zeros(2**30, device='cuda')
except torch.cuda.OutOfMemoryError:
    pass
");
    assert!(timeline.oom.is_none(), "a caught OOM is not the outcome");
    // Uncaught (even after passing handlers that do not match) it is the outcome.
    let timeline = run(
        "3.11",
        "keep = []\nfor i in range(100):\n    try:\n        keep.append(torch.zeros(2**26, device='cuda'))\n    except KeyError:\n        pass\n",
    )
    .expect("an OOM is an outcome");
    let oom = timeline.oom.as_ref().expect("out of memory");
    assert_eq!(oom.iteration, Some(4));
}

#[test]
fn with_calls_enter_and_exit_and_may_suppress() {
    ok("
log = []
class Manager:
    def __init__(self, suppress):
        self.suppress = suppress
    def __enter__(self):
        log.append('enter')
        return self
    def __exit__(self, kind, value, tb):
        log.append((kind, value is None, tb is None))
        return self.suppress
with Manager(False) as m:
    assert m.suppress is False
assert log == ['enter', (None, True, True)], log
log = []
with Manager(True):
    raise ValueError('swallowed')
assert log[0] == 'enter' and log[1] == (ValueError, False, False), log
try:
    with Manager(False):
        raise KeyError('k')
except KeyError:
    log.append('propagated')
assert log[-1] == 'propagated', log
");
}
