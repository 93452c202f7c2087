//! `cargo gpumem review [FILTER]`: each pending golden file with a coloured diff, then
//! accept, reject or skip. Interactive only: without a terminal on stdin it refuses and names
//! the non-interactive commands.

use gpumem_harness::error::Error;
use gpumem_harness::exit_code::{FAILED, SUCCESS};
use gpumem_harness::harness::{PendingSnapshot, Workspace, diff, find_pending};
use std::io::{BufRead, IsTerminal, Write};
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
    let mut input = std::io::stdin().lock();
    for (index, snapshot) in pending.iter().enumerate() {
        snapshot.refuse_links()?;
        let (old, new) = snapshot.texts();
        println!();
        println!(
            "{} ({} of {total})",
            console::style(&snapshot.trial).bold(),
            index + 1
        );
        let golden = show(&workspace, &snapshot.golden);
        if snapshot.golden.is_file() {
            println!("golden:  {golden}");
        } else {
            println!("golden:  {golden} (new)");
        }
        println!("pending: {}", show(&workspace, &snapshot.pending));
        if colour {
            print!("{}", diff::coloured(&old, &new));
        } else {
            print!("{}", diff::unified(&old, &new));
        }
        match ask(&mut input)? {
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

enum Decision {
    Accept,
    Reject,
    Skip,
    Quit,
}

fn ask(input: &mut impl BufRead) -> Result<Decision, Error> {
    loop {
        print!("[a]ccept  [r]eject  [s]kip  [q]uit > ");
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        let read = input
            .read_line(&mut line)
            .map_err(|e| Error::io("<stdin>", e))?;
        if read == 0 {
            return Ok(Decision::Quit);
        }
        match line.trim() {
            "a" | "accept" => return Ok(Decision::Accept),
            "r" | "reject" => return Ok(Decision::Reject),
            "s" | "skip" | "" => return Ok(Decision::Skip),
            "q" | "quit" => return Ok(Decision::Quit),
            other => println!("unknown answer `{other}`"),
        }
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
}
