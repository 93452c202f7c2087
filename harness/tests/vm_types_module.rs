//! `types.MethodType` (`types_module.rs`): the bound method it makes, the cycle it makes when
//! stored on its own instance (the instance and its tensors live until a collection), and
//! the objects counted, against real CPython 3.8 – 3.15.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `run` and the table helpers
mod probes;

#[test]
fn method_type_binds_a_function_to_an_instance() {
    probes::agrees_with_cpython(
        "",
        15,
        "
import types
from types import MethodType
class Model:
    def __init__(self):
        self.calls = 0
    def forward(self, x):
        return x + 1
def new_forward(self, x, k=10):
    self.calls += 1
    return x + k
m = Model()
m.forward = types.MethodType(new_forward, m)
assert m.forward(1) == 11 and m.forward(1, k=2) == 3 and m.calls == 2
assert m.forward.__self__ is m and m.forward.__func__ is new_forward
assert Model.forward(m, 1) == 2
scaled = MethodType(lambda self, y: y * 2, m)
assert scaled(4) == 8
try:
    MethodType(1, m)
    raise AssertionError('an int was bound')
except TypeError:
    pass
",
    );
}

/// The report's leak: `model.forward = types.MethodType(f, model)` is a cycle, so `del
/// model` leaves its tensors allocated until the collector breaks it.
#[test]
fn a_method_type_stored_on_its_instance_keeps_it_until_a_collection() {
    for python in ["3.10", "3.11", "3.12"] {
        let workload = "
import gc, types
gc.disable()
class Net:
    def __init__(self):
        self.w = torch.zeros(1024, device='cuda')
def patched(self):
    return self.w
n = Net()
n.forward = types.MethodType(patched, n)
assert n.forward() is n.w
del n
assert torch.cuda.memory_allocated() == 4096, torch.cuda.memory_allocated()
assert gc.collect() >= 2
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

#[test]
fn other_names_of_types_are_refused_located() {
    let err = probes::run("3.11", "import types\nf = types.FunctionType\n")
        .map(|_| ())
        .expect_err("refused")
        .to_string();
    assert!(err.contains("unsupported: `types.FunctionType`"), "{err}");
    assert!(err.contains("t.yaml:"), "{err}");
}

/// (name, probe, count on ≤ 3.10, on ≥ 3.11), measured on 3.8 – 3.15 with `probes::PRELUDE`
/// and `probes::MEASURE`: a called temporary method leaves nothing; stored on its instance
/// it stays with it (instance, method, and up to 3.10 the instance's dict once the free
/// lists are spent). A single kept method is not in the table: 3.8 takes it from the
/// method free list (1 where 3.9 – 3.15 count 2).
const PROBES: &[probes::Probe] = &[
    (
        "MethodType called and dropped",
        "import types\nclass C:\n    pass\ndef f(self, k=1):\n    return k\ndef probe():\n    m = types.MethodType(f, C())\n    keep.append(m(2))\n",
        0,
        0,
    ),
    (
        "100 instances holding a MethodType of themselves",
        "import types\nclass C:\n    pass\ndef f(self, k=1):\n    return k\ndef probe():\n    out = []\n    for i in range(100):\n        o = C()\n        o.fwd = types.MethodType(f, o)\n        out.append(o)\n    keep.append(out)\n",
        300,
        200,
    ),
];

#[test]
fn the_model_counts_method_types_as_the_table_says() {
    probes::model_matches_table(PROBES);
}

#[test]
fn the_table_agrees_with_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}
