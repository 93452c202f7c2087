//! Golden text of a Rust program's tracked timeline (`assert_golden!`): the sections of a
//! scenario's golden text that a Rust program has (no Python collector, no cycle paths).

use super::sections::{self, Lines};
use crate::check::locate::exact_bytes;
use crate::timeline::Timeline;

/// Deterministic for a deterministic program: memory quantities, iterations and the source
/// lines of allocation sites, no addresses or times.
pub fn tracked_golden_text(name: &str, timeline: &Timeline) -> String {
    let mut out = Lines::new();
    out.push(format!("tracked   {name}"));
    out.push(format!(
        "device    {}",
        exact_bytes(timeline.device_capacity)
    ));
    sections::title(&mut out, "outcome");
    sections::outcome(&mut out, timeline);
    sections::title(&mut out, "peaks");
    sections::peaks(&mut out, timeline);
    sections::title(&mut out, "allocated at iteration ends");
    sections::steady_state_table(&mut out, timeline);
    sections::title(&mut out, "allocated memory");
    sections::allocated_chart(&mut out, timeline);
    sections::title(&mut out, "top allocation sites live at the peak");
    sections::top_sites(&mut out, timeline);
    super::finish(out)
}
