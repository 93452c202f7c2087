//! The traceback of an exception that ends the run, located in the scenario file: what
//! CPython prints to stderr before it exits (`Traceback (most recent call last):`, one
//! `File ..., line N, in NAME` entry per frame the exception passed, outermost first), so
//! that `cargo gpumem run` can show where a workload failed beside what it printed first.
//! The chained `__cause__`/`__context__` sections and the source lines CPython quotes under
//! each entry are not rendered.

use super::Interpreter;
use crate::heap::{ObjId, ObjKind};

impl Interpreter<'_> {
    /// The entries of `exception`'s traceback (its `__traceback__` chain), outermost first:
    /// the file line of the statement each frame was running and the frame's name.
    pub(in crate::python) fn traceback_entries(&self, exception: ObjId) -> Vec<(u32, String)> {
        let mut tb = match self.heap.kind(exception) {
            ObjKind::Exception(e) => e.traceback,
            _ => None,
        };
        let mut entries = Vec::new();
        while let Some(id) = tb {
            let ObjKind::Traceback(t) = self.heap.kind(id) else {
                break;
            };
            let name = match self.heap.kind(t.frame) {
                ObjKind::Frame(f) => self.names.name(f.name).to_string(),
                _ => "?".to_string(),
            };
            entries.push((t.line, name));
            tb = t.next;
        }
        entries
    }

    /// The traceback lines of `exception`, each entry naming the scenario file.
    pub(super) fn located_traceback(&self, exception: ObjId) -> Vec<String> {
        let entries = self.traceback_entries(exception);
        let mut lines = Vec::with_capacity(entries.len() + 1);
        if !entries.is_empty() {
            lines.push("Traceback (most recent call last):".to_string());
        }
        for (line, name) in entries {
            lines.push(format!(
                "  File \"{}\", line {line}, in {name}",
                self.map.file()
            ));
        }
        lines
    }

    /// The traceback of the exception that ended the last [`Interpreter::run`] with an
    /// error (empty when it ended otherwise, or with a model error rather than an exception).
    pub fn take_uncaught_traceback(&mut self) -> Vec<String> {
        std::mem::take(&mut self.uncaught_traceback)
    }
}
