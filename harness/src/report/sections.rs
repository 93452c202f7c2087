//! The sections of the text reports. Each prints memory quantities, iterations and workload
//! lines only: no event counts, addresses, times or machine paths, so a golden file moves only
//! when memory does.

use super::{boundaries, chart, sites};
use crate::check::Verdict;
use crate::check::locate::{self, exact_bytes, frame_label, signed_bytes};
use crate::check::series;
use crate::scenario::{Scenario, Variant};
use crate::timeline::{GcEvent, Timeline};
use crate::units::Bytes;

/// Rows of the iteration-end table before it switches to slices.
pub const MAX_BOUNDARY_ROWS: usize = 40;
pub const CHART_WIDTH: usize = 60;
pub const CHART_HEIGHT: usize = 10;
pub const TOP_SITES: usize = 5;
pub const MAX_CYCLE_PATHS: usize = 8;
/// Collections listed per kind before "...".
const FIRST_COLLECTIONS: usize = 5;

pub type Lines = Vec<String>;

pub fn title(out: &mut Lines, name: &str) {
    if !out.is_empty() {
        out.push(String::new());
    }
    out.push(format!("== {name}"));
}

pub fn header(out: &mut Lines, scenario: &Scenario, variant: &Variant) {
    let name = variant.name();
    out.push(format!("scenario  {}", scenario.name));
    out.push(format!(
        "variant   {}",
        if name.is_empty() { "(none)" } else { &name }
    ));
    // A replayed snapshot ran no interpreter: no Python version to show.
    if scenario.replay.is_none() {
        out.push(format!("python    {}", variant.python.version));
    } else {
        out.push("source    replayed snapshot (no interpreter modelled)".to_string());
    }
    if variant.device.cuda_ordinal().is_some() {
        // The card's capacity is in the OOM message and the human report's driver section.
        out.push(format!(
            "device    {} (a real GPU through the CUDA driver)",
            super::device_name(variant)
        ));
    } else {
        out.push(format!(
            "device    {}, {}",
            super::device_name(variant),
            exact_bytes(variant.device.capacity)
        ));
    }
}

pub fn outcome(out: &mut Lines, timeline: &Timeline) {
    let completed = timeline.iterations_completed();
    match &timeline.oom {
        None if timeline.iterations.is_empty() => {
            out.push("completed (the trace marks no iterations)".to_string())
        }
        None if completed == 1 => out.push("completed 1 iteration".to_string()),
        None => out.push(format!("completed {completed} iterations")),
        Some(oom) => {
            let when = locate::oom_when(timeline, oom.iteration);
            let line = timeline
                .stacks
                .get(oom.stack)
                .first()
                .map(|f| format!(" at {}", frame_label(f)))
                .unwrap_or_default();
            out.push(format!(
                "OOM{when}: requested {}{line}",
                exact_bytes(oom.requested_bytes)
            ));
            for text in oom.message.lines() {
                out.push(format!("  {text}"));
            }
        }
    }
}

pub fn peaks(out: &mut Lines, timeline: &Timeline) {
    let capacity = timeline.device_capacity;
    let row = |what: &str, site: Option<locate::PeakSite>| match site {
        None => format!("{what:<9}  0 B"),
        Some(site) => {
            let share = if capacity > 0 {
                format!(
                    ", {:.1}% of the device",
                    site.bytes as f64 * 100.0 / capacity as f64
                )
            } else {
                String::new()
            };
            format!(
                "{what:<9}  {}{share}\n{:<9}  at {}",
                exact_bytes(site.bytes),
                "",
                site.describe(timeline)
            )
        }
    };
    for (what, site) in [
        ("allocated", locate::peak_allocated_site(timeline)),
        ("reserved", locate::peak_reserved_site(timeline)),
    ] {
        out.extend(row(what, site).lines().map(str::to_string));
    }
}

/// One line: growth per iteration, or why there is none.
fn growth(boundaries: &[series::Boundary]) -> String {
    match series::growth_per_iteration(boundaries) {
        Ok(slope) => format!(
            "growth per iteration after iteration 0 (least squares): {}",
            signed_bytes(slope.bytes_per_iteration as i128)
        ),
        Err(short) => format!(
            "growth per iteration: needs {} completed iterations, have {}",
            short.needed, short.completed
        ),
    }
}

fn interrupted(out: &mut Lines, timeline: &Timeline) {
    for mark in timeline.iterations.iter().filter(|m| !m.completed) {
        out.push(format!(
            "iteration {} did not complete: reached {} allocated",
            mark.iteration,
            Bytes(mark.peak_allocated)
        ));
    }
}

/// The full table of allocated bytes at iteration ends (golden text).
pub fn steady_state_table(out: &mut Lines, timeline: &Timeline) {
    let boundaries = series::completed_boundaries(timeline);
    out.push(growth(&boundaries));
    let rows = boundaries::summarize(&boundaries, MAX_BOUNDARY_ROWS);
    out.extend(boundaries::render(&rows));
    interrupted(out, timeline);
}

/// The range of allocated bytes at iteration ends and the growth (human report).
pub fn steady_state_summary(out: &mut Lines, timeline: &Timeline) {
    let boundaries = series::completed_boundaries(timeline);
    if let (Some(low), Some(high)) = (
        boundaries.iter().map(|b| b.allocated).min(),
        boundaries.iter().map(|b| b.allocated).max(),
    ) {
        out.push(format!(
            "allocated at iteration ends: {} to {}",
            Bytes(low),
            Bytes(high)
        ));
    }
    out.push(growth(&boundaries));
    interrupted(out, timeline);
}

fn when(timeline: &Timeline, g: &GcEvent) -> String {
    match g.iteration {
        Some(i) => i.to_string(),
        None => locate::gc_event_label(timeline, g),
    }
}

pub fn collections(out: &mut Lines, timeline: &Timeline) {
    let kinds = [
        (true, 0u8),
        (true, 1),
        (true, 2),
        (false, 0),
        (false, 1),
        (false, 2),
    ];
    for (automatic, generation) in kinds {
        let runs: Vec<&GcEvent> = timeline
            .gc_events
            .iter()
            .filter(|g| g.automatic == automatic && g.generation == generation)
            .collect();
        if runs.is_empty() && !automatic && timeline.collections(false, generation) == 0 {
            continue;
        }
        let mut first: Vec<String> = Vec::new();
        for g in &runs {
            let label = when(timeline, g);
            if first.last() != Some(&label) {
                if first.len() == FIRST_COLLECTIONS {
                    first.push("...".to_string());
                    break;
                }
                first.push(label);
            }
        }
        let kind = if automatic { "automatic" } else { "explicit" };
        let listed = if first.is_empty() {
            String::new()
        } else {
            format!(", in iterations {}", first.join(", "))
        };
        out.push(format!(
            "{kind:<9} gen{generation}  {:>6}{listed}",
            timeline.collections(automatic, generation)
        ));
    }
    if (0..3).all(|generation| timeline.collections(false, generation) == 0) {
        out.push("explicit  none".to_string());
    }
    let freed = super::json::cycle_freed(timeline);
    match timeline.gc_events.iter().find(|g| g.bytes_freed > 0) {
        None => out.push("freed by the collector: no device memory".to_string()),
        Some(first) => {
            out.push(format!(
                "freed by the collector: {} in {} device tensors",
                exact_bytes(freed.bytes),
                freed.tensors
            ));
            let trigger = if first.automatic {
                "automatic"
            } else {
                "gc.collect()"
            };
            let line = first
                .line
                .map(|l| format!(", line {l}"))
                .unwrap_or_default();
            out.push(format!(
                "first freed at {} (gen{}, {trigger}{line}): {}",
                locate::gc_event_label(timeline, first),
                first.generation,
                Bytes(first.bytes_freed)
            ));
        }
    }
}

/// Each reference path once, written in one direction: around the cycle (`cycle`), then from
/// the cycle to the tensors (`holds`), every edge named; under it each kind of tensor freed
/// through it.
pub fn cycle_paths(out: &mut Lines, timeline: &Timeline) {
    if timeline.cycle_reports.is_empty() {
        out.push("none".to_string());
        return;
    }
    // Reports in first-seen order, grouped by their path (a path holds tensors of several
    // shapes or sites).
    let mut groups: Vec<(&str, &str, Vec<&crate::timeline::CycleReport>)> = Vec::new();
    for report in &timeline.cycle_reports {
        match groups
            .iter_mut()
            .find(|(holder, cycle, _)| *holder == report.holder_path && *cycle == report.cycle)
        {
            Some((_, _, reports)) => reports.push(report),
            None => groups.push((&report.holder_path, &report.cycle, vec![report])),
        }
    }
    for (holder, cycle, reports) in groups.iter().take(MAX_CYCLE_PATHS) {
        if cycle.is_empty() && holder.is_empty() {
            out.push("freed together with collected objects (no reference path recorded)".into());
        } else if cycle.is_empty() {
            out.push(format!("holds  {holder} → tensor"));
        } else {
            out.push(format!("cycle  {cycle}"));
            out.push(format!("holds  {holder} → tensor"));
        }
        for path in reports {
            let site = timeline
                .stacks
                .get(path.alloc_site)
                .first()
                .map(|f| format!("{}:{}", f.file, f.line))
                .unwrap_or_else(|| "unknown site".to_string());
            let first = path
                .first_iteration
                .map(|i| format!(", first in iteration {i}"))
                .unwrap_or_default();
            out.push(format!(
                "  {}, {} x {} = {}, allocated at {site}{first}",
                path.tensor,
                path.count,
                Bytes(path.bytes_each),
                exact_bytes(path.bytes_total)
            ));
        }
    }
    let more = groups.len().saturating_sub(MAX_CYCLE_PATHS);
    if more > 0 {
        out.push(format!("... and {more} more paths"));
    }
}

pub fn allocated_chart(out: &mut Lines, timeline: &Timeline) {
    if !timeline.folded_spans().is_empty() {
        out.extend(folded_chart(timeline));
        return;
    }
    let values: Vec<u64> = timeline
        .iterations
        .iter()
        .map(|m| m.peak_allocated)
        .collect();
    let lines = match timeline.iterations.first() {
        Some(first) => chart::render(
            &values,
            first.iteration,
            "iteration (highest allocated)",
            CHART_WIDTH,
            CHART_HEIGHT,
        ),
        None => {
            let values: Vec<u64> = timeline.events.iter().map(|e| e.allocated).collect();
            chart::render(&values, 0, "allocator event", CHART_WIDTH, CHART_HEIGHT)
        }
    };
    if lines.is_empty() {
        out.push("nothing allocated".to_string());
    }
    out.extend(lines);
}

/// Points of a long run's chart: each the highest allocated bytes of the kept iterations and
/// folded summaries that overlap its stretch of iterations.
const FOLDED_CHART_POINTS: u64 = (CHART_WIDTH * 8) as u64;

/// The chart of a run whose iterations were partly folded: kept iterations and summaries
/// resampled over the whole range of iterations.
fn folded_chart(timeline: &Timeline) -> Lines {
    let mut stretches: Vec<(u32, u32, u64)> = timeline
        .iterations
        .iter()
        .map(|m| (m.iteration, m.iteration, m.peak_allocated))
        .chain(
            timeline
                .folded_spans()
                .iter()
                .map(|s| (s.first_iteration, s.last_iteration, s.peak_allocated)),
        )
        .collect();
    stretches.sort_unstable();
    let (Some(first), Some(last)) = (
        stretches.first().map(|s| s.0),
        stretches.iter().map(|s| s.1).max(),
    ) else {
        return vec!["nothing allocated".to_string()];
    };
    let range = (last - first) as u64 + 1;
    let points = range.min(FOLDED_CHART_POINTS);
    let mut values = vec![0u64; points as usize];
    for (start, end, peak) in stretches {
        let at = |i: u32| ((i - first) as u64 * points / range) as usize;
        for value in &mut values[at(start)..=at(end)] {
            *value = (*value).max(peak);
        }
    }
    let lines = chart::render_range(
        &values,
        first,
        last as u64,
        "iteration (highest allocated; folded iterations summarised)",
        CHART_WIDTH,
        CHART_HEIGHT,
    );
    if lines.is_empty() {
        return vec!["nothing allocated".to_string()];
    }
    lines
}

pub fn top_sites(out: &mut Lines, timeline: &Timeline) {
    let sites = sites::live_at_peak(timeline);
    if sites.is_empty() {
        out.push("none".to_string());
        return;
    }
    let width = sites
        .iter()
        .take(TOP_SITES)
        .map(|s| Bytes(s.bytes).to_string().len())
        .max()
        .unwrap_or(0);
    // A category column only when the source labels allocations (model runs do, recorded
    // snapshots do not), so reports of unlabelled timelines keep their layout.
    let category_width = sites
        .iter()
        .take(TOP_SITES)
        .filter_map(|s| s.category.map(|c| c.name().len()))
        .max();
    for site in sites.iter().take(TOP_SITES) {
        let category = match category_width {
            Some(w) => format!("{:<w$}  ", site.category.map_or("-", |c| c.name())),
            None => String::new(),
        };
        out.push(format!(
            "{:>width$}  {:>5} x  {category}{}",
            Bytes(site.bytes).to_string(),
            site.count,
            site.label
        ));
    }
    let rest = &sites[sites.len().min(TOP_SITES)..];
    if !rest.is_empty() {
        let bytes: u64 = rest.iter().map(|s| s.bytes).sum();
        let count: u64 = rest.iter().map(|s| s.count).sum();
        out.push(format!(
            "{:>width$}  {count:>5} x  {} other sites",
            Bytes(bytes).to_string(),
            rest.len()
        ));
    }
    let totals = sites::by_category(&sites);
    if !totals.is_empty() {
        let parts: Vec<String> = totals
            .iter()
            .map(|(c, bytes)| format!("{} {}", c.name(), Bytes(*bytes)))
            .collect();
        out.push(format!("by category: {}", parts.join(", ")));
    }
}

/// Verdicts; with `locations` each line also names where the check is written.
pub fn verdicts(out: &mut Lines, verdicts: &[Verdict], locations: bool) {
    if verdicts.is_empty() {
        out.push("no checks".to_string());
    }
    for v in verdicts {
        let status = if v.passed { "PASS" } else { "FAIL" };
        if locations {
            out.push(format!("{status} {} ({})", v.name, v.location));
            out.push(format!("     {}", v.message));
        } else {
            out.push(format!("{status} {}: {}", v.name, v.message));
        }
    }
}

pub fn approximations(out: &mut Lines, timeline: &Timeline) {
    if timeline.approximations.is_empty() {
        out.push("none".to_string());
    }
    for a in &timeline.approximations {
        out.push(format!("- {a}"));
    }
}
