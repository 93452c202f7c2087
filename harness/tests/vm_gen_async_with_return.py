import asyncio
log = []
class Box:
    def __init__(self, tag):
        self.tag = tag
class Manager:
    def __init__(self, name):
        self.name = name
    async def __aenter__(self):
        log.append(("enter", self.name))
        await asyncio.sleep(0)
        return self
    async def __aexit__(self, *exc):
        log.append(("exit", self.name, exc))
        await asyncio.sleep(0)
        log.append(("exited", self.name))
        return False
async def one(x):
    async with Manager("a") as m:
        log.append(("body", m.name))
        return Box(x)
    log.append("unreachable")
async def nested():
    try:
        async with Manager("outer"):
            async with Manager("inner"):
                await asyncio.sleep(0)
                return 10
    finally:
        log.append("finally")
async def main():
    b = await one(7)
    log.append(("got", b.tag))
    log.append(("nested", await nested()))
asyncio.run(main())
assert log == [
    ("enter", "a"), ("body", "a"), ("exit", "a", (None, None, None)), ("exited", "a"),
    ("got", 7),
    ("enter", "outer"), ("enter", "inner"),
    ("exit", "inner", (None, None, None)), ("exited", "inner"),
    ("exit", "outer", (None, None, None)), ("exited", "outer"), "finally",
    ("nested", 10),
], log
