//! A frame's local variables by slot (CPython's `localsplus` for plain locals): the slot of
//! each name is fixed at compile time (`Code::varnames`), so a load is an index, not a
//! search, and a dying frame releases its locals in slot order as CPython does. The emptied
//! tables (and calls' argument vectors) are kept for later frames: no Rust allocation per call.

use super::{Frame, Interpreter};
use crate::heap::{Sym, Value};

/// Most spare tables kept, and the most entries one may hold (a call with many locals does
/// not pin its table).
const SPARE: usize = 64;

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

impl Interpreter<'_> {
    /// An empty argument vector with room for `n` values, reused from an earlier call: a
    /// call's arguments travel to the callee's slots without a Rust allocation per call.
    pub(in crate::python) fn argument_vector(&mut self, n: usize) -> Vec<Value> {
        let mut args = self.spare_args.pop().unwrap_or_default();
        args.reserve(n);
        args
    }

    /// Keeps an emptied argument vector for a later call.
    pub(in crate::python) fn spare_argument_vector(&mut self, mut args: Vec<Value>) {
        args.clear();
        if args.capacity() > 0 && self.spare_args.len() < SPARE && args.capacity() <= SPARE {
            self.spare_args.push(args);
        }
    }

    /// Releases a dying frame's locals (in slot order, as CPython clears `localsplus`) and
    /// then its cells, keeping the emptied tables for later frames.
    pub(in crate::python) fn release_frame_contents(&mut self, frame: Frame) {
        let mut locals = frame.locals;
        let mut cells = frame.cells.into_entries();
        // 3.11+: a parameter's cell sits in the parameter's slot of `localsplus` (the cells
        // list starts with them, `build_frame`), so it is released there.
        let codes = std::rc::Rc::clone(&self.codes);
        let cell_slots = match frame.code {
            Some(code) if self.heap.profile.cells_in_localsplus_order && !cells.is_empty() => {
                &codes.get(code).cell_param_slots[..]
            }
            _ => &[],
        };
        let mut next_cell = 0;
        if cell_slots.is_empty() {
            for v in locals.drain() {
                self.heap.decref(v);
            }
        } else {
            for slot in 0..locals.len() as u32 {
                if cell_slots.contains(&slot) {
                    if let Some(&(_, cell)) = cells.get(next_cell) {
                        self.heap.decref(Value::Obj(cell));
                        next_cell += 1;
                    }
                } else if let Some(v) = locals.take(slot) {
                    self.heap.decref(v);
                }
            }
        }
        let buffer = locals.into_buffer();
        if self.spare_locals.len() < SPARE && buffer.capacity() <= SPARE {
            self.spare_locals.push(buffer);
        }
        self.heap
            .decref_all(cells.drain(next_cell..).map(|(_, c)| Value::Obj(c)));
        cells.clear();
        if cells.capacity() > 0 && self.spare_cells.len() < SPARE && cells.capacity() <= SPARE {
            self.spare_cells.push(cells);
        }
    }

    /// A returning frame whose frame object exists: its locals by name (slot order) and
    /// cells go to the frame object if something else holds it (`frames.rs`).
    pub(in crate::python) fn retire_frame(&mut self, mut frame: Frame) {
        let object = frame.object.expect("a frame object");
        let mut named = Vec::new();
        if let Some(code) = frame.code {
            let codes = std::rc::Rc::clone(&self.codes);
            frame
                .locals
                .drain_named(&codes.get(code).varnames, &mut named);
        }
        self.retire_frame_object(object, named, frame.cells);
    }

    /// The bound locals of a frame by name, in slot order (what a suspended generator
    /// keeps); the slot table goes back to the spare ones.
    pub(in crate::python) fn take_named_locals(
        &mut self,
        code: u32,
        locals: Locals,
    ) -> Vec<(Sym, Value)> {
        let mut named = self.spare_named.pop().unwrap_or_default();
        let mut locals = locals;
        let codes = std::rc::Rc::clone(&self.codes);
        locals.drain_named(&codes.get(code).varnames, &mut named);
        let buffer = locals.into_buffer();
        if self.spare_locals.len() < SPARE && buffer.capacity() <= SPARE {
            self.spare_locals.push(buffer);
        }
        named
    }

    /// A frame's slot table for `code` filled from locals by name (a suspended generator's),
    /// whose emptied list goes back to the spare ones.
    pub(in crate::python) fn locals_from_named(
        &mut self,
        code: u32,
        mut named: Vec<(Sym, Value)>,
    ) -> Locals {
        let codes = std::rc::Rc::clone(&self.codes);
        let varnames = &codes.get(code).varnames;
        let mut locals =
            Locals::with_slots(self.spare_locals.pop().unwrap_or_default(), varnames.len());
        locals.fill_named(varnames, &mut named);
        self.heap.decref_all(named.drain(..).map(|(_, v)| v));
        if named.capacity() > 0 && self.spare_named.len() < SPARE && named.capacity() <= SPARE {
            self.spare_named.push(named);
        }
        locals
    }
}
