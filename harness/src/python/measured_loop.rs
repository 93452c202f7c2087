//! `# gpumem: measure`: the comment that names the loop whose passes are the measured
//! iterations. By default the first outermost loop to run is measured; when the module body
//! has loops of its own (outside any `def` or `class`, possibly under `if`/`with`/`try`),
//! only those qualify, so a short loop inside a function called at module level before the
//! training loop (a 2-pass helper loop) is not taken for it; a function's loop is measured
//! only when the module body has none. The default judges a report that
//! registers hooks (or builds a model) in a first loop and trains in a second on the wrong
//! loop; the marker, written at the end of the loop's first line, moves the measurement to
//! that loop (its first run, wherever it is: nested or inside a function).
//!
//! The marker is a comment so that the scenario stays valid Python, and it travels with the
//! loop when the workload is edited (a line number in the YAML would not).

use ruff_python_ast::token::TokenKind;
use ruff_python_ast::{Expr, Stmt};
use ruff_text_size::Ranged;

/// The directive's text after `#`.
const MARKER: &str = "gpumem: measure";

/// What identifies the marked loop while the workload runs: the start offset of a `for`
/// loop's iterable or of a `while` loop's condition (both the evaluator and the compiled
/// code of generators see that expression when the loop starts).
pub type LoopKey = u32;

/// Finds the marked loop: `Ok(None)` without a marker, or the offset and message of the
/// first misplaced, repeated or unknown `gpumem:` directive.
pub fn find(source: &str, body: &[Stmt]) -> Result<Option<LoopKey>, (u32, String)> {
    let Ok(parsed) = ruff_python_parser::parse_module(source) else {
        return Ok(None); // the syntax error is reported by the parse itself
    };
    let mut loops = Vec::new();
    collect_loops(body, &mut loops);
    let mut found: Option<(u32, LoopKey)> = None;
    for token in parsed.tokens().iter() {
        if token.kind() != TokenKind::Comment {
            continue;
        }
        let range = token.range();
        let text = &source[range.start().to_usize()..range.end().to_usize()];
        let directive = text.trim_start_matches('#').trim();
        let Some(rest) = directive.strip_prefix("gpumem:") else {
            continue;
        };
        let offset = range.start().to_u32();
        if rest.trim() != "measure" {
            return Err((
                offset,
                format!(
                    "unknown directive `# {directive}`; the one directive is `# {MARKER}`, \
                     written at the end of the first line of the loop to measure"
                ),
            ));
        }
        let line = line_of(source, offset);
        if let Some((first, _)) = found {
            return Err((
                offset,
                format!(
                    "a second `# {MARKER}` (the first is on line {} of the workload): \
                     one loop is measured",
                    line_of(source, first)
                ),
            ));
        }
        let Some(&(_, key)) = loops
            .iter()
            .find(|(start, _)| line_of(source, *start) == line)
        else {
            return Err((
                offset,
                format!(
                    "`# {MARKER}` marks the loop whose passes are measured, but line {line} of \
                     the workload starts no `for` or `while` loop; write it at the end of the \
                     loop's first line"
                ),
            ));
        };
        found = Some((offset, key));
    }
    Ok(found.map(|(_, key)| key))
}

/// Every `for`/`while` statement: its start offset and its [`LoopKey`].
fn collect_loops(body: &[Stmt], out: &mut Vec<(u32, LoopKey)>) {
    for stmt in body {
        match stmt {
            Stmt::For(f) => {
                out.push((f.range.start().to_u32(), key_of(&f.iter)));
                collect_loops(&f.body, out);
                collect_loops(&f.orelse, out);
            }
            Stmt::While(w) => {
                out.push((w.range.start().to_u32(), key_of(&w.test)));
                collect_loops(&w.body, out);
                collect_loops(&w.orelse, out);
            }
            Stmt::FunctionDef(f) => collect_loops(&f.body, out),
            Stmt::ClassDef(c) => collect_loops(&c.body, out),
            Stmt::If(i) => {
                collect_loops(&i.body, out);
                for clause in &i.elif_else_clauses {
                    collect_loops(&clause.body, out);
                }
            }
            Stmt::With(w) => collect_loops(&w.body, out),
            Stmt::Try(t) => {
                collect_loops(&t.body, out);
                for handler in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
                    collect_loops(&h.body, out);
                }
                collect_loops(&t.orelse, out);
                collect_loops(&t.finalbody, out);
            }
            _ => {}
        }
    }
}

/// The loops written in the module body itself (not inside a `def` or `class`), nested
/// ones included (they never run at depth 0, so listing them changes nothing).
pub fn module_loops(body: &[Stmt]) -> Vec<LoopKey> {
    let mut out = Vec::new();
    collect_module_loops(body, &mut out);
    out
}

fn collect_module_loops(body: &[Stmt], out: &mut Vec<LoopKey>) {
    for stmt in body {
        match stmt {
            Stmt::For(f) => {
                out.push(key_of(&f.iter));
                collect_module_loops(&f.body, out);
                collect_module_loops(&f.orelse, out);
            }
            Stmt::While(w) => {
                out.push(key_of(&w.test));
                collect_module_loops(&w.body, out);
                collect_module_loops(&w.orelse, out);
            }
            Stmt::If(i) => {
                collect_module_loops(&i.body, out);
                for clause in &i.elif_else_clauses {
                    collect_module_loops(&clause.body, out);
                }
            }
            Stmt::With(w) => collect_module_loops(&w.body, out),
            Stmt::Try(t) => {
                collect_module_loops(&t.body, out);
                for handler in &t.handlers {
                    let ruff_python_ast::ExceptHandler::ExceptHandler(h) = handler;
                    collect_module_loops(&h.body, out);
                }
                collect_module_loops(&t.orelse, out);
                collect_module_loops(&t.finalbody, out);
            }
            _ => {}
        }
    }
}

impl crate::python::Interpreter<'_> {
    /// Records the module body's own loops (see [`module_loops`]).
    pub fn set_module_loops(&mut self, keys: Vec<LoopKey>) {
        self.module_loops = keys;
    }
}

/// The key of a loop whose iterable (or condition) is `e`.
pub fn key_of(e: &Expr) -> LoopKey {
    e.range().start().to_u32()
}

/// The 1-based line of `offset` in `source`.
fn line_of(source: &str, offset: u32) -> usize {
    let end = (offset as usize).min(source.len());
    source.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(source: &str) -> Result<Option<LoopKey>, (u32, String)> {
        let module = ruff_python_parser::parse_module(source)
            .unwrap()
            .into_syntax();
        find(source, &module.body)
    }

    #[test]
    fn no_marker_means_the_default_loop() {
        assert_eq!(run("for i in range(3):\n    pass\n"), Ok(None));
    }

    #[test]
    fn the_marked_second_loop_is_found_by_its_iterable() {
        let src = "for m in ms:\n    pass\nfor i in range(3):  # gpumem: measure\n    pass\n";
        let key = run(src).unwrap().unwrap();
        assert_eq!(&src[key as usize..key as usize + 8], "range(3)");
    }

    #[test]
    fn a_marked_while_and_a_nested_loop_are_found() {
        let src = "def f():\n    while n < 3:  # gpumem: measure\n        pass\n";
        let key = run(src).unwrap().unwrap();
        assert_eq!(&src[key as usize..key as usize + 5], "n < 3");
    }

    #[test]
    fn a_marker_on_a_line_without_a_loop_is_an_error_at_the_comment() {
        let src = "x = 1  # gpumem: measure\nfor i in range(3):\n    pass\n";
        let (offset, message) = run(src).unwrap_err();
        assert_eq!(offset, 7);
        assert!(message.contains("line 1"), "{message}");
    }

    #[test]
    fn two_markers_and_unknown_directives_are_errors() {
        let two =
            "for a in x:  # gpumem: measure\n    pass\nfor b in y:  # gpumem: measure\n    pass\n";
        assert!(run(two).unwrap_err().1.contains("second"));
        let unknown = "for a in x:  # gpumem: measured\n    pass\n";
        assert!(run(unknown).unwrap_err().1.contains("unknown directive"));
    }

    #[test]
    fn a_marker_inside_a_string_is_not_a_directive() {
        assert_eq!(run("s = '# gpumem: measure'\n"), Ok(None));
    }
}
