//! `nn.Unflatten(dim, unflattened_size)` and `Tensor.unflatten(dim, sizes)`.
//!
//! The module stores its two arguments as attributes (`torch/nn/modules/flatten.py`): the
//! size tuple or list is the object the caller passed, held by the module; no parameters,
//! no buffers, so its `state_dict()` is empty. Its constructor checks the sizes as
//! `_require_tuple_int` does (named dimensions, `dim` given as a string, are refused as
//! unsupported). Forward is `input.unflatten(self.dim, self.unflattened_size)`: ATen's
//! `unflatten` infers one `-1`, checks that the sizes multiply up to the dimension
//! (`handle_unflatten_exception`'s message) and returns a `view` (`ViewBackward0`, no bytes).

use super::interp::{Interpreter, R};
use super::natives::{Args, int_arg, norm_dim};
use super::torchlib::constructor_arg;
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl Interpreter<'_> {
    /// `nn.Unflatten(dim, unflattened_size)`.
    pub(super) fn construct_unflatten(
        &mut self,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let dim = constructor_arg(self, args, kwargs, 0, "dim");
        let sizes = constructor_arg(self, args, kwargs, 1, "unflattened_size");
        let (Some(dim), Some(sizes)) = (dim, sizes) else {
            return self.error(
                "TypeError: Unflatten.__init__() missing required positional arguments: 'dim' and 'unflattened_size'",
            );
        };
        match dim {
            Value::Int(_) | Value::Bool(_) => self.require_tuple_int(sizes)?,
            Value::Str(_) => return self.unsupported("nn.Unflatten over a named dimension"),
            _ => return self.error("TypeError: invalid argument type for dim parameter"),
        }
        self.heap.incref(sizes);
        self.new_torch_instance(
            super::torchlib::TorchClass::Unflatten,
            vec![("dim", dim), ("unflattened_size", sizes)],
        )
    }

    /// `Unflatten._require_tuple_int`.
    fn require_tuple_int(&self, sizes: Value) -> R<()> {
        let items = match sizes {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) | ObjKind::List(items) => Some(items.clone()),
                _ => None,
            },
            _ => None,
        };
        let Some(items) = items else {
            return self.error(format!(
                "TypeError: unflattened_size must be a tuple of ints, but found type {}",
                self.type_name_of(sizes)
            ));
        };
        for (idx, elem) in items.iter().enumerate() {
            if !matches!(elem, Value::Int(_) | Value::Bool(_)) {
                return self.error(format!(
                    "TypeError: unflattened_size must be tuple of ints, but found element of type {} at pos {idx}",
                    self.type_name_of(*elem)
                ));
            }
        }
        Ok(())
    }

    /// `Unflatten.forward(input)`.
    pub(super) fn unflatten_forward(&mut self, module: ObjId, args: &[Value]) -> R<Value> {
        let [x] = args else {
            return self.error("TypeError: forward() takes one input");
        };
        let (d, s) = (self.sym("dim"), self.sym("unflattened_size"));
        let dim = self.get_attr(Value::Obj(module), d)?;
        let sizes = self.get_attr(Value::Obj(module), s)?;
        let r = match *x {
            Value::Obj(id) if self.is_tensor(*x) => unflatten(self, id, dim, sizes),
            other => self.error(format!(
                "AttributeError: '{}' object has no attribute 'unflatten'",
                self.type_name_of(other)
            )),
        };
        self.heap.decref(dim);
        self.heap.decref(sizes);
        r
    }
}

/// `t.unflatten(dim, sizes)` (borrowed arguments).
pub(super) fn method(it: &mut Interpreter<'_>, id: ObjId, a: &Args) -> R<Value> {
    let dim = a.kw(it, "dim").or(a.pos.first().copied());
    let sizes = a.kw(it, "sizes").or(a.pos.get(1).copied());
    let (Some(dim), Some(sizes)) = (dim, sizes) else {
        return it.error("TypeError: unflatten() missing required arguments 'dim' and 'sizes'");
    };
    unflatten(it, id, dim, sizes)
}

/// ATen's `unflatten`: the new shape, checked, then a view.
fn unflatten(it: &mut Interpreter<'_>, id: ObjId, dim: Value, sizes: Value) -> R<Value> {
    let Some(t) = it.tensor_data(Value::Obj(id)) else {
        unreachable!("a tensor")
    };
    let d = norm_dim(it, int_arg(it, dim, "dim")?, t.shape.len())?;
    let sizes: Vec<i64> = match sizes {
        Value::Obj(s) => match it.heap.kind(s) {
            ObjKind::Tuple(items) | ObjKind::List(items) => items.clone(),
            ObjKind::Size(dims) => dims.iter().map(|&d| Value::Int(d)).collect(),
            _ => return it.error("TypeError: unflatten(): argument 'sizes' must be tuple of ints"),
        },
        _ => return it.error("TypeError: unflatten(): argument 'sizes' must be tuple of ints"),
    }
    .into_iter()
    .map(|v| int_arg(it, v, "sizes"))
    .collect::<R<_>>()?;
    if sizes.is_empty() {
        return it.error("RuntimeError: unflatten: sizes must be non-empty");
    }
    let size = t.shape.get(d).copied().unwrap_or(1);
    let Some(inferred) = infer_size(&sizes, size) else {
        let listed: Vec<String> = sizes.iter().map(i64::to_string).collect();
        return it.error(format!(
            "RuntimeError: unflatten: Provided sizes [{}] don't multiply up to the size of dim {d} ({size}) in the input tensor",
            listed.join(", ")
        ));
    };
    let mut shape = t.shape.clone();
    shape.splice(d..(d + 1).min(shape.len()), inferred);
    let view = it.sym("view");
    let dims = shape.into_iter().map(Value::Int).collect();
    super::natives::call_method(it, Value::Obj(id), view, dims, Vec::new())
}

/// `at::infer_size`: one `-1` takes what the others leave; `None` when they do not
/// multiply up to `numel` (or more than one `-1`, or a negative size).
fn infer_size(sizes: &[i64], numel: i64) -> Option<Vec<i64>> {
    let mut product: i64 = 1;
    let mut infer_at = None;
    for (i, &s) in sizes.iter().enumerate() {
        match s {
            -1 if infer_at.is_none() => infer_at = Some(i),
            s if s >= 0 => product = product.checked_mul(s)?,
            _ => return None,
        }
    }
    let mut out = sizes.to_vec();
    match infer_at {
        Some(i) if product != 0 && numel % product == 0 => out[i] = numel / product,
        None if product == numel => {}
        _ => return None,
    }
    Some(out)
}
