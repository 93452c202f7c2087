//! Source positions as golden files and diffs name them: relative to the workload, not to the
//! scenario file, so that editing `about:` or `expect:` (anything above or below the workload)
//! moves no site. `workload:12 in train_step` is line 12 of the `workload:` block.
//!
//! The human report keeps file lines (`scenarios/x.yaml:23`), which an editor can jump to.

use crate::scenario::Scenario;
use crate::timeline::{Frame, Timeline};

/// The file name golden text gives frames inside the workload.
pub const WORKLOAD: &str = "workload";

/// `timeline` with every frame of `scenario`'s workload renamed `workload:LINE` (LINE counted
/// from the workload's first line) and collection lines counted the same way. With
/// `with_source`, each renamed frame's function also carries the source line's text, so two
/// copies of a scenario at different paths or versions key the same code alike (`diff`).
/// Frames from other files (a replayed snapshot's Python files) are left as they are.
pub fn relative_to_workload(
    timeline: &Timeline,
    scenario: &Scenario,
    with_source: bool,
) -> Timeline {
    let mut relative = timeline.clone();
    let first_line = scenario.workload.first_line;
    let source: Vec<&str> = scenario.workload.source.lines().collect();
    relative.stacks = timeline.stacks.map_frames(|frame| {
        if *frame.file != *scenario.file || frame.line < first_line {
            return frame.clone();
        }
        let line = frame.line - first_line + 1;
        let name = match source.get(line as usize - 1).map(|s| s.trim()) {
            Some(text) if with_source && !text.is_empty() => {
                format!("{} `{text}`", frame.name).into()
            }
            _ => frame.name.clone(),
        };
        Frame {
            file: WORKLOAD.into(),
            line,
            name,
        }
    });
    for event in &mut relative.gc_events {
        event.line = event.line.map(|l| {
            if l >= first_line {
                l - first_line + 1
            } else {
                l
            }
        });
    }
    relative
}
