//! `torch.utils.data`: `Dataset`, `IterableDataset`, `TensorDataset`, `Subset`,
//! `random_split` and `DataLoader` with `num_workers=0` (`dataloader.py`, `dataset.py`).
//!
//! What decides memory is which objects hold what, and for how long:
//! - `iter(loader)` makes a new `_SingleProcessDataLoaderIter` each time (PyTorch keeps one
//!   only with persistent workers): it holds the dataset (and, for an `IterableDataset`,
//!   the dataset's iterator, as `_IterableDatasetFetcher.dataset_iter` does), never a batch.
//! - each `next` builds the batch's index list (`BatchSampler`), the list of samples
//!   (`_MapDatasetFetcher.fetch`), collates them (`collate.rs`'s `default_collate` or the
//!   user's `collate_fn`) and drops both lists: the samples live until the batch exists, the
//!   batch lives as long as the caller keeps it (a `for` target keeps the previous batch
//!   while the next one is built, as in CPython).
//!
//! Approximations: the sampler is PyTorch's `SequentialSampler` also with `shuffle=True`
//! (values are not modelled, so only the order differs); the sampler's generator, the
//! fetcher object and `record_function`'s per-batch profiler object are not allocated.

use super::interp::{Interpreter, R};
use super::natives::{self, Native};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};

const SHUFFLE_NOTE: &str = "DataLoader(shuffle=True) iterates in dataset order (PyTorch's RandomSampler draws a permutation; values are not modelled, so only which sample lands in which batch differs)";

impl Interpreter<'_> {
    /// `Dataset()`, `TensorDataset(*tensors)`, `Subset(dataset, indices)`, `DataLoader(...)`.
    pub(super) fn construct_data(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        match kind {
            TorchClass::TensorDataset | TorchClass::Subset => {
                let attrs = self.dataset_attrs(kind, args, kwargs)?;
                self.new_torch_instance(kind, attrs)
            }
            TorchClass::DataLoader => self.construct_loader(args, kwargs),
            _ => self.new_torch_instance(kind, vec![]),
        }
    }

    /// The attributes `TensorDataset.__init__` / `Subset.__init__` set (owned values):
    /// `tensors`, or `dataset` and `indices`, after PyTorch's checks.
    fn dataset_attrs(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Vec<(&'static str, Value)>> {
        if kind == TorchClass::TensorDataset {
            let mut first: Option<i64> = None;
            for &t in args {
                let Some(size) = self.tensor_shape(t).and_then(|s| s.first().copied()) else {
                    return self.error(
                        "TypeError: TensorDataset(*tensors) takes tensors of at least one dimension",
                    );
                };
                if first.is_some_and(|f| f != size) {
                    // `assert all(tensors[0].size(0) == tensor.size(0) ...)`
                    return self.error("AssertionError: Size mismatch between tensors");
                }
                first = Some(size);
            }
            for &t in args {
                self.heap.incref(t);
            }
            return Ok(vec![("tensors", natives::new_tuple(self, args.to_vec()))]);
        }
        let (Some(dataset), Some(indices)) = (
            constructor_arg(self, args, kwargs, 0, "dataset"),
            constructor_arg(self, args, kwargs, 1, "indices"),
        ) else {
            return self.error(
                "TypeError: Subset.__init__() missing required arguments: 'dataset' and 'indices'",
            );
        };
        self.heap.incref(dataset);
        self.heap.incref(indices);
        Ok(vec![("dataset", dataset), ("indices", indices)])
    }

    /// `super().__init__(...)` in a user subclass reaching a torch data class: the base's
    /// initialiser runs on the instance (`TensorDataset` keeps its tensors, `Subset` its
    /// dataset and indices); `Dataset`'s own does nothing. `false` when `base` is none of
    /// them.
    pub(super) fn data_base_init(
        &mut self,
        receiver: ObjId,
        base: ObjId,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<bool> {
        let kind = match self.torch_class(base) {
            Some(k @ (TorchClass::TensorDataset | TorchClass::Subset)) => k,
            Some(TorchClass::Dataset | TorchClass::IterableDataset) => return Ok(true),
            _ => return Ok(false),
        };
        for (name, v) in self.dataset_attrs(kind, args, kwargs)? {
            self.set_data_attr(receiver, name, v)?;
        }
        Ok(true)
    }

    fn construct_loader(&mut self, args: &[Value], kwargs: &[(Sym, Value)]) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let Some(dataset) = arg(self, 0, "dataset") else {
            return self.error(
                "TypeError: DataLoader.__init__() missing 1 required positional argument: 'dataset'",
            );
        };
        let batch_size = match arg(self, 1, "batch_size") {
            None => Value::Int(1),
            Some(Value::None) => Value::None,
            Some(Value::Int(b)) if b > 0 => Value::Int(b),
            Some(Value::Int(b)) => {
                return self.error(format!(
                    "ValueError: batch_size should be a positive integer value, but got batch_size={b}"
                ));
            }
            Some(_) => return self.error("TypeError: batch_size should be an integer or None"),
        };
        let shuffle = match arg(self, 2, "shuffle") {
            Some(v) => self.truth(v)?,
            None => false,
        };
        let iterable = self.is_iterable_dataset(dataset);
        if shuffle && iterable {
            return self.error(format!(
                "ValueError: DataLoader with IterableDataset: expected unspecified shuffle option, but got shuffle={}",
                if shuffle { "True" } else { "False" }
            ));
        }
        if shuffle && !self.torch_classes.data_shuffle_noted {
            self.torch_classes.data_shuffle_noted = true;
            self.recorder.approximation(SHUFFLE_NOTE);
        }
        match arg(self, 5, "num_workers") {
            None | Some(Value::Int(0)) => {}
            Some(Value::Int(n)) if n < 0 => {
                return self.error(
                    "ValueError: num_workers option should be non-negative; use num_workers=0 to disable multiprocessing.",
                );
            }
            Some(_) => {
                return self.unsupported(
                    "DataLoader with num_workers > 0 (worker processes; num_workers=0 is modelled)",
                );
            }
        }
        let collate_fn = arg(self, 6, "collate_fn").unwrap_or(Value::None);
        let drop_last = match arg(self, 8, "drop_last") {
            Some(v) => self.truth(v)?,
            None => false,
        };
        self.heap.incref(dataset);
        self.heap.incref(collate_fn);
        self.new_torch_instance(
            TorchClass::DataLoader,
            vec![
                ("dataset", dataset),
                ("batch_size", batch_size),
                ("drop_last", Value::Bool(drop_last)),
                ("num_workers", Value::Int(0)),
                ("collate_fn", collate_fn),
            ],
        )
    }

    /// The torch data class of an instance (user subclasses report their base).
    fn data_class(&self, v: Value) -> Option<TorchClass> {
        self.instance_torch_class(v).filter(|k| {
            matches!(
                k,
                TorchClass::Dataset
                    | TorchClass::IterableDataset
                    | TorchClass::TensorDataset
                    | TorchClass::Subset
                    | TorchClass::DataLoader
                    | TorchClass::DataLoaderIter
            )
        })
    }

    fn is_iterable_dataset(&self, v: Value) -> bool {
        self.data_class(v) == Some(TorchClass::IterableDataset)
    }

    /// Whether a user subclass of `Dataset`/`IterableDataset` may define its own special
    /// methods (`__getitem__`, `__len__`, `__iter__`): PyTorch's bases are plain classes.
    pub(super) fn is_user_dataset_class(&self, class: ObjId) -> bool {
        matches!(
            self.torch_class(class),
            Some(TorchClass::Dataset | TorchClass::IterableDataset)
        ) && self.torch_classes.kind_of(class).is_none()
    }

    /// An attribute of a data object (borrowed), `None` when absent.
    fn data_attr(&self, id: ObjId, name: &str) -> Value {
        self.attr_values(id)
            .into_iter()
            .find(|(k, _)| self.names.name(*k) == name)
            .map_or(Value::None, |(_, v)| v)
    }

    fn set_data_attr(&mut self, id: ObjId, name: &str, v: Value) -> R<()> {
        let s = self.sym(name);
        self.set_attr(Value::Obj(id), s, v)
    }

    /// `len(x)` of a `DataLoader`, `TensorDataset` or `Subset`.
    pub(super) fn data_len(&mut self, v: Value) -> Option<R<i64>> {
        let Value::Obj(id) = v else { return None };
        Some(match self.data_class(v)? {
            TorchClass::TensorDataset | TorchClass::Subset => self.dataset_len(v),
            TorchClass::DataLoader => {
                let dataset = self.data_attr(id, "dataset");
                if self.is_iterable_dataset(dataset) {
                    return Some(self.error(
                        "TypeError: object of type 'IterableDataset' has no len() in the workload model",
                    ));
                }
                let n = match self.dataset_len(dataset) {
                    Ok(n) => n,
                    Err(e) => return Some(Err(e)),
                };
                // `len(BatchSampler)`: whole batches, plus a partial one unless dropped.
                Ok(match self.data_attr(id, "batch_size") {
                    Value::Int(b) if self.data_attr(id, "drop_last") == Value::Bool(true) => n / b,
                    Value::Int(b) => (n + b - 1) / b,
                    _ => n,
                })
            }
            _ => return None,
        })
    }

    /// `len(dataset)` as the sampler asks it.
    fn dataset_len(&mut self, ds: Value) -> R<i64> {
        let Value::Obj(id) = ds else {
            return natives::length(self, ds);
        };
        match self.data_class(ds) {
            Some(TorchClass::TensorDataset) => {
                // `self.tensors[0].size(0)`
                let tensors = self.data_attr(id, "tensors");
                let first = match tensors {
                    Value::Obj(t) => match self.heap.kind(t) {
                        ObjKind::Tuple(items) => items.first().copied(),
                        _ => None,
                    },
                    _ => None,
                };
                match first.and_then(|t| self.tensor_shape(t)) {
                    Some(s) => Ok(s[0]),
                    None => self.error("IndexError: tuple index out of range"),
                }
            }
            Some(TorchClass::Subset) => {
                let indices = self.data_attr(id, "indices");
                self.dataset_len(indices)
            }
            _ => match self.user_len(ds) {
                Some(n) => n,
                None if self.is_tensor(ds) => Ok(self.tensor_shape(ds).map_or(0, |s| s[0])),
                None => natives::length(self, ds),
            },
        }
    }

    /// The shape of a tensor value.
    fn tensor_shape(&self, v: Value) -> Option<Vec<i64>> {
        match v {
            Value::Obj(o) => match self.heap.kind(o) {
                ObjKind::Tensor(t) => Some(t.shape.clone()),
                _ => None,
            },
            _ => None,
        }
    }

    /// `dataset[index]` as `_MapDatasetFetcher` asks it (`index` borrowed).
    pub(super) fn dataset_item(&mut self, ds: Value, index: Value) -> R<Value> {
        let Value::Obj(id) = ds else {
            return self.error("TypeError: the dataset is not subscriptable");
        };
        match self.data_class(ds) {
            Some(TorchClass::TensorDataset) => {
                // `tuple(tensor[index] for tensor in self.tensors)`
                let tensors = match self.data_attr(id, "tensors") {
                    Value::Obj(t) => match self.heap.kind(t) {
                        ObjKind::Tuple(items) => items.clone(),
                        _ => Vec::new(),
                    },
                    _ => Vec::new(),
                };
                let mut out = Vec::with_capacity(tensors.len());
                for t in tensors {
                    match self.subscript_value(t, index) {
                        Ok(v) => out.push(v),
                        Err(e) => {
                            self.heap.decref_all(out);
                            return Err(e);
                        }
                    }
                }
                Ok(natives::new_tuple(self, out))
            }
            Some(TorchClass::Subset) => {
                // `self.dataset[self.indices[idx]]`
                let indices = self.data_attr(id, "indices");
                let dataset = self.data_attr(id, "dataset");
                let inner = self.subscript_value(indices, index)?;
                let r = self.dataset_item(dataset, inner);
                self.heap.decref(inner);
                r
            }
            Some(TorchClass::Dataset | TorchClass::IterableDataset)
                if self.user_special(ds, "__getitem__").is_none() =>
            {
                self.error(
                    "NotImplementedError: Subclasses of Dataset should implement __getitem__.",
                )
            }
            _ => self.subscript_value(ds, index),
        }
    }

    /// `obj[key]` with an evaluated key (borrowed): a user `__getitem__`, a tensor index,
    /// a sequence item.
    fn subscript_value(&mut self, obj: Value, key: Value) -> R<Value> {
        if self.user_special(obj, "__getitem__").is_some() {
            self.heap.incref(key);
            return self
                .call_special(obj, "__getitem__", vec![key])
                .unwrap_or_else(|_| unreachable!("checked above"));
        }
        let Value::Obj(id) = obj else {
            let name = self.value_type_name(obj);
            return self.error(format!("TypeError: '{name}' object is not subscriptable"));
        };
        if self.is_tensor(obj) {
            let Value::Int(i) = key else {
                return self.unsupported("a tensor dataset indexed by a non-integer");
            };
            return natives::tensor_int_index(self, id, i);
        }
        if self.is_data_subscript(obj) {
            // Handled whole by `dataset_item`, which never comes back here for these.
            return self.dataset_item(obj, key);
        }
        natives::item(self, id, key)
    }

    /// `iter(loader)`: a new `_SingleProcessDataLoaderIter` (owned); `None` for others.
    pub(super) fn data_iter(&mut self, v: Value) -> Option<R<Value>> {
        if self.data_class(v)? != TorchClass::DataLoader {
            return None;
        }
        let Value::Obj(loader) = v else { return None };
        Some(self.new_loader_iter(loader))
    }

    fn new_loader_iter(&mut self, loader: ObjId) -> R<Value> {
        let dataset = self.data_attr(loader, "dataset");
        let batch_size = self.data_attr(loader, "batch_size");
        let drop_last = self.data_attr(loader, "drop_last");
        let collate_fn = self.data_attr(loader, "collate_fn");
        // The sampler's `iter(range(len(dataset)))` takes the length now; an iterable
        // dataset's iterator is made now and kept by the fetcher.
        let source = if self.is_iterable_dataset(dataset) {
            self.heap.incref(dataset);
            self.iterator_of(dataset)?
        } else {
            Value::Int(self.dataset_len(dataset)?)
        };
        for v in [dataset, collate_fn] {
            self.heap.incref(v);
        }
        let iter = self.new_torch_instance(
            TorchClass::DataLoaderIter,
            vec![
                ("_dataset", dataset),
                ("_batch_size", batch_size),
                ("_drop_last", drop_last),
                ("_collate_fn", collate_fn),
                ("_source", source),
                ("_next_index", Value::Int(0)),
            ],
        )?;
        Ok(Value::Obj(iter))
    }

    /// `next(loader_iter)`: the next batch, `Ok(None)` at the end; `None` for others.
    pub(super) fn data_next(&mut self, v: Value) -> Option<R<Option<Value>>> {
        if self.data_class(v)? != TorchClass::DataLoaderIter {
            return None;
        }
        let Value::Obj(id) = v else { return None };
        Some(self.loader_next(id))
    }

    fn loader_next(&mut self, id: ObjId) -> R<Option<Value>> {
        let batch_size = self.data_attr(id, "_batch_size");
        let drop_last = self.data_attr(id, "_drop_last") == Value::Bool(true);
        let source = self.data_attr(id, "_source");
        let start = match self.data_attr(id, "_next_index") {
            Value::Int(i) => i,
            _ => return Ok(None),
        };
        let samples = match source {
            // Map-style: the sampler's indices, then `[self.dataset[idx] for idx in index]`.
            Value::Int(len) => {
                let want = match batch_size {
                    Value::Int(b) => b,
                    _ => 1,
                };
                let end = (start + want).min(len);
                if start >= len || (drop_last && end - start < want) {
                    return Ok(None);
                }
                self.set_data_attr(id, "_next_index", Value::Int(end))?;
                if batch_size == Value::None {
                    // No auto-collation: `self.dataset[index]`, converted (tensors as they are).
                    let dataset = self.data_attr(id, "_dataset");
                    return self.dataset_item(dataset, Value::Int(start)).map(Some);
                }
                let index: Vec<Value> = (start..end).map(Value::Int).collect();
                let index = Value::Obj(self.alloc(ObjKind::List(index)));
                let r = self.fetch_samples(id, start, end);
                self.heap.decref(index);
                r?
            }
            // Iterable-style: `_IterableDatasetFetcher.fetch`.
            iterator => {
                if self.data_attr(id, "_ended") == Value::Bool(true) {
                    return Ok(None);
                }
                let Value::Int(want) = batch_size else {
                    let item = self.next_of(iterator, 0)?;
                    if item.is_none() {
                        self.set_data_attr(id, "_ended", Value::Bool(true))?;
                    }
                    return Ok(item);
                };
                let mut data = Vec::new();
                while (data.len() as i64) < want {
                    match self.next_of(iterator, 0) {
                        Ok(Some(v)) => data.push(v),
                        Ok(None) => {
                            self.set_data_attr(id, "_ended", Value::Bool(true))?;
                            break;
                        }
                        Err(e) => {
                            self.heap.decref_all(data);
                            return Err(e);
                        }
                    }
                }
                if data.is_empty() || (drop_last && (data.len() as i64) < want) {
                    self.heap.decref_all(data);
                    return Ok(None);
                }
                Value::Obj(self.alloc(ObjKind::List(data)))
            }
        };
        let collate_fn = self.data_attr(id, "_collate_fn");
        let batch = if collate_fn == Value::None {
            self.default_collate(samples)
        } else {
            self.heap.incref(samples);
            self.call(collate_fn, vec![samples], Vec::new())
        };
        self.heap.decref(samples);
        batch.map(Some)
    }

    /// The list of samples `start..end` of the iterator's dataset (owned).
    fn fetch_samples(&mut self, id: ObjId, start: i64, end: i64) -> R<Value> {
        let dataset = self.data_attr(id, "_dataset");
        let mut data = Vec::with_capacity((end - start) as usize);
        for i in start..end {
            match self.dataset_item(dataset, Value::Int(i)) {
                Ok(v) => data.push(v),
                Err(e) => {
                    self.heap.decref_all(data);
                    return Err(e);
                }
            }
        }
        Ok(Value::Obj(self.alloc(ObjKind::List(data))))
    }

    /// `random_split(dataset, lengths)`: one `Subset` per length over a list of indices
    /// (`randperm(sum(lengths)).tolist()` sliced; the order is not modelled). Fractions
    /// that sum to 1 are turned into counts as PyTorch does (floor, then the remainder
    /// handed out one at a time round-robin).
    pub(super) fn random_split(&mut self, args: &[Value], kwargs: &[(Sym, Value)]) -> R<Value> {
        let (Some(dataset), Some(lengths)) = (
            constructor_arg(self, args, kwargs, 0, "dataset"),
            constructor_arg(self, args, kwargs, 1, "lengths"),
        ) else {
            return self.error(
                "TypeError: random_split() missing required arguments: 'dataset' and 'lengths'",
            );
        };
        let n = self.dataset_len(dataset)?;
        let given = natives::sequence_items(self, lengths)?;
        let fractions: Option<Vec<f64>> = given.iter().map(|v| natives::float_of(*v)).collect();
        let Some(fractions) = fractions else {
            return self.error("TypeError: random_split lengths must be numbers");
        };
        let all_int = given.iter().all(|v| matches!(v, Value::Int(_)));
        let counts: Vec<i64> = if !all_int && (fractions.iter().sum::<f64>() - 1.0).abs() < 1e-9 {
            let mut c: Vec<i64> = fractions
                .iter()
                .map(|f| (n as f64 * f).floor() as i64)
                .collect();
            let rest = n - c.iter().sum::<i64>();
            let k = c.len() as i64;
            for i in 0..rest {
                c[(i % k) as usize] += 1;
            }
            c
        } else if all_int {
            given
                .iter()
                .map(|v| if let Value::Int(i) = v { *i } else { 0 })
                .collect()
        } else {
            return self.error(
                "ValueError: Sum of input lengths does not equal the length of the input dataset!",
            );
        };
        if counts.iter().sum::<i64>() != n {
            return self.error(
                "ValueError: Sum of input lengths does not equal the length of the input dataset!",
            );
        }
        let mut subsets = Vec::with_capacity(counts.len());
        let mut offset = 0;
        for c in counts {
            let idx: Vec<Value> = (offset..offset + c).map(Value::Int).collect();
            offset += c;
            let indices = Value::Obj(self.alloc(ObjKind::List(idx)));
            self.heap.incref(dataset);
            match self.new_torch_instance(
                TorchClass::Subset,
                vec![("dataset", dataset), ("indices", indices)],
            ) {
                Ok(s) => subsets.push(Value::Obj(s)),
                Err(e) => {
                    self.heap.decref_all(subsets);
                    return Err(e);
                }
            }
        }
        Ok(Value::Obj(self.alloc(ObjKind::List(subsets))))
    }
}

/// `torch.utils.data.random_split` through the native call path.
pub(super) fn call(
    it: &mut Interpreter<'_>,
    n: Native,
    p: &[Value],
    kw: &[(Sym, Value)],
) -> R<Value> {
    match n {
        Native::RandomSplit => it.random_split(p, kw),
        _ => it.error("TypeError: unknown torch.utils.data function"),
    }
}

impl Interpreter<'_> {
    /// `iter(x)` of a `DataLoader`.
    pub(super) fn is_data_loader(&self, v: Value) -> bool {
        self.data_class(v) == Some(TorchClass::DataLoader)
    }

    /// `x[i]` of a `TensorDataset` or `Subset` (not a user subclass defining `__getitem__`).
    pub(super) fn is_data_subscript(&self, v: Value) -> bool {
        matches!(
            self.data_class(v),
            Some(TorchClass::TensorDataset | TorchClass::Subset)
        )
    }
}
