//! `diff A B`: how memory moved between two timelines (two snapshots, two scenario runs, or
//! one of each): peak and steady-state deltas, and the allocation sites live at the peak that
//! appeared, disappeared, grew or shrank.

use crate::report::live_at_peak;
use crate::timeline::Timeline;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Quantity {
    pub a: u64,
    pub b: u64,
    pub delta: i128,
}

impl Quantity {
    fn new(a: u64, b: u64) -> Self {
        Quantity {
            a,
            b,
            delta: b as i128 - a as i128,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SiteChange {
    Appeared,
    Disappeared,
    Grew,
    Shrank,
}

/// Requested bytes live at the peak from one allocation site (its stack label).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SiteDelta {
    pub site: String,
    pub change: SiteChange,
    pub bytes: Quantity,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TimelineDiff {
    pub peak_allocated: Quantity,
    pub peak_reserved: Quantity,
    /// Allocated bytes at the end of the last completed iteration, or at the last event when
    /// a timeline has no iterations (a snapshot).
    pub steady_state_allocated: Quantity,
    /// Sites whose bytes at the peak changed, largest change first.
    pub sites: Vec<SiteDelta>,
}

/// Allocated bytes once the run settled (see [`TimelineDiff::steady_state_allocated`]).
pub fn steady_state_allocated(timeline: &Timeline) -> u64 {
    timeline
        .iterations
        .iter()
        .rev()
        .find(|m| m.completed)
        .map(|m| m.allocated_at_end)
        .or_else(|| timeline.events.last().map(|e| e.allocated))
        .unwrap_or(0)
}

pub fn diff(a: &Timeline, b: &Timeline) -> TimelineDiff {
    let by_site = |t: &Timeline| {
        let mut m: BTreeMap<String, u64> = BTreeMap::new();
        for s in live_at_peak(t) {
            *m.entry(s.label).or_default() += s.bytes;
        }
        m
    };
    let (sa, sb) = (by_site(a), by_site(b));
    let mut sites: Vec<SiteDelta> = sa
        .keys()
        .chain(sb.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter_map(|site| {
            let (x, y) = (sa.get(site).copied(), sb.get(site).copied());
            let change = match (x, y) {
                (None, Some(_)) => SiteChange::Appeared,
                (Some(_), None) => SiteChange::Disappeared,
                (Some(x), Some(y)) if y > x => SiteChange::Grew,
                (Some(x), Some(y)) if y < x => SiteChange::Shrank,
                _ => return None,
            };
            Some(SiteDelta {
                site: site.clone(),
                change,
                bytes: Quantity::new(x.unwrap_or(0), y.unwrap_or(0)),
            })
        })
        .collect();
    sites.sort_by(|p, q| {
        q.bytes
            .delta
            .abs()
            .cmp(&p.bytes.delta.abs())
            .then_with(|| p.site.cmp(&q.site))
    });
    TimelineDiff {
        peak_allocated: Quantity::new(a.peak_allocated(), b.peak_allocated()),
        peak_reserved: Quantity::new(a.peak_reserved(), b.peak_reserved()),
        steady_state_allocated: Quantity::new(steady_state_allocated(a), steady_state_allocated(b)),
        sites,
    }
}

/// The diff as text: one line per quantity, then one per changed site (at most `max_sites`).
pub fn render(diff: &TimelineDiff, max_sites: usize) -> String {
    use crate::check::locate::signed_bytes;
    use crate::units::Bytes;
    let line = |name: &str, q: &Quantity| {
        format!(
            "{name:<22} a {}, b {}, change {}\n",
            Bytes(q.a),
            Bytes(q.b),
            signed_bytes(q.delta)
        )
    };
    let mut out = String::new();
    out.push_str(&line("peak allocated", &diff.peak_allocated));
    out.push_str(&line("peak reserved", &diff.peak_reserved));
    // Not "steady state": a leaking run has none, and this is only where it ended.
    out.push_str(&line("allocated at the end", &diff.steady_state_allocated));
    if diff.sites.is_empty() {
        out.push_str("allocation sites at the peak: unchanged\n");
    } else {
        out.push_str("allocation sites at the peak:\n");
        for s in diff.sites.iter().take(max_sites) {
            let change = match s.change {
                SiteChange::Appeared => "appeared",
                SiteChange::Disappeared => "disappeared",
                SiteChange::Grew => "grew",
                SiteChange::Shrank => "shrank",
            };
            out.push_str(&format!(
                "  {change:<11} {} (a {}, b {}): {}\n",
                signed_bytes(s.bytes.delta),
                Bytes(s.bytes.a),
                Bytes(s.bytes.b),
                s.site
            ));
        }
        if diff.sites.len() > max_sites {
            out.push_str(&format!("  ... {} more\n", diff.sites.len() - max_sites));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot_format::corpus;
    use crate::snapshot_format::{read_snapshot, to_timeline};

    #[test]
    fn a_timeline_equals_itself_and_differs_from_another() {
        let files = corpus::all();
        if files.len() < 2 {
            return;
        }
        let t = |i: usize| {
            let (name, bytes) = &files[i];
            to_timeline(&read_snapshot(&bytes[..], name).unwrap()).timeline
        };
        let (inference, training) = (t(0), t(1));
        let same = diff(&training, &training);
        assert_eq!(same.peak_allocated.delta, 0);
        assert!(same.sites.is_empty());
        let d = diff(&inference, &training);
        assert_eq!(
            d.peak_allocated.delta,
            training.peak_allocated() as i128 - inference.peak_allocated() as i128
        );
        assert!(d.peak_allocated.delta > 0);
        assert!(d.sites.iter().any(|s| s.change == SiteChange::Appeared));
        // Largest change first.
        assert!(
            d.sites
                .windows(2)
                .all(|w| w[0].bytes.delta.abs() >= w[1].bytes.delta.abs())
        );
        let text = render(&d, 5);
        assert!(text.starts_with("peak allocated"), "{text}");
        assert!(text.contains("appeared"), "{text}");
        let back = diff(&training, &inference);
        assert_eq!(back.peak_reserved.delta, -d.peak_reserved.delta);
        assert_eq!(
            back.sites
                .iter()
                .filter(|s| s.change == SiteChange::Disappeared)
                .count(),
            d.sites
                .iter()
                .filter(|s| s.change == SiteChange::Appeared)
                .count()
        );
    }
}
