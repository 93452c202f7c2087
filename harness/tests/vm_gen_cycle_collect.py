import gc
import sys
import weakref
gc.disable()
gc.collect()
class Box:
    pass
log = []
def guarded(n):
    try:
        yield n
    finally:
        log.append("fin")
def bare(n):
    yield n
def ring_case(make, start):
    it = make(1)
    if start:
        next(it)
    ring = [it, Box()]
    ring.append(ring)
    alive = weakref.ref(ring[1])
    del it, ring
    return alive
def frame_case(make, start):
    holder = [Box()]
    it = make(holder)
    if start:
        next(it)
    holder.append(it)
    alive = weakref.ref(holder[0])
    del it, holder
    return alive
keeps = (3, 12) <= sys.version_info[:2] <= (3, 13)
for case in (ring_case, frame_case):
    for make in (guarded, bare):
        for start in (True, False):
            alive = case(make, start)
            found = gc.collect()
            assert alive() is None, (case, make, start)
            if case is ring_case:
                expected = 3
            elif start:
                expected = 0
            else:
                expected = 3 if keeps else 0
            assert found == expected, (case, make, start, found)
            assert gc.collect() == 0, (case, make, start)
            assert gc.get_count() == (0, 0, 0), gc.get_count()
assert log == ["fin", "fin"], log
