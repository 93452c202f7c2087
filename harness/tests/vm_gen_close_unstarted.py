import gc
import sys
import weakref
gc.disable()
gc.collect()
class Box:
    pass
def gen(b):
    yield b
keeps = (3, 12) <= sys.version_info[:2] <= (3, 13)
b = Box()
alive = weakref.ref(b)
it = gen(b)
del b
it.close()
assert (alive() is not None) == keeps, alive()
assert list(it) == []
it.close()
del it
assert alive() is None
holder = [Box()]
alive = weakref.ref(holder[0])
it = gen(holder)
holder.append(it)
it.close()
del it, holder
assert (alive() is not None) == keeps
found = gc.collect()
assert alive() is None
assert found == (3 if keeps else 0), found
assert gc.get_count() == (0, 0, 0), gc.get_count()
