//! `text[i]` and `text[start:stop:step]` on strings: by code point, as CPython indexes
//! `str`, with CPython's errors. Strings are values of the model (no heap object), so a
//! slice is a new interned text and allocates nothing the collector counts.

use super::interp::{Interpreter, R};
use super::natives;
use crate::heap::{Sym, Value};

/// `text[index]` where `index` is an integer or a slice (borrowed).
pub(super) fn subscript(
    it: &mut Interpreter<'_>,
    text: Sym,
    index: &mut natives::Index,
) -> R<Value> {
    let chars: Vec<char> = it.names.name(text).chars().collect();
    if let Some(bounds) = index.slice() {
        let (lower, upper, step) = natives::slice_bounds(it, bounds)?;
        let Some((start, step, count)) = natives::slice_len(chars.len() as i64, lower, upper, step)
        else {
            return it.error("ValueError: slice step cannot be zero");
        };
        let picked: String = (0..count)
            .map(|k| chars[(start + k * step) as usize])
            .collect();
        return Ok(Value::Str(it.names.intern(&picked)));
    }
    let key = index.key(it)?;
    let key = match natives::index_int(it, key)? {
        Some(i) => Value::Int(i),
        None => key,
    };
    let at = match key {
        Value::Int(i) => i,
        Value::Bool(b) => i64::from(b),
        other => {
            let name = it.value_type_name(other);
            return it.error(format!(
                "TypeError: string indices must be integers, not '{name}'"
            ));
        }
    };
    let n = chars.len() as i64;
    let at = if at < 0 { at + n } else { at };
    match chars.get(at as usize).filter(|_| at >= 0) {
        Some(c) => Ok(Value::Str(it.names.intern(&c.to_string()))),
        None => it.error("IndexError: string index out of range"),
    }
}
