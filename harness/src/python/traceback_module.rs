//! `import traceback`: the formatting functions reports call in their `except` blocks, and
//! `traceback.clear_frames(tb)`, the documented fix for a kept exception that pins the
//! tensors of the frames it passed (exception → traceback → frame → locals).
//!
//! Formatting returns the text (nothing is printed: `print_exc` and `print_exception` are
//! silent, as a run has no stderr). Approximation: CPython builds a `TracebackException`
//! and `FrameSummary` objects while formatting and frees them before returning; those
//! short-lived objects are not modelled (they add to the collector's allocation count only).

use super::interp::{Interpreter, R};
use super::natives::Native;
use crate::heap::{ObjId, ObjKind, Sym, Value};

/// `traceback.attr`.
pub(super) fn module_attr(attr: &str) -> Option<Value> {
    use Native::*;
    let n = match attr {
        "format_exc" => TracebackFormatExc,
        "print_exc" => TracebackPrintExc,
        "format_exception" => TracebackFormatException,
        "print_exception" => TracebackPrintException,
        "clear_frames" => TracebackClearFrames,
        _ => return None,
    };
    Some(Value::Native(n.id()))
}

impl<'a> Interpreter<'a> {
    /// Calls one of the `traceback` functions (arguments borrowed).
    pub(super) fn call_traceback(
        &mut self,
        n: Native,
        p: &[Value],
        kw: &[(Sym, Value)],
    ) -> R<Value> {
        use Native::*;
        // `limit`, `chain` and `file` change only the text or where it goes (nowhere).
        const KEYWORDS: &[&str] = &["limit", "chain", "file", "etype", "value", "tb"];
        if let Some((k, _)) = kw
            .iter()
            .find(|(k, _)| !KEYWORDS.contains(&self.names.name(*k)))
        {
            let k = self.names.name(*k).to_string();
            return self.error(format!("TypeError: unexpected keyword argument '{k}'"));
        }
        match n {
            TracebackFormatExc | TracebackPrintExc => {
                let text = match self.exc.handling.last() {
                    Some(&e) => self.traceback_text(e).concat(),
                    None => "NoneType: None\n".to_string(),
                };
                Ok(match n {
                    TracebackFormatExc => self.new_str(&text),
                    _ => Value::None,
                })
            }
            TracebackFormatException | TracebackPrintException => {
                let exception = self.formatted_exception(p, kw)?;
                let lines = match exception {
                    Some(e) => self.traceback_text(e),
                    None => vec!["NoneType: None\n".to_string()],
                };
                if n == TracebackPrintException {
                    return Ok(Value::None);
                }
                let items: Vec<Value> = lines.iter().map(|l| self.new_str(l)).collect();
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            TracebackClearFrames => match p {
                [tb] if kw.is_empty() => {
                    self.clear_traceback_frames(*tb);
                    Ok(Value::None)
                }
                _ => self.error("TypeError: clear_frames() takes exactly one argument (tb)"),
            },
            _ => self.error("TypeError: not a traceback function"),
        }
    }

    /// The exception `format_exception`/`print_exception` describe: `(exc)` from 3.10,
    /// else `(etype, value, tb)` whose `value` is the exception.
    fn formatted_exception(&mut self, p: &[Value], kw: &[(Sym, Value)]) -> R<Option<ObjId>> {
        let minor = self.heap.profile.version.minor;
        if minor < 10 && p.len() + kw.iter().filter(|(k, _)| self.is_exc_triple(*k)).count() < 3 {
            return self.error(
                "TypeError: format_exception() missing required positional arguments: 'etype', 'value' and 'tb' (before 3.10)",
            );
        }
        let value = match p {
            [exc] if minor >= 10 => self.keyword(kw, "value").unwrap_or(*exc),
            [_, value, ..] => *value,
            [_] => self.keyword(kw, "value").unwrap_or(Value::None),
            [] => {
                return self
                    .error("TypeError: format_exception() missing required positional argument");
            }
        };
        match value {
            Value::None => Ok(None),
            Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Exception(_)) => Ok(Some(id)),
            _ => self.error("TypeError: format_exception() expects an exception"),
        }
    }

    /// `etype`, `value` or `tb` given by keyword (the ≤ 3.9 signature's names).
    fn is_exc_triple(&self, k: Sym) -> bool {
        matches!(self.names.name(k), "etype" | "value" | "tb")
    }

    /// The lines CPython prints for `exception`: its traceback entries and summary (the
    /// chained `__cause__`/`__context__` sections are not rendered).
    fn traceback_text(&self, exception: ObjId) -> Vec<String> {
        let entries = self.traceback_entries(exception);
        let mut lines = Vec::with_capacity(entries.len() + 2);
        if !entries.is_empty() {
            lines.push("Traceback (most recent call last):\n".to_string());
        }
        for (line, name) in entries {
            lines.push(format!("  File \"<workload>\", line {line}, in {name}\n"));
        }
        lines.push(format!("{}\n", self.exception_summary(exception)));
        lines
    }

    /// `traceback.clear_frames(tb)`: `tb.tb_frame.clear()` for each entry, ignoring the
    /// `RuntimeError` of a frame still executing (CPython's `clear_frames` catches it).
    fn clear_traceback_frames(&mut self, mut tb: Value) {
        while let Value::Obj(id) = tb {
            let (frame, next) = match self.heap.kind(id) {
                ObjKind::Traceback(t) => (t.frame, t.next),
                _ => return,
            };
            let running = matches!(self.heap.kind(frame), ObjKind::Frame(f) if f.running);
            if !running {
                // Cannot fail for a frame that is not running.
                let _ = self.clear_frame(frame);
            }
            tb = next.map_or(Value::None, Value::Obj);
        }
    }
}
