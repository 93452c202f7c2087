//! Stores to a function's plain locals by slot (`vm/store_fast.rs`): `name = v`, unpacking to
//! names, `for` targets, `name op= v` and `del` of names are resolved to the frame's slots when
//! the body is compiled, and behave as the name path did: the replaced value is released after
//! the store (logged by `__del__`), unbound locals raise, `global` names and cells still store
//! by name. The script is checked on the model (3.10, 3.11, 3.12) and on every installed
//! CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

use gpumem_harness::python::stores_resolved_to_slots;

const STORES: &str = include_str!("vm_store_fast.py");

#[test]
fn stores_by_slot_release_and_bind_as_cpython() {
    let before = stores_resolved_to_slots();
    probes::agrees_with_cpython("", 13, STORES);
    // Four runs (`agrees_with_cpython` runs the model on 3.10, 3.11 and 3.12, then 3.11 again),
    // each resolving the script's 19 local stores once per body (`a, b = 1, 2`, `a = b = None`,
    // the cell and the `global` stores keep their paths and are not counted).
    assert!(
        stores_resolved_to_slots() - before >= 4 * 19,
        "the function bodies' stores were not resolved to slots"
    );
}

/// Object counts are unchanged by storing by slot: a tensor bound to a local and rebound in
/// a loop is freed at each rebinding, and every byte is back once the call returned.
#[test]
fn rebinding_a_local_tensor_frees_the_old_one_at_the_store() {
    probes::ok(
        "
MB = 1024 * 1024
def step():
    t = torch.zeros(1024, 256, device='cuda')
    for i in range(3):
        t = torch.zeros(1024, 256, device='cuda')
        assert torch.cuda.memory_allocated() == MB, torch.cuda.memory_allocated()
    a, b = t, torch.zeros(1024, 256, device='cuda')
    assert torch.cuda.memory_allocated() == 2 * MB
    del t, a
    assert torch.cuda.memory_allocated() == MB
    b = None
    assert torch.cuda.memory_allocated() == 0
    return 1
step()
assert torch.cuda.memory_allocated() == 0
",
    );
}
