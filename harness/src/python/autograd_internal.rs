//! Tensors that live only inside an op's C++ code (a recurrent cell's gates, the
//! log-softmax inside `cross_entropy`): a storage reference and a `grad_fn` reference, no
//! Python object until exposed.

use super::interp::{Interpreter, R};
use crate::heap::{ObjId, Value};
use crate::torch::{Category, DeviceKind, Dtype, InputEdge, Saved, StorageId};

/// A tensor that lives only inside an op's C++ code and never gets a Python object (the
/// gates of a recurrent cell, the log-softmax inside `cross_entropy`). It owns one
/// storage reference and one reference to its `grad_fn`, if any.
#[derive(Debug, Clone)]
pub(super) struct Internal {
    pub storage: StorageId,
    pub shape: Vec<i64>,
    pub dtype: Dtype,
    pub device: DeviceKind,
    pub node: Option<ObjId>,
    /// Which output of `node` it is (PyTorch's `output_nr`).
    pub output_nr: u32,
}

impl Internal {
    /// A new storage of `shape`.
    pub(super) fn new(
        it: &mut Interpreter<'_>,
        shape: Vec<i64>,
        dtype: Dtype,
        device: DeviceKind,
        category: Category,
    ) -> R<Internal> {
        let storage = it.new_storage(&shape, dtype, device, category)?;
        Ok(Internal {
            storage,
            shape,
            dtype,
            device,
            node: None,
            output_nr: 0,
        })
    }

    /// The C++ side of a Python tensor: its storage and the edge a gradient takes to it.
    pub(super) fn of(it: &mut Interpreter<'_>, v: Value) -> Option<Internal> {
        let t = super::autograd::tensor(it, v)?.clone();
        let edge = super::autograd::edge_to(it, v);
        let output_nr = edge.as_ref().map_or(0, |e| e.input_nr);
        let node = edge.and_then(|e| e.node);
        it.storages.add_ref(t.storage);
        Some(Internal {
            storage: t.storage,
            shape: t.shape,
            dtype: t.dtype,
            device: t.device,
            node,
            output_nr,
        })
    }

    pub(super) fn requires_grad(&self) -> bool {
        self.node.is_some()
    }

    /// An edge to this tensor's `grad_fn` (a new node reference).
    pub(super) fn edge(&self, it: &mut Interpreter<'_>) -> InputEdge {
        if let Some(n) = self.node {
            it.heap.incref(Value::Obj(n));
        }
        InputEdge {
            node: self.node,
            input_nr: self.output_nr,
            shape: self.shape.clone(),
            dtype: self.dtype,
            device: self.device,
        }
    }

    /// Its data as a saved tensor (one more storage reference).
    pub(super) fn saved(&self, it: &mut Interpreter<'_>) -> Saved {
        it.storages.add_ref(self.storage);
        Saved::Data(self.storage)
    }

    /// Drops its references.
    pub(super) fn release(self, it: &mut Interpreter<'_>) {
        it.heap.dropped_storage_refs.push(self.storage);
        if let Some(n) = self.node {
            it.heap.decref_id(n);
        }
    }

    /// Gives it a Python object (`shape` may differ for a view of the same bytes), sets
    /// its `grad_fn`, and drops the internal references.
    pub(super) fn expose(self, it: &mut Interpreter<'_>, shape: Vec<i64>) -> R<Value> {
        let v = it.new_tensor_as(
            shape,
            self.dtype,
            self.device,
            Some((self.storage, None)),
            Category::Activation,
        )?;
        if let (Some(n), Value::Obj(out)) = (self.node, v) {
            it.heap.incref(Value::Obj(n));
            super::autograd::set_history_at(it, out, n, self.output_nr);
        }
        self.release(it);
        Ok(v)
    }
}
