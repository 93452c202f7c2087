//! Which workload stacks held the memory at the peak: the allocator events are replayed up to
//! the peak event, tracking live blocks by address, and the live blocks grouped by stack and
//! memory category (when the source labels allocations).

use crate::check::locate::stack_label;
use crate::timeline::{Action, Category, StackId, Timeline};
use std::collections::HashMap;

/// Live allocations made by one stack, of one category, at the peak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Site {
    pub stack: StackId,
    /// What the blocks hold (`None` when the source does not say).
    pub category: Option<Category>,
    /// "s.yaml:12 in make <- s.yaml:20 in <module>".
    pub label: String,
    pub count: u64,
    /// Requested bytes of the live blocks (as the events record them, unrounded).
    pub bytes: u64,
}

/// Every (stack, category) with live allocations at the peak, most bytes first (ties: more
/// blocks first, then by label and category, so the order never depends on interning order).
pub fn live_at_peak(timeline: &Timeline) -> Vec<Site> {
    let Some(peak) = timeline.peak_event_index() else {
        return Vec::new();
    };
    let mut live: HashMap<u64, (u64, StackId, Option<Category>)> = HashMap::new();
    // A long run's replay jumps over folded iterations: it resumes from the live blocks the
    // recorder carried across each fold.
    let mut resumes = timeline
        .folded
        .as_ref()
        .map_or(&[][..], |f| &f.resumes[..])
        .iter()
        .peekable();
    for (index, event) in timeline.events.iter().enumerate().take(peak + 1) {
        if let Some(resume) = resumes.next_if(|r| r.event_index <= index) {
            live = resume
                .live
                .iter()
                .map(|b| (b.addr, (b.size, b.stack, b.category)))
                .collect();
        }
        match event.action {
            Action::Alloc => {
                live.insert(event.addr, (event.size, event.stack, event.category));
            }
            Action::FreeRequested => {
                live.remove(&event.addr);
            }
            _ => {}
        }
    }
    let mut by_stack: HashMap<(StackId, Option<Category>), (u64, u64)> = HashMap::new();
    for (size, stack, category) in live.into_values() {
        let entry = by_stack.entry((stack, category)).or_default();
        entry.0 += 1;
        entry.1 += size;
    }
    let mut sites: Vec<Site> = by_stack
        .into_iter()
        .map(|((stack, category), (count, bytes))| Site {
            stack,
            category,
            label: stack_label(timeline.stacks.get(stack)),
            count,
            bytes,
        })
        .collect();
    sites.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then(b.count.cmp(&a.count))
            .then_with(|| a.label.cmp(&b.label))
            .then(a.category.cmp(&b.category))
    });
    sites
}

/// Live bytes at the peak per category, in the profiler's category order (categories with
/// no live bytes left out; empty when the source labels nothing).
pub fn by_category(sites: &[Site]) -> Vec<(Category, u64)> {
    let mut totals: Vec<(Category, u64)> = Vec::new();
    for site in sites {
        let Some(category) = site.category else {
            continue;
        };
        match totals.iter_mut().find(|(c, _)| *c == category) {
            Some((_, bytes)) => *bytes += site.bytes,
            None => totals.push((category, site.bytes)),
        }
    }
    totals.sort();
    totals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::fixture::{Builder, FILE};
    use crate::units::MIB;

    #[test]
    fn splits_a_stack_by_category_and_totals_categories() {
        let mut b = Builder::new(1 << 40);
        b.begin();
        b.alloc_as(4 * MIB, 40, Category::Parameter);
        b.alloc_as(2 * MIB, 41, Category::Activation);
        b.alloc_as(MIB, 41, Category::Gradient);
        b.alloc_as(MIB, 41, Category::Activation);
        b.end();
        let sites = live_at_peak(&b.finish());
        let rows: Vec<_> = sites
            .iter()
            .map(|s| (s.label.clone(), s.category, s.count, s.bytes))
            .collect();
        let at = |line| format!("{FILE}:{line} in <module>");
        assert_eq!(
            rows,
            [
                (at(40), Some(Category::Parameter), 1, 4 * MIB),
                (at(41), Some(Category::Activation), 2, 3 * MIB),
                (at(41), Some(Category::Gradient), 1, MIB),
            ]
        );
        assert_eq!(
            by_category(&sites),
            [
                (Category::Parameter, 4 * MIB),
                (Category::Gradient, MIB),
                (Category::Activation, 3 * MIB),
            ]
        );
    }

    #[test]
    fn groups_live_blocks_by_stack_and_orders_by_bytes() {
        let mut b = Builder::new(1 << 40);
        b.begin();
        let small = b.alloc(MIB, 30);
        b.alloc(MIB, 30);
        b.alloc(MIB, 30);
        b.alloc(8 * MIB, 31);
        b.alloc(2 * MIB, 32);
        let freed = b.alloc(MIB, 33); // freed before the peak: not live there
        b.free(freed);
        b.alloc(4 * MIB, 34);
        b.alloc(2 * MIB, 35); // the peak
        b.free(small);
        b.end();
        let sites = live_at_peak(&b.finish());
        let rows: Vec<_> = sites
            .iter()
            .map(|s| (s.label.clone(), s.count, s.bytes))
            .collect();
        let at = |line| format!("{FILE}:{line} in <module>");
        assert_eq!(
            rows,
            [
                (at(31), 1, 8 * MIB),
                (at(34), 1, 4 * MIB),
                (at(30), 3, 3 * MIB),
                (at(32), 1, 2 * MIB),
                (at(35), 1, 2 * MIB),
            ]
        );
    }
}
