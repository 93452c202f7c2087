import gc
import weakref
log = []
class A:
    def __init__(self, n):
        self.n = n
    def __del__(self):
        log.append(('del', self.n))
a = A(1)
log.append('before')
del a
log.append('after del')
b = A(2)
b = A(3)
log.append('rebound')
def f():
    c = A(4)
    log.append('in f')
f()
log.append('after f')
class B(A):
    pass
x = B(5)
x = None
log.append('subclass')
class Boom:
    def __del__(self):
        log.append('boom')
        raise ValueError('ignored')
y = Boom()
del y
log.append('after boom')
keep = []
class R:
    def __del__(self):
        log.append('resurrect')
        keep.append(self)
r = R()
w = weakref.ref(r)
del r
log.append(len(keep))
assert w() is keep[0]
keep.clear()
assert w() is None
log.append('cleared')
c = A(6)
c.me = c
del c
log.append('cycle dropped')
gc.collect()
log.append('collected')
assert log == [
    'before', ('del', 1), 'after del', ('del', 2), 'rebound', 'in f', ('del', 4), 'after f',
    ('del', 5), 'subclass', 'boom', 'after boom', 'resurrect', 1, 'cleared',
    'cycle dropped', ('del', 6), 'collected',
], log
