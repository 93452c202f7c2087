//! Order comparisons (`<`, `<=`, `>`, `>=`) beyond numbers: tuples and lists item by item
//! (`tuplerichcompare`: the first items that are not equal decide, else the shorter sequence
//! is the smaller), and objects whose class defines the comparison method (`__lt__`, or the
//! other operand's reflected one, as `do_richcompare` tries them).

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};
use ruff_python_ast::CmpOp;
use std::cmp::Ordering;

impl Interpreter<'_> {
    /// `l op r` through a user class's method: `l.__lt__(r)`, else the reflected `r.__gt__(l)`
    /// (`None` when neither operand is an instance whose class defines one).
    pub(super) fn user_ordering(&mut self, op: CmpOp, l: Value, r: Value) -> Option<R<bool>> {
        let is_instance = |it: &Self, v: Value| matches!(v, Value::Obj(id) if matches!(it.heap.kind(id), ObjKind::Instance { .. }));
        let (method, reflected) = match op {
            CmpOp::Lt => ("__lt__", "__gt__"),
            CmpOp::LtE => ("__le__", "__ge__"),
            CmpOp::Gt => ("__gt__", "__lt__"),
            _ => ("__ge__", "__le__"),
        };
        if is_instance(self, l)
            && let Some(b) = self.user_predicate(l, method, r)
        {
            return Some(b);
        }
        if is_instance(self, r) {
            return self.user_predicate(r, reflected, l);
        }
        None
    }

    /// `a < b` and friends for two tuples (struct sequences included) or two lists: the
    /// ordering of the first pair of items that are not equal, else of the lengths. `None`
    /// when the operands are not such sequences or the deciding items have no order.
    pub(super) fn sequence_ordering(&self, a: Value, b: Value) -> Option<Ordering> {
        let items = |v: Value| -> Option<(bool, &[Value])> {
            let Value::Obj(id) = v else { return None };
            match self.heap.kind(id) {
                ObjKind::Tuple(items)
                | ObjKind::StructSeq { items, .. }
                | ObjKind::NamedTuple { items, .. } => Some((false, items)),
                ObjKind::List(items) => Some((true, items)),
                _ => None,
            }
        };
        let ((list_a, xs), (list_b, ys)) = (items(a)?, items(b)?);
        if list_a != list_b {
            return None;
        }
        self.values_ordering(xs, ys)
    }

    /// Two tuples of `xs` and `ys` compared (`tuplerichcompare`).
    pub(super) fn values_ordering(&self, xs: &[Value], ys: &[Value]) -> Option<Ordering> {
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
