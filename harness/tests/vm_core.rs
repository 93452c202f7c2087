//! Plain function bodies and the module body run on the VM (`vm/plain.rs`): their `if`,
//! `while` and `for` are instructions. Each script checks the control flow CPython runs
//! (`else` blocks, `break`/`continue` from nested loops and from an inner loop's `else`,
//! `return` out of nested loops, the order in which a loop's iterable is released) and is
//! checked on the model and on every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython`, `ok` and `run`
mod probes;

#[test]
fn loops_with_else_break_and_continue_run_as_cpython_runs_them() {
    probes::agrees_with_cpython(
        "",
        13,
        "
def walk(items, stop):
    seen = []
    for x in items:
        if x == stop:
            seen.append('stop')
            break
        if x % 2:
            continue
        seen.append(x)
    else:
        seen.append('else')
    return seen
assert walk([0, 1, 2, 3], 9) == [0, 2, 'else'], walk([0, 1, 2, 3], 9)
assert walk([0, 1, 2, 3], 2) == [0, 'stop'], walk([0, 1, 2, 3], 2)

def countdown(n):
    out = []
    while n > 0:
        n -= 1
        if n == 5:
            break
        out.append(n)
    else:
        out.append('done')
    return out
assert countdown(3) == [2, 1, 0, 'done']
assert countdown(8) == [7, 6]

def nested():
    out = []
    for i in range(3):
        for j in range(3):
            if j == 1:
                continue
            out.append((i, j))
        else:
            if i == 1:
                continue
            out.append(('else', i))
            if i == 2:
                break
    else:
        out.append('never')
    return out
assert nested() == [(0, 0), (0, 2), ('else', 0), (1, 0), (1, 2), (2, 0), (2, 2), ('else', 2)], nested()

def find(rows, wanted):
    for r, row in enumerate(rows):
        i = 0
        while i < len(row):
            if row[i] == wanted:
                return (r, i)
            i += 1
    return None
assert find([[1, 2], [3, 4]], 4) == (1, 1)
assert find([[1, 2], [3, 4]], 5) is None
total = 0
for k in range(4):
    if k == 2:
        continue
    total += k
else:
    total += 100
assert total == 104, total
",
    );
}

/// What a loop holds goes when CPython releases it: the iterator when it is exhausted
/// (before the `else` block), at `break`, and when `return` leaves nested loops (before
/// the caller's next statement).
#[test]
fn a_loop_releases_its_iterable_when_cpython_does() {
    probes::agrees_with_cpython(
        "",
        13,
        "
log = []
class Items:
    def __init__(self, name, n):
        self.name = name
        self.n = n
        self.i = 0
    def __iter__(self):
        return self
    def __next__(self):
        if self.i == self.n:
            raise StopIteration
        self.i += 1
        return self.i - 1
    def __del__(self):
        log.append('del ' + self.name)

def loop_else():
    for x in Items('a', 2):
        log.append(x)
    else:
        log.append('else')
    log.append('after')
loop_else()
assert log == [0, 1, 'del a', 'else', 'after'], log

log.clear()
def early():
    for x in Items('outer', 3):
        for y in Items('inner', 3):
            if y == 1:
                return x
    return None
assert early() == 0
log.append('returned')
assert log == ['del inner', 'del outer', 'returned'], log

log.clear()
for x in Items('m', 3):
    if x == 1:
        break
log.append('after break')
assert log == ['del m', 'after break'], log
",
    );
}

/// An exception raised in a loop of a plain function: the traceback names the lines
/// CPython names, and the loop's iterable is released as the exception leaves the frame.
#[test]
fn an_exception_leaving_loops_keeps_cpython_lines_and_releases_the_iterables() {
    probes::agrees_with_cpython(
        "",
        13,
        "
log = []
class Items:
    def __init__(self, n):
        self.items = list(range(n))
    def __iter__(self):
        return iter(self.items)
    def __del__(self):
        log.append('del')

def raise_line():
    try:
        raise KeyError
    except KeyError as k:
        return k.__traceback__.tb_lineno

def fails(n):
    i = 0
    while True:
        for x in Items(n):
            if x == 2:
                raise ValueError(x)
        i += 1

try:
    fails(3)
except ValueError as e:
    tb = e.__traceback__
    assert tb.tb_next.tb_lineno - raise_line() == 9, tb.tb_next.tb_lineno - raise_line()
    assert log == ['del'], log
    del tb
    del e
assert log == ['del'], log
",
    );
}

/// A loop inside a function called by the measured loop does not take the iterations over;
/// the module's first loop marks one iteration per pass, `break` closing the last.
#[test]
fn the_module_loop_marks_iterations_and_loops_in_calls_do_not() {
    let timeline = probes::ok(
        "
def step(n):
    out = []
    for i in range(n):
        while len(out) < i:
            out.append(torch.zeros(256, device='cuda'))
    return out
for it in range(6):
    kept = step(it)
    if it == 4:
        break
",
    );
    let marks: Vec<u32> = timeline.iterations.iter().map(|m| m.iteration).collect();
    assert_eq!(marks, vec![0, 1, 2, 3, 4]);
}
