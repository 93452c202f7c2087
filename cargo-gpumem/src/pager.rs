//! Long human output through a pager, as git and cargo-insta do: `$PAGER` (default
//! `less -FRX`: quit when it fits one screen, keep colours, leave the text on screen), only
//! when stdout is a terminal and the text is taller than it. `PAGER=` (empty) or `PAGER=cat`
//! turns paging off; colours follow `NO_COLOR` / `CLICOLOR` upstream, where the text is made.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

/// The pager when `PAGER` is unset.
const DEFAULT_PAGER: &str = "less -FRX";

/// Prints `text` to stdout, through the pager when [`pager_for`] picks one. A pager that
/// cannot be started or fails is not an error: the text is printed as it is.
pub fn show(text: &str) {
    let stdout = std::io::stdout();
    let rows = if stdout.is_terminal() {
        console::Term::stdout()
            .size_checked()
            .map_or(0, |(rows, _)| rows)
    } else {
        0
    };
    let pager = std::env::var("PAGER").ok();
    if let Some(command) = pager_for(pager.as_deref(), rows, text)
        && page_through(&command, text).is_ok()
    {
        return;
    }
    print!("{text}");
    let _ = stdout.lock().flush();
}

/// The pager command for `text` on a terminal of `rows` rows (0: not a terminal, or its
/// size is unknown), given the `PAGER` variable; `None` to print directly. Two rows stay
/// free for the header and the prompt printed after it.
pub fn pager_for(pager: Option<&str>, rows: u16, text: &str) -> Option<Vec<String>> {
    if rows == 0 || text.lines().count() + 2 <= usize::from(rows) {
        return None;
    }
    let command: Vec<String> = pager
        .unwrap_or(DEFAULT_PAGER)
        .split_whitespace()
        .map(str::to_string)
        .collect();
    match command.first().map(String::as_str) {
        None | Some("cat") => None,
        Some(_) => Some(command),
    }
}

/// Runs `command` with `text` on its stdin and waits for it.
pub fn page_through(command: &[String], text: &str) -> std::io::Result<()> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| std::io::Error::other("empty pager command"))?;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        // A pager quit early (`q` in less) closes its stdin: not an error.
        let _ = stdin.write_all(text.as_bytes());
    }
    let status = child.wait()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "the pager exited with {status}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tall(lines: usize) -> String {
        "line\n".repeat(lines)
    }

    #[test]
    fn pages_only_on_a_terminal_and_only_what_does_not_fit() {
        assert_eq!(pager_for(None, 0, &tall(500)), None, "not a terminal");
        assert_eq!(
            pager_for(None, 40, &tall(38)),
            None,
            "fits with header and prompt"
        );
        assert_eq!(
            pager_for(None, 40, &tall(39)),
            Some(vec!["less".into(), "-FRX".into()])
        );
    }

    #[test]
    fn the_pager_variable_chooses_or_turns_paging_off() {
        assert_eq!(
            pager_for(Some("more -d"), 10, &tall(50)),
            Some(vec!["more".into(), "-d".into()])
        );
        assert_eq!(pager_for(Some(""), 10, &tall(50)), None);
        assert_eq!(pager_for(Some("cat"), 10, &tall(50)), None);
    }

    #[test]
    fn the_pager_receives_the_whole_text() {
        let dir = tempfile::tempdir().expect("temporary folder");
        let out = dir.path().join("paged.txt");
        let command = vec![
            "sh".to_string(),
            "-c".to_string(),
            format!("cat > '{}'", out.display()),
        ];
        page_through(&command, &tall(100)).expect("the pager runs");
        assert_eq!(std::fs::read_to_string(&out).expect("written"), tall(100));
        let failing = vec!["sh".to_string(), "-c".to_string(), "exit 3".to_string()];
        assert!(page_through(&failing, "x").is_err());
        assert!(page_through(&["/no/such/pager".to_string()], "x").is_err());
    }
}
