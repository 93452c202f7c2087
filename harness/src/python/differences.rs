//! `torch.diff` / `Tensor.diff` as ATen runs it (`diff_helper` in
//! `aten/src/ATen/native/ReduceOps.cpp`): a composite of existing rows, no node of its own.
//!
//! Each of the `n` rounds narrows the running result twice along `dim` (`narrow(1, len)`
//! and `narrow(0, len)`: two `SliceBackward0` views, no bytes) and subtracts them (`-`:
//! `SubBackward0`, which saves nothing), `len` shrinking by one per round; a bool input
//! takes `logical_xor` instead (no gradient). So one round allocates one result of the
//! narrowed shape; the previous round's result dies with its slices (nothing saved keeps
//! it), and at most two results are live at once. `n` is clamped to the size of `dim`.
//!
//! Not modelled (refused): `prepend=`/`append=` (a `cat` first) and `n=0`
//! (`zeros_like` + `copy_`).

use super::interp::{Interpreter, R};
use super::natives::{Args, norm_dim, op_output, tensor_binary};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::Dtype;
use ruff_python_ast::Operator;

/// `torch.diff(input, n=1, dim=-1, prepend=None, append=None)`.
pub(super) fn call(it: &mut Interpreter<'_>, a: &Args) -> R<Value> {
    let (input, rest) = match a.kw(it, "input") {
        Some(v) => (v, &a.pos[..]),
        None => match a.pos.split_first() {
            Some((v, rest)) => (*v, rest),
            None => {
                return it
                    .error("TypeError: diff() missing 1 required positional argument: 'input'");
            }
        },
    };
    if !it.is_tensor(input) {
        return it.error(format!(
            "TypeError: diff(): argument 'input' (position 1) must be Tensor, not {}",
            it.type_name_of(input)
        ));
    }
    run(it, input, rest, a)
}

/// `Tensor.diff(n=1, dim=-1, prepend=None, append=None)`.
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    run(it, Value::Obj(id), &a.pos, a)
}

fn run(it: &mut Interpreter<'_>, x: Value, p: &[Value], a: &Args) -> R<Value> {
    let arg = |it: &Interpreter<'_>, i: usize, name: &str| a.kw(it, name).or(p.get(i).copied());
    let n = match arg(it, 0, "n") {
        None => 1,
        Some(Value::Int(n)) => n,
        Some(v) => {
            return it.error(format!(
                "TypeError: diff(): argument 'n' must be int, not {}",
                it.type_name_of(v)
            ));
        }
    };
    let dim = match arg(it, 1, "dim") {
        None => -1,
        Some(Value::Int(d)) => d,
        Some(v) => {
            return it.error(format!(
                "TypeError: diff(): argument 'dim' must be int, not {}",
                it.type_name_of(v)
            ));
        }
    };
    if p.len() > 2 && p[2..].iter().any(|v| !matches!(v, Value::None)) {
        return it.unsupported(
            "torch.diff with prepend/append (the `cat` that precedes the differences)",
        );
    }
    let t = it.tensor_data(x).expect("checked by the caller");
    if t.shape.is_empty() {
        return it.error("RuntimeError: diff expects input to be at least one-dimensional");
    }
    if n < 0 {
        return it.error(format!(
            "RuntimeError: order must be non-negative but got {n}"
        ));
    }
    if n == 0 {
        return it.unsupported("torch.diff with n=0 (its zeros_like + copy_)");
    }
    let d = norm_dim(it, dim, t.shape.len())?;
    let size = t.shape[d];
    if size == 0 {
        return it.error("RuntimeError: narrow(): length must be non-negative.");
    }
    let is_bool = t.dtype == Dtype::Bool;
    let rounds = n.min(size);
    it.heap.incref(x);
    let mut result = x;
    for round in 0..rounds {
        let len = size - 1 - round;
        let step = difference(it, result, d, len, is_bool);
        it.heap.decref(result);
        result = step?;
    }
    Ok(result)
}

/// One round: `narrow(x, d, 1, len) - narrow(x, d, 0, len)` (or their `logical_xor`).
fn difference(it: &mut Interpreter<'_>, x: Value, d: usize, len: i64, is_bool: bool) -> R<Value> {
    let hi = narrow(it, x, d, len)?;
    let lo = match narrow(it, x, d, len) {
        Ok(v) => v,
        Err(e) => {
            it.heap.decref(hi);
            return Err(e);
        }
    };
    let out = if is_bool {
        let t = it.tensor_data(hi).expect("a view");
        op_output(it, t.shape, Dtype::Bool, t.device, &[])
    } else {
        tensor_binary(it, Operator::Sub, hi, lo, false)
    };
    it.heap.decref(hi);
    it.heap.decref(lo);
    out
}

/// `narrow(x, d, start, len)`: `slice` along `d`, a view (`SliceBackward0`). It stays
/// row-major only when every dim before `d` has size 1.
fn narrow(it: &mut Interpreter<'_>, x: Value, d: usize, len: i64) -> R<Value> {
    let Value::Obj(id) = x else {
        unreachable!("a tensor")
    };
    let t = it.tensor_data(x).expect("a tensor");
    let mut shape = t.shape.clone();
    shape[d] = len;
    let contiguous = t.contiguous && t.shape[..d].iter().all(|&s| s == 1);
    let v = super::natives::view_by(it, id, shape, "slice")?;
    if let Value::Obj(vid) = v
        && let ObjKind::Tensor(vt) = it.heap.kind_mut(vid)
    {
        vt.contiguous = contiguous;
    }
    Ok(v)
}
