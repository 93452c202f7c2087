//! The machine-readable report: one JSON object per variant. The shape is a set of serde
//! types, separate from how the values are gathered, so the schema reads in one place.

use crate::check::{Verdict, series};
use crate::scenario::{Scenario, VarValue, Variant};
use crate::timeline::{Category, CycleReport, GcEvent, Timeline};
use serde::Serialize;
use serde::ser::SerializeMap;

/// Version of the JSON shape described by `schema/run-report.schema.json`; raised on any
/// change that is not a new optional field.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Clone, Serialize)]
pub struct JsonReport {
    pub schema_version: u32,
    pub scenario: String,
    pub variant: VaryValues,
    pub python: String,
    /// The device preset's name, or its capacity ("80 GiB") when given as a capacity.
    pub device: String,
    pub device_capacity_bytes: u64,
    /// Every check held.
    pub passed: bool,
    pub outcome: Outcome,
    pub oom: Option<JsonOom>,
    pub iterations_completed: u32,
    pub peak_allocated_bytes: u64,
    pub peak_reserved_bytes: u64,
    /// Values measured on the run whether or not a check asks for them.
    pub measured: Measured,
    /// Allocated and reserved bytes at the end of each iteration, in order.
    pub iterations: Vec<JsonIteration>,
    pub gc_events: Vec<JsonGcEvent>,
    pub cycle_freed: CycleFreed,
    pub cycle_paths: Vec<JsonCyclePath>,
    /// Allocations live at the peak, per allocating stack and category, most bytes first.
    pub sites_at_peak: Vec<JsonSite>,
    /// Live bytes at the peak per memory category (empty when the source labels nothing).
    pub bytes_at_peak_by_category: Vec<JsonCategoryBytes>,
    pub checks: Vec<JsonCheck>,
    pub approximations: Vec<String>,
    /// The CUDA driver's figures of a run on a real device (`device: cuda`): its device, and
    /// at every iteration end the model's reserved bytes next to the driver's in-use bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub driver: Option<crate::timeline::DriverObservation>,
    /// A long run's folded iterations (`iterations` and `gc_events` then list only the kept
    /// ones; see `approximations`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub folded: Option<crate::timeline::Folded>,
}

/// The `vary` values as a JSON object, in `vary` order when serialized directly.
#[derive(Debug, Clone)]
pub struct VaryValues(pub Vec<(String, VarValue)>);

impl Serialize for VaryValues {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// The figures the steady-state and leak checks judge, as numbers.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// Least-squares growth of allocated bytes per iteration over the completed iterations
    /// after the first; null with fewer than three completed iterations.
    pub leak_per_iteration_bytes: Option<i64>,
    pub growth_fit: Option<GrowthFit>,
    /// Lowest and highest allocated bytes at the ends of the completed iterations after the
    /// first; null with fewer than two completed iterations.
    pub steady_state: Option<AllocatedRange>,
}

#[derive(Debug, Clone, Serialize)]
pub struct GrowthFit {
    pub bytes_per_iteration: i64,
    /// The fitted points: completed iterations `first_iteration..=last_iteration`.
    pub first_iteration: u32,
    pub last_iteration: u32,
    pub first_allocated_bytes: u64,
    pub last_allocated_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct AllocatedRange {
    pub first_iteration: u32,
    pub last_iteration: u32,
    pub min_allocated_bytes: u64,
    pub max_allocated_bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonIteration {
    pub iteration: u32,
    pub allocated_bytes: u64,
    pub reserved_bytes: u64,
    /// False for the iteration an out-of-memory error interrupted (its end is the error).
    pub completed: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Oom,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonOom {
    /// Counts from 0; null when the OOM happened outside every iteration.
    pub iteration: Option<u32>,
    pub requested_bytes: u64,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonGcEvent {
    pub iteration: Option<u32>,
    /// "iteration 5", "before the first iteration" or "after the last iteration".
    pub when: String,
    pub generation: u8,
    pub automatic: bool,
    pub objects_collected: u64,
    pub tensors_alive_before: u64,
    pub tensors_alive_after: u64,
    pub bytes_freed: u64,
    pub device_tensors_freed: u64,
    pub line: Option<u32>,
}

/// Device memory the cycle collector (not reference counting) released, over the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CycleFreed {
    pub tensors: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonCyclePath {
    pub holder_path: String,
    pub cycle: String,
    pub tensor: String,
    pub bytes_each: u64,
    pub count: u64,
    pub bytes_total: u64,
    pub first_iteration: Option<u32>,
    /// Innermost frame of the allocation: "file:line in function"; null when unknown.
    pub alloc_site: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonSite {
    /// "file:line in function <- ..." (innermost first).
    pub site: String,
    /// `parameter`, `gradient`, `optimizer_state`, `activation`, `input`, `temporary`;
    /// null when the source does not label allocations.
    pub category: Option<Category>,
    pub count: u64,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonCategoryBytes {
    pub category: Category,
    pub bytes: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct JsonCheck {
    pub name: String,
    pub passed: bool,
    pub message: String,
    /// Where the check is written: "file:line:column".
    pub location: String,
}

impl JsonReport {
    pub fn new(
        scenario: &Scenario,
        variant: &Variant,
        timeline: &Timeline,
        verdicts: &[Verdict],
    ) -> JsonReport {
        JsonReport {
            schema_version: SCHEMA_VERSION,
            passed: verdicts.iter().all(|v| v.passed),
            scenario: scenario.name.clone(),
            variant: VaryValues(variant.values.clone()),
            python: variant.python.version.to_string(),
            device: super::device_name(variant),
            // A real device's capacity is the card's, known once the run opened it.
            device_capacity_bytes: if variant.device.cuda_ordinal().is_some() {
                timeline.device_capacity
            } else {
                variant.device.capacity
            },
            outcome: if timeline.oom.is_some() {
                Outcome::Oom
            } else {
                Outcome::Completed
            },
            oom: timeline.oom.as_ref().map(|o| JsonOom {
                iteration: o.iteration,
                requested_bytes: o.requested_bytes,
                message: o.message.clone(),
            }),
            iterations_completed: timeline.iterations_completed(),
            peak_allocated_bytes: timeline.peak_allocated(),
            peak_reserved_bytes: timeline.peak_reserved(),
            measured: measured(timeline),
            iterations: iterations(timeline),
            gc_events: timeline
                .gc_events
                .iter()
                .map(|g| gc_event(timeline, g))
                .collect(),
            sites_at_peak: sites_at_peak(timeline),
            bytes_at_peak_by_category: super::sites::by_category(&super::sites::live_at_peak(
                timeline,
            ))
            .into_iter()
            .map(|(category, bytes)| JsonCategoryBytes { category, bytes })
            .collect(),
            cycle_freed: cycle_freed(timeline),
            cycle_paths: timeline
                .cycle_reports
                .iter()
                .map(|c| cycle_path(c, timeline))
                .collect(),
            checks: verdicts
                .iter()
                .map(|v| JsonCheck {
                    name: v.name.clone(),
                    passed: v.passed,
                    message: v.message.clone(),
                    location: v.location.to_string(),
                })
                .collect(),
            approximations: timeline.approximations.clone(),
            driver: timeline.driver.clone(),
            folded: timeline.folded.clone(),
        }
    }
}

/// The leak slope and the steady-state range, from the same series the checks judge.
pub fn measured(timeline: &Timeline) -> Measured {
    let boundaries = series::completed_boundaries(timeline);
    let growth_fit = series::growth_per_iteration(&boundaries)
        .ok()
        .map(|s| GrowthFit {
            bytes_per_iteration: s.bytes_per_iteration,
            first_iteration: s.first.iteration,
            last_iteration: s.last.iteration,
            first_allocated_bytes: s.first.allocated,
            last_allocated_bytes: s.last.allocated,
        });
    let after_first = boundaries.get(1..).unwrap_or_default();
    let steady_state = match (after_first.first(), after_first.last()) {
        (Some(first), Some(last)) => Some(AllocatedRange {
            first_iteration: first.iteration,
            last_iteration: last.iteration,
            min_allocated_bytes: after_first.iter().map(|b| b.allocated).min().unwrap_or(0),
            max_allocated_bytes: after_first.iter().map(|b| b.allocated).max().unwrap_or(0),
        }),
        _ => None,
    };
    Measured {
        leak_per_iteration_bytes: growth_fit.as_ref().map(|g| g.bytes_per_iteration),
        growth_fit,
        steady_state,
    }
}

/// Every iteration's end, the interrupted one included (marked not completed).
pub fn iterations(timeline: &Timeline) -> Vec<JsonIteration> {
    timeline
        .iterations
        .iter()
        .map(|m| JsonIteration {
            iteration: m.iteration,
            allocated_bytes: m.allocated_at_end,
            reserved_bytes: m.reserved_at_end,
            completed: m.completed,
        })
        .collect()
}

/// Totals over the collections that freed device memory.
pub fn cycle_freed(timeline: &Timeline) -> CycleFreed {
    let (tensors, bytes) = timeline.collector_freed();
    CycleFreed { tensors, bytes }
}

fn gc_event(timeline: &Timeline, g: &GcEvent) -> JsonGcEvent {
    JsonGcEvent {
        iteration: g.iteration,
        when: crate::check::locate::gc_event_label(timeline, g),
        generation: g.generation,
        automatic: g.automatic,
        objects_collected: g.objects_collected,
        tensors_alive_before: g.tensors_alive_before,
        tensors_alive_after: g.tensors_alive_after,
        bytes_freed: g.bytes_freed,
        device_tensors_freed: g.device_tensors_freed,
        line: g.line,
    }
}

fn cycle_path(c: &CycleReport, timeline: &Timeline) -> JsonCyclePath {
    JsonCyclePath {
        holder_path: c.holder_path.clone(),
        cycle: c.cycle.clone(),
        tensor: c.tensor.clone(),
        bytes_each: c.bytes_each,
        count: c.count,
        bytes_total: c.bytes_total,
        first_iteration: c.first_iteration,
        alloc_site: timeline
            .stacks
            .get(c.alloc_site)
            .first()
            .map(crate::check::locate::frame_label),
    }
}

fn sites_at_peak(timeline: &Timeline) -> Vec<JsonSite> {
    super::sites::live_at_peak(timeline)
        .into_iter()
        .map(|s| JsonSite {
            site: s.label,
            category: s.category,
            count: s.count,
            bytes: s.bytes,
        })
        .collect()
}
