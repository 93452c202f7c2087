import gc
import sys
gc.disable()
log = []
keep = []
class R:
    def __del__(self):
        log.append('del R')
        keep.append(self)
class A:
    def __del__(self):
        log.append('del A')
def make():
    r = R()
    r.me = r
    a = A()
    a.me = a
    b = []
    b.append(b)
    c = {}
    c['c'] = c
make()
log.append(gc.collect())
log.append(gc.collect())
log.append(gc.collect())
keep.clear()
log.append(gc.collect())
log.append(gc.collect())
# A with its `__dict__` (up to 3.10), the list and the dict: freed by the collection that
# finalized them from 3.9, by the next one on 3.8; R (and its dict) once `keep` lets go.
dicts = 1 if sys.version_info < (3, 11) else 0
rest = 3 + dicts
if sys.version_info < (3, 9):
    expected = ['del R', 'del A', 0, rest, 0, 1 + dicts, 0]
else:
    expected = ['del R', 'del A', rest, 0, 0, 1 + dicts, 0]
assert log == expected, (log, expected)
