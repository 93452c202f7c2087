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
use crate::allocator::AllocatorConfig;
use crate::error::{Error, InputErrorKind, Location};
use crate::timeline::{Action, Frame, MemoryEvent, StackId, StackTable, Timeline};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
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
    /// Bytes of the input read so far (shared with the reader that counts them).
    input_bytes: std::rc::Rc<std::cell::Cell<u64>>,
    /// Bytes of strings and frames produced so far: a string shared through the memo is
    /// copied wherever it is used, so this can outgrow the input ([`MAX_DECODED_FACTOR`]).
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
                    stage: self.opt_str(*a, "stage", &path)?.unwrap_or_default(),
                    name: self.opt_str(*a, "name", &path)?.unwrap_or_default(),
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

    fn settings(&self, s: Value) -> Result<AllocatorSettings, Error> {
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
                .opt_str(s, "PYTORCH_CUDA_ALLOC_CONF", path)?
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
                    file: self.opt_str(*item, "filename", path)?.unwrap_or_default(),
                    line: self
                        .opt_int(*item, "line", path)?
                        .unwrap_or(0)
                        .clamp(0, u32::MAX as i64) as u32,
                    name: self.opt_str(*item, "name", path)?.unwrap_or_default(),
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
                let bytes: u64 = frames
                    .iter()
                    .map(|f| (std::mem::size_of::<Frame>() + f.file.len() + f.name.len()) as u64)
                    .sum();
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

/// A multiply-rotate hasher for the frame-index keys of stacks: a million trace entries each
/// hash a list of some fifty small integers, where the default hasher's DoS resistance costs
/// more than the rest of the reading. The keys come from the file, but a collision only
/// slows the map down.
#[derive(Default)]
struct FastHasher(u64);

impl Hasher for FastHasher {
    /// The multiplication mixes upwards; folding the high half down gives the table's low
    /// bits (its bucket index) that mixing too, for keys like 512-byte-aligned addresses.
    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
    /// Eight bytes at a time: a `[u32]` key arrives here as one byte slice.
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut buf = [0u8; 8];
            buf.copy_from_slice(word);
            self.write_u64(u64::from_le_bytes(buf));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.write_u64(u64::from_le_bytes(buf) ^ ((rest.len() as u64) << 56));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// Maps keyed by device address: one lookup or more per trace entry, so the fast hasher.
type AddressMap<V> = HashMap<u64, V, BuildHasherDefault<FastHasher>>;

/// A snapshot's memory as a Timeline, with what was chosen on the way.
#[derive(Debug, Clone)]
pub struct ImportedTimeline {
    pub timeline: Timeline,
    /// The device whose trace became the timeline.
    pub device: u32,
    /// Allocated and reserved bytes when the trace began.
    pub initial_allocated: u64,
    pub initial_reserved: u64,
}

/// The device a timeline is made of: the one with the most trace entries (the lowest index
/// among equals), or the lowest device with segments when no device has a trace.
/// What the reader and the replay look at: the main device's trace and final segments, and
/// the allocator settings the snapshot was recorded under.
pub struct DeviceView<'s> {
    pub device: u32,
    pub config: AllocatorConfig,
    pub trace: &'s [TraceEntry],
    pub segments: Vec<&'s Segment>,
}

impl<'s> DeviceView<'s> {
    /// The view of the device [`pick_device`] chooses.
    pub fn main(snapshot: &'s Snapshot) -> DeviceView<'s> {
        let device = pick_device(snapshot);
        DeviceView {
            device,
            config: allocator_config(snapshot),
            trace: snapshot
                .device_traces
                .get(device as usize)
                .map_or(&[][..], Vec::as_slice),
            segments: snapshot
                .segments
                .iter()
                .filter(|s| s.device == device)
                .collect(),
        }
    }
}

pub fn pick_device(snapshot: &Snapshot) -> u32 {
    let by_trace = snapshot
        .device_traces
        .iter()
        .enumerate()
        .filter(|(_, t)| !t.is_empty())
        .max_by(|(a, ta), (b, tb)| ta.len().cmp(&tb.len()).then(b.cmp(a)))
        .map(|(d, _)| d as u32);
    by_trace
        .or_else(|| snapshot.segments.iter().map(|s| s.device).min())
        .unwrap_or(0)
}

/// The allocator settings a snapshot was recorded under, as the model's config.
pub fn allocator_config(snapshot: &Snapshot) -> AllocatorConfig {
    let mut config = AllocatorConfig::default();
    if let Some(s) = &snapshot.allocator_settings {
        if let Some(max) = s.max_split_size {
            config.max_split_size = max;
        }
        config.roundup_power2_divisions = s.roundup_power2_divisions;
        config.garbage_collection_threshold = s.garbage_collection_threshold;
    }
    config
}

/// Maps raw stream values to the small numbers a Timeline uses: 0 stays 0, the others are
/// numbered 1, 2, … in order of first appearance (as PyTorch's viewer numbers them).
#[derive(Debug, Default)]
pub struct StreamNumbers(HashMap<u64, u32>);

impl StreamNumbers {
    pub fn number(&mut self, raw: u64) -> u32 {
        if raw == 0 {
            return 0;
        }
        let next = self.0.len() as u32 + 1;
        *self.0.entry(raw).or_insert(next)
    }
}

/// The snapshot's trace of one device as a Timeline. Allocated bytes count each allocation's
/// block: its size in the final segments when it is still live there, otherwise its request
/// rounded as the allocator rounds it (exact except when the allocator handed out a large
/// block whole, up to 1 MiB bigger; [`super::replay`] resolves those). Reserved bytes are
/// exact. Both start from the final segments minus what the trace did, since a trace usually
/// starts in the middle of a process (reference §4.14).
pub fn to_timeline(snapshot: &Snapshot) -> ImportedTimeline {
    let DeviceView {
        device,
        config,
        trace,
        segments,
    } = DeviceView::main(snapshot);
    let final_blocks: AddressMap<u64> = segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state != BlockState::Inactive)
        .map(|b| (b.address, b.size))
        .collect();
    let final_allocated: u64 = segments
        .iter()
        .fold(0u64, |t, s| t.saturating_add(s.allocated_size));
    let final_reserved: u64 = segments
        .iter()
        .fold(0u64, |t, s| t.saturating_add(s.total_size));

    // The last alloc at each address that is still live at the end takes its final block size.
    let mut last_alloc: AddressMap<usize> = AddressMap::default();
    let mut freed_after: AddressMap<bool> = AddressMap::default();
    for (i, e) in trace.iter().enumerate() {
        match e.action {
            TraceAction::Alloc => {
                last_alloc.insert(e.addr, i);
                freed_after.insert(e.addr, false);
            }
            TraceAction::FreeCompleted => {
                freed_after.insert(e.addr, true);
            }
            _ => {}
        }
    }

    let mut streams = StreamNumbers::default();
    let mut live: AddressMap<u64> = AddressMap::default();
    let mut events = Vec::with_capacity(trace.len());
    let mut allocated_delta: i128 = 0;
    let mut reserved_delta: i128 = 0;
    let mut deltas: Vec<(i128, i128)> = Vec::with_capacity(trace.len());
    let mut notes = Vec::new();
    let mut skipped: HashMap<String, usize> = HashMap::new();
    for (i, e) in trace.iter().enumerate() {
        let action = match &e.action {
            TraceAction::Alloc => {
                let block = match final_blocks.get(&e.addr) {
                    Some(size) if last_alloc.get(&e.addr) == Some(&i) && !freed_after[&e.addr] => {
                        *size
                    }
                    _ => config.round_size(e.size),
                };
                live.insert(e.addr, block);
                allocated_delta += block as i128;
                Action::Alloc
            }
            TraceAction::FreeRequested => Action::FreeRequested,
            TraceAction::FreeCompleted => {
                let block = live
                    .remove(&e.addr)
                    .unwrap_or_else(|| config.round_size(e.size));
                allocated_delta -= block as i128;
                Action::FreeCompleted
            }
            TraceAction::SegmentAlloc | TraceAction::SegmentMap => {
                reserved_delta += e.size as i128;
                if e.action == TraceAction::SegmentAlloc {
                    Action::SegmentAlloc
                } else {
                    Action::SegmentMap
                }
            }
            TraceAction::SegmentFree | TraceAction::SegmentUnmap => {
                reserved_delta -= e.size as i128;
                if e.action == TraceAction::SegmentFree {
                    Action::SegmentFree
                } else {
                    Action::SegmentUnmap
                }
            }
            TraceAction::Oom => Action::Oom,
            TraceAction::Snapshot | TraceAction::Other(_) => {
                *skipped.entry(e.action.name().to_string()).or_default() += 1;
                continue;
            }
        };
        deltas.push((allocated_delta, reserved_delta));
        events.push(MemoryEvent {
            action,
            addr: e.addr,
            size: e.size,
            stream: streams.number(e.stream),
            stack: e.frames.unwrap_or_default(),
            iteration: None,
            allocated: 0,
            reserved: 0,
            device_free: e.device_free,
            category: None,
        });
    }
    let initial_allocated = start_value(final_allocated, allocated_delta, &mut notes, "allocated");
    let initial_reserved = start_value(final_reserved, reserved_delta, &mut notes, "reserved");
    for (event, (a, r)) in events.iter_mut().zip(&deltas) {
        event.allocated = (initial_allocated as i128 + a).max(0) as u64;
        event.reserved = (initial_reserved as i128 + r).max(0) as u64;
    }

    let segment_devices: std::collections::BTreeSet<u32> =
        snapshot.segments.iter().map(|s| s.device).collect();
    let devices_with_data = (0..snapshot.device_traces.len().max(1) as u32)
        .filter(|d| {
            snapshot
                .device_traces
                .get(*d as usize)
                .is_some_and(|t| !t.is_empty())
        })
        .chain(segment_devices.iter().copied())
        .collect::<std::collections::BTreeSet<_>>();
    if devices_with_data.len() > 1 {
        notes.push(format!(
            "the snapshot holds {} devices; device {device} (the most trace entries) was read",
            devices_with_data.len()
        ));
    }
    let mut skipped: Vec<_> = skipped.into_iter().collect();
    skipped.sort();
    for (name, count) in skipped {
        notes.push(format!(
            "{count} `{name}` trace entries carry no memory change and were skipped"
        ));
    }
    if trace.iter().any(|e| e.action == TraceAction::Alloc) {
        notes.push(
            "allocated bytes of allocations freed within the trace are their requests rounded \
             like the allocator (a large block handed out whole may be up to 1 MiB bigger)"
                .to_string(),
        );
    }
    if trace.is_empty() {
        notes.push("the snapshot has no trace: only its final state is known".to_string());
    }

    let mut timeline = Timeline {
        // A snapshot does not record the device's capacity.
        device_capacity: 0,
        events,
        stacks: snapshot.stacks.clone(),
        approximations: notes,
        ..Timeline::default()
    };
    if timeline.events.is_empty() {
        // Keep the final state visible to peak checks even without a trace.
        timeline.events.push(MemoryEvent {
            action: Action::SegmentAlloc,
            addr: 0,
            size: 0,
            stream: 0,
            stack: StackId::default(),
            iteration: None,
            allocated: final_allocated,
            reserved: final_reserved,
            device_free: None,
            category: None,
        });
        timeline
            .approximations
            .push("the timeline is one event holding the final state".to_string());
    }
    ImportedTimeline {
        timeline,
        device,
        initial_allocated,
        initial_reserved,
    }
}

fn start_value(final_value: u64, delta: i128, notes: &mut Vec<String>, what: &str) -> u64 {
    let start = final_value as i128 - delta;
    if start < 0 {
        notes.push(format!(
            "the trace {what} {} bytes more than the final segments hold; the start was set to 0",
            -start
        ));
        0
    } else {
        start as u64
    }
}

#[cfg(test)]
mod tests;
