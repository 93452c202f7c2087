//! `print(...)`: the text a workload prints, kept so that `cargo gpumem run` can show it
//! beside the memory report (users debug leaks with prints of `memory_allocated()`).
//!
//! Printing creates no object the collector sees (CPython's `print` writes to the stream
//! without allocating tracked objects), so nothing here touches the heap. Values print as
//! the model's `str()` knows them: a tensor's values are not modelled, so a tensor prints
//! its shape and device, not its numbers.

use super::interp::{Interpreter, R};
use crate::heap::{Sym, Value};

/// Text kept per run. A workload printing every step of a long run would otherwise hold
/// its whole output in memory: past this many bytes lines are counted, not kept.
const KEPT_BYTES: usize = 64 * 1024;

/// What the workload printed: the first [`KEPT_BYTES`] of it, and how many lines came after.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Printed {
    /// Complete lines, in order.
    pub lines: Vec<String>,
    /// The line being written (`print(..., end="")`), not yet ended by a newline.
    pub partial: String,
    /// Lines printed after the kept text was full.
    pub dropped_lines: u64,
    kept_bytes: usize,
}

impl Printed {
    /// Appends `text` as a stream would: newlines end lines.
    pub fn write(&mut self, text: &str) {
        let mut pieces = text.split('\n');
        if let Some(first) = pieces.next() {
            self.append_partial(first);
        }
        for piece in pieces {
            let line = std::mem::take(&mut self.partial);
            if self.kept_bytes + line.len() <= KEPT_BYTES && self.dropped_lines == 0 {
                self.kept_bytes += line.len() + 1;
                self.lines.push(line);
            } else {
                self.dropped_lines += 1;
            }
            self.append_partial(piece);
        }
    }

    fn append_partial(&mut self, text: &str) {
        if self.partial.len() < KEPT_BYTES {
            self.partial.push_str(text);
        }
    }

    /// The lines, the unfinished last one included (a stream shows it at exit).
    pub fn all_lines(&self) -> impl Iterator<Item = &str> {
        self.lines
            .iter()
            .map(String::as_str)
            .chain((!self.partial.is_empty()).then_some(self.partial.as_str()))
    }

    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.partial.is_empty() && self.dropped_lines == 0
    }
}

impl Interpreter<'_> {
    /// `print(*objects, sep=' ', end='\n', file=None, flush=False)`. `file=` is accepted
    /// and its text kept with the rest (`sys.stderr` and `sys.stdout` read as one stream).
    pub(super) fn print_call(&mut self, pos: &[Value], kw: &[(Sym, Value)]) -> R<Value> {
        let mut sep = " ".to_string();
        let mut end = "\n".to_string();
        for &(name, value) in kw {
            let slot = match self.names.name(name) {
                "sep" => &mut sep,
                "end" => &mut end,
                "file" | "flush" => continue,
                other => {
                    let message =
                        format!("TypeError: '{other}' is an invalid keyword argument for print()");
                    return self.error(message);
                }
            };
            match value {
                Value::None => {}
                Value::Str(s) => *slot = self.names.name(s).to_string(),
                other => {
                    let which = self.names.name(name).to_string();
                    let message = format!(
                        "TypeError: {which} must be None or a string, not {}",
                        self.value_type_name(other)
                    );
                    return self.error(message);
                }
            }
        }
        let mut text = String::new();
        for (i, &v) in pos.iter().enumerate() {
            if i > 0 {
                text.push_str(&sep);
            }
            text.push_str(&self.display(v));
        }
        text.push_str(&end);
        self.printed.write(&text);
        Ok(Value::None)
    }
}

#[cfg(test)]
mod tests {
    use super::Printed;

    #[test]
    fn newlines_end_lines_and_a_partial_line_is_kept() {
        let mut p = Printed::default();
        p.write("a b\n");
        p.write("step ");
        p.write("1\nc");
        assert_eq!(p.lines, ["a b", "step 1"]);
        assert_eq!(p.all_lines().collect::<Vec<_>>(), ["a b", "step 1", "c"]);
    }

    #[test]
    fn past_the_kept_text_lines_are_counted() {
        let mut p = Printed::default();
        let line = "x".repeat(1023);
        for _ in 0..70 {
            p.write(&format!("{line}\n"));
        }
        assert_eq!(p.lines.len(), 64);
        assert_eq!(p.dropped_lines, 6);
    }
}
