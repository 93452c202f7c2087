# Finalizers queued together run one after another, each whole; one that drops another
# object's last reference runs that object's finalizer inside its own. A tuple and a list
# release their items last first.
import gc
log = []
class D:
    def __init__(self, n):
        self.n = n
    def __del__(self):
        log.append(('start', self.n))
        log.append(('end', self.n))
def h(x):
    return 0
h((D(1), D(2)))
log.append('s1')
pair = [D(3), D(4)]
pair = None
log.append('s2')
class N:
    def __init__(self, n, inner):
        self.n = n
        self.inner = inner
    def __del__(self):
        log.append(('start', self.n))
        self.inner = None
        log.append(('end', self.n))
n = N(5, D(6))
del n
log.append('s3')
a = D(7)
a.me = a
b = D(8)
b.me = b
del a, b
gc.collect()
log.append('s4')
assert log == [('start', 2), ('end', 2), ('start', 1), ('end', 1), 's1', ('start', 4), ('end', 4), ('start', 3), ('end', 3), 's2', ('start', 5), ('start', 6), ('end', 6), ('end', 5), 's3', ('start', 7), ('end', 7), ('start', 8), ('end', 8), 's4'], log
