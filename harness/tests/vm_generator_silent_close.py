import gc
import sys
import weakref
gc.disable()
class Box:
    pass
def selfish(holder):
    me = holder[0]
    yield 1
    yield 2
def plain(n):
    yield n
    yield n + 1
def self_cycle(start, exhaust):
    holder = []
    it = selfish(holder)
    holder.append(it)
    if start:
        next(it)
    if exhaust:
        for _ in it:
            pass
    box = Box()
    holder.append(box)
    return weakref.ref(box)
def outside_cycle():
    it = plain(1)
    next(it)
    ring = [it, Box()]
    ring.append(ring)
    return weakref.ref(ring[1])
def measure(alive):
    found = gc.collect()
    counts = gc.get_count()
    assert alive() is None
    return found, counts
gc.collect()
found, counts = measure(self_cycle(True, False))
assert (found, counts) == (0, (0, 0, 0)), (found, counts)
found, counts = measure(self_cycle(True, True))
assert (found, counts) == (0, (0, 0, 0)), (found, counts)
found, counts = measure(outside_cycle())
assert (found, counts) == (3, (0, 0, 0)), (found, counts)
found, counts = measure(self_cycle(False, False))
assert counts == (0, 0, 0), counts
if (3, 12) <= sys.version_info[:2] <= (3, 13):
    assert found == 3, found
else:
    assert found == 0, found
