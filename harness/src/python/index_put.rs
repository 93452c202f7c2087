//! `t[mask] = v` and `t[idx] = v`: `THPVariable_setitem` hands an advanced index to
//! `index_put_` on the tensor itself (`dispatch_index_put_`), so the write records
//! `IndexPutBackward0`, which keeps the index tensors (`indices_`) and only the sizes and
//! options of the values. No bytes are allocated (the values are written into `t`); the
//! version counter moves and `t`'s history is rebased onto the node, as for any in-place op
//! (through `CopySlices` when `t` is itself a view).
//!
//! Approximation: a Python number as the value is not materialised (PyTorch makes a 0-dim
//! tensor on `t`'s device for the call, 512 bytes on CUDA, freed at once).

use super::autograd::{self, Save};
use super::inplace;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, Value};

/// `target.index_put_(indices, value)` (all borrowed).
pub(super) fn index_put(
    it: &mut Interpreter<'_>,
    target: ObjId,
    value: Value,
    indices: &[Value],
) -> R<()> {
    let Some(t) = it.tensor_data(Value::Obj(target)) else {
        return Ok(());
    };
    // The node's operands: self, the values (when a tensor), then the index tensors.
    let mut operands = vec![Value::Obj(target)];
    if it.is_tensor(value) {
        operands.push(value);
    }
    let first_index = operands.len();
    operands.extend_from_slice(indices);
    let records = it.grad_enabled && operands.iter().any(|&v| autograd::requires_grad(it, v));
    if records {
        inplace::check_not_leaf(it, &t)?;
    }
    it.storages.bump_version(t.storage);
    if !records {
        return Ok(());
    }
    let saves: Vec<Save> = (first_index..operands.len()).map(Save::Input).collect();
    let row = autograd::row("index_put_");
    let node = autograd::build_node(it, row.node, row.flow, &operands, &saves, Some(target));
    inplace::rebase(it, target, &t, node);
    Ok(())
}
