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
made = []
def raiser(box):
    held = Box()
    made.append(weakref.ref(held))
    raise Oops(box, held)
def released():
    return made[-1]() is None
def ret_over_exception(box):
    try:
        yield 1
        raiser(box)
    finally:
        log.append(sys.exc_info()[0])
        return 5
def ret_on_close():
    try:
        yield 1
        yield 2
    finally:
        log.append("closing")
        return 6
def break_over_exception(boxes):
    for b in boxes:
        try:
            yield b
            raiser(b)
        finally:
            log.append(sys.exc_info()[0])
            break
    log.append(sys.exc_info()[0])
    log.append(released())
    yield "after"
def continue_over_exception(boxes):
    for b in boxes:
        try:
            yield 1
            raiser(b)
        finally:
            continue
        log.append("not reached")
    log.append(sys.exc_info()[0])
    yield "after"
def ret_replaces_ret(box):
    try:
        yield 1
        return box
    finally:
        log.append("fin")
        return 9
def break_drops_ret(box):
    for i in range(3):
        try:
            yield i
            return box
        finally:
            break
    log.append("broke")
    yield "after"
def yield_then_ret(box):
    try:
        yield 1
        raiser(box)
    finally:
        got = yield 2
        log.append(got)
        return got
def nested_finally(box):
    try:
        try:
            yield 1
            raiser(box)
        finally:
            log.append("inner")
            return 3
    finally:
        log.append(("outer", sys.exc_info()[0]))
def delegating(box):
    got = yield from ret_over_exception(box)
    log.append(got)
    got = yield from nested_finally(box)
    log.append(got)

box = Box()
alive = weakref.ref(box)
assert list(delegating(box)) == [1, 1], log
assert log == [Oops, 5, "inner", ("outer", None), 3], log
assert released()
del box
assert alive() is None
log.clear()
g = ret_on_close()
assert next(g) == 1
g.close()
assert log == ["closing"], log
log.clear()
boxes = [Box(), Box()]
alive = weakref.ref(boxes[0])
assert list(break_over_exception(boxes)) == [boxes[0], "after"]
assert log == [Oops, None, True], log
del boxes
assert alive() is None
log.clear()
assert list(continue_over_exception([Box(), Box()])) == [1, 1, "after"]
assert log == [None], log
log.clear()
box = Box()
alive = weakref.ref(box)
g = ret_replaces_ret(box)
assert next(g) == 1
try:
    next(g)
except StopIteration as stop:
    assert stop.value == 9
del box
assert alive() is None
del g
log.clear()
box = Box()
alive = weakref.ref(box)
assert list(break_drops_ret(box)) == [0, "after"]
del box
assert alive() is None
assert log == ["broke"], log
log.clear()
box = Box()
alive = weakref.ref(box)
g = yield_then_ret(box)
assert next(g) == 1
assert next(g) == 2
try:
    g.send("sent")
except StopIteration as stop:
    assert stop.value == "sent"
assert log == ["sent"], log
assert sys.exc_info()[0] is None
del box, g
assert alive() is None
assert released()
assert gc.collect() == 0
