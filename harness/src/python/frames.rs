//! Frame objects and traceback entries.
//!
//! On CPython ≤ 3.10 every call has a frame object (the interpreter counts it at the call:
//! its code's zombie frame, the frame free list, or a new object). From 3.11 frames live on
//! a C stack and a frame object is created only when something takes the frame, such as a
//! traceback (`PyTraceBack_Here` → `_PyFrame_GetFrameObject`), and counted then.
//!
//! When a call returns while its frame object is still referenced, the object keeps the
//! frame's locals (3.11+: `take_ownership` copies them in) and links `f_back` to the
//! caller's frame object, created for it if needed. That is how a stored exception keeps
//! tensors alive: exception → traceback → frame → locals.

use super::interp::{Exc, Interpreter};
use super::small_map::SmallMap;
use crate::heap::{FrameData, FrameRelease, ObjId, ObjKind, Sym, TracebackData, Value};

impl<'a> Interpreter<'a> {
    /// The frame object of the running frame at `index` (borrowed: the running frame holds
    /// one reference), created on first use.
    pub(super) fn frame_object(&mut self, index: usize) -> ObjId {
        if let Some(id) = self.frames[index].object {
            return id;
        }
        let frame = &self.frames[index];
        let release = match (frame.code, frame.used_zombie) {
            _ if !self.heap.profile.frame_objects => FrameRelease::Counted,
            (Some(code), true) => FrameRelease::Zombie { code },
            _ => FrameRelease::FreeList,
        };
        let kind = ObjKind::Frame(Box::new(FrameData {
            name: frame.name,
            line: frame.line,
            locals: Vec::new(),
            cells: Vec::new(),
            back: None,
            running: true,
            release,
        }));
        // ≤ 3.10 the object exists since the call and was counted then.
        let id = if self.heap.profile.frame_objects {
            self.heap.insert(kind)
        } else {
            self.alloc(kind)
        };
        self.frames[index].object = Some(id);
        id
    }

    /// After a collection that closed a suspended generator on 3.12
    /// (`GcProfile::generator_close_takes_running_frame`): the running function's frame
    /// gets its frame object, not counted (allocated inside the collection) but counted down
    /// when it is freed at the frame's return. A module frame's object would live until the
    /// end of the workload and never move the count, so it is not made.
    pub(super) fn frame_object_from_generator_close(&mut self) {
        let index = self.frames.len().wrapping_sub(1);
        if index == 0 || index == usize::MAX || self.frames[index].object.is_some() {
            return;
        }
        let frame = &self.frames[index];
        if frame.code.is_none() {
            return;
        }
        let kind = ObjKind::Frame(Box::new(FrameData {
            name: frame.name,
            line: frame.line,
            locals: Vec::new(),
            cells: Vec::new(),
            back: None,
            running: true,
            release: FrameRelease::Counted,
        }));
        let id = self.heap.insert(kind);
        self.frames[index].object = Some(id);
    }

    /// Adds a traceback entry for the running frame to an exception in flight, once per
    /// frame it passes (`PyTraceBack_Here`); bare `raise` adds none.
    pub(super) fn note_traceback(&mut self, exc: &mut Exc) {
        let depth = self.frames.len();
        let Exc::Raised {
            exception,
            tb_depth,
            ..
        } = exc
        else {
            return;
        };
        if *tb_depth == Some(depth) {
            return;
        }
        *tb_depth = Some(depth);
        let exception = *exception;
        let frame = self.frame_object(depth - 1);
        let line = self.frames[depth - 1].line;
        if let ObjKind::Frame(f) = self.heap.kind_mut(frame) {
            f.line = line;
        }
        self.heap.incref(Value::Obj(frame));
        let next = match self.heap.kind_mut(exception) {
            ObjKind::Exception(e) => e.traceback.take(),
            _ => None,
        };
        let tb = self.alloc(ObjKind::Traceback(TracebackData { frame, next, line }));
        if let ObjKind::Exception(e) = self.heap.kind_mut(exception) {
            e.traceback = Some(tb);
        }
    }

    /// An error leaving the running frame or a `try` body: becomes an exception object if
    /// something could catch it, and gets the frame's traceback entry.
    pub(super) fn unwinding(&mut self, exc: Box<Exc>) -> Box<Exc> {
        if self.exc.handler_depth == 0 {
            return exc;
        }
        let mut exc = self.materialise(exc);
        self.note_traceback(&mut exc);
        exc
    }

    /// A returning call whose frame object exists: if it is referenced elsewhere it keeps
    /// the locals and cells and links to its caller; then the frame's reference goes.
    pub(super) fn retire_frame_object(
        &mut self,
        object: ObjId,
        mut locals: Vec<(Sym, Value)>,
        cells: SmallMap<Sym, ObjId>,
    ) {
        if self.heap.get(object).refcount > 1 {
            let back = match self.frames.len() {
                0 => None,
                n => Some(self.frame_object(n - 1)),
            };
            if let Some(b) = back {
                self.heap.incref(Value::Obj(b));
            }
            let cells: Vec<ObjId> = cells.into_values().collect();
            if let ObjKind::Frame(f) = self.heap.kind_mut(object) {
                f.running = false;
                f.back = back;
                std::mem::swap(&mut f.locals, &mut locals);
                f.cells = cells;
            }
        } else {
            self.heap.decref_all(locals.into_iter().map(|(_, v)| v));
            self.heap.decref_all(cells.into_values().map(Value::Obj));
            if let ObjKind::Frame(f) = self.heap.kind_mut(object) {
                f.running = false;
            }
        }
        self.heap.decref_id(object);
    }

    /// `tb.tb_frame`, `tb.tb_next`, `tb.tb_lineno`.
    pub(super) fn traceback_attr(&mut self, id: ObjId, name: &str) -> Option<Value> {
        let ObjKind::Traceback(t) = self.heap.kind(id) else {
            return None;
        };
        let v = match name {
            "tb_frame" => Value::Obj(t.frame),
            "tb_next" => t.next.map_or(Value::None, Value::Obj),
            "tb_lineno" => Value::Int(i64::from(t.line)),
            _ => return None,
        };
        self.heap.incref(v);
        Some(v)
    }

    /// `frame.f_back`, `frame.f_lineno`, `frame.f_code.co_name` is not modelled.
    pub(super) fn frame_attr(&mut self, id: ObjId, name: &str) -> Option<Value> {
        let ObjKind::Frame(f) = self.heap.kind(id) else {
            return None;
        };
        let v = match name {
            "f_back" => f.back.map_or(Value::None, Value::Obj),
            "f_lineno" => Value::Int(i64::from(f.line)),
            _ => return None,
        };
        self.heap.incref(v);
        Some(v)
    }

    /// `frame.clear()`: drops the locals of a frame whose call has returned (the fix for a
    /// traceback that keeps tensors); a running frame cannot be cleared.
    pub(super) fn clear_frame(&mut self, id: ObjId) -> super::interp::R<()> {
        let dropped = match self.heap.kind_mut(id) {
            ObjKind::Frame(f) if f.running => None,
            ObjKind::Frame(f) => {
                let mut out: Vec<Value> = f.locals.drain(..).map(|(_, v)| v).collect();
                out.extend(f.cells.drain(..).map(Value::Obj));
                Some(out)
            }
            _ => Some(Vec::new()),
        };
        match dropped {
            Some(values) => {
                self.heap.decref_all(values);
                Ok(())
            }
            None => self.error("RuntimeError: cannot clear an executing frame"),
        }
    }
}
