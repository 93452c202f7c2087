//! `collections.deque`: behaviour, the references it holds (a bounded deque frees the
//! tensors it drops), and its generation-0 counts against real CPython.

mod probes;

use probes::ok;

/// (name, probe, objects counted on ≤ 3.10, on ≥ 3.11), measured with CPython 3.8 – 3.13
/// (`PRELUDE + probe + MEASURE + print(d)`, run by `~/.pyenv/versions/3.X*/bin/python`).
const PROBES: &[probes::Probe] = &[
    (
        "empty deque kept",
        "from collections import deque\ndef probe():\n    keep.append(deque())\n",
        1,
        1,
    ),
    (
        "bounded deque of a tuple kept",
        "from collections import deque\ndef probe():\n    keep.append(deque((1, 2), maxlen=3))\n",
        1,
        1,
    ),
    (
        "deque of a list kept",
        "from collections import deque\ndef probe():\n    keep.append(deque([1, 2], 2))\n",
        1,
        1,
    ),
    (
        "deque built and dropped",
        "from collections import deque\ndef probe():\n    x = deque()\n    del x\n",
        0,
        0,
    ),
    (
        "deque appends and pops",
        "from collections import deque\nq = deque()\ndef probe():\n    q.append(1)\n    q.appendleft(2)\n    q.extend((3, 4))\n    q.pop()\n    q.popleft()\n    q.clear()\n",
        0,
        0,
    ),
    (
        "appending past maxlen",
        "from collections import deque\nq = deque(maxlen=2)\ndef probe():\n    q.append(1)\n    q.append(2)\n    q.append(3)\n",
        0,
        0,
    ),
    (
        "defaultdict(list) kept",
        "from collections import defaultdict\ndef probe():\n    keep.append(defaultdict(list))\n",
        1,
        1,
    ),
    (
        "defaultdict() kept",
        "from collections import defaultdict\ndef probe():\n    keep.append(defaultdict())\n",
        1,
        1,
    ),
    // Never returned to the dict free list: the count comes back.
    (
        "defaultdict built and dropped",
        "from collections import defaultdict\ndef probe():\n    x = defaultdict(list)\n    del x\n",
        0,
        0,
    ),
    (
        "defaultdict(list) missing key",
        "from collections import defaultdict\nd = defaultdict(list)\ndef probe():\n    d[len(d)]\n",
        1,
        1,
    ),
    (
        "defaultdict(int) missing key incremented",
        "from collections import defaultdict\nd = defaultdict(int)\ndef probe():\n    d[len(d)] += 1\n",
        0,
        0,
    ),
    (
        "defaultdict get and in",
        "from collections import defaultdict\nd = defaultdict(list)\ndef probe():\n    d.get(-5)\n    -7 in d\n",
        0,
        0,
    ),
    (
        "OrderedDict kept",
        "from collections import OrderedDict\ndef probe():\n    keep.append(OrderedDict())\n",
        1,
        1,
    ),
    (
        "OrderedDict built and dropped",
        "from collections import OrderedDict\ndef probe():\n    x = OrderedDict()\n    x[1] = 2\n    del x\n",
        0,
        0,
    ),
    (
        "OrderedDict methods",
        "from collections import OrderedDict\no = OrderedDict()\ndef probe():\n    o[1] = 2\n    o[2] = 3\n    o.move_to_end(1)\n    o.popitem()\n    o.popitem(last=False)\n",
        0,
        0,
    ),
];

#[test]
fn deque_counts_match_the_measured_table() {
    probes::model_matches_table(PROBES);
}

#[test]
fn measured_deque_counts_match_installed_interpreters() {
    probes::table_matches_installed_interpreters(PROBES);
}

/// The loop over a deque holds a GC-allocated `_deque_iterator` while it runs (measured:
/// 1 on 3.8 – 3.15, the count inside the body minus the count before the loop).
#[test]
fn a_loop_over_a_deque_counts_its_iterator() {
    for python in ["3.10", "3.11", "3.13", "3.14"] {
        let workload = "import gc
gc.disable()
from collections import deque
d = deque([1, 2])
before = gc.get_count()[0]
for x in d:
    inside = gc.get_count()[0] - before
assert inside == 1, inside
assert gc.get_count()[0] == before, (before, gc.get_count())
";
        if let Err(e) = probes::run(python, workload) {
            panic!("on {python}: {e}");
        }
    }
}

#[test]
fn deque_behaves_as_python_s() {
    ok("
from collections import deque
import collections
d = deque([1, 2, 3])
d.append(4)
d.appendleft(0)
assert list(d) == [0, 1, 2, 3, 4], list(d)
assert len(d) == 5 and d[0] == 0 and d[-1] == 4 and d[2] == 2
assert d.pop() == 4 and d.popleft() == 0
assert 2 in d and 7 not in d
d.extend([5, 6])
d.extendleft((-1, -2))
assert list(d) == [-2, -1, 1, 2, 3, 5, 6], list(d)
assert d.maxlen is None
seen = []
for x in d:
    seen.append(x)
assert seen == [-2, -1, 1, 2, 3, 5, 6]
d.rotate(2)
assert list(d) == [5, 6, -2, -1, 1, 2, 3], list(d)
d.rotate(-3)
assert list(d) == [-1, 1, 2, 3, 5, 6, -2], list(d)
d.reverse()
assert list(d) == [-2, 6, 5, 3, 2, 1, -1], list(d)
d.append(5)
assert d.count(5) == 2 and d.count(7) == 0
d.remove(5)
assert list(d) == [-2, 6, 3, 2, 1, -1, 5], list(d)
try:
    d.remove(7)
except ValueError:
    pass
else:
    assert False, 'remove of a missing item'
d.clear()
assert len(d) == 0 and not d
try:
    d.pop()
except IndexError:
    pass
else:
    assert False, 'pop from an empty deque'
b = collections.deque(maxlen=3)
for i in range(5):
    b.append(i)
assert list(b) == [2, 3, 4] and b.maxlen == 3, list(b)
b.appendleft(9)
assert list(b) == [9, 2, 3], list(b)
g = deque(map(lambda i: i * i, [0, 1, 2, 3]), 2)
assert list(g) == [4, 9], list(g)
z = deque([1, 2], maxlen=0)
assert len(z) == 0
try:
    deque(maxlen=-1)
except ValueError:
    pass
else:
    assert False, 'negative maxlen'
");
}

/// A bounded deque as a history: the tensor an append evicts is freed at once, so device
/// memory stays at `maxlen` tensors; dropping the deque frees the rest.
#[test]
fn a_bounded_deque_frees_the_tensors_it_evicts() {
    ok("
import torch
from collections import deque
history = deque(maxlen=2)
mib = 1024 * 1024
for step in range(5):
    history.append(torch.zeros(mib, device='cuda'))
    assert torch.cuda.memory_allocated() == min(step + 1, 2) * 4 * mib, torch.cuda.memory_allocated()
x = history.popleft()
assert torch.cuda.memory_allocated() == 2 * 4 * mib
del x
assert torch.cuda.memory_allocated() == 4 * mib
history.remove(history[0])
assert torch.cuda.memory_allocated() == 0, 'remove frees the item'
history.append(torch.zeros(mib, device='cuda'))
history.append(torch.zeros(mib, device='cuda'))
history[0] = torch.zeros(mib, device='cuda')
assert torch.cuda.memory_allocated() == 2 * 4 * mib, 'the replaced tensor is freed'
del history
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
");
}

/// An unbounded deque keeps every tensor (the leak a `maxlen` fixes); `clear()` frees them.
#[test]
fn an_unbounded_deque_keeps_its_tensors_until_cleared() {
    ok("
import torch
from collections import deque
history = deque()
for step in range(3):
    history.append(torch.zeros(256, device='cuda'))
assert torch.cuda.memory_allocated() == 3 * 1024, torch.cuda.memory_allocated()
history.clear()
assert torch.cuda.memory_allocated() == 0
");
}

/// A deque in a reference cycle is found and freed by the collector with what it holds.
#[test]
fn a_deque_in_a_cycle_is_collected_with_its_tensor() {
    ok("
import gc
import torch
from collections import deque
gc.disable()
d = deque()
d.append(d)
d.append(torch.zeros(256, device='cuda'))
del d
assert torch.cuda.memory_allocated() == 1024
gc.collect()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
");
}

/// The rest of `collections` is refused before the run, at the name's location.
#[test]
fn the_rest_of_collections_is_refused_with_its_location() {
    for (workload, at, name) in [
        (
            "from collections import ChainMap\n",
            "t.yaml:5:27",
            "ChainMap",
        ),
        (
            "import collections\nc = collections.UserDict()\n",
            "t.yaml:6:",
            "UserDict",
        ),
    ] {
        let err = probes::run("3.11", workload)
            .expect_err("an unmodelled collections name is refused")
            .to_string();
        assert!(err.contains(at) && err.contains(name), "{err}");
    }
}

#[test]
fn defaultdict_and_ordered_dict_behave_as_python_s() {
    ok("
from collections import defaultdict, OrderedDict
groups = defaultdict(list)
for i in range(6):
    groups[i % 3].append(i)
assert groups[0] == [0, 3] and groups[2] == [2, 5] and len(groups) == 3
assert groups.get(9) is None and 9 not in groups and len(groups) == 3
counts = defaultdict(int)
for w in ['a', 'b', 'a']:
    counts[w] += 1
assert counts['a'] == 2 and counts['b'] == 1
made = defaultdict(lambda: 'x')
assert made[5] == 'x' and 5 in made
plain = defaultdict()
try:
    plain[1]
except KeyError:
    pass
else:
    assert False, 'no factory: KeyError'
seeded = defaultdict(list, {1: [2]}, k=[3])
assert seeded[1] == [2] and seeded['k'] == [3]
o = OrderedDict()
o['a'] = 1
o['b'] = 2
o['c'] = 3
o.move_to_end('a')
assert list(o) == ['b', 'c', 'a']
o.move_to_end('a', last=False)
assert list(o) == ['a', 'b', 'c']
assert o.popitem() == ('c', 3)
assert o.popitem(last=False) == ('a', 1)
assert list(o.items()) == [('b', 2)]
try:
    defaultdict(5)
except TypeError:
    pass
else:
    assert False, 'a factory must be callable'
");
}

/// The dict owns its factory: a lambda closing over a tensor keeps it until the dict goes;
/// a defaultdict in a cycle is collected with its factory's tensor.
#[test]
fn a_defaultdict_keeps_its_factory_and_what_it_closes_over() {
    ok("
import gc
import torch
from collections import defaultdict
gc.disable()
def make():
    buf = torch.zeros(256, device='cuda')
    return defaultdict(lambda: buf)
d = make()
assert torch.cuda.memory_allocated() == 1024
d[0]
del d
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
c = make()
c['self'] = c
del c
assert torch.cuda.memory_allocated() == 1024
gc.collect()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
");
}
