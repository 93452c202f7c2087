//! `workload:` — the Python source, and how positions inside it map back into the scenario file
//! so that Python errors point at the right line and column of the YAML file.
//!
//! serde-saphyr locates a block scalar at its first content character, after the indentation of
//! the first non-blank line; leading blank lines are kept in the value as line breaks. So the
//! source's line 1 is `node line - leading blank lines`, and the removed indentation is
//! `node column - 1`. A one-line plain scalar maps the same way; a quoted one is shifted by its
//! opening quote.

use super::model::Workload;
use super::parse::Context;
use super::yaml_tree::{Node, Position, Value};
use crate::error::Error;

/// How the workload scalar was written, as far as the mapping of positions cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Literal,
    Folded,
    Quoted,
    Plain,
}

/// Reads the workload node; `key_at` is where `workload:` is written (an empty block scalar has
/// no position of its own worth showing).
pub(crate) fn parse_workload(
    cx: &Context<'_>,
    key_at: Position,
    node: &Node,
) -> Result<Workload, Error> {
    let source = match &node.value {
        Value::Str(s) => s,
        other => {
            return Err(cx.expected(
                node,
                "workload",
                "Python source, written as a `|` block",
                other,
            ));
        }
    };
    if source.trim().is_empty() {
        return Err(cx.error(key_at, "the workload is empty"));
    }
    // An alias (`workload: *code`) maps positions to where the anchored text is written.
    let at = node.defined;
    let leading_blank_lines = source.chars().take_while(|&c| c == '\n').count();
    let first_line = usize::try_from(at.line)
        .unwrap_or(usize::MAX)
        .saturating_sub(leading_blank_lines);
    let start = at
        .byte_offset
        .or_else(|| byte_offset_of(cx.text, at.line, at.column))
        .filter(|&b| cx.text.is_char_boundary(b));
    let style = style_of(cx.text, start, first_line);
    let one_line_hint = "write multi-line Python as a `|` block:\n  workload: |\n    for i in range(10):\n        ...";
    let indent = match style {
        Style::Literal => at.column.saturating_sub(1),
        Style::Folded => {
            return Err(cx.error(
                node.at,
                "a folded `>` block joins lines, but Python needs its line breaks; \
                 write the workload as a literal `|` block",
            ));
        }
        Style::Plain => {
            let written_as_is = start.is_some_and(|s| cx.text[s..].starts_with(source.as_str()));
            if source.contains('\n') || !written_as_is {
                return Err(cx.error(
                    node.at,
                    format!("a plain workload must fit on one line; {one_line_hint}"),
                ));
            }
            at.column.saturating_sub(1)
        }
        Style::Quoted => {
            let written_as_is = start.is_some_and(|s| {
                let quote = &cx.text[s..s + 1];
                cx.text[s + 1..]
                    .strip_prefix(source.as_str())
                    .is_some_and(|rest| rest.starts_with(quote))
            });
            if source.contains('\n') || !written_as_is {
                return Err(cx.error(
                    node.at,
                    format!(
                        "a quoted workload must fit on one line without escapes; {one_line_hint}"
                    ),
                ));
            }
            at.column
        }
    };
    Ok(Workload {
        source: source.clone(),
        first_line: u32::try_from(first_line).unwrap_or(u32::MAX).max(1),
        indent,
    })
}

/// Decides the style from the text: a quote at the node's start, or a `|`/`>` header on the line
/// before the block's first line.
fn style_of(text: &str, start: Option<usize>, first_line: usize) -> Style {
    if let Some(s) = start
        && matches!(text.as_bytes().get(s), Some(b'"' | b'\''))
    {
        return Style::Quoted;
    }
    let header = first_line
        .checked_sub(2)
        .and_then(|index| text.split('\n').nth(index));
    let Some(header) = header else {
        return Style::Plain;
    };
    // Drop a trailing comment, then look at the last token: `|`, `|-`, `>+2`, ...
    let without_comment = header
        .char_indices()
        .find(|&(i, c)| c == '#' && (i == 0 || header[..i].ends_with([' ', '\t'])))
        .map_or(header, |(i, _)| &header[..i]);
    let token = without_comment.split_whitespace().last().unwrap_or("");
    let indicators_only = |rest: &str| rest.chars().all(|c| matches!(c, '+' | '-' | '1'..='9'));
    if let Some(rest) = token.strip_prefix('|')
        && indicators_only(rest)
    {
        Style::Literal
    } else if let Some(rest) = token.strip_prefix('>')
        && indicators_only(rest)
    {
        Style::Folded
    } else {
        Style::Plain
    }
}

/// The byte offset of a 1-based (line, column in characters), when the parser gave none.
fn byte_offset_of(text: &str, line: u32, column: u32) -> Option<usize> {
    let line_index = usize::try_from(line).ok()?.checked_sub(1)?;
    let column_index = usize::try_from(column).ok()?.checked_sub(1)?;
    let line_start: usize = text
        .split_inclusive('\n')
        .take(line_index)
        .map(str::len)
        .sum();
    let rest = text.get(line_start..)?;
    let within = rest
        .char_indices()
        .nth(column_index)
        .map_or(rest.len(), |(i, _)| i);
    Some(line_start + within)
}
