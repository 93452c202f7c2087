//! A frame's local variables by slot (CPython's `localsplus` for plain locals): the slot of
//! each name is fixed at compile time (`Code::varnames`), so a load is an index, not a
//! search, and a dying frame releases its locals in slot order as CPython does.

use crate::heap::{Sym, Value};

/// The plain locals of one frame, indexed by slot; `None` is unbound.
#[derive(Default)]
pub(in crate::python) struct Locals {
    slots: Vec<Option<Value>>,
}

impl Locals {
    /// `n` unbound slots, in a buffer reused from a returned frame.
    pub(in crate::python) fn with_slots(mut buffer: Vec<Option<Value>>, n: usize) -> Locals {
        buffer.clear();
        buffer.resize(n, None);
        Locals { slots: buffer }
    }

    /// How many slots the frame's code has.
    pub(in crate::python) fn len(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    pub(in crate::python) fn get(&self, slot: u32) -> Option<Value> {
        self.slots.get(slot as usize).copied().flatten()
    }

    /// Binds a slot, returning the previous value (to release).
    #[inline]
    pub(in crate::python) fn set(&mut self, slot: u32, value: Value) -> Option<Value> {
        self.slots[slot as usize].replace(value)
    }

    /// Unbinds a slot and hands its value over.
    #[inline]
    pub(in crate::python) fn take(&mut self, slot: u32) -> Option<Value> {
        self.slots.get_mut(slot as usize).and_then(Option::take)
    }

    /// The bound values in slot order: the order a dying frame releases them.
    pub(in crate::python) fn drain(&mut self) -> impl Iterator<Item = Value> + '_ {
        self.slots.iter_mut().filter_map(Option::take)
    }

    /// The emptied buffer, for a later frame.
    pub(in crate::python) fn into_buffer(mut self) -> Vec<Option<Value>> {
        debug_assert!(self.slots.iter().all(Option::is_none), "drained first");
        self.slots.clear();
        self.slots
    }

    /// The bound locals by name in slot order (what a frame or generator object keeps),
    /// appended to `out`; the slots are left unbound.
    pub(in crate::python) fn drain_named(&mut self, varnames: &[Sym], out: &mut Vec<(Sym, Value)>) {
        for (slot, name) in self.slots.iter_mut().zip(varnames) {
            if let Some(v) = slot.take() {
                out.push((*name, v));
            }
        }
    }

    /// Binds the named values back to their slots (`entries` in slot order, as
    /// [`Locals::drain_named`] made them); what has no slot (never, for lists that this
    /// module wrote) stays in `entries` for the caller to release.
    pub(in crate::python) fn fill_named(
        &mut self,
        varnames: &[Sym],
        entries: &mut Vec<(Sym, Value)>,
    ) {
        let mut slot = 0;
        let slots = &mut self.slots;
        entries.retain(|&(name, value)| {
            // Slot order: each entry's slot is at or after the previous one's.
            let found = (varnames[slot..].iter().position(|n| *n == name))
                .map(|i| slot + i)
                .or_else(|| varnames.iter().position(|n| *n == name));
            match found {
                Some(i) => {
                    slot = i;
                    slots[i] = Some(value);
                    false
                }
                None => true,
            }
        });
    }

    /// The value of a name, by a search of the slot table (the by-name readers:
    /// `locals()`, `super()`, tracebacks).
    pub(in crate::python) fn by_name(&self, varnames: &[Sym], name: Sym) -> Option<Value> {
        let slot = varnames.iter().position(|n| *n == name)?;
        self.get(slot as u32)
    }
}
