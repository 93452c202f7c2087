import asyncio
import sys
log = []
class Box:
    pass
async def agen(box):
    try:
        x = yield 1
        log.append(("got", x))
        await asyncio.sleep(0)
        yield 2
        yield 3
    finally:
        log.append("fin")
async def slow():
    await asyncio.sleep(0)
    yield 1
    await asyncio.sleep(0)
    yield 2
async def main():
    g = agen(Box())
    a = g.asend(None)
    assert await a == 1
    try:
        await a
    except RuntimeError as e:
        log.append(str(e))
    assert await g.asend("hello") == 2
    t = g.athrow(ValueError)
    try:
        await t
    except ValueError:
        log.append("thrown")
    try:
        await t
    except RuntimeError as e:
        log.append(str(e))
    try:
        await g.__anext__()
    except StopAsyncIteration:
        log.append("stop")
    g2 = agen(Box())
    assert await g2.__anext__() == 1
    c = g2.aclose()
    assert await c is None
    try:
        await c
    except RuntimeError as e:
        log.append(str(e))
    assert await g2.aclose() is None
    s = slow()
    async def take():
        return await s.__anext__()
    task = asyncio.create_task(take())
    await asyncio.sleep(0)
    try:
        await s.__anext__()
    except RuntimeError as e:
        log.append(str(e))
    assert await task == 1
    if sys.version_info >= (3, 10):
        g3 = agen(Box())
        assert await anext(g3) == 1
        assert await anext(g3, "d") == 2
        await g3.aclose()
        assert await anext(g3, "d") == "d"
    else:
        try:
            anext
        except NameError:
            log.extend([("got", None), "fin"])
asyncio.run(main())
assert log == [
    "cannot reuse already awaited __anext__()/asend()",
    ("got", "hello"),
    "fin",
    "thrown",
    "cannot reuse already awaited aclose()/athrow()",
    "stop",
    "fin",
    "cannot reuse already awaited aclose()/athrow()",
    "anext(): asynchronous generator is already running",
    ("got", None),
    "fin",
], log
