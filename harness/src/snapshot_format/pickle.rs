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

mod decoder;
mod input;

use input::Input;

#[cfg(test)]
mod tests;
