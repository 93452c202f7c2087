//! Where things happened in a timeline (iteration, workload line), phrased for messages.
//! Checks and reports both point the reader at the same places, so they share these helpers.

use crate::timeline::{Frame, GcEvent, Timeline};

/// The event at which a peak was first reached, and where in the workload it happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeakSite {
    pub event_index: usize,
    pub bytes: u64,
    pub iteration: Option<u32>,
    /// The stack of the peak event, innermost frame first.
    pub frames: Vec<Frame>,
}

impl PeakSite {
    fn at(timeline: &Timeline, event_index: usize, bytes: u64) -> Option<PeakSite> {
        let event = timeline.events.get(event_index)?;
        Some(PeakSite {
            event_index,
            bytes,
            iteration: event.iteration,
            frames: timeline.stacks.get(event.stack).to_vec(),
        })
    }

    /// "iteration 5, s.yaml:14 in <module>".
    pub fn describe(&self, timeline: &Timeline) -> String {
        let when = iteration_label(timeline, self.iteration, self.event_index);
        match self.frames.first() {
            Some(frame) => format!("{when}, {}", frame_label(frame)),
            None => format!("{when}, no workload line recorded"),
        }
    }
}

/// Where allocated memory first reached its peak (`None` for a timeline that never allocated).
pub fn peak_allocated_site(timeline: &Timeline) -> Option<PeakSite> {
    let index = timeline.peak_event_index()?;
    PeakSite::at(timeline, index, timeline.peak_allocated())
}

/// Where reserved memory first reached its peak (`None` for a timeline that never reserved).
pub fn peak_reserved_site(timeline: &Timeline) -> Option<PeakSite> {
    let peak = timeline.peak_reserved();
    if peak == 0 {
        return None;
    }
    let index = timeline.events.iter().position(|e| e.reserved == peak)?;
    PeakSite::at(timeline, index, peak)
}

/// "s.yaml:14 in <module>".
pub fn frame_label(frame: &Frame) -> String {
    format!("{}:{} in {}", frame.file, frame.line, frame.name)
}

/// The whole stack, innermost first: "s.yaml:3 in make <- s.yaml:9 in <module>".
pub fn stack_label(frames: &[Frame]) -> String {
    if frames.is_empty() {
        return "(no workload stack)".to_string();
    }
    frames
        .iter()
        .map(frame_label)
        .collect::<Vec<_>>()
        .join(" <- ")
}

/// "iteration 5", or, for events outside every iteration, whether they came before the loop
/// or after it.
pub fn iteration_label(timeline: &Timeline, iteration: Option<u32>, event_index: usize) -> String {
    match iteration {
        Some(i) => format!("iteration {i}"),
        None => match timeline.iterations.first() {
            Some(first) if event_index >= first.first_event => {
                "after the last iteration".to_string()
            }
            Some(_) => "before the first iteration".to_string(),
            None => "outside any iteration".to_string(),
        },
    }
}

/// When a collection ran: "iteration 5", "before the first iteration" (an explicit
/// `gc.collect()` ahead of the loop), or "after the last iteration".
pub fn gc_event_label(timeline: &Timeline, event: &GcEvent) -> String {
    match event.iteration {
        Some(_) => iteration_label(timeline, event.iteration, event.event_index),
        None if timeline.iterations.is_empty() => "outside any iteration".to_string(),
        None if event.iterations_begun == 0 => "before the first iteration".to_string(),
        None => "after the last iteration".to_string(),
    }
}

/// When an OOM happened, for "OOM{when}": " at iteration 5 after 5 completed iterations",
/// " outside the iterations, after 3 completed iterations", or nothing for a trace without
/// iterations (a snapshot), where counting iterations would mean nothing.
pub fn oom_when(timeline: &Timeline, iteration: Option<u32>) -> String {
    let completed = iterations(timeline.iterations_completed());
    match iteration {
        Some(i) => format!(" at iteration {i} after {completed}"),
        None if timeline.iterations.is_empty() => String::new(),
        None => format!(" outside the iterations, after {completed}"),
    }
}

/// "1 completed iteration", "3 completed iterations".
pub fn iterations(completed: u32) -> String {
    format!(
        "{completed} completed {}",
        plural(completed as usize, "iteration")
    )
}

/// "1 check", "3 checks".
pub fn checks(n: usize) -> String {
    format!("{n} {}", plural(n, "check"))
}

/// `word`, with an `s` unless `n` is 1.
pub fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// A signed byte difference for messages: "+256 MiB", "-1.50 KiB", "0 B".
pub fn signed_bytes(delta: i128) -> String {
    let magnitude = crate::units::Bytes(delta.unsigned_abs().min(u64::MAX as u128) as u64);
    match delta.signum() {
        1 => format!("+{magnitude}"),
        -1 => format!("-{magnitude}"),
        _ => magnitude.to_string(),
    }
}

/// Bytes in human units with the exact count: "256 MiB (268435456 bytes)".
pub fn exact_bytes(bytes: u64) -> String {
    format!("{} ({bytes} bytes)", crate::units::Bytes(bytes))
}
