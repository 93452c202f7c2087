import asyncio
import gc
import weakref
gc.disable()
gc.collect()
class Box:
    pass
log = []
async def agen(tag, box):
    try:
        for i in range(3):
            yield i
    finally:
        log.append(("fin", tag))
keep = []
async def main():
    box = Box()
    alive = weakref.ref(box)
    g = agen("kept", box)
    del box
    keep.append(g)
    async for x in g:
        break
    log.append("broke")
    await asyncio.sleep(0)
    log.append("slept")
    return alive
alive = asyncio.run(main())
log.append("run-done")
assert log == ["broke", "slept", ("fin", "kept"), "run-done"], log
assert alive() is None
assert len(keep) == 1
