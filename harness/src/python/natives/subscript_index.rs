//! The evaluated index of a subscript (`obj[index]`, `obj[index] = v`, `del obj[index]`):
//! what `BINARY_SUBSCR`/`STORE_SUBSCR`/`DELETE_SUBSCR` receive, built from values the
//! compiled code (or the tree walker, for its remaining targets) evaluated left to right.
//!
//! A slice is kept as its three bound values rather than a heap object. CPython makes a
//! `slice` per evaluation (also 3.12's `BINARY_SLICE`), but 3.8-3.13 keep the last freed
//! one in a one-slot cache (`slice_cache`), so in steady state a slice allocates nothing
//! the collector counts (measured: a `__index__` bound sees one live tracked slice and no
//! change of `gc.get_count()[0]` on 3.11-3.13, and on 3.8-3.10 after the first call).
//! Approximation: the slice itself is invisible to `gc.get_objects()` while it lives.
//! A tuple index is packed into a tuple object only for a consumer that receives it as a
//! value (a user `__getitem__`, a dict key); tensor indexing reads its parts, as
//! `THPVariable_getitem` does (the tuple `BUILD_TUPLE` makes there comes from the tuple free
//! list in steady state: approximate in the same way).

use super::*;

/// One part of an index: a value, a slice's bounds (`None` where omitted), or `...`.
pub(in crate::python) enum Part {
    Value(Value),
    Slice([Value; 3]),
    Ellipsis,
}

/// An evaluated index that owns its values; [`Index::release`] drops them in CPython's
/// order (a tuple's items last to first, as `tupledealloc`; a slice's step, start, stop,
/// as `slice_dealloc`).
pub(in crate::python) struct Index {
    pub(in crate::python) parts: Vec<Part>,
    /// Written as a tuple (`x[a, b]`), so a single part is still a tuple of one.
    pub(in crate::python) tuple: bool,
    /// The tuple a value consumer was given (it owns the parts then).
    packed: Option<Value>,
}

/// How many stack values a part written as `e` takes (a slice: its three bounds).
pub(in crate::python) fn part_width(e: &Expr) -> usize {
    match e {
        Expr::Slice(_) => 3,
        Expr::EllipsisLiteral(_) => 0,
        _ => 1,
    }
}

/// The parts an index node is written as, and whether it is a tuple.
pub(in crate::python) fn written_parts(index: &Expr) -> (&[Expr], bool) {
    match index {
        // A constant tuple is one constant (no tuple made per evaluation).
        Expr::Tuple(t)
            if !t.elts.iter().any(Expr::is_starred_expr)
                && !crate::python::interp::is_constant(index) =>
        {
            (&t.elts, true)
        }
        other => (std::slice::from_ref(other), false),
    }
}

impl Index {
    /// Builds the index written as `node` from its evaluated values, in order.
    pub(in crate::python) fn from_values(
        node: &Expr,
        values: impl IntoIterator<Item = Value>,
    ) -> Self {
        let mut values = values.into_iter();
        let mut next = || values.next().expect("one value per written operand");
        let (written, tuple) = written_parts(node);
        let parts = written
            .iter()
            .map(|e| match e {
                Expr::Slice(_) => Part::Slice([next(), next(), next()]),
                Expr::EllipsisLiteral(_) => Part::Ellipsis,
                _ => Part::Value(next()),
            })
            .collect();
        Index {
            parts,
            tuple,
            packed: None,
        }
    }

    /// The single value of an index written as one expression, not a slice.
    pub(in crate::python) fn single(&self) -> Option<Value> {
        match (&*self.parts, self.tuple, self.packed) {
            (_, _, Some(v)) => Some(v),
            ([Part::Value(v)], false, None) => Some(*v),
            _ => None,
        }
    }

    /// The slice bounds of an index written as one slice.
    pub(in crate::python) fn slice(&self) -> Option<[Value; 3]> {
        match (&*self.parts, self.tuple) {
            ([Part::Slice(b)], false) => Some(*b),
            _ => None,
        }
    }

    /// The index as one value (borrowed), as a user `__getitem__` or a dict receives it: a
    /// tuple index is packed into a new tuple once. A slice or `...` has no value in the
    /// model: refused, located.
    pub(in crate::python) fn key(&mut self, it: &mut Interpreter<'_>) -> R<Value> {
        if let Some(v) = self.single() {
            return Ok(v);
        }
        if !self.tuple || self.parts.iter().any(|p| !matches!(p, Part::Value(_))) {
            return it.unsupported(
                "a slice or `...` passed as a value (a user `__getitem__`, a dict key)",
            );
        }
        let items = std::mem::take(&mut self.parts)
            .into_iter()
            .map(|p| match p {
                Part::Value(v) => v,
                _ => unreachable!("checked above"),
            })
            .collect();
        let t = Value::Obj(it.alloc(ObjKind::Tuple(items)));
        self.packed = Some(t);
        Ok(t)
    }

    /// Drops the references the index holds.
    pub(in crate::python) fn release(self, it: &mut Interpreter<'_>) {
        if let Some(t) = self.packed {
            it.heap.decref(t);
        }
        for part in self.parts.into_iter().rev() {
            match part {
                Part::Value(v) => it.heap.decref(v),
                Part::Slice([start, stop, step]) => {
                    it.heap.decref(step);
                    it.heap.decref(start);
                    it.heap.decref(stop);
                }
                Part::Ellipsis => {}
            }
        }
    }
}

/// Evaluates the index written as `node` with the tree evaluator, left to right (the
/// targets the walker still stores to: `for` targets, unpacking). On an error the values
/// evaluated so far are released.
pub(in crate::python) fn eval_index<'a>(it: &mut Interpreter<'a>, node: &'a Expr) -> R<Index> {
    let (written, _) = written_parts(node);
    let mut values = Vec::new();
    for e in written {
        let operands: Vec<Option<&'a Expr>> = match e {
            Expr::Slice(s) => vec![s.lower.as_deref(), s.upper.as_deref(), s.step.as_deref()],
            Expr::EllipsisLiteral(_) => Vec::new(),
            other => vec![Some(other)],
        };
        for operand in operands {
            match operand.map(|e| it.eval(e)).unwrap_or(Ok(Value::None)) {
                Ok(v) => values.push(v),
                Err(err) => {
                    values.into_iter().rev().for_each(|v| it.heap.decref(v));
                    return Err(err);
                }
            }
        }
    }
    Ok(Index::from_values(node, values))
}

/// An index as an integer: ints and bools, or a user object's `__index__` result
/// (`PyNumber_AsSsize_t`); `None` for any other value.
pub(in crate::python) fn index_int(it: &mut Interpreter<'_>, v: Value) -> R<Option<i64>> {
    match v {
        Value::Int(i) => Ok(Some(i)),
        Value::Bool(b) => Ok(Some(i64::from(b))),
        Value::Obj(_) if it.user_special(v, "__index__").is_some() => {
            let r = it
                .call_special(v, "__index__", Vec::new())
                .unwrap_or_else(|_| unreachable!("checked above"))?;
            match r {
                Value::Int(i) => Ok(Some(i)),
                other => {
                    let name = it.value_type_name(other);
                    it.heap.decref(other);
                    it.error(format!(
                        "TypeError: __index__ returned non-int (type {name})"
                    ))
                }
            }
        }
        _ => Ok(None),
    }
}

/// A slice's bounds as integers (`_PyEval_SliceIndex`): `None` stays omitted.
pub(in crate::python) fn slice_bounds(
    it: &mut Interpreter<'_>,
    bounds: [Value; 3],
) -> R<(Option<i64>, Option<i64>, Option<i64>)> {
    let mut out = [None; 3];
    // `PySlice_Unpack` reads the step first, then the start and the stop.
    for k in [2, 0, 1] {
        let (slot, v) = (&mut out[k], bounds[k]);
        if v == Value::None {
            continue;
        }
        match index_int(it, v)? {
            Some(i) => *slot = Some(i),
            None => {
                return it.error(
                    "TypeError: slice indices must be integers or None or have an __index__ method",
                );
            }
        }
    }
    Ok((out[0], out[1], out[2]))
}

/// `obj[index] = value` for the targets the tree walker stores to (`for` targets,
/// unpacking): evaluates the index, stores, then releases the value, the container and the
/// index (`STORE_SUBSCR`'s order). Takes `obj` and `value`.
pub(in crate::python) fn store_evaluating_index<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    node: &'a Expr,
    value: Value,
) -> R<()> {
    let mut index = match eval_index(it, node) {
        Ok(i) => i,
        Err(e) => {
            it.heap.decref(value);
            it.heap.decref(obj);
            return Err(e);
        }
    };
    let r = store_subscript(it, obj, &mut index, value);
    it.heap.decref(obj);
    index.release(it);
    r
}

/// `del obj[index]` for the tree walker's targets; takes `obj`.
pub(in crate::python) fn del_evaluating_index<'a>(
    it: &mut Interpreter<'a>,
    obj: Value,
    node: &'a Expr,
) -> R<()> {
    let mut index = match eval_index(it, node) {
        Ok(i) => i,
        Err(e) => {
            it.heap.decref(obj);
            return Err(e);
        }
    };
    let r = del_subscript(it, obj, &mut index);
    it.heap.decref(obj);
    index.release(it);
    r
}
