import sys
log = []
def normal():
    try:
        yield 1
    finally:
        log.append("finally")
        yield 2
        log.append("after")
assert list(normal()) == [1, 2]
assert log == ["finally", "after"], log
log.clear()
def failing():
    try:
        yield 1
        raise KeyError("k")
    finally:
        log.append(sys.exc_info()[0].__name__ if sys.exc_info()[0] else None)
        yield 2
        log.append(sys.exc_info()[0].__name__ if sys.exc_info()[0] else None)
it = failing()
assert next(it) == 1
assert next(it) == 2
assert sys.exc_info()[0] is None
try:
    next(it)
except KeyError as e:
    assert e.args == ("k",)
    log.append("caught")
assert log == ["KeyError", "KeyError", "caught"], log
log.clear()
it = normal()
next(it)
next(it)
it.close()
assert log == ["finally"], log
log.clear()
it = normal()
next(it)
try:
    it.close()
except RuntimeError as e:
    log.append(str(e))
assert log == ["finally", "generator ignored GeneratorExit"], log
log.clear()
def nested():
    for i in range(2):
        try:
            yield i
        finally:
            x = yield -i
            log.append(x)
it = nested()
assert next(it) == 0
assert next(it) == 0
assert it.send("a") == 1
assert it.send("b") == -1
try:
    it.send("c")
except StopIteration:
    log.append("done")
assert log == ["a", "c", "done"], log
