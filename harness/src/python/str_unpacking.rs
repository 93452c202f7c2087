//! Unpacking a string (`a, b = "xy"`, `first, *rest = word`): CPython's `UNPACK_SEQUENCE`
//! and `UNPACK_EX` take neither tuple nor list fast path for a `str`, so they iterate it: a
//! `str_iterator` (a GC object, counted, no free list) lives while the characters are read,
//! and each character is a cached one-character string (nothing allocated for ASCII and
//! Latin-1; the model's strings are plain values either way).

use super::interp::Interpreter;
use crate::heap::{ObjKind, Sym, Value, WrapperKind};

impl<'a> Interpreter<'a> {
    /// The characters of `text` (plain values), counting the iterator that reads them.
    pub(in crate::python) fn unpack_str(&mut self, text: Sym) -> Vec<Value> {
        // Three items mark a `str_iterator` (`heap/seq_iter_free.rs`): no free list.
        let iterator = ObjKind::Wrapper(
            WrapperKind::SeqIter,
            vec![Value::None, Value::None, Value::None],
        );
        if self.heap.count_allocation(&iterator) {
            self.collection_due();
        }
        let text = self.names.name(text).to_string();
        let chars = text
            .chars()
            .map(|c| Value::Str(self.names.intern(c.encode_utf8(&mut [0; 4]))))
            .collect();
        self.heap.count_deallocation(&iterator);
        chars
    }
}
