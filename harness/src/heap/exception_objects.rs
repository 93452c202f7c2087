//! The objects an exception brings to life: the exception instance, its traceback entries
//! and the frame objects they hold. They matter for memory because a traceback keeps its
//! frames and each frame keeps its locals: a caught exception that is stored keeps every
//! tensor those frames referenced.

use super::{Attrs, Edge, ObjId, Value};

/// An instance of a `BaseException` subclass (CPython's `PyBaseExceptionObject`): its
/// fields are C slots, so unlike a plain instance it has no inline values; `__dict__` is
/// created on the first attribute store.
#[derive(Debug, Clone)]
pub struct ExceptionData {
    pub class: ObjId,
    /// `args`: a tuple object, or the empty tuple (not a heap object) as `None`.
    pub args: Option<ObjId>,
    pub traceback: Option<ObjId>,
    pub context: Option<ObjId>,
    pub cause: Option<ObjId>,
    pub suppress_context: bool,
    pub dict: Attrs,
    /// For a `torch.OutOfMemoryError` raised by the allocator model: the report to record
    /// if the exception ends the run.
    pub oom: Option<Box<crate::timeline::OomReport>>,
}

/// A frame object. While its call runs, the locals live in the interpreter's frame (they
/// are roots); when the call returns and the frame object is still referenced, the locals
/// move here, as CPython keeps them in the frame object.
#[derive(Debug, Clone)]
pub struct FrameData {
    /// The code's name (`<module>` for the module).
    pub name: super::Sym,
    pub line: u32,
    pub locals: Vec<(super::Sym, Value)>,
    /// Cells of the frame's cell and free variables.
    pub cells: Vec<ObjId>,
    /// `f_back`: the caller's frame object, linked when the call returns.
    pub back: Option<ObjId>,
    /// Whether the call is still running (its locals are elsewhere).
    pub running: bool,
    pub release: FrameRelease,
}

/// What freeing a frame object does to the collector's bookkeeping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameRelease {
    /// 3.11+: an ordinary GC object, counted at creation and uncounted when freed.
    Counted,
    /// ≤ 3.10: a frame object of `code`: parked as the code's zombie frame when that slot
    /// is empty, else onto the frame free list (see `heap/zombie_frames.rs`).
    Zombie { code: u32 },
    /// ≤ 3.10: a frame with no code object of its own: to the frame free list (or freed
    /// when it is full).
    FreeList,
}

/// `tb_frame`, `tb_next` and the line of one traceback entry.
#[derive(Debug, Clone)]
pub struct TracebackData {
    pub frame: ObjId,
    pub next: Option<ObjId>,
    pub line: u32,
}

pub(super) fn traverse_exception(e: &ExceptionData, value: &mut impl FnMut(Value, Edge)) {
    value(Value::Obj(e.class), Edge::Role("__class__"));
    if let Attrs::Dict(Some(d)) = e.dict {
        value(Value::Obj(d), Edge::Role("__dict__"));
    }
    for (slot, role) in [
        (e.args, "args"),
        (e.traceback, "__traceback__"),
        (e.context, "__context__"),
        (e.cause, "__cause__"),
    ] {
        if let Some(id) = slot {
            value(Value::Obj(id), Edge::Role(role));
        }
    }
}

pub(super) fn traverse_frame(f: &FrameData, value: &mut impl FnMut(Value, Edge)) {
    if let Some(b) = f.back {
        value(Value::Obj(b), Edge::Role("f_back"));
    }
    for (name, v) in &f.locals {
        value(*v, Edge::Attr(*name));
    }
    for c in &f.cells {
        value(Value::Obj(*c), Edge::Role("f_cells"));
    }
}

pub(super) fn traverse_traceback(t: &TracebackData, value: &mut impl FnMut(Value, Edge)) {
    if let Some(n) = t.next {
        value(Value::Obj(n), Edge::Role("tb_next"));
    }
    value(Value::Obj(t.frame), Edge::Role("tb_frame"));
}

/// `BaseException_clear`: everything but the class.
pub(super) fn clear_exception(e: &mut ExceptionData, out: &mut Vec<Value>) {
    if let Attrs::Dict(d) = &mut e.dict {
        out.extend(d.take().map(Value::Obj));
    }
    for slot in [&mut e.args, &mut e.traceback, &mut e.context, &mut e.cause] {
        out.extend(slot.take().map(Value::Obj));
    }
}

/// `frame_tp_clear`: the locals and `f_back` of a frame that is not running.
pub(super) fn clear_frame(f: &mut FrameData, out: &mut Vec<Value>) {
    if f.running {
        return;
    }
    out.extend(f.locals.drain(..).map(|(_, v)| v));
    out.extend(f.cells.drain(..).map(Value::Obj));
    out.extend(f.back.take().map(Value::Obj));
}

/// `tb_clear`.
pub(super) fn clear_traceback(t: &mut TracebackData, out: &mut Vec<Value>) {
    out.extend(t.next.take().map(Value::Obj));
}

/// Every reference a dying exception, frame or traceback owns.
pub(super) fn exception_references(e: ExceptionData, push: &mut impl FnMut(Value)) {
    push(Value::Obj(e.class));
    let mut rest = Vec::new();
    let mut e = e;
    clear_exception(&mut e, &mut rest);
    rest.into_iter().for_each(push);
}

pub(super) fn frame_references(f: FrameData, push: &mut impl FnMut(Value)) {
    f.locals.into_iter().for_each(|(_, v)| push(v));
    f.cells.into_iter().for_each(|c| push(Value::Obj(c)));
    f.back.into_iter().for_each(|b| push(Value::Obj(b)));
}

pub(super) fn traceback_references(t: TracebackData, push: &mut impl FnMut(Value)) {
    push(Value::Obj(t.frame));
    t.next.into_iter().for_each(|n| push(Value::Obj(n)));
}
