//! The parsed, validated form of a scenario file. Parsing lives in `parse.rs`; everything
//! downstream works with these types only.

use crate::error::Location;
use serde::Serialize;

/// A value of a `vary` variable or a `when` condition; visible to the workload as a Python value.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum VarValue {
    None,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
}

impl std::fmt::Display for VarValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            VarValue::None => f.write_str("None"),
            VarValue::Bool(b) => f.write_str(if *b { "true" } else { "false" }),
            VarValue::Int(i) => write!(f, "{i}"),
            VarValue::Float(x) => write!(f, "{x}"),
            VarValue::Str(s) => f.write_str(s),
        }
    }
}

/// A CPython release the collector model knows: a minor version (3.8 to 3.15), optionally a
/// patch release where the collector differs between patches (3.14.0 - 3.14.4 shipped the
/// incremental collector), and whether it is a free-threaded build (`3.13t`, `3.14t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct PyVersion {
    pub minor: u8,
    /// The patch release when one was given (`"3.14.2"`); `None` means the current release.
    pub patch: Option<u8>,
    /// A free-threaded (`--disable-gil`) build.
    pub free_threaded: bool,
}

impl PyVersion {
    /// The current release of `3.minor`, default (GIL) build.
    pub const fn minor(minor: u8) -> PyVersion {
        PyVersion {
            minor,
            patch: None,
            free_threaded: false,
        }
    }
}

impl std::fmt::Display for PyVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "3.{}", self.minor)?;
        if let Some(patch) = self.patch {
            write!(f, ".{patch}")?;
        }
        if self.free_threaded {
            f.write_str("t")?;
        }
        Ok(())
    }
}

/// The collector's state when the workload starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GcStartState {
    /// `gc.get_count()` at the start.
    pub counts: [u64; 3],
    /// Tracked objects in the oldest generation (`long_lived_total`): decides whether an
    /// automatic full collection may run.
    pub long_lived_total: u64,
    /// Whether the dict, list, tuple and frame free lists start full (a process that has
    /// been running, e.g. after `import torch`) or empty (right after `gc.collect()`).
    pub free_lists_full: bool,
    /// How far below zero the gen-0 count starts (`counts[0]` is then 0). Only a free-threaded
    /// build before the gh-142048 fix has a negative count.
    pub count_below_zero: u64,
    /// Python functions in `gc.callbacks` (`python.start.gc_callbacks`), such as a
    /// calibration probe's logger: each collection then builds its info dict and calls them
    /// (`heap/gc_callbacks.rs`).
    #[serde(skip_serializing_if = "is_zero_u32")]
    pub gc_callbacks: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PythonProfile {
    pub version: PyVersion,
    /// Start state of the collector. The default is "just after `import torch`".
    pub start: GcStartState,
    /// True when `start` was given in the file rather than defaulted.
    pub start_given: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Device {
    /// The preset's name (`h100-80gb`), or `None` for `{ capacity: ... }`.
    pub preset: Option<String>,
    /// Total memory as PyTorch reports it (`torch.cuda.get_device_properties().total_memory`).
    pub capacity: u64,
    /// Bytes the CUDA context takes from the device before the workload runs
    /// (`device: { ..., context: "530 MiB" }`); 0 unless given.
    #[serde(skip_serializing_if = "is_zero")]
    pub context: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_u32(n: &u32) -> bool {
    *n == 0
}

/// `"<= 52 GiB"`, `"< 1 MiB"`, `">= 10 GiB"`, `"== 0 B"` (the unit is required).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ByteBound {
    pub op: Comparison,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Comparison {
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
}

impl ByteBound {
    pub fn holds(&self, measured: u64) -> bool {
        match self.op {
            Comparison::Lt => measured < self.bytes,
            Comparison::Le => measured <= self.bytes,
            Comparison::Gt => measured > self.bytes,
            Comparison::Ge => measured >= self.bytes,
            Comparison::Eq => measured == self.bytes,
        }
    }
}

impl std::fmt::Display for ByteBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let op = match self.op {
            Comparison::Lt => "<",
            Comparison::Le => "<=",
            Comparison::Gt => ">",
            Comparison::Ge => ">=",
            Comparison::Eq => "==",
        };
        write!(f, "{op} {}", crate::units::Bytes(self.bytes))
    }
}

/// One check of an `expect` block, with where it was written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Expectation {
    pub check: Check,
    pub location: Location,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum Check {
    /// `oom: true|false`
    Oom(bool),
    /// `peak_allocated: "<= 52 GiB"`
    PeakAllocated(ByteBound),
    /// `peak_reserved: "<= 60 GiB"`
    PeakReserved(ByteBound),
    /// `steady_state: { warmup: 5, tolerance: "1 MiB" }` or `steady_state: true`
    /// (warmup 1 iteration, tolerance 0): allocated bytes at every iteration boundary after
    /// the warm-up stay within `tolerance` of the first one after it.
    SteadyState { warmup: u32, tolerance: u64 },
    /// `leak_per_iteration: "<= 0 B"`: growth of allocated bytes per iteration (least-squares
    /// slope over the iteration boundaries after the first).
    LeakPerIteration(ByteBound),
    /// `cycles: none`: the collector freed no device bytes.
    CyclesNone,
}

/// An `expect` entry: checks that apply to the variants matching `when`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExpectBlock {
    pub when: Vec<(String, VarValue)>,
    pub checks: Vec<Expectation>,
    pub location: Location,
}

/// The workload's Python source and how its positions map back into the scenario file.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Workload {
    pub source: String,
    /// File line of the workload's first line (1-based).
    pub first_line: u32,
    /// Columns the block scalar's indentation removed from every line.
    pub indent: u32,
}

impl Workload {
    /// Maps a 1-based (line, column) inside `source` to the scenario file.
    pub fn file_position(&self, line: u32, column: u32) -> (u32, u32) {
        (self.first_line + line - 1, column + self.indent)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scenario {
    /// The file as the user named it or relative to the workspace root; used in every message.
    pub file: String,
    pub name: String,
    pub about: String,
    pub device: Device,
    pub python: PythonProfile,
    /// `vary` in file order: names and their values.
    pub vary: Vec<(String, Vec<VarValue>)>,
    /// Empty (no source) when the scenario replays a snapshot: see [`Scenario::replay`].
    pub workload: Workload,
    /// `replay: path/to/snapshot.pickle`, the alternative to `workload`: the timeline is a
    /// recorded PyTorch snapshot instead of a workload run on the model.
    pub replay: Option<ReplaySource>,
    pub expect: Vec<ExpectBlock>,
    /// `limits:`: the run's budgets (defaults where not given).
    pub limits: super::limits::Limits,
    /// `allocator:`: `PYTORCH_CUDA_ALLOC_CONF` settings as normalised text (empty: PyTorch's
    /// defaults); a varied `allocator` overrides it ([`Scenario::allocator_for`]).
    pub allocator: String,
}

/// A recorded snapshot a scenario replays. Its timeline is the snapshot's (exact when the
/// allocator replay predicts it); the variant's device capacity decides whether the same
/// requests run out of memory; `python` is not used (the trace has no interpreter to model).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplaySource {
    /// The path as written after `replay:` (relative to the scenario file's folder).
    pub written: String,
    /// The path as messages show it: the written path joined to the scenario file's folder,
    /// as the scenario file is named (never made absolute).
    pub display: String,
    /// The file to open.
    pub path: std::path::PathBuf,
    /// Where `replay:` is written.
    pub location: Location,
}

/// One combination of `vary` values, with the device and Python profile it runs under
/// (`vary` may override `python` and `device`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Variant {
    /// `name=value` pairs in `vary` order.
    pub values: Vec<(String, VarValue)>,
    pub device: Device,
    pub python: PythonProfile,
}

impl Variant {
    /// `gc_every=100,python=3.11`; empty when the scenario has no `vary`.
    pub fn name(&self) -> String {
        self.values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn get(&self, name: &str) -> Option<&VarValue> {
        self.values.iter().find(|(k, _)| k == name).map(|(_, v)| v)
    }
}
