//! `torch.return_types.*`: the named tuples that ops with several results return
//! (`x.max(dim)` → `torch.return_types.max(values=..., indices=...)`).
//!
//! PyTorch's generated bindings make them with `PyStructSequence_New` and fill the items in
//! C++ (`torch/csrc/autograd/utils/wrap_outputs.h`). That allocates one GC-heap object
//! (counted towards generation 0) which is never tracked: `PyStructSequence_New` does not
//! track, unlike the Python-level constructor (measured with CPython 3.8-3.13 on
//! `time.localtime()`, made the same way: `gc.is_tracked` is false). It is a tuple subclass,
//! so `isinstance(r, tuple)`, indexing, slicing (a plain tuple), `len` and unpacking work;
//! its `repr` is PyTorch's `returned_structseq_repr` (one `field=repr` per line).
//!
//! Unpacking (`values, idx = x.max(1)`) is not the exact-tuple fast path of
//! `UNPACK_SEQUENCE`: CPython iterates, so a `tuple_iterator` (a tracked GC object) lives
//! for the duration of the unpacking, and the struct sequence dies after it, leaving the two
//! tensors to the names.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, StructSeqType, Sym, Value, WrapperKind};

pub(super) static MAX: StructSeqType = StructSeqType {
    name: "torch.return_types.max",
    fields: &["values", "indices"],
};
pub(super) static MIN: StructSeqType = StructSeqType {
    name: "torch.return_types.min",
    fields: &["values", "indices"],
};
pub(super) static SORT: StructSeqType = StructSeqType {
    name: "torch.return_types.sort",
    fields: &["values", "indices"],
};
pub(super) static TOPK: StructSeqType = StructSeqType {
    name: "torch.return_types.topk",
    fields: &["values", "indices"],
};

/// A new struct sequence owning `items` (their references move into it).
pub(super) fn new(
    it: &mut Interpreter<'_>,
    ty: &'static StructSeqType,
    items: Vec<Value>,
) -> Value {
    debug_assert_eq!(items.len(), ty.fields.len());
    let id = it.alloc(ObjKind::StructSeq { ty, items });
    it.heap.untrack(id);
    Value::Obj(id)
}

/// `r.values`, `r.indices` (new reference).
pub(super) fn field(it: &mut Interpreter<'_>, id: ObjId, name: Sym) -> R<Value> {
    let ObjKind::StructSeq { ty, items } = it.heap.kind(id) else {
        unreachable!("a struct sequence receiver")
    };
    let wanted = it.names.name(name);
    match ty.fields.iter().position(|f| *f == wanted) {
        Some(i) => {
            let v = items[i];
            it.heap.incref(v);
            Ok(v)
        }
        None => {
            let t = ty.name;
            it.error(format!(
                "AttributeError: '{t}' object has no attribute '{wanted}'"
            ))
        }
    }
}

/// `returned_structseq_repr`: `name(\nfield=repr,\nfield=repr)`.
pub(super) fn repr(
    ty: &StructSeqType,
    items: &[Value],
    mut item_repr: impl FnMut(Value) -> String,
) -> String {
    let fields: Vec<String> = ty
        .fields
        .iter()
        .zip(items)
        .map(|(f, v)| format!("{f}={}", item_repr(*v)))
        .collect();
    if ty.name.starts_with("torch.") {
        format!("{}(\n{})", ty.name, fields.join(",\n"))
    } else {
        // CPython's `structseq_repr` (`sys.version_info(major=3, ...)`).
        format!("{}({})", ty.name, fields.join(", "))
    }
}

/// The `tuple_iterator` that `UNPACK_SEQUENCE` makes for a tuple subclass: allocated (it
/// may trigger a collection) and freed once the items are out.
pub(super) fn unpack_iterator(it: &mut Interpreter<'_>, value: Value) {
    let Value::Obj(id) = value else { return };
    if !matches!(it.heap.kind(id), ObjKind::StructSeq { .. }) {
        return;
    }
    it.heap.incref(value);
    let iterator = it.alloc(ObjKind::Wrapper(
        WrapperKind::SeqIter,
        vec![value, Value::Int(0)],
    ));
    it.heap.decref(Value::Obj(iterator));
}
