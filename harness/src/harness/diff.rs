//! Line diffs of golden text, made with `similar`: plain for failure messages and logs,
//! coloured for the interactive review.

use similar::{ChangeTag, TextDiff};

/// Lines of unchanged context shown around each change.
const CONTEXT: usize = 3;

/// A `-old/+new` diff with [`CONTEXT`] lines of context and `@@` hunk headers.
pub fn unified(old: &str, new: &str) -> String {
    render(old, new, false)
}

/// The same diff with removed lines red and added lines green (ANSI colours, only when the
/// caller's terminal wants them: `console` checks `NO_COLOR`/`CLICOLOR` and the stream).
pub fn coloured(old: &str, new: &str) -> String {
    render(old, new, true)
}

fn render(old: &str, new: &str, colour: bool) -> String {
    let old = normalise(old);
    let new = normalise(new);
    let diff = TextDiff::from_lines(&old, &new);
    let mut out = String::new();
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let header = format!(
            "@@ -{},{} +{},{} @@",
            old_range.start + 1,
            old_range.len(),
            new_range.start + 1,
            new_range.len()
        );
        push_line(
            &mut out,
            &header,
            colour.then(console::Style::new).map(|s| s.cyan()),
        );
        for op in &group {
            for change in diff.iter_changes(op) {
                let (sign, style) = match change.tag() {
                    ChangeTag::Delete => ('-', console::Style::new().red()),
                    ChangeTag::Insert => ('+', console::Style::new().green()),
                    ChangeTag::Equal => (' ', console::Style::new().dim()),
                };
                let line = format!("{sign}{}", change.value().trim_end_matches('\n'));
                push_line(&mut out, &line, colour.then_some(style));
            }
        }
    }
    out
}

fn push_line(out: &mut String, line: &str, style: Option<console::Style>) {
    match style {
        Some(style) => out.push_str(&style.force_styling(true).apply_to(line).to_string()),
        None => out.push_str(line),
    }
    out.push('\n');
}

/// Every line ends in `\n` (so a missing final newline is not reported as a change).
fn normalise(text: &str) -> String {
    let mut text = text.replace("\r\n", "\n");
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_changed_lines_with_context_and_hunk_header() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh";
        assert_eq!(
            unified(old, new),
            "@@ -2,7 +2,7 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n"
        );
    }

    #[test]
    fn identical_text_has_no_diff() {
        assert_eq!(unified("x\ny\n", "x\ny"), "");
    }

    #[test]
    fn a_new_file_is_all_additions() {
        assert_eq!(unified("", "one\ntwo\n"), "@@ -1,0 +1,2 @@\n+one\n+two\n");
    }

    #[test]
    fn coloured_diff_marks_lines_with_ansi_colours() {
        let text = coloured("a\n", "b\n");
        assert!(text.contains("\u{1b}[31m-a"), "{text:?}");
        assert!(text.contains("\u{1b}[32m+b"), "{text:?}");
    }
}
