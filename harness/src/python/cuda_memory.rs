//! `torch.cuda.memory_stats()` and the functions built on it (`memory_allocated`,
//! `memory_reserved`, `max_memory_allocated`, `max_memory_reserved`): the Python objects
//! they create, because a leak-debugging loop that prints memory every iteration moves
//! CPython's collections.
//!
//! PyTorch 2.x (`torch/cuda/memory.py`) implements `memory_allocated()` as
//! `memory_stats().get("allocated_bytes.all.current", 0)`, and `memory_stats()` flattens the
//! nested dict that `torch._C._cuda_memoryStats` builds (39 dicts: the top level, 9 stat
//! arrays of 3 pools, 27 + 2 stat dicts) into a local `result` list of `(key, value)`
//! tuples, through a nested function that calls itself. That function's closure holds its
//! own cell and `result`'s: every call leaves a reference cycle (function, closure tuple,
//! two cells) holding the list and its 122 tuples, freed only by the collector.
//!
//! Measured on CPython with the equivalent pure-Python structure (`gc.get_count()[0]`
//! around a call with the collector disabled; objects per call):
//!
//! | CPython | consecutive calls | first call after a full collection | found by `gc.collect()` per call |
//! |---------|-------------------|------------------------------------|----------------------------------|
//! | 3.8     | 127               | 173                                | 127                              |
//! | 3.9     | 127               | 173                                | 127                              |
//! | 3.10    | 127               | 173                                | 127                              |
//! | 3.11    | 127               | 170                                | 127                              |
//! | 3.12    | 127               | 170                                | 127                              |
//! | 3.13    | 127               | 170                                | 127                              |
//!
//! The model allocates the same objects in the same order: the 39 dicts (served by the
//! dict free list, which a full collection empties, hence the larger first call), the two
//! cells, the list, the closure tuple and the function, the 122 leaf tuples, and the
//! `OrderedDict`. That gives 127 per call and 168 after a full collection; the 2 to 5
//! objects it lacks there are the transient dict-items views and iterators of the walk
//! and, up to 3.10, frame objects, which are freed within the call (approximation). After
//! `import torch` the tuple free list is well stocked, so the first calls of a process
//! count fewer objects until it drains, in CPython as in the model.
//!
//! Measured with `python harness/tests/measure/memory_stats.py` on each `~/.pyenv/versions/3.x`: an
//! equivalent written for the measurement (a nested dict built like the C++ binding's,
//! flattened by a self-recursive closure into a sorted list and an `OrderedDict`).

use super::interp::{Interpreter, R};
use crate::heap::{Function, ObjId, ObjKind, Value};

const COUNTERS: &[&str] = &[
    "num_alloc_retries",
    "num_ooms",
    "max_split_size",
    "num_sync_all_streams",
    "num_device_alloc",
    "num_device_free",
];
const STAT_ARRAYS: &[&str] = &[
    "allocation",
    "segment",
    "active",
    "inactive_split",
    "allocated_bytes",
    "reserved_bytes",
    "active_bytes",
    "inactive_split_bytes",
    "requested_bytes",
];
const POOLS: &[&str] = &["all", "small_pool", "large_pool"];
const METRICS: &[&str] = &["current", "peak", "allocated", "freed"];
const OVERSIZE: &[&str] = &["oversize_allocations", "oversize_segments"];

/// The value of one flattened statistic, from the allocator model. Statistics the model
/// does not keep per pool or as running totals read 0.
fn statistic(it: &Interpreter<'_>, key: &str) -> i64 {
    let s = it.allocator.stats();
    let v = match key {
        "num_alloc_retries" => s.num_alloc_retries,
        "num_ooms" => s.num_ooms,
        "num_device_alloc" => s.num_device_alloc,
        "num_device_free" => s.num_device_free,
        "max_split_size" => return -1,
        "allocated_bytes.all.current" | "active_bytes.all.current" => s.allocated_bytes,
        "allocated_bytes.all.peak" | "active_bytes.all.peak" => s.peak_allocated_bytes,
        "reserved_bytes.all.current" => s.reserved_bytes,
        "reserved_bytes.all.peak" => s.peak_reserved_bytes,
        "requested_bytes.all.current" => s.requested_bytes,
        "requested_bytes.all.peak" => s.peak_requested_bytes,
        "allocation.all.current" | "active.all.current" => s.allocations,
        "allocation.all.peak" | "active.all.peak" => s.peak_allocations,
        "segment.all.current" => s.segments,
        "segment.all.peak" => s.peak_segments,
        "inactive_split.all.current" => s.inactive_split_blocks,
        "inactive_split_bytes.all.current" => s.inactive_split_bytes,
        _ => 0,
    };
    v as i64
}

/// The flattened `(key, value)` pairs, in `_cuda_memoryStats`'s order.
fn flattened(it: &Interpreter<'_>) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for c in COUNTERS {
        out.push((c.to_string(), statistic(it, c)));
    }
    for a in STAT_ARRAYS {
        for p in POOLS {
            for m in METRICS {
                let key = format!("{a}.{p}.{m}");
                let v = statistic(it, &key);
                out.push((key, v));
            }
        }
    }
    for o in OVERSIZE {
        for m in METRICS {
            out.push((format!("{o}.{m}"), 0));
        }
    }
    out
}

/// `torch.cuda.memory_stats()`: a new `OrderedDict` of the flattened statistics, leaving
/// the closure cycle behind.
pub(super) fn memory_stats(it: &mut Interpreter<'_>) -> R<Value> {
    // CPython frees a storage when its last tensor dies, not at the statement's end: one
    // dropped earlier in this statement (a handler's unwinding, a `del` in a compound
    // statement the VM runs) is no longer counted.
    it.release_dropped_storages(None);
    // The frame's cells (`result` and the nested function), then `result = []`, then the
    // function with its closure tuple: the cycle exists from here on.
    let result_cell = it.alloc(ObjKind::Cell(None));
    let walk_cell = it.alloc(ObjKind::Cell(None));
    let list = it.alloc(ObjKind::List(Vec::new()));
    set_cell(it, result_cell, Value::Obj(list));
    it.heap.incref(Value::Obj(result_cell));
    it.heap.incref(Value::Obj(walk_cell));
    let closure = it.alloc(ObjKind::Tuple(vec![
        Value::Obj(result_cell),
        Value::Obj(walk_cell),
    ]));
    let name = it.names.intern("_recurse_add_to_result");
    let function = it.alloc(ObjKind::Function(Function {
        // Never called: the model runs the walk natively.
        code: u32::MAX,
        name,
        closure: Some(closure),
        defaults: Vec::new(),
        dict: None,
    }));
    set_cell(it, walk_cell, Value::Obj(function));
    // `torch._C._cuda_memoryStats(device)`: the nested dicts built in C++.
    let nested = nested_stats(it);
    // The walk appends one `(key, value)` tuple per leaf to `result`.
    let pairs = flattened(it);
    let mut sorted = pairs.clone();
    sorted.sort();
    for (key, v) in &pairs {
        let key = Value::Str(it.names.intern(key));
        let t = it.alloc(ObjKind::Tuple(vec![key, Value::Int(*v)]));
        if let ObjKind::List(items) = it.heap.kind_mut(list) {
            items.push(Value::Obj(t));
        }
    }
    // `collections.OrderedDict(result)` after `result.sort()`.
    let entries: Vec<(Value, Value)> = sorted
        .iter()
        .map(|(k, v)| (Value::Str(it.names.intern(k)), Value::Int(*v)))
        .collect();
    let odict = it.alloc(ObjKind::Dict(entries));
    // The frame ends: `stats` and the locals' cell references go.
    it.heap.decref_id(nested);
    it.heap.decref_id(result_cell);
    it.heap.decref_id(walk_cell);
    Ok(Value::Obj(odict))
}

/// One statistic of `memory_stats()` (the `OrderedDict` is created and dropped).
pub(super) fn memory_stat(it: &mut Interpreter<'_>, key: &str) -> R<Value> {
    let stats = memory_stats(it)?;
    let v = statistic(it, key);
    it.heap.decref(stats);
    Ok(Value::Int(v))
}

fn set_cell(it: &mut Interpreter<'_>, cell: ObjId, v: Value) {
    if let ObjKind::Cell(slot) = it.heap.kind_mut(cell) {
        *slot = Some(v);
    }
}

/// The 39 dicts of `_cuda_memoryStats`: each created empty and filled (ints only, so
/// untracked, but counted like every GC allocation).
fn nested_stats(it: &mut Interpreter<'_>) -> ObjId {
    let top = it.alloc(ObjKind::Dict(Vec::new()));
    let mut top_items = Vec::new();
    for c in COUNTERS {
        top_items.push((Value::Str(it.names.intern(c)), Value::Int(statistic(it, c))));
    }
    let stat_dict = |it: &mut Interpreter<'_>, prefix: &str| {
        let d = it.alloc(ObjKind::Dict(Vec::new()));
        let items: Vec<(Value, Value)> = METRICS
            .iter()
            .map(|m| {
                let v = statistic(it, &format!("{prefix}.{m}"));
                (Value::Str(it.names.intern(m)), Value::Int(v))
            })
            .collect();
        if let ObjKind::Dict(slot) = it.heap.kind_mut(d) {
            *slot = items;
        }
        d
    };
    for a in STAT_ARRAYS {
        let arr = it.alloc(ObjKind::Dict(Vec::new()));
        let mut arr_items = Vec::new();
        for p in POOLS {
            let d = stat_dict(it, &format!("{a}.{p}"));
            arr_items.push((Value::Str(it.names.intern(p)), Value::Obj(d)));
        }
        it.heap_dict_fill(arr, arr_items);
        top_items.push((Value::Str(it.names.intern(a)), Value::Obj(arr)));
    }
    for o in OVERSIZE {
        let d = stat_dict(it, o);
        top_items.push((Value::Str(it.names.intern(o)), Value::Obj(d)));
    }
    it.heap_dict_fill(top, top_items);
    top
}

impl Interpreter<'_> {
    /// Fills an empty dict with owned items (a dict holding dicts becomes tracked).
    fn heap_dict_fill(&mut self, dict: ObjId, items: Vec<(Value, Value)>) {
        for (k, v) in items {
            self.dict_set(dict, k, v);
        }
    }
}
