import gc
import sys
import weakref
gc.disable()
gc.collect()
class Box:
    pass
class Oops(Exception):
    pass
log = []
class Suppress:
    def __init__(self, box):
        self.box = box
    def __enter__(self):
        log.append("enter")
        return self.box
    def __exit__(self, kind, value, tb):
        log.append(("exit", kind))
        return kind is Oops
class Keep:
    def __enter__(self):
        return self
    def __exit__(self, kind, value, tb):
        log.append(("keep", kind))
        return False
def suppressing(box):
    with Suppress(box) as b:
        got = yield 1
        log.append(("got", got))
    log.append(sys.exc_info()[0])
    yield 2
    yield 3
def in_loop(boxes):
    for b in boxes:
        with Suppress(b):
            yield b
        log.append("next")
    yield "end"
def closing():
    with Keep():
        with Suppress(Box()):
            yield 1
    log.append("not reached")

box = Box()
alive = weakref.ref(box)
g = suppressing(box)
assert next(g) == 1
del box
assert g.throw(Oops("x")) == 2
assert log == ["enter", ("exit", Oops), None], log
assert next(g) == 3
g.close()
del g
assert alive() is None
log.clear()
boxes = [Box(), Box()]
g = in_loop(boxes)
assert next(g) is boxes[0]
assert g.throw(Oops) is boxes[1]
assert log == ["enter", ("exit", Oops), "next", "enter"], log
log.clear()
try:
    g.throw(KeyError("k"))
except KeyError:
    pass
assert log == [("exit", KeyError)], log
log.clear()
g = closing()
assert next(g) == 1
g.close()
assert log == ["enter", ("exit", GeneratorExit), ("keep", GeneratorExit)], log
log.clear()
g = closing()
assert next(g) == 1
del g
assert log == ["enter", ("exit", GeneratorExit), ("keep", GeneratorExit)], log
log.clear()
g = suppressing(Box())
assert next(g) == 1
g.close()
assert log == ["enter", ("exit", GeneratorExit)], log
assert sys.exc_info()[0] is None
assert gc.collect() == 0
