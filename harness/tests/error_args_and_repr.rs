//! Runtime errors carry the arguments CPython gives them (`KeyError` its key), `repr()` of
//! the modelled values, `zip()` over strings, and set iteration.

#[allow(dead_code)]
mod probes;

use probes::ok;

#[test]
fn a_caught_key_error_carries_the_key() {
    ok("d = {'a': 1}
try:
    d['k']
    raise AssertionError('found')
except KeyError as e:
    assert e.args == ('k',), e.args
    assert e.args[0] == 'k'
    assert str(e) == \"'k'\", str(e)
try:
    {1: 2}[3]
except KeyError as e:
    assert e.args == (3,) and str(e) == '3'
try:
    d.pop('zz')
except KeyError as e:
    assert e.args[0] == 'zz'
try:
    del d['q']
except KeyError as e:
    assert e.args[0] == 'q'
s = {1}
try:
    s.remove('x')
except KeyError as e:
    assert e.args == ('x',)
try:
    raise KeyError('m')
except KeyError as e:
    assert str(e) == \"'m'\" and e.args == ('m',)
");
}

#[test]
fn other_runtime_errors_carry_their_message() {
    ok("try:
    [][1]
except IndexError as e:
    assert e.args == ('list index out of range',), e.args
class C:
    pass
try:
    C().foo
except AttributeError as e:
    assert len(e.args) == 1 and 'foo' in e.args[0]
");
}

#[test]
fn repr_of_modelled_values_is_cpythons() {
    ok("assert repr('a') == \"'a'\"
assert repr(\"it's\") == '\"it\\'s\"'
assert repr(1) == '1' and repr(1.5) == '1.5' and repr(None) == 'None' and repr(True) == 'True'
assert repr((1,)) == '(1,)'
assert repr([1, 'b', (2, 3)]) == \"[1, 'b', (2, 3)]\"
assert repr({'k': [1]}) == \"{'k': [1]}\"
assert repr(KeyError('k')) == \"KeyError('k')\"
");
}

#[test]
fn zip_walks_strings() {
    ok("assert list(zip('ab', [1, 2, 3])) == [('a', 1), ('b', 2)]
pairs = []
for c, n in zip('xy', 'zw'):
    pairs.append(c + n)
assert pairs == ['xz', 'yw']
");
}

/// With the loop walking the table from its start for each item, this loop would take
/// billions of steps; it keeps its position, as CPython's set iterator does.
#[test]
fn a_loop_over_a_set_visits_every_item_once() {
    ok("s = set(range(100000))
total = 0
count = 0
for x in s:
    total += x
    count += 1
assert count == 100000 and total == 99999 * 50000
");
}
