//! `gen.throw(e)` and exception chaining: from 3.9 the exception a generator was handling
//! when it suspended becomes `e.__context__` (bpo-29587; 3.8 leaves it unset), and the
//! caller's own handled exception is never chained to `e` by the throw. Checked on the
//! model and on every installed CPython 3.8 – 3.15 (expected values substituted per
//! version); the memory consequence (the caught error keeps the generator's handled
//! exception and what its arguments hold) on the model.

#[allow(dead_code)] // this file uses `run` and `interpreter`
mod probes;

use probes::interpreter;
use std::process::Command;

const CHAINING: &str = "
log = []
def handling():
    try:
        raise KeyError('a')
    except KeyError:
        yield 1
def plain():
    yield 1
it = handling()
next(it)
try:
    it.throw(ValueError('b'))
except ValueError as e:
    log.append(e.__context__ is None)
    if e.__context__ is not None:
        log.append(e.__context__.args[0])
p = plain()
next(p)
try:
    raise IndexError('caller')
except IndexError:
    try:
        p.throw(ValueError('c'))
    except ValueError as e:
        log.append(e.__context__ is None)
def fresh():
    yield 1
try:
    raise IndexError('caller2')
except IndexError:
    try:
        fresh().throw(ValueError('d'))
    except ValueError as e:
        log.append(e.__context__ is None)
assert log == EXPECTED, log
";

fn expected(minor: u8) -> &'static str {
    if minor >= 9 {
        "[False, 'a', True, True]"
    } else {
        "[True, True, True]"
    }
}

#[test]
fn a_thrown_exception_is_chained_to_the_generators_handled_exception_from_3_9() {
    for minor in [8u8, 9, 10, 11, 12, 13] {
        let script = CHAINING.replace("EXPECTED", expected(minor));
        if let Err(e) = probes::run(&format!("3.{minor}"), &script) {
            panic!("model on 3.{minor}: {e}");
        }
    }
    for minor in 8..=15u8 {
        let Some(python) = interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let script = CHAINING.replace("EXPECTED", expected(minor));
        let out = Command::new(&python)
            .args(["-c", &script])
            .output()
            .expect("runs python");
        assert!(
            out.status.success(),
            "CPython 3.{minor} disagrees: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// The generator's handled exception holds a tensor: on 3.8 it goes when the generator
/// finishes; from 3.9 the caught error's `__context__` keeps it until the handler ends.
#[test]
fn the_caught_error_keeps_the_generators_handled_exception_from_3_9() {
    let script = "
MB = 1024 * 1024
def handling():
    try:
        raise KeyError(torch.zeros(1024, 256, device='cuda'))
    except KeyError:
        yield 1
it = handling()
next(it)
try:
    it.throw(ValueError('b'))
except ValueError as e:
    assert torch.cuda.memory_allocated() == KEPT * MB, torch.cuda.memory_allocated()
assert torch.cuda.memory_allocated() == 0
";
    for (python, kept) in [("3.8", 0), ("3.10", 1), ("3.11", 1), ("3.12", 1)] {
        if let Err(e) = probes::run(python, &script.replace("KEPT", &kept.to_string())) {
            panic!("on {python}: {e}");
        }
    }
}
