//! `import traceback`: formatting a caught exception (text only, nothing printed) and
//! `traceback.clear_frames(tb)`, which drops the locals of the returned frames a kept
//! exception's traceback holds, so they stop pinning tensors. Checked on the model and,
//! where installed, against real CPython with weakref-able plain objects.

#[allow(dead_code)] // the shared probe helpers; this file uses a few
mod probes;

use probes::{agrees_with_cpython, run};

/// The leak and its fix: a kept exception pins the failing frame's tensor until
/// `clear_frames` clears that frame; the handler's own frame (still running when called
/// inside the handler) is skipped, as CPython ignores its `RuntimeError`, and keeps its
/// locals once it returns.
#[test]
fn clear_frames_frees_the_tensors_a_kept_exception_pins() {
    for python in ["3.10", "3.11", "3.12", "3.13"] {
        run(
            python,
            "
import traceback
saved = []
def step():
    activations = torch.zeros(1024, device='cuda')
    raise ValueError('bad batch')
def train():
    batch = torch.zeros(256, device='cuda')
    try:
        step()
    except ValueError as e:
        saved.append(e)
        traceback.clear_frames(e.__traceback__)
        assert torch.cuda.memory_allocated() == 1024
        assert batch is not None
train()
# `train` has returned since: its frame (on the traceback) keeps `batch`.
assert torch.cuda.memory_allocated() == 1024
saved.clear()
assert torch.cuda.memory_allocated() == 0
def train_kept():
    batch = torch.zeros(256, device='cuda')
    try:
        step()
    except ValueError as e:
        saved.append(e)
train_kept()
assert torch.cuda.memory_allocated() == 4096 + 1024
traceback.clear_frames(saved[0].__traceback__)
assert torch.cuda.memory_allocated() == 0
assert traceback.clear_frames(None) is None
",
        )
        .unwrap_or_else(|e| panic!("{python}: {e}"));
    }
}

/// The same with plain objects and weak references, on the model and on CPython 3.8 – 3.13.
#[test]
fn clear_frames_agrees_with_cpython() {
    agrees_with_cpython(
        "",
        13,
        "
import traceback, weakref
class Obj:
    pass
saved = []
refs = []
def step():
    big = Obj()
    refs.append(weakref.ref(big))
    raise ValueError('bad')
def outer():
    mine = Obj()
    refs.append(weakref.ref(mine))
    step()
def train():
    try:
        outer()
    except ValueError as e:
        saved.append(e)
        traceback.clear_frames(e.__traceback__)
        assert refs[0]() is None and refs[1]() is None
train()
refs.clear()
saved.clear()
def train_kept():
    try:
        outer()
    except ValueError as e:
        saved.append(e)
train_kept()
assert refs[0]() is not None and refs[1]() is not None
traceback.clear_frames(saved[0].__traceback__)
assert refs[0]() is None and refs[1]() is None
f = saved[0].__traceback__.tb_next.tb_frame
f.clear()
",
    );
}

#[test]
fn formatting_returns_text_and_prints_nothing() {
    agrees_with_cpython(
        "",
        13,
        "
import traceback
assert traceback.format_exc() == 'NoneType: None\\n'
def fail():
    raise ValueError('bad batch')
try:
    fail()
except ValueError as e:
    text = traceback.format_exc()
    assert text.startswith('Traceback (most recent call last):')
    assert text.endswith('ValueError: bad batch\\n'), text
    assert 'in fail' in text
    assert traceback.print_exc() is None
    lines = traceback.format_exception(type(e), e, e.__traceback__)
    assert isinstance(lines, list) and lines[-1] == 'ValueError: bad batch\\n', lines
    assert lines[0] == 'Traceback (most recent call last):\\n'
    assert traceback.print_exception(type(e), e, e.__traceback__) is None
",
    );
}

#[test]
fn format_exception_takes_the_exception_alone_from_3_10() {
    let script = "
import traceback
try:
    raise KeyError('k')
except KeyError as e:
    assert traceback.format_exception(e)[-1] == \"KeyError: 'k'\\n\"
";
    run("3.10", script).expect("3.10 takes format_exception(exc)");
    run("3.12", script).expect("3.12 takes format_exception(exc)");
    let err = run("3.9", script).expect_err("3.9 needs (etype, value, tb)");
    assert!(
        err.to_string().contains("TypeError: format_exception()"),
        "{err}"
    );
}

/// `PRELUDE` + probe + `MEASURE`: the failing frame keeps an instance; `clear` picks
/// whether the kept exception's frames are then cleared.
fn counting_probe(clear: bool) -> String {
    let clear = if clear {
        "    traceback.clear_frames(keep[-1].__traceback__)\n"
    } else {
        ""
    };
    format!(
        "{}import traceback\nclass Obj:\n    pass\ndef g():\n    x = Obj()\n    raise ValueError('x')\n\
         def probe():\n    try:\n        g()\n    except ValueError as e:\n        keep.append(e)\n{clear}{}",
        probes::PRELUDE,
        probes::MEASURE
    )
}

/// Objects counted by the third call (kept, cleared), measured with CPython 3.8.18 – 3.13.0
/// (`counting_probe` + `print(d)`): clearing frees the failing frame's instance (one
/// counted object) and creates none.
fn measured_counts(minor: u8) -> (i64, i64) {
    match minor {
        ..=10 => (4, 3),
        11 | 12 => (7, 6),
        _ => (6, 5),
    }
}

#[test]
fn clear_frames_frees_one_counted_object_and_creates_none() {
    for minor in [9u8, 10, 11, 12, 13] {
        let (kept, cleared) = measured_counts(minor);
        // Known gap, not of `clear_frames`: on 3.11 – 3.12 the model counts one object
        // fewer than CPython for the kept exception itself (both with and without clearing).
        let gap = i64::from(matches!(minor, 11 | 12));
        for (clear, expected) in [(false, kept - gap), (true, cleared - gap)] {
            let workload = format!("{}assert d == {expected}, d\n", counting_probe(clear));
            run(&format!("3.{minor}"), &workload)
                .unwrap_or_else(|e| panic!("3.{minor}, clear={clear}: {e}"));
        }
    }
    for minor in 8..=13u8 {
        let Some(python) = probes::interpreter(minor) else {
            eprintln!("skipped: CPython 3.{minor} is not installed");
            continue;
        };
        let (kept, cleared) = measured_counts(minor);
        for (clear, expected) in [(false, kept), (true, cleared)] {
            let out = std::process::Command::new(&python)
                .args(["-c", &format!("{}print(d)\n", counting_probe(clear))])
                .output()
                .expect("runs python");
            let real = String::from_utf8_lossy(&out.stdout).trim().to_string();
            assert_eq!(
                real,
                expected.to_string(),
                "CPython 3.{minor}, clear={clear}"
            );
        }
    }
}

/// A keyword `traceback` does not take is an error, not silently ignored.
#[test]
fn unknown_keywords_are_refused() {
    let err = run(
        "3.11",
        "import traceback\ntry:\n    raise ValueError('x')\nexcept ValueError:\n    traceback.print_exc(colour=True)\n",
    )
    .expect_err("unknown keyword");
    assert!(err.to_string().contains("colour"), "{err}");
    run(
        "3.11",
        "import traceback\ntry:\n    raise ValueError('x')\nexcept ValueError:\n    traceback.print_exc(limit=1, file=None)\n",
    )
    .expect("limit and file are accepted");
}
