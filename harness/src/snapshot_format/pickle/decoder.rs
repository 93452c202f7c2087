//! The opcode loop: which opcodes are refused (code-executing, unsupported) and how each
//! implemented one builds the tree.

use super::*;

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
    pub(super) fn error(&self, at: u64, message: String) -> Error {
        Error::input(
            InputErrorKind::Data,
            Location::in_binary(self.file, Some(at)),
            message,
        )
    }

    pub(super) fn io(&self, at: u64, e: std::io::Error) -> Error {
        self.error(at, format!("cannot read the pickle: {e}"))
    }

    pub(super) fn truncated(&self, at: u64, what: &str) -> Error {
        self.error(
            at,
            format!("pickle truncated: the input ends inside {what}"),
        )
    }

    #[inline(always)]
    pub(super) fn read<const N: usize>(&mut self, at: u64, what: &str) -> Result<[u8; N], Error> {
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

    pub(super) fn read_vec(&mut self, at: u64, len: u64, what: &str) -> Result<Vec<u8>, Error> {
        match self.input.vec(len) {
            Ok(Some(v)) => Ok(v),
            Ok(None) => Err(self.truncated(at, what)),
            Err(e) => Err(self.io(at, e)),
        }
    }

    pub(super) fn read_str(&mut self, at: u64, len: u64, name: &str) -> Result<Value, Error> {
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

    pub(super) fn pop(&mut self, at: u64, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        if self.stack.len() <= floor {
            return Err(self.error(at, format!("{op}: the stack is empty")));
        }
        self.stack
            .pop()
            .ok_or_else(|| self.error(at, format!("{op}: the stack is empty")))
    }

    pub(super) fn top(&self, at: u64, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match self.stack.last() {
            Some(v) if self.stack.len() > floor => Ok(*v),
            _ => Err(self.error(at, format!("{op}: the stack is empty"))),
        }
    }

    /// Pops everything above the last `MARK` and the mark itself.
    pub(super) fn pop_mark(&mut self, at: u64, op: &str) -> Result<Vec<Value>, Error> {
        let Some(height) = self.marks.pop() else {
            return Err(self.error(at, format!("{op} without a MARK before it")));
        };
        Ok(self.stack.split_off(height.min(self.stack.len())))
    }

    pub(super) fn memo_get(&self, at: u64, index: u64, op: &str) -> Result<Value, Error> {
        match self.memo.get(index as usize) {
            Some(v) if *v != Value::MISSING => Ok(*v),
            _ => Err(self.error(at, format!("{op} {index}: no memo entry {index}"))),
        }
    }

    pub(super) fn memo_put(&mut self, at: u64, index: u64, op: &str) -> Result<(), Error> {
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
    pub(super) fn take_mark(&mut self, at: u64, op: &str) -> Result<usize, Error> {
        match self.marks.pop() {
            Some(height) => Ok(height.min(self.stack.len())),
            None => Err(self.error(at, format!("{op} without a MARK before it"))),
        }
    }

    /// The value just below stack position `height` (the target of `APPENDS`/`SETITEMS`),
    /// which must lie above the enclosing `MARK`.
    pub(super) fn target_below(&self, at: u64, height: usize, op: &str) -> Result<Value, Error> {
        let floor = self.marks.last().copied().unwrap_or(0);
        match height.checked_sub(1).and_then(|i| self.stack.get(i)) {
            Some(v) if height > floor => Ok(*v),
            _ => Err(self.error(at, format!("{op}: the stack is empty"))),
        }
    }

    /// Moves the stack items from position `from` on into the list `target` (or to the sink).
    pub(super) fn push_into(
        &mut self,
        at: u64,
        target: Value,
        from: usize,
        op: &str,
    ) -> Result<(), Error> {
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
    pub(super) fn set_items(
        &mut self,
        at: u64,
        target: Value,
        from: usize,
        op: &str,
    ) -> Result<(), Error> {
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

    pub(super) fn run(&mut self) -> Result<(), Error> {
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
