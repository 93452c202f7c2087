//! The workload interpreter's semantics, checked from inside workloads with `assert`: a
//! failed assertion or any workload error makes the run an error with its location.

use gpumem_harness::error::{Error, InputErrorKind};
use gpumem_harness::run::run_variant;
use gpumem_harness::scenario;
use gpumem_harness::timeline::Timeline;

fn run(python: &str, workload: &str) -> Result<Timeline, Error> {
    let body: String = workload.lines().map(|l| format!("  {l}\n")).collect();
    let yaml = format!(
        "name: t\ndevice: {{ capacity: 1 GiB }}\npython: \"{python}\"\nworkload: |\n{body}"
    );
    let scenario = scenario::parse(&yaml, "t.yaml").expect("scenario parses");
    let variant = scenario.variants().remove(0);
    run_variant(&scenario, &variant)
}

fn is_unsupported(err: &Error) -> bool {
    matches!(
        err,
        Error::Input {
            kind: InputErrorKind::Unsupported,
            ..
        }
    )
}

fn ok(workload: &str) -> Timeline {
    for python in ["3.10", "3.11", "3.12"] {
        if let Err(e) = run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
    run("3.11", workload).expect("runs")
}

#[test]
fn reference_counting_frees_device_memory_at_once() {
    ok("
a = torch.zeros(256, device='cuda')
assert torch.cuda.memory_allocated() == 1024
b = a
del a
assert torch.cuda.memory_allocated() == 1024
b = None
assert torch.cuda.memory_allocated() == 0
assert torch.cuda.max_memory_allocated() == 1024
assert torch.cuda.memory_reserved() == 2 * 1024 * 1024
torch.cuda.empty_cache()
assert torch.cuda.memory_reserved() == 0
");
}

#[test]
fn views_and_detached_tensors_share_their_storage() {
    ok("
base = torch.zeros(1024, device='cuda')
v = base.view(32, 32)
row = v[3]
d = base.detach()
assert v.shape[0] == 32 and v.shape[1] == 32 and row.shape[0] == 32
assert torch.cuda.memory_allocated() == 4096
del base, v, d
assert torch.cuda.memory_allocated() == 4096
del row
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn a_reference_cycle_holds_memory_until_the_collector_runs() {
    ok("
class Node:
    def __init__(self, t):
        self.t = t
        self.other = None

a = Node(torch.zeros(256, device='cuda'))
b = Node(torch.zeros(256, device='cuda'))
a.other, b.other = b, a
del a, b
assert torch.cuda.memory_allocated() == 2048
found = gc.collect()
assert found >= 4
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn gc_module_state_follows_the_version() {
    ok("
t = gc.get_threshold()
assert t[0] in [700, 2000] and t[1] == 10 and t[2] == 10
gc.set_threshold(5, 3, 2)
assert gc.get_threshold()[0] == 5
gc.disable()
assert not gc.isenabled()
gc.enable()
assert gc.isenabled()
");
    run("3.13", "assert gc.get_threshold()[0] == 2000").expect("3.13 threshold");
    run("3.12", "assert gc.get_threshold()[0] == 700").expect("3.12 threshold");
}

#[test]
fn a_disabled_collector_never_runs_automatically() {
    let timeline = ok("
gc.disable()
class N:
    def __init__(self):
        self.me = self
for i in range(2000):
    n = N()
");
    assert!(timeline.gc_events.is_empty(), "{:?}", timeline.gc_events);
}

#[test]
fn closures_cells_and_nonlocal() {
    ok("
def counter():
    n = 0
    def bump(by=1):
        nonlocal n
        n += by
        return n
    return bump

c = counter()
c()
c(by=5)
assert c() == 7
square = lambda x: x * x
assert square(9) == 81
");
}

#[test]
fn control_flow_and_containers() {
    ok("
total = 0
i = 0
while True:
    i += 1
    if i % 2 == 0:
        continue
    elif i > 9:
        break
    else:
        total += i
assert total == 1 + 3 + 5 + 7 + 9
items = [1, 2, 3]
items.append(4)
assert items.pop() == 4 and len(items) == 3 and items[-1] == 3
d = {'a': 1}
d['b'] = 2
assert d['b'] == 2 and len(d) == 2 and d.get('c', 7) == 7
x, (y, z) = 1, (2, 3)
assert x + y + z == 6
assert 7 // 2 == 3 and -7 // 2 == -4 and 7 % 3 == 1 and 2 ** 10 == 1024
assert (1 < 2 < 3) and not (3 < 2) and (None is None)
");
}

#[test]
fn attribute_and_subscript_targets() {
    ok("
class Box:
    pass
b = Box()
b.items = [0, 0]
b.items[1] = 5
b.items[1] += 1
b.count = 1
b.count += 2
assert b.items[1] == 6 and b.count == 3
");
}

#[test]
fn coroutines_run_when_awaited() {
    ok("
async def make(n):
    return torch.zeros(n, device='cuda')

async def main():
    t = await make(256)
    return t.numel()

assert asyncio.run(main()) == 256
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn tensor_shapes_dtypes_and_devices() {
    ok("
x = torch.randn(8, 16, device='cuda')
w = torch.ones((16, 4), device='cuda')
y = x @ w
assert y.shape[0] == 8 and y.shape[1] == 4
h = torch.zeros(1024, device='cuda').half()
assert h.element_size() == 2
c = torch.zeros(10)
assert not c.is_cuda
g = c.cuda()
assert g.is_cuda and g.to('cuda') is g and g.float() is g
f = torch.full((2, 3), 1.5, device='cuda')
assert f.flatten().shape[0] == 6 and f.t().shape[0] == 3
z = torch.zeros_like(f, dtype=torch.float64)
assert z.element_size() == 8
");
}

#[test]
fn errors_are_located_and_typed() {
    let err = run("3.11", "x = 1\ny = undefined_name\n").unwrap_err();
    match &err {
        Error::Input {
            kind,
            location,
            message,
        } => {
            assert_eq!(*kind, InputErrorKind::Runtime);
            assert_eq!((location.line, location.column), (6, 7), "{err}");
            assert!(message.contains("undefined_name"), "{err}");
        }
        other => panic!("{other}"),
    }
    let err = run("3.11", "def f(a):\n    return a\nf(1, 2)\n").unwrap_err();
    assert!(
        err.to_string()
            .contains("takes 1 positional arguments but 2 were given"),
        "{err}"
    );
    let err = run("3.11", "match 1:\n    case _:\n        pass\n").unwrap_err();
    assert!(is_unsupported(&err), "{err}");
    let err = run("3.11", "assert 1 == 2, 'no'\n").unwrap_err();
    assert!(err.to_string().contains("AssertionError: no"), "{err}");
}

#[test]
fn out_of_memory_ends_the_run_with_torchs_message() {
    let timeline = run(
        "3.11",
        "keep = []\nfor i in range(100):\n    keep.append(torch.zeros(2**26, device='cuda'))\n",
    )
    .expect("an OOM is an outcome");
    let oom = timeline.oom.as_ref().expect("out of memory");
    assert_eq!(oom.iteration, Some(4), "1 GiB holds four 256 MiB tensors");
    assert!(
        oom.message
            .starts_with("CUDA out of memory. Tried to allocate 256.00 MiB."),
        "{}",
        oom.message
    );
    assert_eq!(timeline.iterations_completed(), 4);
}

#[test]
fn deep_recursion_runs_even_from_a_thread_with_a_small_stack() {
    let workload = "def f(n):\n    if n == 0:\n        return 0\n    return f(n - 1) + 1\nassert f(990) == 990\nf(5000)\n";
    let err = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || run("3.11", workload).map(|_| ()).unwrap_err().to_string())
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert!(
        err.contains("RecursionError") && err.contains("t.yaml:8:"),
        "{err}"
    );
}

#[test]
fn absurdly_deep_expressions_are_rejected_not_crashed() {
    let workload = format!("x = {}\n", vec!["1"; 60_000].join(" + "));
    let err = run("3.11", &workload).unwrap_err();
    assert!(is_unsupported(&err), "{err}");
}

#[test]
fn list_comprehensions_and_repetition() {
    ok("
i = 'kept'
squares = [i * i for i in range(5) if i % 2 == 0]
assert len(squares) == 3 and squares[2] == 16
assert i == 'kept'
pairs = [a + b for a in range(3) for b in range(2)]
assert len(pairs) == 6 and pairs[5] == 3
buffers = [None] * 4
assert len(buffers) == 4 and buffers[3] is None
ts = [torch.zeros(256, device='cuda') for _ in range(4)]
assert torch.cuda.memory_allocated() == 4 * 1024
ts = None
assert torch.cuda.memory_allocated() == 0
");
}

#[test]
fn sequences_compare_by_value() {
    ok("
x = torch.zeros(2, 3)
assert x.shape == (2, 3) and x.size() == (2, 3) and x.shape != (3, 2)
assert [1, (2, 3)] == [1, (2, 3)] and [1] != (1,) and (1, 2) != (1, 2, 3)
");
}
