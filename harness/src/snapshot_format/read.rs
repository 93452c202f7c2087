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

    fn list(&self, value: Value, path: &str) -> Result<&'d [Value], Error> {
        let streamed = || {
            let identity = self.doc.identity(value);
            identity.is_some_and(|id| self.streamed.contains_key(&id))
        };
        if self.doc.is_released(value) || streamed() {
            return Err(self.released(path));
        }
        match self.doc.view(value) {
            View::List(items) | View::Tuple(items) => Ok(items),
            other => Err(self.error(
                path,
                format!("expected a list, found {}", other.type_with_article()),
            )),
        }
    }

    /// A container met again after its trace entry was converted and released: a snapshot
    /// never shares trace entries (only their frames, which stay readable through the cache).
    fn released(&self, path: &str) -> Error {
        self.error(
            path,
            "this object is part of a trace entry already read (a snapshot does not share \
             trace entries or reuse them elsewhere)",
        )
    }

    fn field(&self, dict: Value, key: &str, path: &str) -> Result<Value, Error> {
        if self.doc.is_released(dict) {
            return Err(self.released(path));
        }
        if !matches!(self.doc.view(dict), View::Dict(_)) {
            return Err(self.error(
                path,
                format!(
                    "expected a dict, found {}",
                    self.doc.view(dict).type_with_article()
                ),
            ));
        }
        self.doc
            .get(dict, key)
            .ok_or_else(|| self.error(path, format!("missing key `{key}`")))
    }

    fn as_int(&self, value: Value, path: &str, key: &str) -> Result<i64, Error> {
        match self.doc.view(value) {
            View::Int(n) => Ok(n),
            View::Bool(b) => Ok(b as i64),
            other => Err(self.error(
                path,
                format!(
                    "`{key}` should be an int, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    fn int(&self, dict: Value, key: &str, path: &str) -> Result<i64, Error> {
        let v = self.field(dict, key, path)?;
        self.as_int(v, path, key)
    }

    fn u64(&self, dict: Value, key: &str, path: &str) -> Result<u64, Error> {
        let n = self.int(dict, key, path)?;
        u64::try_from(n).map_err(|_| self.error(path, format!("`{key}` is negative ({n})")))
    }

    fn opt_int(&self, dict: Value, key: &str, path: &str) -> Result<Option<i64>, Error> {
        match self.doc.get(dict, key) {
            Some(v) if self.doc.view(v) != View::None => Ok(Some(self.as_int(v, path, key)?)),
            _ => Ok(None),
        }
    }

    fn opt_u64(&self, dict: Value, key: &str, path: &str) -> Result<Option<u64>, Error> {
        match self.opt_int(dict, key, path)? {
            Some(n) => u64::try_from(n)
                .map(Some)
                .map_err(|_| self.error(path, format!("`{key}` is negative ({n})"))),
            None => Ok(None),
        }
    }

    fn opt_u32(&self, dict: Value, key: &str, path: &str) -> Result<Option<u32>, Error> {
        match self.opt_int(dict, key, path)? {
            Some(n) => u32::try_from(n)
                .map(Some)
                .map_err(|_| self.error(path, format!("`{key}` is out of range ({n})"))),
            None => Ok(None),
        }
    }

    /// Counts `bytes` more of decoded data; refuses past the bound on decoded size.
    fn charge(&self, bytes: u64, path: &str) -> Result<(), Error> {
        let decoded = self.state.decoded_bytes.get().saturating_add(bytes);
        self.state.decoded_bytes.set(decoded);
        let input = self.state.input_bytes.get();
        let limit = input
            .saturating_mul(MAX_DECODED_FACTOR)
            .saturating_add(self.state.decoded_allowance);
        if decoded > limit {
            return Err(self.error(
                path,
                format!(
                    "decoding would produce more than {MAX_DECODED_FACTOR} times the file's \
                     size in strings and stacks ({decoded} bytes from {input} bytes read); \
                     refused as malformed"
                ),
            ));
        }
        Ok(())
    }

    fn opt_str(&self, dict: Value, key: &str, path: &str) -> Result<Option<String>, Error> {
        match self.doc.get(dict, key).map(|v| self.doc.view(v)) {
            None | Some(View::None) => Ok(None),
            Some(View::Str(s)) => {
                self.charge(s.len() as u64, path)?;
                Ok(Some(s.to_string()))
            }
            Some(other) => Err(self.error(
                path,
                format!(
                    "`{key}` should be a str, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    /// A str field of a frame, annotation or settings dict, shared with every other use of
    /// the same string of the pickle (memo references included); only the first use is
    /// charged.
    fn opt_shared_str(
        &mut self,
        dict: Value,
        key: &str,
        path: &str,
    ) -> Result<Option<std::sync::Arc<str>>, Error> {
        let Some(value) = self.doc.get(dict, key) else {
            return Ok(None);
        };
        let slot = self.doc.str_slot(value);
        if let Some(shared) = slot.and_then(|i| self.state.shared_strings.get(&i)) {
            return Ok(Some(shared.clone()));
        }
        match self.doc.view(value) {
            View::None => Ok(None),
            View::Str(s) => {
                self.charge(s.len() as u64, path)?;
                let shared: std::sync::Arc<str> = s.into();
                if let Some(i) = slot {
                    self.state.shared_strings.insert(i, shared.clone());
                }
                Ok(Some(shared))
            }
            other => Err(self.error(
                path,
                format!(
                    "`{key}` should be a str, found {}",
                    other.type_with_article()
                ),
            )),
        }
    }

    /// Raw stream value: `int64(cudaStream_t)`, kept bit for bit.
    fn stream(&self, dict: Value, path: &str) -> Result<u64, Error> {
        Ok(self.opt_int(dict, "stream", path)?.unwrap_or(0) as u64)
    }

    fn segment(&mut self, seg: Value, path: &str) -> Result<Segment, Error> {
        let address = self.u64(seg, "address", path)?;
        let total_size = self.u64(seg, "total_size", path)?;
        let segment_type = match self.opt_str(seg, "segment_type", path)?.as_deref() {
            Some("small") => SegmentType::Small,
            Some("large") => SegmentType::Large,
            Some(other) => {
                return Err(self.error(path, format!("unknown segment_type {other:?}")));
            }
            None if total_size == crate::allocator::SMALL_BUFFER => SegmentType::Small,
            None => SegmentType::Large,
        };
        let pool_id = match self.doc.get(seg, "segment_pool_id") {
            Some(v) => match self.list(v, path)? {
                [a, b] => (
                    self.as_int(*a, path, "segment_pool_id")?,
                    self.as_int(*b, path, "segment_pool_id")?,
                ),
                _ => return Err(self.error(path, "`segment_pool_id` is not a pair")),
            },
            None => (0, 0),
        };
        let frames = self.frames_of(seg, path)?.unwrap_or_default();
        let blocks_value = self.field(seg, "blocks", path)?;
        let mut blocks = Vec::new();
        let mut next_address = address;
        for (i, b) in self.list(blocks_value, path)?.iter().enumerate() {
            let bpath = format!("{path}.blocks[{i}]");
            let block = self.block(*b, next_address, &bpath)?;
            next_address = block.address.saturating_add(block.size);
            blocks.push(block);
        }
        let overflow = || self.error(path, "block sizes add up to more than 64 bits");
        let sum = |f: &dyn Fn(&Block) -> u64| {
            blocks
                .iter()
                .try_fold(0u64, |total, b| total.checked_add(f(b)))
                .ok_or_else(overflow)
        };
        let allocated = sum(&|b| {
            if b.state == BlockState::ActiveAllocated {
                b.size
            } else {
                0
            }
        })?;
        let active = sum(&|b| {
            if b.state != BlockState::Inactive {
                b.size
            } else {
                0
            }
        })?;
        let requested = sum(&|b| {
            if b.state != BlockState::Inactive {
                b.requested_size
            } else {
                0
            }
        })?;
        Ok(Segment {
            device: self.opt_u32(seg, "device", path)?.unwrap_or(0),
            address,
            total_size,
            allocated_size: self
                .opt_u64(seg, "allocated_size", path)?
                .unwrap_or(allocated),
            active_size: self.opt_u64(seg, "active_size", path)?.unwrap_or(active),
            requested_size: self
                .opt_u64(seg, "requested_size", path)?
                .unwrap_or(requested),
            stream: self.stream(seg, path)?,
            segment_type,
            pool_id,
            is_expandable: matches!(
                self.doc.get(seg, "is_expandable").map(|v| self.doc.view(v)),
                Some(View::Bool(true))
            ),
            frames,
            blocks,
        })
    }

    fn block(&mut self, b: Value, expected_address: u64, path: &str) -> Result<Block, Error> {
        let size = self.u64(b, "size", path)?;
        let state = match self.opt_str(b, "state", path)?.as_deref() {
            Some("active_allocated") => BlockState::ActiveAllocated,
            // The docstring's name for it; accepted in case a writer followed the docs.
            Some("active_pending_free") | Some("active_awaiting_free") => {
                BlockState::ActivePendingFree
            }
            Some("inactive") => BlockState::Inactive,
            Some(other) => return Err(self.error(path, format!("unknown block state {other:?}"))),
            None => return Err(self.error(path, "missing key `state`")),
        };
        let address = self
            .opt_u64(b, "address", path)?
            .unwrap_or(expected_address);
        let (requested_size, frames) = match self.doc.get(b, "history") {
            // Pre-2.0 blocks: `history: [{real_size, frames}]`, newest last.
            Some(history) if self.doc.get(b, "requested_size").is_none() => {
                match self.list(history, path)?.last() {
                    Some(h) => (
                        self.opt_u64(*h, "real_size", path)?.unwrap_or(0),
                        self.frames_of(*h, path)?.unwrap_or_default(),
                    ),
                    None => (0, StackId::default()),
                }
            }
            _ => (
                self.opt_u64(b, "requested_size", path)?.unwrap_or(0),
                self.frames_of(b, path)?.unwrap_or_default(),
            ),
        };
        Ok(Block {
            address,
            size,
            requested_size,
            state,
            frames,
        })
    }

    /// One pass over the entry's keys (a trace holds millions of entries); a key set twice
    /// counts as its last setting, as [`Doc::get`] reads it.
    fn trace_entry(&mut self, e: Value, path: &str) -> Result<TraceEntry, Error> {
        if self.doc.is_released(e) {
            return Err(self.released(path));
        }
        let View::Dict(entries) = self.doc.view(e) else {
            return Err(self.error(
                path,
                format!(
                    "expected a dict, found {}",
                    self.doc.view(e).type_with_article()
                ),
            ));
        };
        let mut action = None;
        let mut frames = None;
        let mut entry = TraceEntry {
            action: TraceAction::Other(String::new()),
            addr: 0,
            size: 0,
            stream: 0,
            time_us: None,
            device_free: None,
            frames: None,
        };
        for (k, v) in entries {
            let View::Str(key) = self.doc.view(*k) else {
                continue;
            };
            let value = self.doc.view(*v);
            let int = |key: &str| match value {
                View::None => Ok(None),
                View::Int(n) => Ok(Some(n)),
                View::Bool(b) => Ok(Some(b as i64)),
                other => Err(self.error(
                    path,
                    format!(
                        "`{key}` should be an int, found {}",
                        other.type_with_article()
                    ),
                )),
            };
            let unsigned = |key: &str| match int(key)? {
                Some(n) => u64::try_from(n)
                    .map(Some)
                    .map_err(|_| self.error(path, format!("`{key}` is negative ({n})"))),
                None => Ok(None),
            };
            match key {
                "action" => action = Some(*v),
                "addr" => entry.addr = unsigned(key)?.unwrap_or(0),
                "size" => entry.size = unsigned(key)?.unwrap_or(0),
                // Raw stream value: `int64(cudaStream_t)`, kept bit for bit.
                "stream" => entry.stream = int(key)?.unwrap_or(0) as u64,
                "time_us" => entry.time_us = int(key)?,
                "device_free" => entry.device_free = unsigned(key)?,
                "frames" => frames = Some(*v),
                _ => {}
            }
        }
        entry.action = match action.map(|a| self.doc.view(a)) {
            Some(View::Str(s)) => {
                let action = TraceAction::parse(s);
                if let TraceAction::Other(name) = &action {
                    self.charge(name.len() as u64, path)?;
                }
                action
            }
            Some(other) => {
                return Err(self.error(
                    path,
                    format!(
                        "`action` should be a str, found {}",
                        other.type_with_article()
                    ),
                ));
            }
            None => return Err(self.error(path, "missing key `action`")),
        };
        if let Some(list) = frames {
            entry.frames = Some(self.stack_of(list, path)?);
        }
        Ok(entry)
    }

    fn settings(&mut self, s: Value) -> Result<AllocatorSettings, Error> {
        let path = "allocator_settings";
        let mut divisions = [0u64; 16];
        if let Some(d) = self.doc.get(s, "roundup_power2_divisions")
            && let View::Dict(entries) = self.doc.view(d)
        {
            for (k, v) in entries {
                let View::Str(key) = self.doc.view(*k) else {
                    continue;
                };
                let Ok(mib) = key.parse::<u64>() else {
                    continue;
                };
                if mib.is_power_of_two() && mib.ilog2() < 16 {
                    divisions[mib.ilog2() as usize] = self.as_int(*v, path, key)?.max(0) as u64;
                }
            }
        }
        let threshold = match self
            .doc
            .get(s, "garbage_collection_threshold")
            .map(|v| self.doc.view(v))
        {
            Some(View::Float(x)) => x,
            Some(View::Int(n)) => n as f64,
            _ => 0.0,
        };
        Ok(AllocatorSettings {
            alloc_conf: self
                .opt_shared_str(s, "PYTORCH_CUDA_ALLOC_CONF", path)?
                .unwrap_or_default(),
            max_split_size: self
                .opt_int(s, "max_split_size", path)?
                .and_then(|n| u64::try_from(n).ok()),
            garbage_collection_threshold: threshold,
            expandable_segments: matches!(
                self.doc
                    .get(s, "expandable_segments")
                    .map(|v| self.doc.view(v)),
                Some(View::Bool(true))
            ),
            roundup_power2_divisions: divisions,
        })
    }

    /// The `frames` of a dict as a stack; `None` when the key is absent.
    fn frames_of(&mut self, dict: Value, path: &str) -> Result<Option<StackId>, Error> {
        match self.doc.get(dict, "frames") {
            Some(list) => self.stack_of(list, path).map(Some),
            None => Ok(None),
        }
    }

    /// A list of frame dicts as a stack. Each list is converted once (snapshots share one
    /// list between the entries of one traceback), each frame dict once.
    fn stack_of(&mut self, list: Value, path: &str) -> Result<StackId, Error> {
        let slot = self.doc.seq_slot(list);
        if let Some(known) = slot.and_then(|i| self.state.stack_of_list.get(i))
            && *known != 0
        {
            return Ok(StackId(*known - 1));
        }
        let items = self.list(list, path)?;
        let mut key = std::mem::take(&mut self.state.scratch);
        key.clear();
        for item in items {
            let slot = self
                .doc
                .dict_slot(*item)
                .ok_or_else(|| self.error(path, "a frame is not a dict"))?;
            if slot >= self.state.frame_of_dict.len() {
                self.state
                    .frame_of_dict
                    .resize(self.doc.dict_count(), u32::MAX);
            }
            let mut id = self
                .state
                .frame_of_dict
                .get(slot)
                .copied()
                .unwrap_or(u32::MAX);
            if id == u32::MAX {
                let frame = Frame {
                    file: self
                        .opt_shared_str(*item, "filename", path)?
                        .unwrap_or_default(),
                    line: self
                        .opt_int(*item, "line", path)?
                        .unwrap_or(0)
                        .clamp(0, u32::MAX as i64) as u32,
                    name: self
                        .opt_shared_str(*item, "name", path)?
                        .unwrap_or_default(),
                };
                id = self.state.frames.len() as u32;
                self.state.frames.push(frame);
                if let Some(cell) = self.state.frame_of_dict.get_mut(slot) {
                    *cell = id;
                }
            }
            key.push(id);
        }
        let stack = match self.state.stack_ids.get(&key) {
            Some(id) => *id,
            None => {
                let frames: Vec<Frame> = key
                    .iter()
                    .filter_map(|id| self.state.frames.get(*id as usize).cloned())
                    .collect();
                // The frames' strings are shared and were charged when first read; the
                // table keeps each stack twice (in order and as its lookup key).
                let bytes = (2 * frames.len() * std::mem::size_of::<Frame>()) as u64;
                self.charge(bytes, path)?;
                let id = self.state.stacks.intern(frames);
                self.state.stack_ids.insert(key.clone(), id);
                id
            }
        };
        self.state.scratch = key;
        if let Some(i) = slot {
            if i >= self.state.stack_of_list.len() {
                self.state.stack_of_list.resize(self.doc.seq_count(), 0);
            }
            if let Some(cell) = self.state.stack_of_list.get_mut(i) {
                *cell = stack.0.saturating_add(1);
            }
        }
        Ok(stack)
    }
}

mod fast_hash;
mod to_timeline;

use fast_hash::FastHasher;
pub use to_timeline::{
    DeviceView, ImportedTimeline, StreamNumbers, allocator_config, pick_device, to_timeline,
};

#[cfg(test)]
mod tests;
