"""Runs a workload on a real CPython with a stand-in `torch`, and prints its collections.

Usage: python probe.py WORKLOAD_FILE [NAME=INT ...]

The stand-in tensor is a `__slots__` class (one GC object per tensor, no free list, like
torch.Tensor); `view` returns a new stand-in that holds its base. Its calls allocate what calls of torch's C
bindings allocate: an argument tuple and a keyword dict. The script collects, runs the workload at module
level (its first statement records the collector's state), and logs every collection from a gc callback
without allocating GC objects between collections. It prints one JSON object.

With GPUMEM_PROBE_WHERE=1 in the environment, each collection's "stop" callback also records where
it fired (the workload's iteration and the innermost four frames as name:line), printed to stderr
as a list after the run. The frames and strings that allocates move the schedule by about one
iteration, so use it to see where collections fire, not to compare iterations:
  GPUMEM_PROBE_WHERE=1 python3.X harness/tests/calibration/probe.py harness/tests/workloads/slots.py gc_every=0
"""
import gc
import json
import os
import sys
import sysconfig

ALIVE = [0, 0]


class StandInTensor:
    __slots__ = ("n", "base")

    # As the model counts: ALIVE[0] every tensor object (views too: the collections'
    # "alive before"), ALIVE[1] those owning their storage (the factories': device tensors
    # at the end); a view shares its base's.
    def __init__(self):
        ALIVE[0] += 1

    def __del__(self):
        ALIVE[0] -= 1
        if self.base is None:
            ALIVE[1] -= 1

    # torch's C functions and Tensor methods are METH_VARARGS | METH_KEYWORDS: a call packs
    # its positional arguments into a tuple and its keywords into a dict. `*args`/`**kwargs`
    # allocate the same (the dict even when no keyword is passed: every workload passes one to
    # the factories), and the tensor is made without an argument tuple of its own.
    def view(self, *shape):
        t = StandInTensor()
        t.n = self.n
        t.base = self
        return t


def zeros(*args, **kwargs):
    t = StandInTensor()
    ALIVE[1] += 1
    t.n = args[0]
    t.base = None
    return t


class StandInTorch:
    pass


torch = StandInTorch()
torch.zeros = zeros

# The workload's first statement records the collector's state; the model runs the same
# statement and starts from the state it recorded.
source = "__gc_start__ = gc.get_count()\n" + open(sys.argv[1]).read()
namespace = {"torch": torch, "gc": gc, "__name__": "__workload__"}
for arg in sys.argv[2:]:
    key, value = arg.split("=", 1)
    namespace[key] = int(value)
code = compile(source, sys.argv[1], "exec")

LOG = []
BEFORE = [0]
WHERE = [] if os.environ.get("GPUMEM_PROBE_WHERE") else None


def callback(phase, info):
    if phase == "start":
        BEFORE[0] = ALIVE[0]
    else:
        # One append per value: a tuple here would be a GC allocation between collections.
        LOG.append(namespace.get("i", -1))
        LOG.append(info["generation"])
        LOG.append(info["collected"])
        LOG.append(BEFORE[0])
        LOG.append(ALIVE[0])
        if WHERE is not None:
            f = sys._getframe(1)
            where = []
            while f is not None:
                where.append("%s:%d" % (f.f_code.co_name, f.f_lineno))
                f = f.f_back
            WHERE.append((namespace.get("i", -1), where[:4]))


# Call the stand-in's functions once so that their first-call costs (a frame object per
# code object up to 3.10) are paid before the measurement: torch's are C functions.
zeros(1).view(1)
gc.collect()
long_lived_total = len(gc.get_objects(generation=2))
# `gc.collect()` emptied the free lists and the `get_objects` list went back to the list free
# list: take it off (kept, so no count moves) so that the workload starts with the free lists
# empty, as the model's `free_lists: empty` start describes (measured: a first `[x]` in the
# workload is then counted, as a first `{}` is).
FREE_LIST_DRAIN = []
gc.callbacks.append(callback)
exec(code, namespace)
gc.callbacks.remove(callback)
end_alive = ALIVE[1]
if WHERE is not None:
    sys.stderr.write(repr(WHERE) + "\n")
rows = [LOG[k:k + 5] for k in range(0, len(LOG), 5)]
print(json.dumps({
    "version": "%d.%d" % sys.version_info[:2],
    # The release as the model names it: "3.14.10", or "3.13.5t" for a free-threaded build.
    "model_version": "%d.%d.%d" % sys.version_info[:3] + ("t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""),
    "threshold": gc.get_threshold(),
    "start_counts": namespace["__gc_start__"],
    "long_lived_total": long_lived_total,
    "collections": [{"iteration": r[0], "generation": r[1], "collected": r[2], "alive_before": r[3], "alive_after": r[4]} for r in rows],
    "end_alive": end_alive,
}))
