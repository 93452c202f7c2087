# `__del__` and weakref callbacks run where the last reference goes, between the operations
# of one expression (CPython calls them inside the decref).
import weakref
log = []
class D:
    def __init__(self, n):
        self.n = n
    def __del__(self):
        log.append(('del', self.n))
def f(x):
    log.append('f')
    return 1
def g():
    log.append('g')
    return 2
def h(*a):
    log.append('h')
    return 0
# a D dies inside f (its frame releases the argument) before g runs
h(f(D(1)), g())
log.append('s1')
# a walrus rebinding drops the last reference mid-expression
x = D(2)
h((x := None), g())
log.append('s2')
# a list item deleted in a call argument
lst = [D(3)]
h(lst.pop() and None, g())
log.append('s3')
# a temporary freed between two calls of one expression
r = f(D(4)) + f(D(5))
log.append('s4')
# a temporary attribute load
class E:
    def __init__(self):
        self.v = 7
    def __del__(self):
        log.append('del E')
y = E().v + g()
log.append('s5')
# a weakref callback when the last reference goes mid-expression
class W:
    pass
w = W()
ref = weakref.ref(w, lambda r: log.append('cb'))
h((w := None), g())
log.append('s6')
# a finalizer that raises: reported and ignored, the expression goes on
class Boom:
    def __del__(self):
        log.append('boom')
        raise ValueError('x')
h(f(Boom()), g())
log.append('s7')
# a boolean test drops the last reference before the other operand
z = D(8) and g()
log.append('s8')
assert log == ['f', ('del', 1), 'g', 'h', 's1', ('del', 2), 'g', 'h', 's2', ('del', 3), 'g', 'h', 's3', 'f', ('del', 4), 'f', ('del', 5), 's4', 'del E', 'g', 's5', 'cb', 'g', 'h', 's6', 'f', 'boom', 'g', 'h', 's7', ('del', 8), 'g', 's8'], log
