//! `sys.version_info`: the running release as a struct sequence (a tuple subclass with named
//! fields), so that version checks (`if sys.version_info >= (3, 11):`) take the branch of the
//! scenario's `python:` version. CPython makes it once at start-up with
//! `PyStructSequence_New` (untracked, measured `gc.is_tracked(...)` false on 3.8 – 3.13) and
//! every read returns that object: reading it, indexing it and comparing it with a constant
//! tuple create nothing (measured 0 objects on 3.8 – 3.13).
//!
//! Tuples compare in order, item by item (`tuplerichcompare`): the first items that differ
//! decide, else the shorter sequence is the smaller.

use super::interp::Interpreter;
use crate::heap::{ObjKind, StructSeqType, Value};
use std::cmp::Ordering;

pub(super) static VERSION_INFO: StructSeqType = StructSeqType {
    name: "sys.version_info",
    fields: &["major", "minor", "micro", "releaselevel", "serial"],
};

/// Key of `sys.version_info` among the interpreter's kept constants (the others are keyed
/// by AST node addresses, never 1, and the empty tuple by 0).
const VERSION_INFO_KEY: usize = 1;

impl Interpreter<'_> {
    /// `sys.version_info`, borrowed (the constants own the one object; module attribute
    /// reads take their own reference). The micro release is the scenario's patch
    /// (`python: "3.11.7"`), 0 when it names only the minor release.
    pub(super) fn sys_version_info(&mut self) -> Value {
        if let Some(&id) = self.constants.get(&VERSION_INFO_KEY) {
            return Value::Obj(id);
        }
        let version = self.heap.profile.version;
        let items = vec![
            Value::Int(3),
            Value::Int(version.minor.into()),
            Value::Int(version.patch.unwrap_or(0).into()),
            Value::Str(self.names.intern("final")),
            Value::Int(0),
        ];
        let id = self.heap.insert_uncounted(ObjKind::StructSeq {
            ty: &VERSION_INFO,
            items,
        });
        self.constants.insert(VERSION_INFO_KEY, id);
        Value::Obj(id)
    }

    /// `a < b` and friends for two tuples (struct sequences included) or two lists: the
    /// ordering of the first pair of items that are not equal, else of the lengths. `None`
    /// when the operands are not such sequences or the deciding items have no order.
    pub(super) fn sequence_ordering(&self, a: Value, b: Value) -> Option<Ordering> {
        let items = |v: Value| -> Option<(bool, &[Value])> {
            let Value::Obj(id) = v else { return None };
            match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::StructSeq { items, .. } => Some((false, items)),
                ObjKind::List(items) => Some((true, items)),
                _ => None,
            }
        };
        let ((list_a, xs), (list_b, ys)) = (items(a)?, items(b)?);
        if list_a != list_b {
            return None;
        }
        match xs.iter().zip(ys).find(|&(&x, &y)| !self.values_equal(x, y)) {
            Some((&x, &y)) => self.item_ordering(x, y),
            None => Some(xs.len().cmp(&ys.len())),
        }
    }

    /// The order of two items of compared sequences: numbers, strings, nested sequences.
    fn item_ordering(&self, x: Value, y: Value) -> Option<Ordering> {
        let number = |v: Value| match v {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            Value::Bool(b) => Some(b as i64 as f64),
            _ => None,
        };
        match (x, y) {
            (Value::Int(p), Value::Int(q)) => Some(p.cmp(&q)),
            (Value::Str(p), Value::Str(q)) => Some(self.names.name(p).cmp(self.names.name(q))),
            _ => match (number(x), number(y)) {
                (Some(p), Some(q)) => p.partial_cmp(&q),
                _ => self.sequence_ordering(x, y),
            },
        }
    }
}
