//! A safe decoder for pickles that hold plain data (protocols 2 to 5).
//!
//! Why hand-written: `serde-pickle` (1.2) was the candidate, but it resolves a fixed set of
//! `GLOBAL`s (`set`, `bytearray`, `encodings.codecs`, ...) and applies `REDUCE` to them, with no
//! option to refuse every code-executing opcode; its errors give no opcode name; and its value
//! tree (a `BTreeMap` per dict, a boxed enum per value) takes many times the file size on
//! snapshots of hundreds of megabytes. Snapshots need about twenty opcodes, all listed below.
//!
//! What it guarantees:
//! - Opcodes that would import or call anything (`GLOBAL`, `STACK_GLOBAL`, `REDUCE`, `BUILD`,
//!   `INST`, `OBJ`, `NEWOBJ`, `NEWOBJ_EX`, `EXT1/2/4`, `PERSID`, `BINPERSID`) are refused with
//!   an error naming the opcode and its byte offset; nothing is ever executed.
//! - Truncated or corrupt input gives an error with the byte offset, never a panic.
//! - Memory is bounded by the input: every length read from the file is only trusted as far as
//!   the bytes actually there, and the input is streamed, never held whole.
//!
//! The tree: every value is an 8-byte [`Value`] (small integers inline, everything else an index
//! into the [`Doc`]'s tables). Containers are shared through the memo exactly as in Python (a
//! `BINGET` of a dict yields the same dict), so the many repeated frame dicts and keys of a
//! snapshot are stored once. Dict entries keep file order; a key set twice is found by
//! [`Doc::get`] as its last setting, as Python would see it.
//!
//! Streaming: [`decode_with`] hands the items appended to lists to an [`AppendSink`] first.
//! A sink that takes them (the snapshot reader takes trace entries) converts them at once and
//! may [`Doc::release`] their containers, so a snapshot of a million trace entries never holds
//! their generic tree. A released container can no longer be read or filled: reading it gives
//! an empty view and [`Doc::is_released`] says why; filling it is a decoding error.

use crate::error::{Error, InputErrorKind, Location};
use std::io::Read;

/// A decoded value: a handle into the [`Doc`] that decoded it. Read it with [`Doc::view`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Value(u64);

const TAG_BITS: u32 = 4;
const TAG_MASK: u64 = (1 << TAG_BITS) - 1;
const INLINE_MIN: i64 = -(1 << 59);
const INLINE_MAX: i64 = (1 << 59) - 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Tag {
    Int = 0,
    None,
    Bool,
    WideInt,
    BigInt,
    Float,
    Str,
    Bytes,
    List,
    Tuple,
    Set,
    Dict,
    /// A memo slot that was skipped by a sparse `BINPUT` and never filled.
    Missing,
}

impl Value {
    fn new(tag: Tag, payload: u64) -> Value {
        Value((payload << TAG_BITS) | tag as u64)
    }
    fn tag(self) -> Tag {
        match self.0 & TAG_MASK {
            0 => Tag::Int,
            1 => Tag::None,
            2 => Tag::Bool,
            3 => Tag::WideInt,
            4 => Tag::BigInt,
            5 => Tag::Float,
            6 => Tag::Str,
            7 => Tag::Bytes,
            8 => Tag::List,
            9 => Tag::Tuple,
            10 => Tag::Set,
            11 => Tag::Dict,
            _ => Tag::Missing,
        }
    }
    fn index(self) -> usize {
        (self.0 >> TAG_BITS) as usize
    }
    const NONE: Value = Value(Tag::None as u64);
    const MISSING: Value = Value(Tag::Missing as u64);
}

/// What a [`Value`] is, borrowed from its [`Doc`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum View<'a> {
    None,
    Bool(bool),
    Int(i64),
    /// An integer beyond `i64`: little-endian two's complement, as `LONG1`/`LONG4` store it.
    BigInt(&'a [u8]),
    Float(f64),
    Str(&'a str),
    Bytes(&'a [u8]),
    List(&'a [Value]),
    Tuple(&'a [Value]),
    Set(&'a [Value]),
    Dict(&'a [(Value, Value)]),
}

impl View<'_> {
    /// The Python type name, for messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            View::None => "None",
            View::Bool(_) => "bool",
            View::Int(_) | View::BigInt(_) => "int",
            View::Float(_) => "float",
            View::Str(_) => "str",
            View::Bytes(_) => "bytes",
            View::List(_) => "list",
            View::Tuple(_) => "tuple",
            View::Set(_) => "set",
            View::Dict(_) => "dict",
        }
    }

    /// The type as a message names what it found: "an int", "a list", "None".
    pub fn type_with_article(&self) -> &'static str {
        match self {
            View::None => "None",
            View::Bool(_) => "a bool",
            View::Int(_) | View::BigInt(_) => "an int",
            View::Float(_) => "a float",
            View::Str(_) => "a str",
            View::Bytes(_) => "a bytes object",
            View::List(_) => "a list",
            View::Tuple(_) => "a tuple",
            View::Set(_) => "a set",
            View::Dict(_) => "a dict",
        }
    }
}

/// A decoded pickle: the root value and the tables its values point into.
#[derive(Debug, Default)]
pub struct Doc {
    root: Option<Value>,
    wide_ints: Vec<i64>,
    big_ints: Vec<Box<[u8]>>,
    floats: Vec<f64>,
    strings: Vec<Box<str>>,
    bytes: Vec<Box<[u8]>>,
    seqs: Vec<Vec<Value>>,
    dicts: Vec<Vec<(Value, Value)>>,
    released_seqs: BitSet,
    released_dicts: BitSet,
    /// Storage of released dicts and lists, reused by the next ones (fewer allocations and
    /// page faults).
    spare_dicts: Vec<Vec<(Value, Value)>>,
    spare_lists: Vec<Vec<Value>>,
}

/// A growable set of small integers.
#[derive(Debug, Default)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn insert(&mut self, i: usize) {
        let word = i / 64;
        if word >= self.0.len() {
            self.0.resize(word + 1, 0);
        }
        self.0[word] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// Receives the items appended to lists while a pickle is decoded.
pub trait AppendSink {
    /// Called before `items` are appended to `list` (`APPEND`, `APPENDS`). Returns true when
    /// the sink took them (they are then not stored in the list), false to let the list keep
    /// them. An error stops decoding; it is returned as it is.
    fn append(&mut self, doc: &mut Doc, list: Value, items: &[Value]) -> Result<bool, Error>;
}

/// The sink that takes nothing: [`decode`] builds the whole tree.
struct KeepAll;

impl AppendSink for KeepAll {
    fn append(&mut self, _: &mut Doc, _: Value, _: &[Value]) -> Result<bool, Error> {
        Ok(false)
    }
}

/// Spare dict storages kept for reuse at most.
const MAX_SPARE: usize = 4096;

impl Doc {
    /// The value the pickle's `STOP` returned.
    pub fn root(&self) -> Value {
        self.root.unwrap_or(Value::NONE)
    }

    pub fn view(&self, value: Value) -> View<'_> {
        let i = value.index();
        match value.tag() {
            Tag::Int => View::Int((value.0 as i64) >> TAG_BITS),
            Tag::None | Tag::Missing => View::None,
            Tag::Bool => View::Bool(i != 0),
            Tag::WideInt => View::Int(self.wide_ints.get(i).copied().unwrap_or(0)),
            Tag::BigInt => View::BigInt(self.big_ints.get(i).map_or(&[][..], |b| b)),
            Tag::Float => View::Float(self.floats.get(i).copied().unwrap_or(0.0)),
            Tag::Str => View::Str(self.strings.get(i).map_or("", |s| s)),
            Tag::Bytes => View::Bytes(self.bytes.get(i).map_or(&[][..], |b| b)),
            Tag::List => View::List(self.seq(i)),
            Tag::Tuple => View::Tuple(self.seq(i)),
            Tag::Set => View::Set(self.seq(i)),
            Tag::Dict => View::Dict(self.dicts.get(i).map_or(&[][..], Vec::as_slice)),
        }
    }

    fn seq(&self, i: usize) -> &[Value] {
        self.seqs.get(i).map_or(&[][..], Vec::as_slice)
    }

    /// The value of `key` in a dict with string keys (the last setting wins); `None` when
    /// `dict` is not a dict or lacks the key.
    pub fn get(&self, dict: Value, key: &str) -> Option<Value> {
        match self.view(dict) {
            View::Dict(entries) => entries
                .iter()
                .rev()
                .find(|(k, _)| matches!(self.view(*k), View::Str(s) if s == key))
                .map(|(_, v)| *v),
            _ => None,
        }
    }

    /// A number identifying a container (list, tuple, set, dict) for caches: two values with
    /// the same identity are the same Python object. `None` for other values.
    pub fn identity(&self, value: Value) -> Option<u64> {
        match value.tag() {
            Tag::List | Tag::Tuple | Tag::Set | Tag::Dict => Some(value.0),
            _ => None,
        }
    }

    /// The position of a dict among the document's dicts (dense, from 0), for array-indexed
    /// caches; `None` for other values. See [`Doc::dict_count`].
    pub fn dict_slot(&self, value: Value) -> Option<usize> {
        (value.tag() == Tag::Dict).then(|| value.index())
    }

    /// The position of a str among the document's strings (dense, from 0): one slot per
    /// string the pickle wrote, however often the memo references it. `None` for other values.
    pub fn str_slot(&self, value: Value) -> Option<usize> {
        (value.tag() == Tag::Str).then(|| value.index())
    }

    /// How many dicts the document holds.
    pub fn dict_count(&self) -> usize {
        self.dicts.len()
    }

    /// The position of a list or tuple among the document's sequences (dense, from 0), for
    /// array-indexed caches; `None` for other values. See [`Doc::seq_count`].
    pub fn seq_slot(&self, value: Value) -> Option<usize> {
        matches!(value.tag(), Tag::List | Tag::Tuple).then(|| value.index())
    }

    /// How many lists, tuples and sets the document holds.
    pub fn seq_count(&self) -> usize {
        self.seqs.len()
    }

    /// Frees the items of a dict or list that its reader has converted (see the module
    /// documentation); other values are left alone.
    pub fn release(&mut self, value: Value) {
        let i = value.index();
        match value.tag() {
            Tag::Dict => {
                if let Some(dict) = self.dicts.get_mut(i) {
                    let mut storage = std::mem::take(dict);
                    if self.spare_dicts.len() < MAX_SPARE && storage.capacity() <= 64 {
                        storage.clear();
                        self.spare_dicts.push(storage);
                    }
                    self.released_dicts.insert(i);
                }
            }
            Tag::List | Tag::Tuple | Tag::Set => {
                if let Some(seq) = self.seqs.get_mut(i) {
                    let mut storage = std::mem::take(seq);
                    if self.spare_lists.len() < MAX_SPARE && storage.capacity() <= 256 {
                        storage.clear();
                        self.spare_lists.push(storage);
                    }
                    self.released_seqs.insert(i);
                }
            }
            _ => {}
        }
    }

    /// Whether `value` is a container whose items were released.
    pub fn is_released(&self, value: Value) -> bool {
        match value.tag() {
            Tag::Dict => self.released_dicts.contains(value.index()),
            Tag::List | Tag::Tuple | Tag::Set => self.released_seqs.contains(value.index()),
            _ => false,
        }
    }

    fn int(&mut self, n: i64) -> Value {
        if (INLINE_MIN..=INLINE_MAX).contains(&n) {
            Value(((n << TAG_BITS) as u64) | Tag::Int as u64)
        } else {
            self.wide_ints.push(n);
            Value::new(Tag::WideInt, (self.wide_ints.len() - 1) as u64)
        }
    }

    /// `LONG1`/`LONG4` payload: little-endian two's complement.
    fn long(&mut self, le: Vec<u8>) -> Value {
        if le.len() <= 8 {
            return self.short_long(&le);
        }
        self.big_ints.push(le.into_boxed_slice());
        Value::new(Tag::BigInt, (self.big_ints.len() - 1) as u64)
    }

    /// A `LONG1` payload of at most 8 bytes (addresses): no allocation.
    fn short_long(&mut self, le: &[u8]) -> Value {
        let Some(last) = le.last() else {
            return self.int(0);
        };
        let mut buf = if last & 0x80 != 0 { [0xff; 8] } else { [0; 8] };
        buf[..le.len()].copy_from_slice(le);
        self.int(i64::from_le_bytes(buf))
    }

    fn float(&mut self, x: f64) -> Value {
        self.floats.push(x);
        Value::new(Tag::Float, (self.floats.len() - 1) as u64)
    }

    fn string(&mut self, s: String) -> Value {
        self.strings.push(s.into_boxed_str());
        Value::new(Tag::Str, (self.strings.len() - 1) as u64)
    }

    fn byte_string(&mut self, b: Vec<u8>) -> Value {
        self.bytes.push(b.into_boxed_slice());
        Value::new(Tag::Bytes, (self.bytes.len() - 1) as u64)
    }

    fn new_seq(&mut self, tag: Tag, items: Vec<Value>) -> Value {
        self.seqs.push(items);
        Value::new(tag, (self.seqs.len() - 1) as u64)
    }

    fn empty_dict(&mut self) -> Value {
        let storage = self.spare_dicts.pop().unwrap_or_default();
        self.new_dict(storage)
    }

    fn new_dict(&mut self, entries: Vec<(Value, Value)>) -> Value {
        self.dicts.push(entries);
        Value::new(Tag::Dict, (self.dicts.len() - 1) as u64)
    }
}

/// Decodes a whole pickle from `input`. `file` names the input in error locations.
pub fn decode(input: impl Read, file: &str) -> Result<Doc, Error> {
    decode_with(input, file, &mut KeepAll)
}

/// Decodes a pickle, offering every appended item to `sink` first (see [`AppendSink`]).
pub fn decode_with(input: impl Read, file: &str, sink: &mut dyn AppendSink) -> Result<Doc, Error> {
    let mut decoder = Decoder {
        input: Input::new(input),
        file,
        doc: Doc::default(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: Vec::new(),
        sink,
    };
    decoder.run()?;
    Ok(decoder.doc)
}

/// A buffered byte source that knows its offset.
struct Input<R> {
    reader: R,
    buf: Box<[u8]>,
    pos: usize,
    end: usize,
    /// Offset of `buf[0]` in the input.
    base: u64,
}

const CHUNK: usize = 1 << 18;

impl<R: Read> Input<R> {
    fn new(reader: R) -> Self {
        Input {
            reader,
            buf: vec![0; CHUNK].into_boxed_slice(),
            pos: 0,
            end: 0,
            base: 0,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Makes at least one byte available; false at end of input.
    fn fill(&mut self) -> std::io::Result<bool> {
        if self.pos < self.end {
            return Ok(true);
        }
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        loop {
            match self.reader.read(&mut self.buf) {
                Ok(n) => {
                    self.end = n;
                    return Ok(n > 0);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    #[inline(always)]
    fn byte(&mut self) -> std::io::Result<Option<u8>> {
        if self.pos < self.end || self.fill()? {
            let b = self.buf[self.pos];
            self.pos += 1;
            Ok(Some(b))
        } else {
            Ok(None)
        }
    }

    /// Fills `out` completely; false if the input ended first.
    #[inline]
    fn exact(&mut self, out: &mut [u8]) -> std::io::Result<bool> {
        if self.pos + out.len() <= self.end {
            out.copy_from_slice(&self.buf[self.pos..self.pos + out.len()]);
            self.pos += out.len();
            return Ok(true);
        }
        self.exact_across(out)
    }

    /// [`Input::exact`] when `out` spans the end of the buffer.
    fn exact_across(&mut self, out: &mut [u8]) -> std::io::Result<bool> {
        let mut done = 0;
        while done < out.len() {
            if !self.fill()? {
                return Ok(false);
            }
            let n = (out.len() - done).min(self.end - self.pos);
            out[done..done + n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
            done += n;
        }
        Ok(true)
    }

    /// Reads `len` bytes, growing the result only as bytes arrive (a forged length cannot make
    /// it allocate more than the input holds). `None` if the input ended first.
    fn vec(&mut self, len: u64) -> std::io::Result<Option<Vec<u8>>> {
        let mut out = Vec::with_capacity((len as usize).min(CHUNK));
        while (out.len() as u64) < len {
            if !self.fill()? {
                return Ok(None);
            }
            let n = ((len - out.len() as u64) as usize).min(self.end - self.pos);
            out.extend_from_slice(&self.buf[self.pos..self.pos + n]);
            self.pos += n;
        }
        Ok(Some(out))
    }
}

struct Decoder<'f, 's, R> {
    input: Input<R>,
    file: &'f str,
    doc: Doc,
    stack: Vec<Value>,
    /// Stack heights at each `MARK`.
    marks: Vec<usize>,
    memo: Vec<Value>,
    sink: &'s mut dyn AppendSink,
}

/// Opcodes that import or call Python code: a data file never needs them.
fn code_executing(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        _ => return None,
    })
}

/// Valid opcodes this decoder does not implement (text protocols 0/1, out-of-band buffers).
fn unsupported(op: u8) -> Option<&'static str> {
    Some(match op {
        b'I' => "INT",
        b'L' => "LONG",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'F' => "FLOAT",
        b'g' => "GET",
        b'p' => "PUT",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

impl<R: Read> Decoder<'_, '_, R> {
    fn error(&self, at: u64, message: String) -> Error {
        Error::input(
            InputErrorKind::Data,
            Location::in_binary(self.file, Some(at)),
            message,
        )
    }

    fn io(&self, at: u64, e: std::io::Error) -> Error {
        self.error(at, format!("cannot read the pickle: {e}"))
    }

    fn truncated(&self, at: u64, what: &str) -> Error {
        self.error(
            at,
            format!("pickle truncated: the input ends inside {what}"),
        )
    }

    #[inline(always)]
    fn read<const N: usize>(&mut self, at: u64, what: &str) -> Result<[u8; N], Error> {
        let mut out = [0u8; N];
        // The common case, inlined with a fixed length: the bytes are in the buffer.
        let input = &mut self.input;
        if let Some(bytes) = input.buf.get(input.pos..input.pos + N)
            && input.pos + N <= input.end
        {
            out.copy_from_slice(bytes);
            input.pos += N;
            return Ok(out);
        }
        match self.input.exact(&mut out) {
            Ok(true) => Ok(out),
            Ok(false) => Err(self.truncated(at, what)),
            Err(e) => Err(self.io(at, e)),
        }
    }

    fn read_vec(&mut self, at: u64, len: u64, what: &str) -> Result<Vec<u8>, Error> {
        match self.input.vec(len) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(self.truncated(at, what)),
            Err(e) => Err(self.io(at, e)),
        }
    }

    fn read_str(&mut self, at: u64, len: u64, name: &str) -> Result<Value, Error> {
        let bytes = self.read_vec(at, len, name)?;
        match String::from_utf8(bytes) {
            Ok(s) => Ok(self.doc.string(s)),
            Err(e) => Err(self.error(
                at,
                format!(
                    "{name}: invalid UTF-8 at byte {} of the string",
                    e.utf8_error().valid_up_to()
                ),
            )),
        }
    }

    fn pop(&mut self, at: u64, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.error(at, format!("{op}: the stack is empty")));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.error(at, format!("{op}: the stack is empty")))
    }

    fn top(&self, at: u64, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(v) if self.stack.len() > floor => Ok(*v),
            _ => Err(self.error(at, format!("{op}: the stack is empty"))),
        }
    }

    /// Pops everything above the last `MARK` and the mark itself.
    fn pop_mark(&mut self, at: u64, op: &str) -> Result<Vec<Value>, Error> {
        let Some(height) = self.marks.pop() else {
            return Err(self.error(at, format!("{op} without a MARK before it")));
        };
        Ok(self.stack.split_off(height.min(self.stack.len())))
    }

    fn memo_get(&self, at: u64, index: u64, op: &str) -> Result<Value, Error> {
        match self.memo.get(index as usize) {
            Some(v) if *v != Value::MISSING => Ok(*v),
            _ => Err(self.error(at, format!("{op} {index}: no memo entry {index}"))),
        }
    }

    fn memo_put(&mut self, at: u64, index: u64, op: &str) -> Result<(), Error> {
        let value = self.top(at, op)?;
        let index_usize = index as usize;
        if index_usize < self.memo.len() {
            self.memo[index_usize] = value;
            return Ok(());
        }
        // A sparse index may skip slots, but never further than one slot per byte of input
        // read so far: memory stays bounded by the input.
        if index > self.input.offset() {
            return Err(self.error(at, format!("{op} {index}: memo index out of range")));
        }
        self.memo.resize(index_usize, Value::MISSING);
        self.memo.push(value);
        Ok(())
    }

    /// Pops the last `MARK`; returns the stack height it recorded.
    fn take_mark(&mut self, at: u64, op: &str) -> Result<usize, Error> {
        match self.marks.pop() {
            Some(height) => Ok(height.min(self.stack.len())),
            None => Err(self.error(at, format!("{op} without a MARK before it"))),
        }
    }

    /// The value just below stack position `height` (the target of `APPENDS`/`SETITEMS`),
    /// which must lie above the enclosing `MARK`.
    fn target_below(&self, at: u64, height: usize, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match height.checked_sub(1).and_then(|i| self.stack.get(i)) {
            Some(v) if height > floor => Ok(*v),
            _ => Err(self.error(at, format!("{op}: the stack is empty"))),
        }
    }

    /// Moves the stack items from position `from` on into the list `target` (or to the sink).
    fn push_into(&mut self, at: u64, target: Value, from: usize, op: &str) -> Result<(), Error> {
        let tag = target.tag();
        if tag != Tag::List && tag != Tag::Set {
            let name = self.doc.view(target).type_name();
            return Err(self.error(at, format!("{op}: target is a {name}, not a list")));
        }
        if self.doc.is_released(target) {
            return Err(self.error(at, format!("{op}: the list was already read and released")));
        }
        let from = from.min(self.stack.len());
        let items = &self.stack[from..];
        if tag == Tag::List && self.sink.append(&mut self.doc, target, items)? {
            self.stack.truncate(from);
            return Ok(());
        }
        match self.doc.seqs.get_mut(target.index()) {
            Some(seq) => {
                seq.extend_from_slice(items);
                self.stack.truncate(from);
                Ok(())
            }
            None => Err(self.error(at, format!("{op}: target is not a list"))),
        }
    }

    /// Moves the keys and values on the stack from position `from` on into the dict `target`.
    fn set_items(&mut self, at: u64, target: Value, from: usize, op: &str) -> Result<(), Error> {
        let from = from.min(self.stack.len());
        if !(self.stack.len() - from).is_multiple_of(2) {
            return Err(self.error(at, format!("{op}: odd number of keys and values")));
        }
        if target.tag() != Tag::Dict {
            let name = self.doc.view(target).type_name();
            return Err(self.error(at, format!("{op}: target is a {name}, not a dict")));
        }
        if self.doc.is_released(target) {
            return Err(self.error(at, format!("{op}: the dict was already read and released")));
        }
        match self.doc.dicts.get_mut(target.index()) {
            Some(dict) => {
                let items = &self.stack[from..];
                dict.extend(items.chunks_exact(2).map(|kv| (kv[0], kv[1])));
                self.stack.truncate(from);
                Ok(())
            }
            None => Err(self.error(at, format!("{op}: target is not a dict"))),
        }
    }

    fn run(&mut self) -> Result<(), Error> {
        loop {
            let at = self.input.offset();
            let op = match self.input.byte() {
                Ok(Some(op)) => op,
                Ok(None) => {
                    return Err(self.error(
                        at,
                        "pickle truncated: the input ends before STOP".to_string(),
                    ));
                }
                Err(e) => return Err(self.io(at, e)),
            };
            match op {
                0x80 => {
                    let [version] = self.read::<1>(at, "PROTO")?;
                    if !(2..=5).contains(&version) {
                        return Err(self.error(
                            at,
                            format!("pickle protocol {version} is not supported (2 to 5 are)"),
                        ));
                    }
                }
                0x95 => {
                    // FRAME: a length hint for buffering; the content follows as ordinary opcodes.
                    self.read::<8>(at, "FRAME")?;
                }
                b'.' => {
                    let root = self.pop(at, "STOP")?;
                    self.doc.root = Some(root);
                    return Ok(());
                }
                b'(' => self.marks.push(self.stack.len()),
                b'0' => {
                    self.pop(at, "POP")?;
                }
                b'1' => {
                    self.pop_mark(at, "POP_MARK")?;
                }
                b'2' => {
                    let v = self.top(at, "DUP")?;
                    self.stack.push(v);
                }
                b'N' => self.stack.push(Value::NONE),
                0x88 => self.stack.push(Value::new(Tag::Bool, 1)),
                0x89 => self.stack.push(Value::new(Tag::Bool, 0)),
                b'J' => {
                    let b = self.read::<4>(at, "BININT")?;
                    let v = self.doc.int(i32::from_le_bytes(b) as i64);
                    self.stack.push(v);
                }
                b'K' => {
                    let [b] = self.read::<1>(at, "BININT1")?;
                    let v = self.doc.int(b as i64);
                    self.stack.push(v);
                }
                b'M' => {
                    let b = self.read::<2>(at, "BININT2")?;
                    let v = self.doc.int(u16::from_le_bytes(b) as i64);
                    self.stack.push(v);
                }
                0x8a => {
                    let [n] = self.read::<1>(at, "LONG1")?;
                    let v = if n <= 8 {
                        let mut le = [0u8; 8];
                        match self.input.exact(&mut le[..n as usize]) {
                            Ok(true) => {}
                            Ok(false) => return Err(self.truncated(at, "LONG1")),
                            Err(e) => return Err(self.io(at, e)),
                        }
                        self.doc.short_long(&le[..n as usize])
                    } else {
                        let le = self.read_vec(at, n as u64, "LONG1")?;
                        self.doc.long(le)
                    };
                    self.stack.push(v);
                }
                0x8b => {
                    let n = u32::from_le_bytes(self.read::<4>(at, "LONG4")?);
                    let le = self.read_vec(at, n as u64, "LONG4")?;
                    let v = self.doc.long(le);
                    self.stack.push(v);
                }
                b'G' => {
                    let b = self.read::<8>(at, "BINFLOAT")?;
                    let v = self.doc.float(f64::from_be_bytes(b));
                    self.stack.push(v);
                }
                0x8c => {
                    let [n] = self.read::<1>(at, "SHORT_BINUNICODE")?;
                    let v = self.read_str(at, n as u64, "SHORT_BINUNICODE")?;
                    self.stack.push(v);
                }
                b'X' => {
                    let n = u32::from_le_bytes(self.read::<4>(at, "BINUNICODE")?);
                    let v = self.read_str(at, n as u64, "BINUNICODE")?;
                    self.stack.push(v);
                }
                0x8d => {
                    let n = u64::from_le_bytes(self.read::<8>(at, "BINUNICODE8")?);
                    let v = self.read_str(at, n, "BINUNICODE8")?;
                    self.stack.push(v);
                }
                b'C' => {
                    let [n] = self.read::<1>(at, "SHORT_BINBYTES")?;
                    let b = self.read_vec(at, n as u64, "SHORT_BINBYTES")?;
                    let v = self.doc.byte_string(b);
                    self.stack.push(v);
                }
                b'B' => {
                    let n = u32::from_le_bytes(self.read::<4>(at, "BINBYTES")?);
                    let b = self.read_vec(at, n as u64, "BINBYTES")?;
                    let v = self.doc.byte_string(b);
                    self.stack.push(v);
                }
                0x8e | 0x96 => {
                    let name = if op == 0x8e {
                        "BINBYTES8"
                    } else {
                        "BYTEARRAY8"
                    };
                    let n = u64::from_le_bytes(self.read::<8>(at, name)?);
                    let b = self.read_vec(at, n, name)?;
                    let v = self.doc.byte_string(b);
                    self.stack.push(v);
                }
                b'}' => {
                    let v = self.doc.empty_dict();
                    self.stack.push(v);
                }
                b']' => {
                    let storage = self.doc.spare_lists.pop().unwrap_or_default();
                    let v = self.doc.new_seq(Tag::List, storage);
                    self.stack.push(v);
                }
                b')' => {
                    let v = self.doc.new_seq(Tag::Tuple, Vec::new());
                    self.stack.push(v);
                }
                0x8f => {
                    let v = self.doc.new_seq(Tag::Set, Vec::new());
                    self.stack.push(v);
                }
                b'd' => {
                    let from = self.take_mark(at, "DICT")?;
                    let v = self.doc.empty_dict();
                    self.set_items(at, v, from, "DICT")?;
                    self.stack.push(v);
                }
                b'l' => {
                    let items = self.pop_mark(at, "LIST")?;
                    let v = self.doc.new_seq(Tag::List, items);
                    self.stack.push(v);
                }
                b't' => {
                    let items = self.pop_mark(at, "TUPLE")?;
                    let v = self.doc.new_seq(Tag::Tuple, items);
                    self.stack.push(v);
                }
                0x91 => {
                    let items = self.pop_mark(at, "FROZENSET")?;
                    let v = self.doc.new_seq(Tag::Set, items);
                    self.stack.push(v);
                }
                0x85..=0x87 => {
                    let n = (op - 0x84) as usize;
                    let name = ["TUPLE1", "TUPLE2", "TUPLE3"][n - 1];
                    let mut items = Vec::with_capacity(n);
                    for _ in 0..n {
                        items.push(self.pop(at, name)?);
                    }
                    items.reverse();
                    let v = self.doc.new_seq(Tag::Tuple, items);
                    self.stack.push(v);
                }
                b'a' => {
                    let item = self.pop(at, "APPEND")?;
                    let target = self.top(at, "APPEND")?;
                    self.stack.push(item);
                    self.push_into(at, target, self.stack.len() - 1, "APPEND")?;
                }
                b'e' | 0x90 => {
                    let name = if op == b'e' { "APPENDS" } else { "ADDITEMS" };
                    let from = self.take_mark(at, name)?;
                    let target = self.target_below(at, from, name)?;
                    self.push_into(at, target, from, name)?;
                }
                b's' => {
                    let value = self.pop(at, "SETITEM")?;
                    let key = self.pop(at, "SETITEM")?;
                    let target = self.top(at, "SETITEM")?;
                    self.stack.extend([key, value]);
                    self.set_items(at, target, self.stack.len() - 2, "SETITEM")?;
                }
                b'u' => {
                    let from = self.take_mark(at, "SETITEMS")?;
                    let target = self.target_below(at, from, "SETITEMS")?;
                    self.set_items(at, target, from, "SETITEMS")?;
                }
                0x94 => {
                    let index = self.memo.len() as u64;
                    self.memo_put(at, index, "MEMOIZE")?;
                }
                b'q' => {
                    let [i] = self.read::<1>(at, "BINPUT")?;
                    self.memo_put(at, i as u64, "BINPUT")?;
                }
                b'r' => {
                    let i = u32::from_le_bytes(self.read::<4>(at, "LONG_BINPUT")?);
                    self.memo_put(at, i as u64, "LONG_BINPUT")?;
                }
                b'h' => {
                    let [i] = self.read::<1>(at, "BINGET")?;
                    let v = self.memo_get(at, i as u64, "BINGET")?;
                    self.stack.push(v);
                }
                b'j' => {
                    let i = u32::from_le_bytes(self.read::<4>(at, "LONG_BINGET")?);
                    let v = self.memo_get(at, i as u64, "LONG_BINGET")?;
                    self.stack.push(v);
                }
                _ => {
                    if let Some(name) = code_executing(op) {
                        return Err(self.error(
                            at,
                            format!(
                                "refused opcode {name} (0x{op:02x}): it imports or runs Python \
                                 code, and a memory snapshot holds plain data only"
                            ),
                        ));
                    }
                    if let Some(name) = unsupported(op) {
                        return Err(self.error(
                            at,
                            format!(
                                "opcode {name} (0x{op:02x}) is not supported: only the binary \
                                 opcodes of protocols 2 to 5 for plain data are"
                            ),
                        ));
                    }
                    return Err(self.error(
                        at,
                        format!(
                            "invalid pickle opcode 0x{op:02x}: the file is corrupt or not a pickle"
                        ),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
