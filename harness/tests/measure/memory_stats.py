# Equivalent of torch.cuda.memory_stats() as PyTorch 2.x implements it (a local `result`
# list filled by a self-recursive nested function, then sorted and wrapped in an
# OrderedDict), fed by a nested dict shaped like torch._C._cuda_memoryStats().
import collections, gc, sys

STAT_ARRAYS = ["allocation", "segment", "active", "inactive_split", "allocated_bytes",
               "reserved_bytes", "active_bytes", "inactive_split_bytes", "requested_bytes"]
COUNTERS = ["num_alloc_retries", "num_ooms", "max_split_size", "num_sync_all_streams",
            "num_device_alloc", "num_device_free"]

def cpp_stats():
    # What the C++ binding builds: every dict starts empty (PyDict_New) and is filled.
    def stat():
        d = {}
        for k in ("current", "peak", "allocated", "freed"):
            d[k] = 0
        return d
    result = {}
    for c in COUNTERS:
        result[c] = 0
    for a in STAT_ARRAYS:
        arr = {}
        for pool in ("all", "small_pool", "large_pool"):
            arr[pool] = stat()
        result[a] = arr
    result["oversize_allocations"] = stat()
    result["oversize_segments"] = stat()
    return result

def memory_stats():
    flat = []
    def walk(prefix, obj):
        if isinstance(obj, dict):
            if len(prefix) > 0:
                prefix += "."
            for k, v in obj.items():
                walk(prefix + k, v)
        else:
            flat.append((prefix, obj))
    nested = cpp_stats()
    walk("", nested)
    flat.sort()
    return collections.OrderedDict(flat)

def memory_allocated():
    return memory_stats().get("allocated_bytes.all.current", 0)

memory_allocated()  # warm caches, free lists
gc.collect()
gc.disable()
deltas = []
for _ in range(3):
    a = gc.get_count()[0]
    memory_allocated()
    deltas.append(gc.get_count()[0] - a)
garbage = gc.collect()
gc.collect()
a = gc.get_count()[0]
memory_allocated()
one = gc.get_count()[0] - a
found = gc.collect()
print(sys.version.split()[0], "gen0 delta per call", deltas, "one", one, "collected after one call", found, "after 3", garbage)
