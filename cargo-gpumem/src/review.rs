//! `cargo gpumem review [FILTER]`: each pending golden file with a coloured diff, then one key
//! as in cargo-insta: `a` accept, `r` reject, `s` skip, `A` accept this and every remaining
//! one, `q` quit. A diff taller than the terminal opens in `$PAGER` (default `less -FRX`),
//! and the trial and its files are printed again above the prompt, so a long diff does not
//! scroll them away. Interactive only: without a terminal on stdin it refuses and
//! names the non-interactive commands.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::{FAILED, SUCCESS};
use gpumem_harness::harness::{PendingSnapshot, Workspace, diff, find_pending};
use std::io::{IsTerminal, Write};
use std::path::Path;

pub fn review(manifest: Option<&Path>, filter: Option<&str>) -> Result<i32, Error> {
    if !std::io::stdin().is_terminal() {
        return Err(Error::Usage(
            "`cargo gpumem review` is interactive and stdin is not a terminal; \
             use `cargo gpumem accept [FILTER]` or `cargo gpumem reject [FILTER]`"
                .to_string(),
        ));
    }
    let (workspace, pending) = pending_in(manifest, filter)?;
    if pending.is_empty() {
        println!("no pending golden files");
        return Ok(SUCCESS);
    }
    let colour = console::colors_enabled();
    let total = pending.len();
    let (mut accepted, mut rejected, mut skipped) = (0, 0, 0);
    let terminal = console::Term::stdout();
    let mut accept_rest = false;
    for (index, snapshot) in pending.iter().enumerate() {
        snapshot.refuse_links()?;
        let (old, new) = snapshot.texts();
        let golden = show(&workspace, &snapshot.golden);
        let header = format!(
            "{} ({} of {total}): {golden}{}",
            console::style(&snapshot.trial).bold(),
            index + 1,
            if snapshot.golden.is_file() {
                ""
            } else {
                " (new)"
            }
        );
        if accept_rest {
            snapshot.accept()?;
            accepted += 1;
            println!("accepted {header}");
            continue;
        }
        println!();
        let diff = if colour {
            diff::coloured(&old, &new)
        } else {
            diff::unified(&old, &new)
        };
        // Through the pager when it is taller than the terminal; the header again after it.
        crate::pager::show(&format!(
            "{header}\npending: {}\n{diff}",
            show(&workspace, &snapshot.pending)
        ));
        println!("{header}");
        match ask(&terminal)? {
            Decision::AcceptAll => {
                snapshot.accept()?;
                accepted += 1;
                accept_rest = true;
            }
            Decision::Accept => {
                snapshot.accept()?;
                accepted += 1;
            }
            Decision::Reject => {
                snapshot.reject()?;
                rejected += 1;
            }
            Decision::Skip => skipped += 1,
            Decision::Quit => {
                skipped += total - index;
                break;
            }
        }
    }
    println!("accepted {accepted}, rejected {rejected}, skipped {skipped}");
    Ok(exit_after_review(skipped))
}

/// Exit 1 while golden files still await review (some were skipped), as `test` does.
fn exit_after_review(skipped: usize) -> i32 {
    if skipped > 0 { FAILED } else { SUCCESS }
}

#[derive(Debug, PartialEq, Eq)]
enum Decision {
    Accept,
    AcceptAll,
    Reject,
    Skip,
    Quit,
}

/// One key, without Enter; the end of input quits.
fn ask(terminal: &console::Term) -> Result<Decision, Error> {
    print!("a accept  r reject  s skip  A accept all remaining  q quit > ");
    let _ = std::io::stdout().flush();
    loop {
        let key = match terminal.read_char() {
            Ok(key) => key,
            Err(_) => {
                println!();
                return Ok(Decision::Quit);
            }
        };
        if let Some(decision) = decision_for(key) {
            println!("{key}");
            return Ok(decision);
        }
        if !key.is_whitespace() {
            print!("\n`{key}` is not an answer: a, r, s, A or q > ");
            let _ = std::io::stdout().flush();
        }
    }
}

fn decision_for(key: char) -> Option<Decision> {
    match key {
        'a' => Some(Decision::Accept),
        'A' => Some(Decision::AcceptAll),
        'r' => Some(Decision::Reject),
        's' => Some(Decision::Skip),
        // Ctrl-C and Ctrl-D arrive as characters in raw mode.
        'q' | '\u{3}' | '\u{4}' => Some(Decision::Quit),
        _ => None,
    }
}

/// The workspace and its pending golden files that `filter` selects.
pub fn pending_in(
    manifest: Option<&Path>,
    filter: Option<&str>,
) -> Result<(Workspace, Vec<PendingSnapshot>), Error> {
    let workspace = crate::cli::workspace(manifest)?;
    let pending = find_pending(&workspace.snapshot_dirs())?
        .into_iter()
        .filter(|p| p.matches(filter, &workspace.display_path(&p.pending)))
        .collect();
    Ok((workspace, pending))
}

/// A path as messages show it: relative to the workspace root.
pub fn show(workspace: &Workspace, path: &Path) -> String {
    workspace.display_path(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skipped_golden_files_mean_exit_one() {
        assert_eq!(exit_after_review(0), SUCCESS);
        assert_eq!(exit_after_review(2), FAILED);
    }

    #[test]
    fn single_keys_decide_and_case_matters() {
        assert_eq!(decision_for('a'), Some(Decision::Accept));
        assert_eq!(decision_for('A'), Some(Decision::AcceptAll));
        assert_eq!(decision_for('r'), Some(Decision::Reject));
        assert_eq!(decision_for('s'), Some(Decision::Skip));
        assert_eq!(decision_for('q'), Some(Decision::Quit));
        assert_eq!(decision_for('\n'), None);
        assert_eq!(decision_for('x'), None);
    }
}
