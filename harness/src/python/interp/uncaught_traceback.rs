//! The traceback of an exception that ends the run, located in the scenario file: what
//! CPython prints to stderr before it exits (`Traceback (most recent call last):`, one
//! `File ..., line N, in NAME` entry per frame the exception passed, outermost first), so
//! that `cargo gpumem run` can show where a workload failed beside what it printed first.
//! The chained `__cause__`/`__context__` sections and the source lines CPython quotes under
//! each entry are not rendered.

use super::Interpreter;
use crate::heap::{ObjId, ObjKind};

impl Interpreter<'_> {
    /// The entries of `exception`'s traceback (its `__traceback__` chain), each naming the
    /// scenario file and the file line of the statement the frame was running.
    pub(super) fn located_traceback(&self, exception: ObjId) -> Vec<String> {
        let mut tb = match self.heap.kind(exception) {
            ObjKind::Exception(e) => e.traceback,
            _ => None,
        };
        let mut lines = Vec::new();
        if tb.is_some() {
            lines.push("Traceback (most recent call last):".to_string());
        }
        while let Some(id) = tb {
            let ObjKind::Traceback(t) = self.heap.kind(id) else {
                break;
            };
            let name = match self.heap.kind(t.frame) {
                ObjKind::Frame(f) => self.names.name(f.name).to_string(),
                _ => "?".to_string(),
            };
            lines.push(format!(
                "  File \"{}\", line {}, in {name}",
                self.map.file(),
                t.line
            ));
            tb = t.next;
        }
        lines
    }

    /// The traceback of the exception that ended the last [`Interpreter::run`] with an
    /// error (empty when it ended otherwise, or with a model error rather than an exception).
    pub fn take_uncaught_traceback(&mut self) -> Vec<String> {
        std::mem::take(&mut self.uncaught_traceback)
    }
}
