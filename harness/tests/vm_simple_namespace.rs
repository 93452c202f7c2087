//! `types.SimpleNamespace` (`python/simple_namespace.rs`): keywords become attributes kept in
//! the namespace's own dict (read, stored, deleted, `vars()`, `__dict__`), `==` compares the
//! dicts, `repr`, unhashable, GC-tracked (a namespace holding itself is freed by the
//! collector with the tensors it holds), and the objects a call makes, against CPython.

mod common;
#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and `interpreter`
mod probes;

/// Checked on the model (3.10 – 3.12) and on every installed CPython 3.8 – 3.15.
const SCRIPT: &str = "
import types
from types import SimpleNamespace
cfg = SimpleNamespace(lr=0.1, steps=[1, 2])
assert cfg.lr == 0.1 and cfg.steps == [1, 2]
cfg.lr = 0.2
cfg.name = 'run'
assert vars(cfg) == {'lr': 0.2, 'steps': [1, 2], 'name': 'run'}
assert cfg.__dict__ is vars(cfg)
vars(cfg)['extra'] = 3
assert cfg.extra == 3
del cfg.extra
assert not hasattr(cfg, 'extra') and getattr(cfg, 'extra', 7) == 7
try:
    cfg.missing
    raise AssertionError('read a missing attribute')
except AttributeError as e:
    assert str(e) == \"'types.SimpleNamespace' object has no attribute 'missing'\", str(e)
assert SimpleNamespace(a=1, b=2) == SimpleNamespace(b=2, a=1)
assert SimpleNamespace(a=1) != SimpleNamespace(a=2) and SimpleNamespace() != 1
assert repr(SimpleNamespace(a=1, b=[2], c='x')) == \"namespace(a=1, b=[2], c='x')\"
assert repr(SimpleNamespace()) == 'namespace()'
loop = SimpleNamespace(a=1)
loop.me = loop
assert repr(loop) == 'namespace(a=1, me=namespace(...))', repr(loop)
assert type(cfg) is types.SimpleNamespace and type(cfg).__name__ == 'SimpleNamespace'
assert isinstance(cfg, SimpleNamespace) and not isinstance({}, SimpleNamespace)
try:
    {cfg: 1}
    raise AssertionError('a namespace was hashed')
except TypeError as e:
    assert 'types.SimpleNamespace' in str(e), str(e)
try:
    SimpleNamespace(1, 2)
    raise AssertionError('two positional arguments')
except TypeError:
    pass
";

#[test]
fn a_namespace_behaves_as_cpython_s() {
    probes::agrees_with_cpython("", 15, SCRIPT);
}

#[test]
fn a_positional_argument_follows_the_version() {
    let script = "
from types import SimpleNamespace
try:
    n = SimpleNamespace({'a': 1}, b=2)
    assert n.a == 1 and n.b == 2
    assert v >= 13
except TypeError as e:
    assert v < 13 and str(e) == 'no positional arguments expected', str(e)
";
    for minor in [10u8, 12, 13, 14] {
        let workload = format!("v = {minor}\n{script}");
        if let Err(e) = probes::run(&format!("3.{minor}"), &workload) {
            panic!("on 3.{minor}: {e}");
        }
        if let Some(python) = probes::interpreter(minor) {
            let out = std::process::Command::new(&python)
                .args(["-c", &workload])
                .output()
                .expect("runs python");
            assert!(out.status.success(), "3.{minor}: {out:?}");
        }
    }
    let err = probes::run(
        "3.13",
        "from types import SimpleNamespace\nn = SimpleNamespace([('a', 1)])\n",
    )
    .map(|_| ())
    .expect_err("refused")
    .to_string();
    assert!(
        err.contains("unsupported: `types.SimpleNamespace(iterable)`"),
        "{err}"
    );
    assert!(err.contains("t.yaml:"), "{err}");
}

/// A namespace is a GC object: one that holds itself keeps its tensors until a collection,
/// which frees the namespace and its dict.
#[test]
fn a_namespace_in_a_cycle_keeps_its_tensors_until_a_collection() {
    for python in ["3.10", "3.11", "3.12", "3.14"] {
        let workload = "
import gc, types
gc.disable()
state = types.SimpleNamespace(w=torch.zeros(1024, device='cuda'))
state.parent = state
assert gc.is_tracked(state) and gc.is_tracked(state.__dict__)
del state
assert torch.cuda.memory_allocated() == 4096, torch.cuda.memory_allocated()
assert gc.collect() >= 2
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

/// Measured on 3.8.18 – 3.13.0, 3.14 and 3.15 (each maker warm, counted right after
/// `gc.collect()`): the namespace and its dict (2), the keyword dict of the call when it
/// has keywords (3: it goes to the dict free list, uncounted, when the call returns), a list
/// value (4), and an attribute stored later on an existing key-holding dict (3).
#[test]
fn namespaces_count_as_cpython_counts_them() {
    let script = common::gc_counts::kept_after_collection(
        "import types\ndef stored():\n    n = types.SimpleNamespace(a=1)\n    n.b = 2\n    return n\n",
        "(lambda: types.SimpleNamespace(), lambda: types.SimpleNamespace(a=1, b=2), \
         lambda: types.SimpleNamespace(a=[1]), stored)",
        true,
    );
    common::gc_counts::check_against_measured_and_installed(
        &script,
        |_| vec![2, 3, 4, 3],
        probes::interpreter,
    );
}

/// The pre-run pass knows the name in both import forms (it resolves module attributes as
/// the run does).
#[test]
fn the_pre_run_pass_accepts_both_import_forms() {
    use gpumem_harness::python::static_check::check_scenario;
    for workload in [
        SCRIPT,
        "import types\nns = types.SimpleNamespace(a=1)\nassert ns.a == 1\n",
    ] {
        let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
        let yaml = format!("name: t\ndevice: h100-80gb\npython: \"3.11\"\nworkload: |\n{body}");
        let s = gpumem_harness::scenario::parse(&yaml, "t.yaml").expect("parses");
        check_scenario(&s).unwrap_or_else(|e| panic!("the pass refuses: {e}"));
    }
}
