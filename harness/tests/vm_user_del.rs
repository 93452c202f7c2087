//! User `__del__`: CPython calls it as soon as the last reference goes (`del`, rebinding,
//! leaving a scope), at most once per object (PEP 442), before the object's references are
//! dropped; a `__del__` that stores `self` resurrects it; what it raises is reported as
//! "Exception ignored in" and swallowed. Checked on the model and on every installed
//! CPython 3.8 – 3.15; the memory consequences on the model.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

const ORDER: &str = include_str!("vm_user_del_order.py");

#[test]
fn del_runs_when_the_last_reference_goes_once_and_before_the_object_is_freed() {
    probes::agrees_with_cpython("", 15, ORDER);
}

/// `__del__` sees the object whole (its tensor still allocated), and what it drops goes at
/// the `del`; a resurrected object keeps what `__del__` left it.
#[test]
fn del_frees_a_tensor_attribute_at_the_del_and_resurrection_keeps_the_object() {
    probes::ok(
        "
MB = 1024 * 1024
seen = []
keep = []
class Holder:
    def __init__(self):
        self.t = torch.zeros(1024, 256, device='cuda')
        self.u = torch.zeros(1024, 256, device='cuda')
    def __del__(self):
        seen.append(torch.cuda.memory_allocated())
        del self.t
        keep.append(self)
h = Holder()
assert torch.cuda.memory_allocated() == 2 * MB
del h
assert seen == [2 * MB], seen
assert len(keep) == 1
assert torch.cuda.memory_allocated() == MB, torch.cuda.memory_allocated()
keep.clear()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
assert seen == [2 * MB], seen
",
    );
}

/// A `__del__` object in a reference cycle: the collector runs its finalizer (the model
/// when the `gc.collect()` statement ends) and the cycle's tensor is freed by a collection.
#[test]
fn del_runs_for_cyclic_garbage_found_by_the_collector() {
    probes::ok(
        "
import gc
log = []
class Node:
    def __init__(self):
        self.t = torch.zeros(1024, 256, device='cuda')
        self.me = self
    def __del__(self):
        log.append(torch.cuda.memory_allocated())
n = Node()
del n
assert log == []
gc.collect()
assert log == [1024 * 1024], log
gc.collect()
assert torch.cuda.memory_allocated() == 0, torch.cuda.memory_allocated()
assert log == [1024 * 1024], log
",
    );
}
