//! Snapshot pickle → [`Snapshot`] → [`Timeline`].
//!
//! Accepts every field set of torch 2.1 to 2.11: optional `frames` on trace entries, the
//! pre-2.0 block `history` instead of `frames`/`requested_size`, missing `time_us` (before
//! 2.2), `device_free` on `oom` entries, `allocator_settings` (2.3+), `external_annotations`
//! (2.5+), a bare list of segments (`torch.cuda.memory_snapshot()`), and several devices.
//! Unknown keys are ignored, as PyTorch's viewers ignore them.

use super::model::{
    AllocatorSettings, Annotation, Block, BlockState, Segment, SegmentType, Snapshot, TraceAction,
    TraceEntry,
};
use super::pickle::{self, Doc, Value, View};
use crate::error::{Error, InputErrorKind, Location};
use crate::timeline::{Frame, StackId, StackTable};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::io::Read;
use std::path::Path;

/// Reads a snapshot pickle. `file` names the input in error messages.
///
/// The trace is converted while it is decoded: each batch of trace entries becomes
/// [`TraceEntry`]s (frames interned into the [`StackTable`]) as it is appended, and the
/// generic values of the entries are released at once, so memory holds the compact trace,
/// not the pickle's tree of it. Python's pickler appends in batches of 1000 items (and so
/// does the exporter); a writer that appends a whole trace at once is read all the same,
/// holding that trace's tree until its single `APPENDS`.
pub fn read_snapshot(input: impl Read, file: &str) -> Result<Snapshot, Error> {
    read_snapshot_within(input, file, DECODED_ALLOWANCE)
}

/// [`read_snapshot`] with `allowance` bytes of decoded data allowed beyond
/// [`MAX_DECODED_FACTOR`] times the input.
fn read_snapshot_within(input: impl Read, file: &str, allowance: u64) -> Result<Snapshot, Error> {
    let mut sink = TraceSink {
        file,
        state: ConvertState {
            decoded_allowance: allowance,
            ..ConvertState::default()
        },
        traces: Vec::new(),
        trace_slots: HashMap::new(),
    };
    let input = CountingReader {
        inner: input,
        count: std::rc::Rc::clone(&sink.state.input_bytes),
    };
    let doc = pickle::decode_with(input, file, &mut sink)?;
    let TraceSink {
        mut state, traces, ..
    } = sink;
    let converter = Converter {
        doc: &doc,
        file,
        state: &mut state,
        streamed: traces.into_iter().map(|(id, t)| (id, Some(t))).collect(),
    };
    converter.snapshot()
}

/// [`read_snapshot`] without streaming: the whole tree first, then the conversion (the
/// reference the streaming reader is tested against).
#[cfg(test)]
fn read_snapshot_whole(input: impl Read, file: &str) -> Result<Snapshot, Error> {
    let doc = pickle::decode(input, file)?;
    let mut state = ConvertState {
        decoded_allowance: u64::MAX,
        ..ConvertState::default()
    };
    let converter = Converter {
        doc: &doc,
        file,
        state: &mut state,
        streamed: HashMap::new(),
    };
    converter.snapshot()
}

/// Reads the snapshot at `path`; `file` is how messages name it (as the user wrote it).
pub fn read_snapshot_file(path: &Path, file: &str) -> Result<Snapshot, Error> {
    // The decoder buffers its input itself.
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_snapshot(f, file)
}

/// What conversion keeps between batches: the stacks and the caches that intern them.
#[derive(Default)]
struct ConvertState {
    stacks: StackTable,
    /// Frame dict (by dict slot) → index into `frames`; shared frame dicts are converted once.
    frame_of_dict: Vec<u32>,
    frames: Vec<Frame>,
    /// Frame list (by its frames' indices) → stack.
    stack_ids: HashMap<Vec<u32>, StackId, BuildHasherDefault<FastHasher>>,
    /// Frame list (by sequence slot) → stack + 1 (0: not converted yet). A released list
    /// (its trace entry was converted) is still found here when another entry shares it.
    stack_of_list: Vec<u32>,
    scratch: Vec<u32>,
    /// Frame and annotation strings (by string slot): a string the memo references from many
    /// frames or annotations is allocated once and shared (see [`Frame`]).
    shared_strings: HashMap<usize, std::sync::Arc<str>, BuildHasherDefault<FastHasher>>,
    /// Bytes of the input read so far (shared with the reader that counts them).
    input_bytes: std::rc::Rc<std::cell::Cell<u64>>,
    /// Bytes of strings and frames produced so far: frame strings are shared (counted once
    /// per distinct string), but other strings shared through the memo are copied wherever
    /// they are used and stacks repeat frames, so this can outgrow the input
    /// ([`MAX_DECODED_FACTOR`]).
    decoded_bytes: std::cell::Cell<u64>,
    /// Decoded bytes allowed beyond the factor.
    decoded_allowance: u64,
}

/// Most bytes of decoded strings and stacks per byte of input (beyond a fixed allowance):
/// real snapshots stay far below it, a crafted one that references one long string through
/// the memo millions of times is refused instead of exhausting memory.
const MAX_DECODED_FACTOR: u64 = 256;
const DECODED_ALLOWANCE: u64 = 256 << 20;

/// Counts the bytes the decoder reads, for the decoded-size bound.
struct CountingReader<R> {
    inner: R,
    count: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// Takes the entries of trace lists while the pickle is decoded (see [`read_snapshot`]).
struct TraceSink<'f> {
    file: &'f str,
    state: ConvertState,
    /// (trace list's identity, its converted entries), in order of first append.
    traces: Vec<(u64, Vec<TraceEntry>)>,
    /// Identity → index into `traces`.
    trace_slots: HashMap<u64, usize>,
}

impl pickle::AppendSink for TraceSink<'_> {
    fn append(&mut self, doc: &mut Doc, list: Value, items: &[Value]) -> Result<bool, Error> {
        let Some(identity) = doc.identity(list) else {
            return Ok(false);
        };
        let slot = match self.trace_slots.get(&identity) {
            Some(&slot) => slot,
            None => {
                // A trace list is an empty list whose first item is a dict with a str
                // `action` (no other dict of a snapshot has one). Anything else stays generic.
                let empty = matches!(doc.view(list), View::List([]));
                let looks_like_entry = items.first().is_some_and(|first| {
                    matches!(
                        doc.get(*first, "action").map(|a| doc.view(a)),
                        Some(View::Str(_))
                    )
                });
                if !empty || !looks_like_entry {
                    return Ok(false);
                }
                self.traces.push((identity, Vec::new()));
                self.trace_slots.insert(identity, self.traces.len() - 1);
                self.traces.len() - 1
            }
        };
        let mut converted = std::mem::take(&mut self.traces[slot].1);
        let mut converter = Converter {
            doc,
            file: self.file,
            state: &mut self.state,
            streamed: HashMap::new(),
        };
        let result = items.iter().try_for_each(|item| {
            // The entry's path is only spelled out for an error message: converting it again
            // with the path gives the same error.
            match converter.trace_entry(*item, "") {
                Ok(entry) => {
                    converted.push(entry);
                    Ok(())
                }
                Err(_) => {
                    let path = format!("device_traces[{slot}][{}]", converted.len());
                    converter.trace_entry(*item, &path).map(|_| ())
                }
            }
        });
        self.traces[slot].1 = converted;
        result?;
        for item in items {
            if let Some(frames) = doc.get(*item, "frames") {
                doc.release(frames);
            }
            doc.release(*item);
        }
        Ok(true)
    }
}

struct Converter<'d, 's> {
    doc: &'d Doc,
    file: &'d str,
    state: &'s mut ConvertState,
    /// Trace lists converted while decoding: identity → entries until taken.
    streamed: HashMap<u64, Option<Vec<TraceEntry>>>,
}

impl<'d> Converter<'d, '_> {
    fn error(&self, path: &str, message: impl std::fmt::Display) -> Error {
        Error::input(
            InputErrorKind::Data,
            Location::in_binary(self.file, None),
            format!("not a memory snapshot: {path}: {message}"),
        )
    }

    fn snapshot(mut self) -> Result<Snapshot, Error> {
        let root = self.doc.root();
        let mut snapshot = Snapshot::default();
        let segments = match self.doc.view(root) {
            View::Dict(_) => self
                .doc
                .get(root, "segments")
                .ok_or_else(|| self.error("snapshot", "no `segments` key"))?,
            View::List(_) => root,
            other => {
                return Err(self.error(
                    "snapshot",
                    format!("expected a dict, found {}", other.type_with_article()),
                ));
            }
        };
        let (mut reserved, mut allocated) = (0u64, 0u64);
        for (i, seg) in self.list(segments, "segments")?.iter().enumerate() {
            let path = format!("segments[{i}]");
            let segment = self.segment(*seg, &path)?;
            // Every later pass sums these: a snapshot whose totals overflow is malformed.
            reserved = reserved
                .checked_add(segment.total_size)
                .ok_or_else(|| self.error(&path, "segment sizes add up to more than 64 bits"))?;
            allocated = allocated
                .checked_add(segment.allocated_size.max(segment.active_size))
                .ok_or_else(|| self.error(&path, "segment sizes add up to more than 64 bits"))?;
            snapshot.segments.push(segment);
        }
        if let Some(traces) = self.doc.get(root, "device_traces") {
            for (d, trace) in self.list(traces, "device_traces")?.iter().enumerate() {
                if let Some(identity) = self.doc.identity(*trace)
                    && let Some(entries) = self.streamed.get_mut(&identity)
                {
                    let entries = entries.take().ok_or_else(|| {
                        self.error(
                            &format!("device_traces[{d}]"),
                            "the same trace list appears twice",
                        )
                    })?;
                    snapshot.device_traces.push(entries);
                    continue;
                }
                let entries = self.list(*trace, &format!("device_traces[{d}]"))?;
                let mut out = Vec::with_capacity(entries.len());
                for (i, entry) in entries.iter().enumerate() {
                    out.push(self.trace_entry(*entry, &format!("device_traces[{d}][{i}]"))?);
                }
                snapshot.device_traces.push(out);
            }
        }
        if let Some(settings) = self.doc.get(root, "allocator_settings") {
            snapshot.allocator_settings = Some(self.settings(settings)?);
        }
        if let Some(annotations) = self.doc.get(root, "external_annotations") {
            for (i, a) in self
                .list(annotations, "external_annotations")?
                .iter()
                .enumerate()
            {
                let path = format!("external_annotations[{i}]");
                snapshot.annotations.push(Annotation {
                    device: self.opt_u32(*a, "device", &path)?.unwrap_or(0),
                    stage: self.opt_shared_str(*a, "stage", &path)?.unwrap_or_default(),
                    name: self.opt_shared_str(*a, "name", &path)?.unwrap_or_default(),
                    time_us: self.opt_int(*a, "time_us", &path)?,
                });
            }
        }
        snapshot.stacks = std::mem::take(&mut self.state.stacks);
        Ok(snapshot)
    }
}

mod entries;
mod fields;
mod stacks;

mod fast_hash;
mod to_timeline;

use fast_hash::FastHasher;
pub use to_timeline::{
    DeviceView, ImportedTimeline, StreamNumbers, allocator_config, pick_device, to_timeline,
};

#[cfg(test)]
mod tests;
