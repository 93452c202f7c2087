//! Tensor methods that cut a tensor into pieces or read it out: `chunk`, `split`, `repeat`,
//! `tolist`, and `float(t)` / `int(t)`.
//!
//! - `chunk`/`split` return views of the same storage (no bytes) that share **one** node
//!   (`SplitBackward0`, `SplitWithSizesBackward0`), which keeps sizes only; its backward
//!   builds one gradient of the whole input from the pieces' gradients.
//! - `repeat` allocates the repeated tensor; `RepeatBackward0` keeps sizes only.
//! - `tolist()` and `float(t)`/`int(t)` copy values to the host (a device sync): no device
//!   bytes. `tolist()` builds the nested lists CPython builds (tracked by the collector, so
//!   they move its schedule); the numbers are placeholders, as with `item()`.

use super::autograd;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Dtype, GradFlow};

/// The tensor methods of this module.
pub(super) fn is_piece_method(method: &str) -> bool {
    matches!(method, "chunk" | "split" | "repeat" | "tolist")
}

/// `t.chunk(n, dim)`, `t.split(size_or_sizes, dim)`, `t.repeat(*sizes)`, `t.tolist()`.
/// `dim` is the `dim=` keyword if given.
pub(super) fn call(
    it: &mut Interpreter<'_>,
    id: ObjId,
    method: &str,
    pos: &[Value],
    dim: Option<Value>,
) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor method's receiver")
    };
    match method {
        "chunk" => {
            let chunks = match pos.first() {
                Some(&Value::Int(n)) => n,
                _ => {
                    return it
                        .error("TypeError: chunk() missing required argument 'chunks' (pos 1)");
                }
            };
            if chunks <= 0 {
                return it.error(format!(
                    "RuntimeError: chunk expects `chunks` to be greater than 0, got: {chunks}"
                ));
            }
            let d = dim_arg(it, dim.or(pos.get(1).copied()), t.shape.len())?;
            let size = t.shape[d];
            // chunk is split by ceil(size / chunks): possibly fewer than `chunks` pieces.
            let each = (size + chunks - 1) / chunks;
            pieces(
                it,
                id,
                d,
                &even_sizes(size, each.max(1)),
                super::autograd::row("split").node,
            )
        }
        "split" => {
            let d = dim_arg(it, dim.or(pos.get(1).copied()), t.shape.len())?;
            let size = t.shape[d];
            match pos.first() {
                Some(&Value::Int(each)) => {
                    if each < 0 || (each == 0 && size != 0) {
                        return it.error(format!(
                            "RuntimeError: split_size can only be 0 if dimension size is 0, but got dimension size of {size}"
                        ));
                    }
                    pieces(
                        it,
                        id,
                        d,
                        &even_sizes(size, each.max(1)),
                        super::autograd::row("split").node,
                    )
                }
                Some(&list @ Value::Obj(_)) => {
                    let sizes = int_list(it, list)?;
                    if sizes.iter().any(|&s| s < 0) || sizes.iter().sum::<i64>() != size {
                        return it.error(format!(
                            "RuntimeError: split_with_sizes expects split_sizes to sum exactly to {size} (input tensor's size at dimension {d}), but got split_sizes={sizes:?}"
                        ));
                    }
                    pieces(
                        it,
                        id,
                        d,
                        &sizes,
                        super::autograd::row("split_with_sizes").node,
                    )
                }
                _ => it.error(
                    "TypeError: split() missing required argument 'split_size_or_sections' (pos 1)",
                ),
            }
        }
        "repeat" => repeat(it, id, pos),
        _ => {
            if !pos.is_empty() {
                return it.error("TypeError: tolist() takes no arguments");
            }
            it.budget_items(t.numel())?;
            let leaf = match t.dtype {
                Dtype::Float64 | Dtype::Float32 | Dtype::Float16 | Dtype::BFloat16 => {
                    Value::Float(0.0)
                }
                Dtype::Bool => Value::Bool(false),
                _ => Value::Int(0),
            };
            Ok(nested_list(it, &t.shape, leaf))
        }
    }
}

/// `float(t)` / `int(t)`: one element copied to the host; no device bytes.
pub(super) fn to_number(it: &mut Interpreter<'_>, id: ObjId, as_int: bool) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("checked by the caller")
    };
    let n = t.numel();
    if n != 1 {
        return it.error(format!(
            "RuntimeError: a Tensor with {n} elements cannot be converted to Scalar"
        ));
    }
    Ok(if as_int {
        Value::Int(0)
    } else {
        Value::Float(0.0)
    })
}

/// Sizes of `each` along a dimension of `size`, the last one shorter if it does not divide.
fn even_sizes(size: i64, each: i64) -> Vec<i64> {
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < size {
        sizes.push(each.min(size - start));
        start += each;
    }
    if sizes.is_empty() {
        sizes.push(0);
    }
    sizes
}

fn dim_arg(it: &Interpreter<'_>, dim: Option<Value>, ndim: usize) -> R<usize> {
    let d = match dim {
        None => 0,
        Some(Value::Int(d)) => d,
        Some(_) => return it.error("TypeError: dim must be an integer"),
    };
    let n = ndim as i64;
    let normalised = if d < 0 { d + n } else { d };
    if ndim == 0 || normalised < 0 || normalised >= n {
        return it.error(format!(
            "IndexError: Dimension out of range (expected to be in range of [{}, {}], but got {d})",
            -n.max(1),
            n.max(1) - 1
        ));
    }
    Ok(normalised as usize)
}

fn int_list(it: &Interpreter<'_>, v: Value) -> R<Vec<i64>> {
    let items = match v {
        Value::Obj(id) => match it.heap.kind(id) {
            ObjKind::List(items) | ObjKind::Tuple(items) => items.clone(),
            _ => {
                return it
                    .error("TypeError: split_size_or_sections must be an int or a list of ints");
            }
        },
        _ => return it.error("TypeError: split_size_or_sections must be an int or a list of ints"),
    };
    items
        .into_iter()
        .map(|v| match v {
            Value::Int(i) => Ok(i),
            _ => it.error("TypeError: split_size_or_sections must be an int or a list of ints"),
        })
        .collect()
}

/// Views of `id` along dimension `d` with `sizes`, returned as a tuple; they share one node.
fn pieces(
    it: &mut Interpreter<'_>,
    id: ObjId,
    d: usize,
    sizes: &[i64],
    node_name: &'static str,
) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!()
    };
    let base = t.base.unwrap_or(id);
    let recording = it.grad_enabled && t.requires_grad;
    let node = if recording {
        Some(autograd::build_node(
            it,
            node_name,
            GradFlow::Compute,
            &[Value::Obj(id)],
            &[],
            None,
        ))
    } else {
        None
    };
    // A piece along the first dimension of a contiguous tensor is contiguous; along another
    // dimension it is strided.
    let leading_ones = t.shape[..d].iter().all(|&s| s == 1);
    let mut out = Vec::with_capacity(sizes.len());
    for &size in sizes {
        let mut shape = t.shape.clone();
        shape[d] = size;
        let piece = it.new_tensor(shape, t.dtype, t.device, Some((t.storage, Some(base))))?;
        if let Value::Obj(p) = piece {
            if let ObjKind::Tensor(pt) = it.heap.kind_mut(p) {
                pt.contiguous = t.contiguous && (leading_ones || sizes.len() == 1);
            }
            if let Some(n) = node {
                it.heap.incref(Value::Obj(n));
                autograd::set_history(it, p, n);
            }
        }
        out.push(piece);
    }
    if let Some(n) = node {
        it.heap.decref_id(n);
    }
    Ok(Value::Obj(it.alloc(ObjKind::Tuple(out))))
}

/// `t.repeat(*sizes)`: a new tensor; `RepeatBackward0` keeps sizes only.
fn repeat(it: &mut Interpreter<'_>, id: ObjId, pos: &[Value]) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!()
    };
    let repeats: Vec<i64> = match pos {
        [single @ Value::Obj(_)] => int_list(it, *single)?,
        many => many
            .iter()
            .map(|v| match v {
                Value::Int(i) => Ok(*i),
                _ => it.error("TypeError: repeat(): argument 'repeats' must be a tuple of ints"),
            })
            .collect::<R<Vec<i64>>>()?,
    };
    if repeats.len() < t.shape.len() {
        return it.error(
            "RuntimeError: Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
        );
    }
    if let Some(r) = repeats.iter().find(|&&r| r < 0) {
        return it.error(format!(
            "RuntimeError: Trying to create tensor with negative dimension {r}: {repeats:?}"
        ));
    }
    // The tensor's shape is right-aligned against the repeats; the extra leading dims are 1.
    let padded: Vec<i64> = std::iter::repeat_n(1, repeats.len() - t.shape.len())
        .chain(t.shape.iter().copied())
        .collect();
    let mut shape = Vec::with_capacity(repeats.len());
    for (s, r) in padded.iter().zip(&repeats) {
        match s.checked_mul(*r) {
            Some(v) => shape.push(v),
            None => {
                return it.error("RuntimeError: Storage size calculation overflowed with sizes");
            }
        }
    }
    let out = super::natives::op_output(it, shape, t.dtype, t.device, &[Value::Obj(id)])?;
    let saves = crate::torch::op_rule("repeat").map_or(&[][..], |r| r.saves);
    autograd::record(
        it,
        out,
        super::autograd::row("repeat").node,
        GradFlow::Compute,
        &[Value::Obj(id)],
        saves,
    );
    Ok(out)
}

/// Nested lists of `leaf` with `shape` (a 0-d tensor gives the number itself).
fn nested_list(it: &mut Interpreter<'_>, shape: &[i64], leaf: Value) -> Value {
    match shape.split_first() {
        None => leaf,
        Some((&n, rest)) => {
            let items: Vec<Value> = (0..n.max(0)).map(|_| nested_list(it, rest, leaf)).collect();
            Value::Obj(it.alloc(ObjKind::List(items)))
        }
    }
}
