import asyncio
import gc
import sys
gc.disable()
out = []
async def ag():
    try:
        yield 1
        yield 2
        yield 3
        yield 4
        yield 5
    finally:
        pass
def cnt():
    return gc.get_count()[0]
async def main():
    g = ag()
    await g.__anext__()
    gc.collect(); c0 = cnt(); x = None; out.append(cnt() - c0)
    gc.collect(); c0 = cnt(); a = g.asend(None); out.append(cnt() - c0)
    gc.collect(); c0 = cnt(); t = g.athrow(ValueError); out.append(cnt() - c0)
    gc.collect(); c0 = cnt(); c = g.aclose(); out.append(cnt() - c0)
    assert await a == 2
    assert await g.__anext__() == 3
    if sys.version_info >= (3, 10):
        gc.collect(); c0 = cnt(); n = anext(g); out.append(cnt() - c0)
        assert await n == 4
        gc.collect(); c0 = cnt(); n = anext(g, 0); out.append(cnt() - c0)
        assert await n == 5
    try:
        await t
    except ValueError:
        pass
    assert await c is None
asyncio.run(main())
