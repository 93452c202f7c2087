//! Generator objects: a suspended frame kept as data (instruction pointer, locals, cells
//! and the iterables of the loops in progress), owned by the generator while it is not
//! running. A suspended generator therefore keeps its locals, and the tensors they hold,
//! alive; a generator that is part of a reference cycle is found by the collector through
//! these references, as CPython's `gen_traverse` visits the generator's frame.

use super::{Edge, FrameRelease, Heap, ObjId, ObjKind, Sym, Value};

/// Where a generator is in its life (`inspect.getgeneratorstate`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenState {
    Created,
    Suspended,
    Running,
    Closed,
}

/// A generator and its frame.
#[derive(Debug, Clone)]
pub struct GeneratorData {
    /// The generator function (the model keeps the function where CPython keeps its code
    /// object; both are visited).
    pub func: ObjId,
    pub code: u32,
    pub name: Sym,
    /// A coroutine (`async def`): the same frame machinery, awaited rather than iterated.
    pub coroutine: bool,
    pub state: GenState,
    /// Index of the next instruction of the compiled body.
    pub ip: u32,
    /// The frame's line while suspended (for tracebacks and errors).
    pub line: u32,
    pub locals: Vec<(Sym, Value)>,
    pub cells: Vec<(Sym, ObjId)>,
    /// The VM's value stack: the iterable and position of each `for` loop in progress.
    pub stack: Vec<Value>,
    /// The `try`/`finally` blocks the frame is suspended in: the handler's instruction
    /// and the value-stack depth to unwind to (CPython's block stack / exception table).
    pub handlers: Vec<(u32, u32)>,
    /// Its frame object, once something took the frame (a traceback).
    pub frame_object: Option<ObjId>,
    /// ≤ 3.10: the separate frame object the generator owns until it finishes, and how
    /// freeing it settles the collector's bookkeeping. `None` from 3.11, where the frame
    /// is embedded in the generator object.
    pub frame_release: Option<FrameRelease>,
    /// Its finalizer (PEP 442's `tp_finalize`: `close()` when dropped while suspended) ran.
    pub finalized: bool,
    /// The exception its frame is handling while suspended in an `except` or `finally`
    /// block: two references, as CPython's frame holds it on its value stack and in the
    /// generator's `gi_exc_state` (both visited by `gen_traverse`).
    pub exc_state: Option<ObjId>,
    /// An async generator's `ag_running_async`: an `asend`/`athrow` awaitable of it is
    /// being awaited and has not finished (another one raises "already running").
    pub running_async: bool,
}

impl GeneratorData {
    /// Whether dropping it must first run its finalizer: suspended inside a `try` or `with`
    /// block, so `close()` runs code (`finally`, `except GeneratorExit`, `__exit__`).
    /// Suspended elsewhere, `close()` only releases the frame, as deallocation does.
    pub fn needs_finalizer(&self) -> bool {
        !self.finalized && self.state == GenState::Suspended && self.in_try_block()
    }

    /// Whether its finalizer (`close()`) runs no code, only releases the frame: suspended
    /// outside any `try`/`with` (≤ 3.11 `GeneratorExit` unwinds straight out of the frame;
    /// 3.12+ `close()` skips raising it when no handler surrounds the `yield`), or not yet
    /// started unless `close()` keeps such a frame
    /// (`GcProfile::generator_close_keeps_unstarted_frame`).
    pub fn closes_silently(&self, keeps_unstarted_frame: bool) -> bool {
        !self.finalized
            && match self.state {
                GenState::Suspended => !self.in_try_block(),
                GenState::Created => !keeps_unstarted_frame,
                _ => false,
            }
    }

    /// Whether a `try` or `with` block is set up in its frame (entries with handler
    /// `u32::MAX` mark running `except` clauses, `vm/generator_run.rs`).
    pub fn in_try_block(&self) -> bool {
        self.handlers
            .iter()
            .any(|&(handler, _)| handler != u32::MAX)
    }

    /// The references `gen_traverse` visits (the code and the frame's contents).
    pub fn traverse(&self, value: &mut impl FnMut(Value, Edge)) {
        value(Value::Obj(self.func), Edge::Role("gi_code"));
        for &(name, v) in &self.locals {
            value(v, Edge::Key(name));
        }
        for &(_, c) in &self.cells {
            value(Value::Obj(c), Edge::Role("gi_frame"));
        }
        for &v in &self.stack {
            value(v, Edge::Role("gi_frame"));
        }
        if let Some(f) = self.frame_object {
            value(Value::Obj(f), Edge::Role("gi_frame"));
        }
        if let Some(e) = self.exc_state {
            value(Value::Obj(e), Edge::Role("gi_frame"));
            value(Value::Obj(e), Edge::Role("gi_exc_state"));
        }
    }

    /// Drops the frame's references (the collector's `tp_clear`; also a finished frame).
    pub fn clear_frame(&mut self, out: &mut Vec<Value>) {
        out.extend(self.locals.drain(..).map(|(_, v)| v));
        out.extend(self.cells.drain(..).map(|(_, c)| Value::Obj(c)));
        out.append(&mut self.stack);
        self.handlers.clear();
        out.extend(self.frame_object.take().map(Value::Obj));
        if let Some(e) = self.exc_state.take() {
            out.extend([Value::Obj(e), Value::Obj(e)]);
        }
        self.state = GenState::Closed;
    }

    /// Every reference it owns, when it is freed. The deallocation cascade frees what reaches
    /// zero last pushed first, so they are pushed in reverse of CPython's order: the frame's
    /// slots go first, locals then cells then the value stack, in slot order
    /// (`_PyFrame_ClearLocals`), and the exception state, the frame object and the function
    /// after them.
    pub fn references(self, push: &mut impl FnMut(Value)) {
        push(Value::Obj(self.func));
        self.frame_object
            .into_iter()
            .for_each(|f| push(Value::Obj(f)));
        if let Some(e) = self.exc_state {
            push(Value::Obj(e));
            push(Value::Obj(e));
        }
        self.stack.into_iter().rev().for_each(&mut *push);
        self.cells
            .into_iter()
            .rev()
            .for_each(|(_, c)| push(Value::Obj(c)));
        self.locals.into_iter().rev().for_each(|(_, v)| push(v));
    }
}

impl Heap {
    /// Whether `id` is a generator whose `tp_finalize` (`close()`) must run before it goes
    /// (see [`GeneratorData::needs_finalizer`]); the collector asks this of its garbage.
    pub(super) fn generator_needs_finalizer(&self, id: ObjId) -> bool {
        matches!(self.kind(id), ObjKind::Generator(g) if g.needs_finalizer())
    }

    /// Marks the generator finalized and queues its `close()`, handing the queue one
    /// reference (the caller adds it).
    pub(super) fn queue_generator_finalizer(&mut self, id: ObjId) {
        if let ObjKind::Generator(g) = self.kind_mut(id) {
            g.finalized = true;
        }
        self.pending_finalizers.push(id);
    }

    /// PEP 442 in a collection: every started, unfinished generator in `garbage` (and an
    /// unstarted one, see [`GeneratorData::closes_silently`]) is finalized before
    /// anything is cleared. Those whose `close()` runs no code
    /// ([`GeneratorData::closes_silently`]) are closed here: their frames are released, and
    /// what that frees by reference counting (often the whole cycle, which ran through the
    /// frame) leaves `garbage` uncounted, as CPython counts only what finalizers left.
    pub(super) fn close_silent_garbage_generators(
        &mut self,
        garbage: &mut Vec<ObjId>,
        refs: &mut Vec<Value>,
    ) {
        let keeps = self.profile.generator_close_keeps_unstarted_frame;
        let mut closed = false;
        for &id in garbage.iter() {
            let silent = self.is_alive(id)
                && matches!(self.kind(id), ObjKind::Generator(g) if g.closes_silently(keeps));
            if !silent {
                continue;
            }
            // The collector holds the generator while its finalizer runs.
            self.get_mut(id).refcount += 1;
            refs.clear();
            if let ObjKind::Generator(g) = self.kind_mut(id) {
                g.finalized = true;
                g.clear_frame(refs);
            }
            for &v in refs.iter() {
                self.decref(v);
            }
            self.decref_id(id);
            closed = true;
        }
        refs.clear();
        if closed {
            garbage.retain(|&id| self.is_alive(id));
        }
    }
}
