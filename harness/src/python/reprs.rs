//! `repr()` of the values the model has: what CPython prints for numbers, strings (quoted
//! as `unicode_repr` quotes them), containers item by item, and exceptions as a call of
//! their class (`KeyError('k')`); other objects fall back to their `str()`.

use super::interp::Interpreter;
use crate::heap::{ObjKind, Value};

/// Deeper containers print as `...` (CPython guards recursion the same way for cycles).
const MAX_DEPTH: u32 = 32;

impl Interpreter<'_> {
    /// `repr(v)`.
    pub(in crate::python) fn repr_text(&self, v: Value) -> String {
        self.repr_at(v, 0)
    }

    pub(super) fn repr_at(&self, v: Value, depth: u32) -> String {
        if depth > MAX_DEPTH {
            return "...".to_string();
        }
        let join = |items: &[Value]| {
            items
                .iter()
                .map(|x| self.repr_at(*x, depth + 1))
                .collect::<Vec<_>>()
                .join(", ")
        };
        match v {
            Value::Str(s) => quote(self.names.name(s)),
            Value::Float(f) if f.is_infinite() => if f > 0.0 { "inf" } else { "-inf" }.into(),
            Value::Float(f) if f.is_nan() => "nan".into(),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) if items.len() == 1 => format!("({},)", join(items)),
                ObjKind::Tuple(items) => format!("({})", join(items)),
                ObjKind::List(items) => format!("[{}]", join(items)),
                ObjKind::Size(dims) => format!(
                    "torch.Size([{}])",
                    dims.iter()
                        .map(i64::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                ObjKind::StructSeq { ty, items } => {
                    super::return_types::repr(ty, items, |v| self.repr_at(v, depth + 1))
                }
                ObjKind::NamedTuple { class, items } => self.namedtuple_repr(*class, items, depth),
                ObjKind::Instance { class, .. } if self.is_namespace_class(*class) => self
                    .namespace_repr(id, depth)
                    .unwrap_or_else(|| self.display(v)),
                ObjKind::Dict(entries) => format!(
                    "{{{}}}",
                    entries
                        .iter()
                        .map(|(k, x)| format!(
                            "{}: {}",
                            self.repr_at(*k, depth + 1),
                            self.repr_at(*x, depth + 1)
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                ObjKind::Exception(e) => {
                    let args = match e.args.map(|a| self.heap.kind(a)) {
                        Some(ObjKind::Tuple(items)) => join(items),
                        _ => String::new(),
                    };
                    format!("{}({args})", self.class_name(e.class))
                }
                _ => self.display(v),
            },
            _ => self.display(v),
        }
    }
}

/// A string as Python quotes it: single quotes unless it holds a single quote and no
/// double quote; backslashes, the quote and control characters escaped.
pub(in crate::python) fn quote(s: &str) -> String {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push(q);
    out
}

/// The value a `KeyError` message names (`'k'` → the string `k`, `3` → 3): the model's
/// runtime errors carry text, CPython's `KeyError` carries the key.
pub(in crate::python) fn key_from_text(text: &str) -> Option<KeyText<'_>> {
    let b = text.as_bytes();
    if b.len() >= 2
        && (b[0] == b'\'' || b[0] == b'"')
        && b[b.len() - 1] == b[0]
        && !text[1..text.len() - 1].contains('\\')
    {
        return Some(KeyText::Str(&text[1..text.len() - 1]));
    }
    if let Ok(i) = text.parse::<i64>() {
        return Some(KeyText::Int(i));
    }
    match text {
        "None" => Some(KeyText::None),
        "True" => Some(KeyText::Bool(true)),
        "False" => Some(KeyText::Bool(false)),
        _ => None,
    }
}

/// A key read back from its repr.
pub(in crate::python) enum KeyText<'t> {
    Str(&'t str),
    Int(i64),
    Bool(bool),
    None,
}
