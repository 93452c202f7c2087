import asyncio
import gc
import sys
import weakref
gc.disable()
gc.collect()
class Box:
    pass
log = []
class Cm:
    def __init__(self, name, box=None):
        self.name = name
        self.box = box
    def __enter__(self):
        log.append(("enter", self.name))
        return self.box
    def __exit__(self, kind, value, tb):
        log.append(("exit", self.name, kind))
        return False
def ret_in_with(box):
    with Cm("a", box) as b:
        yield 1
        return b
def ret_yield_in_with(box):
    with Cm("a"):
        with Cm("b"):
            return (yield box)
def break_in_with(boxes):
    for b in boxes:
        with Cm(b):
            yield b
            break
    log.append("after")
    yield "end"
def continue_in_with(n):
    for i in range(n):
        with Cm(i):
            yield i
            if i < 2:
                continue
        log.append(("tail", i))
def ret_in_except_in_with(box):
    with Cm("w"):
        try:
            yield 1
            raise KeyError(box)
        except KeyError as e:
            log.append(sys.exc_info()[0])
            return 4

box = Box()
alive = weakref.ref(box)
g = ret_in_with(box)
assert next(g) == 1
try:
    next(g)
except StopIteration as stop:
    assert stop.value is box
assert log == [("enter", "a"), ("exit", "a", None)], log
del box, g
assert alive() is None
log.clear()
g = ret_yield_in_with(Box())
assert isinstance(next(g), Box)
try:
    g.send("back")
except StopIteration as stop:
    assert stop.value == "back"
assert log == [("enter", "a"), ("enter", "b"), ("exit", "b", None), ("exit", "a", None)], log
del g
log.clear()
boxes = [Box(), Box()]
alive = weakref.ref(boxes[0])
assert list(break_in_with(boxes)) == [boxes[0], "end"]
assert log == [("enter", boxes[0]), ("exit", boxes[0], None), "after"], log
log.clear()
del boxes
assert alive() is None
assert list(continue_in_with(3)) == [0, 1, 2]
assert log == [("enter", 0), ("exit", 0, None), ("enter", 1), ("exit", 1, None),
               ("enter", 2), ("exit", 2, None), ("tail", 2)], log
log.clear()
box = Box()
alive = weakref.ref(box)
assert list(ret_in_except_in_with(box)) == [1]
assert log == [("enter", "w"), KeyError, ("exit", "w", None)], log
assert sys.exc_info()[0] is None
del box
assert alive() is None
log.clear()
class Acm:
    def __init__(self, name):
        self.name = name
    async def __aenter__(self):
        await asyncio.sleep(0)
        log.append(("aenter", self.name))
    async def __aexit__(self, kind, value, tb):
        await asyncio.sleep(0)
        log.append(("aexit", self.name, kind))
async def breaks():
    for i in range(3):
        async with Acm(i):
            await asyncio.sleep(0)
            if i == 1:
                break
            continue
    log.append("done")
asyncio.run(breaks())
assert log == [("aenter", 0), ("aexit", 0, None), ("aenter", 1), ("aexit", 1, None), "done"], log
assert gc.collect() == 0
