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
def ret_in_except(box):
    try:
        yield 1
        raiser(box)
    except Oops as e:
        log.append(sys.exc_info()[0] is Oops)
        return 7
    yield 2
def ret_through_finally(box):
    try:
        try:
            yield 1
            raiser(box)
        except Oops:
            log.append("except")
            return 8
    finally:
        log.append("finally")
        yield 3
    yield 2
def break_in_except(boxes):
    for b in boxes:
        try:
            yield b
            raiser(b)
        except Oops as e:
            log.append("break")
            break
    log.append(sys.exc_info()[0])
    log.append(released())
    yield "after"
def continue_in_except(boxes):
    for b in boxes:
        try:
            yield 1
            raiser(b)
        except Oops:
            log.append("continue")
            continue
        log.append("not reached")
    log.append(sys.exc_info()[0])
    yield "after"
def break_in_body(n):
    for i in range(n):
        try:
            yield i
            if i == 1:
                break
        except Oops:
            pass
    log.append(("done", i))
def nested_clauses(box):
    for i in range(3):
        try:
            yield i
            raise KeyError(i)
        except KeyError:
            try:
                raiser(box)
            except Oops:
                log.append(sys.exc_info()[0])
                break
    log.append(sys.exc_info()[0])
    yield "end"
def break_through_finally(box):
    while True:
        try:
            yield 1
            raiser(box)
        except Oops:
            break
        finally:
            log.append("fin")
    log.append(released())
    yield "out"
def delegating(box):
    got = yield from ret_in_except(box)
    log.append(got)
    got = yield from ret_through_finally(Box())
    log.append(got)

box = Box()
alive = weakref.ref(box)
assert list(delegating(box)) == [1, 1, 3], log
del box
assert alive() is None
assert log == [True, 7, "except", "finally", 8], log
log.clear()
boxes = [Box(), Box()]
alive = weakref.ref(boxes[0])
assert list(break_in_except(boxes)) == [boxes[0], "after"]
assert log == ["break", None, True], log
del boxes
assert alive() is None
log.clear()
assert list(continue_in_except([Box(), Box()])) == [1, 1, "after"]
assert log == ["continue", "continue", None], log
log.clear()
assert list(break_in_body(5)) == [0, 1]
assert log == [("done", 1)], log
log.clear()
box = Box()
alive = weakref.ref(box)
assert list(nested_clauses(box)) == [0, "end"]
assert log == [Oops, None], log
del box
assert alive() is None
log.clear()
box = Box()
alive = weakref.ref(box)
g = break_through_finally(box)
assert next(g) == 1
del box
assert alive() is not None
assert next(g) == "out"
assert log == ["fin", True], log
del g
assert alive() is None
assert gc.collect() == 0
def ret_yield_in_except():
    try:
        try:
            yield 1
            raiser(None)
        except Oops as e:
            return (yield 2)
    finally:
        log.append("last")
        yield 3
log.clear()
g = ret_yield_in_except()
assert next(g) == 1
assert next(g) == 2
assert not released()
assert g.send(9) == 3
assert released()
assert log == ["last"], log
try:
    next(g)
except StopIteration as stop:
    assert stop.value == 9
else:
    assert False
del g
assert gc.collect() == 0
import asyncio
async def tick():
    await asyncio.sleep(0)
async def coro_ret():
    for i in range(3):
        try:
            await tick()
            raiser(None)
        except Oops:
            if i == 1:
                return i
            continue
    return -1
assert asyncio.run(coro_ret()) == 1
assert released()
