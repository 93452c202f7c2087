//! `default_collate` of `torch/utils/data/_utils/collate.py`: the samples of a batch
//! turned into batched values, recursively by the type of the first sample.
//!
//! - tensors: `torch.stack(batch, 0)` (a new tensor `[B, *shape]`; `StackBackward0` when a
//!   sample requires grad);
//! - `int`/`bool`: `torch.tensor(batch)`, `float`: `torch.tensor(batch, dtype=float64)`
//!   (host tensors); `str`: the list itself;
//! - `dict`: a dict of the collated values of each key, each key's samples gathered in a
//!   list first (`[d[key] for d in batch]`);
//! - `tuple`/`list`: `list(zip(*batch))` (a list of tuples, every sample of equal length),
//!   then a list of each column's collated value: a tuple sample gives a list (PyTorch's
//!   "backwards compatibility" branch), as does a list.
//!
//! Anything else is PyTorch's `TypeError`. Named tuples and NumPy arrays are not modelled.

use super::interp::{Interpreter, R};
use super::natives::{self, Native};
use crate::heap::{ObjKind, Value};

impl Interpreter<'_> {
    /// `default_collate(batch)`: `batch` is a list of samples (borrowed); a new value.
    pub(super) fn default_collate(&mut self, batch: Value) -> R<Value> {
        let items = natives::sequence_items(self, batch)?;
        let Some(&elem) = items.first() else {
            return self.error("IndexError: list index out of range");
        };
        if self.is_tensor(elem) {
            self.heap.incref(batch);
            return self.call(
                natives::native_value(Native::Stack),
                vec![batch],
                Vec::new(),
            );
        }
        match elem {
            Value::Int(_) | Value::Bool(_) => {
                self.heap.incref(batch);
                return self.call(
                    natives::native_value(Native::TensorCtor),
                    vec![batch],
                    Vec::new(),
                );
            }
            Value::Float(_) => {
                self.heap.incref(batch);
                let dtype = self.sym("dtype");
                return self.call(
                    natives::native_value(Native::TensorCtor),
                    vec![batch],
                    vec![(dtype, Value::Dtype(crate::torch::Dtype::Float64))],
                );
            }
            Value::Str(_) => {
                self.heap.incref(batch);
                return Ok(batch);
            }
            _ => {}
        }
        let Value::Obj(first) = elem else {
            return self.collate_type_error(elem);
        };
        match self.heap.kind(first) {
            ObjKind::Dict(entries) => {
                let keys: Vec<Value> = entries.iter().map(|(k, _)| *k).collect();
                let mut out: Vec<(Value, Value)> = Vec::with_capacity(keys.len());
                for key in keys {
                    match self.collate_key(&items, key) {
                        Ok(v) => out.push((key, v)),
                        Err(e) => {
                            for (_, v) in out {
                                self.heap.decref(v);
                            }
                            return Err(e);
                        }
                    }
                }
                for (k, _) in &out {
                    self.heap.incref(*k);
                }
                Ok(Value::Obj(self.alloc(ObjKind::Dict(out))))
            }
            ObjKind::Tuple(first_items) | ObjKind::List(first_items) => {
                let width = first_items.len();
                let mut rows = Vec::with_capacity(items.len());
                for &s in &items {
                    let row = natives::sequence_items(self, s)?;
                    if row.len() != width {
                        return self.error(
                            "RuntimeError: each element in list of batch should be of equal size",
                        );
                    }
                    rows.push(row);
                }
                // `transposed = list(zip(*batch))`
                let columns: Vec<Value> = (0..width)
                    .map(|c| {
                        let col: Vec<Value> = rows.iter().map(|r| r[c]).collect();
                        for &v in &col {
                            self.heap.incref(v);
                        }
                        Value::Obj(self.alloc(ObjKind::Tuple(col)))
                    })
                    .collect();
                let transposed = Value::Obj(self.alloc(ObjKind::List(columns.clone())));
                let mut out = Vec::with_capacity(width);
                for col in columns {
                    match self.default_collate(col) {
                        Ok(v) => out.push(v),
                        Err(e) => {
                            self.heap.decref_all(out);
                            self.heap.decref(transposed);
                            return Err(e);
                        }
                    }
                }
                let result = Value::Obj(self.alloc(ObjKind::List(out)));
                self.heap.decref(transposed);
                Ok(result)
            }
            _ => self.collate_type_error(elem),
        }
    }

    /// `collate([d[key] for d in batch])` (items borrowed).
    fn collate_key(&mut self, items: &[Value], key: Value) -> R<Value> {
        let mut column = Vec::with_capacity(items.len());
        for &d in items {
            let Value::Obj(id) = d else {
                self.heap.decref_all(column);
                return self.collate_type_error(d);
            };
            match natives::item(self, id, key) {
                Ok(v) => column.push(v),
                Err(e) => {
                    self.heap.decref_all(column);
                    return Err(e);
                }
            }
        }
        let column = Value::Obj(self.alloc(ObjKind::List(column)));
        let r = self.default_collate(column);
        self.heap.decref(column);
        r
    }

    fn collate_type_error<T>(&self, elem: Value) -> R<T> {
        let name = self.value_type_name(elem);
        self.error(format!(
            "TypeError: default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found <class '{name}'>"
        ))
    }
}
