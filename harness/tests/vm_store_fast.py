log = []
class D:
    def __init__(self, n):
        self.n = n
    def __del__(self):
        log.append(self.n)

# Rebinding a local releases the value it replaces at that store, after the new value
# is made.
def rebind():
    a = D('a1')
    log.append('before')
    a = D('a2')
    log.append('after')
    return 1
rebind()
assert log == ['before', 'a1', 'after', 'a2'], log
log.clear()

# Unpacking to locals: each name gets its item, in target order; the replaced values go
# as each store happens.
def pair():
    return D('x'), D('y')
def unpack():
    a, b = D('a0'), D('b0')
    log.append('made')
    a, b = pair()
    log.append(a.n + b.n)
    [c, d] = [a, b]
    a = b = None
    log.append('cleared')
    return c.n + d.n
assert unpack() == 'xy'
assert log == ['made', 'a0', 'b0', 'xy', 'cleared', 'x', 'y'], log
log.clear()

# The wrong number of items is ValueError, and the targets keep their values.
def wrong_count():
    a, b = 1, 2
    try:
        a, b = (3, 4, 5)
    except ValueError:
        return a + b
    return -1
assert wrong_count() == 3

# A `for` loop's name target: each item replaces the previous one, the last stays bound
# (the list releases the others last item first).
def loop():
    items = [D('i0'), D('i1'), D('i2')]
    total = 0
    for item in items:
        total += 1
    items = None
    log.append('items gone')
    return (total, item.n)
assert loop() == (3, 'i2')
assert log == ['i1', 'i0', 'items gone', 'i2'], log
log.clear()

# `del` of locals releases at once; a deleted local is unbound again.
def delete():
    a = D('a')
    b = D('b')
    del a, b
    log.append('deleted')
    try:
        del a
    except NameError:
        log.append('unbound')
    a = D('a2')
    return a.n
assert delete() == 'a2'
assert log == ['a', 'b', 'deleted', 'unbound', 'a2'], log
log.clear()

# Augmented assignment to a local.
def count(n):
    k = 0
    while k < n:
        k += 2
    k -= 1
    return k
assert count(6) == 5

# `global` names store to the module, cells to the cell, in the same function body.
g = 0
def stores_elsewhere():
    global g
    g = 7
    x = 1
    def inner():
        return x
    x = 2
    for g in [8, 9]:
        pass
    return inner()
assert stores_elsewhere() == 2
assert g == 9
