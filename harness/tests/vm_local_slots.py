import sys
log = []
class D:
    def __init__(self, n):
        self.n = n
    def __del__(self):
        log.append(self.n)

# `a` is met before `b` in the source but bound after it: the frame releases its locals in
# slot order (co_varnames: p, flag, a, b, q), not in the order they were stored.
def met_first_released_first(p, flag):
    if flag:
        a = D('a-early')
    b = D('b')
    a = D('a')
    q = p
    return 1
met_first_released_first(D('p'), False)
assert log == ['a', 'b', 'p'], log
log.clear()

# A local deleted and bound again keeps its slot.
def rebound_after_del():
    a = D('a')
    b = D('b')
    del a
    a = D('a2')
    return 1
rebound_after_del()
assert log == ['a', 'a2', 'b'], log
log.clear()

# Parameters first in signature order (keyword-only after positional), then `*args`, then
# `**kwargs`, then the locals. 3.8-3.10 callers keep their arguments on their value stack
# until the call returns (CPython frees `m` first there); the model does not keep them, so
# only the set is checked there.
def star_parameters(*args, y=None, **kw):
    m = D('m')
    return 1
star_parameters(D('arg'), y=D('y'), w=D('w'))
if sys.version_info >= (3, 11):
    assert log == ['y', 'arg', 'w', 'm'], log
else:
    assert sorted(log) == ['arg', 'm', 'w', 'y'], log
log.clear()

# A parameter that a closure reads: 3.11+ keeps its cell in the parameter's slot (released
# first), 3.8-3.10 in the cells after the locals (co_cellvars sorted: c, x).
def cell_parameter(x):
    c = D('c')
    def inner():
        return x, c
    z = D('z')
    return 1
cell_parameter(D('x'))
if sys.version_info >= (3, 11):
    assert log == ['x', 'z', 'c'], log
else:
    assert log == ['z', 'c', 'x'], log
log.clear()

# A suspended generator's `close()`, and its deallocation: its frame's locals go in slot
# order too.
def gen(flag):
    if flag:
        a = D('ga-early')
    b = D('gb')
    a = D('ga')
    yield 1
g = gen(False)
next(g)
g.close()
assert log == ['ga', 'gb'], log
log.clear()
g = gen(False)
next(g)
del g
assert log == ['ga', 'gb'], log
log.clear()
