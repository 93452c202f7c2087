import gc
import weakref
gc.disable()
log = []
saved = []
class Box:
    pass
class Manager:
    def __enter__(self):
        return self
    def __exit__(self, kind, value, tb):
        log.append(("exit", kind.__name__))
        return False
def worker(box):
    try:
        yield 1
    finally:
        log.append("finally")
def managed(box):
    with Manager():
        yield 1
def resurrecting(box):
    try:
        yield 1
    finally:
        saved.append(box)
def make(factory):
    box = Box()
    it = factory(box)
    next(it)
    box.it = it
    return weakref.ref(box)
gc.collect()
alive = make(worker)
assert alive() is not None
assert log == []
found = gc.collect()
counts = gc.get_count()
assert log == ["finally"], log
assert found == 0, found
assert alive() is None
assert counts == (0, 0, 0), counts
log.clear()
alive = make(managed)
found = gc.collect()
counts = gc.get_count()
assert log == [("exit", "GeneratorExit")], log
assert found == 0, found
assert alive() is None
assert counts == (0, 0, 0), counts
alive = make(resurrecting)
found = gc.collect()
counts = gc.get_count()
assert found == 0, found
assert len(saved) == 1 and saved[0].it is not None
assert counts == (0, 0, 0), counts
saved.clear()
found = gc.collect()
counts = gc.get_count()
assert found == 0, found
assert alive() is None
