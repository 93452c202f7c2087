//! The tuple hash `hash()` and set keys share (`sets.rs` `TupleHash`): CPython's
//! `tuplehash` over ints, floats, bools and nested tuples, and set keys equal by it,
//! checked on the model and every installed CPython 3.8 – 3.15 (the tuple hash is the same
//! xxHash round on all of them, 64-bit).

#[allow(dead_code)] // this file uses `agrees_with_cpython`
mod probes;

#[test]
fn tuple_hashes_are_cpython_s() {
    probes::agrees_with_cpython(
        "",
        15,
        "
assert hash((1, 2)) == -3550055125485641917, hash((1, 2))
assert hash((1, (2, 3.5), True)) == 7245000938040378342, hash((1, (2, 3.5), True))
assert hash(()) == hash(tuple())
assert hash(()) == 5740354900026072187
assert len({(1, 2), (1, 2.0), (1, 2)}) == 1
",
    );
}
