//! Frame locals by slot: a frame keeps its plain locals in CPython's `co_varnames` order
//! (parameters in signature order, `*args`, `**kwargs`, then the other locals as the
//! compiler first meets them) and a dying frame releases them in that order, then its
//! cells (CPython clears `localsplus` front to back; from 3.11 a parameter's cell sits in
//! the parameter's slot). Releasing them in the order they were first stored (the model's
//! earlier map) fails every case below. Each `__del__` logs when its object is freed; the
//! script is checked on the model (3.10, 3.11, 3.12) and on every installed CPython 3.8 – 3.13.

#[allow(dead_code)] // this file uses `agrees_with_cpython` and `ok`
mod probes;

const ORDER: &str = include_str!("vm_local_slots.py");

#[test]
fn a_dying_frame_releases_its_locals_in_slot_order_then_its_cells() {
    probes::agrees_with_cpython("", 13, ORDER);
}

/// Tensors held by a returning call's locals go in slot order: the object of the local met
/// first in the source is freed first, and every byte is back once the call returned.
#[test]
fn tensors_of_a_returning_call_are_freed_in_slot_order() {
    probes::ok(
        "
MB = 1024 * 1024
freed = []
class Probe:
    def __init__(self, name, t):
        self.name = name
        self.t = t
    def __del__(self):
        freed.append(self.name)
def step(flag):
    if flag:
        big = None
    small = Probe('small', torch.zeros(1024, 256, device='cuda'))
    big = Probe('big', torch.zeros(2048, 256, device='cuda'))
    assert torch.cuda.memory_allocated() == 3 * MB
    return 1
step(False)
assert freed == ['big', 'small'], freed
assert torch.cuda.memory_allocated() == 0
",
    );
}
