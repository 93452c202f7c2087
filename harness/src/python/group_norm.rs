//! `F.group_norm` and `nn.GroupNorm`.
//!
//! `torch.group_norm` (`aten/src/ATen/native/group_norm.cpp`) checks that the channels
//! divide into the groups and runs `native_group_norm`, which allocates the output like the
//! input, then `mean` and `rstd` of shape `[N, groups]` in the input's dtype (float32 when
//! a half/bfloat16 input meets float32 parameters, `param_scalar_type`). Its node,
//! `NativeGroupNormBackward0`, saves the input, the weight and both statistics; without a
//! node the statistics are freed at once. The function is on autocast's float32 list.
//! `nn.GroupNorm(num_groups, num_channels, eps, affine)` holds a `[C]` weight and bias as
//! parameters when `affine` (as `LayerNorm` does).

use super::amp::CastPolicy;
use super::autograd;
use super::interp::{Interpreter, R};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, Sym, Value};
use crate::torch::Dtype;

impl Interpreter<'_> {
    /// `nn.GroupNorm(num_groups, num_channels, eps=1e-5, affine=True, device, dtype)`.
    pub(super) fn construct_group_norm(
        &mut self,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let (Some(Value::Int(groups)), Some(Value::Int(channels))) =
            (arg(self, 0, "num_groups"), arg(self, 1, "num_channels"))
        else {
            return self.error("TypeError: GroupNorm(num_groups, num_channels) needs two integers");
        };
        if groups <= 0 || channels % groups != 0 {
            return self.error("ValueError: num_channels must be divisible by num_groups");
        }
        let affine = match arg(self, 3, "affine") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let (device, dtype) = self.factory_kwargs(kwargs);
        let (w, b) = if affine {
            (
                self.new_parameter(vec![channels], dtype, device)?,
                self.new_parameter(vec![channels], dtype, device)?,
            )
        } else {
            (Value::None, Value::None)
        };
        let eps = arg(self, 2, "eps").unwrap_or(Value::Float(1e-5));
        self.new_torch_instance(
            TorchClass::GroupNorm,
            vec![
                ("num_groups", Value::Int(groups)),
                ("num_channels", Value::Int(channels)),
                ("eps", eps),
                ("affine", Value::Bool(affine)),
                ("weight", w),
                ("bias", b),
            ],
        )
    }

    /// `GroupNorm.forward`: `F.group_norm(input, num_groups, weight, bias, eps)`.
    pub(super) fn group_norm_forward(&mut self, module: ObjId, args: &[Value]) -> R<Value> {
        let [x] = args else {
            return self.error("TypeError: GroupNorm expects one tensor");
        };
        let mut held = Vec::new();
        for name in ["num_groups", "weight", "bias"] {
            let s = self.sym(name);
            match self.get_attr(Value::Obj(module), s) {
                Ok(v) => held.push(v),
                Err(e) => {
                    self.heap.decref_all(held);
                    return Err(e);
                }
            }
        }
        let r = match held[0] {
            Value::Int(groups) => self.group_norm(*x, groups, held[1], held[2]),
            _ => self.error("TypeError: num_groups must be an integer"),
        };
        self.heap.decref_all(held);
        r
    }

    /// `F.group_norm(input, num_groups, weight, bias)` under autocast's float32 list.
    pub(super) fn group_norm(
        &mut self,
        x: Value,
        groups: i64,
        weight: Value,
        bias: Value,
    ) -> R<Value> {
        let cast = self.autocast_inputs(&[x, weight, bias], CastPolicy::Float32)?;
        let r = self.group_norm_as_given(cast[0], groups, cast[1], cast[2]);
        self.heap.decref_all(cast);
        r
    }

    fn group_norm_as_given(
        &mut self,
        x: Value,
        groups: i64,
        weight: Value,
        bias: Value,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error("TypeError: group_norm(): argument 'input' must be Tensor");
        };
        if t.shape.len() < 2 {
            return self.error(format!(
                "RuntimeError: Expected at least 2 dimensions for input tensor but received {}",
                t.shape.len()
            ));
        }
        let (n, c) = (t.shape[0], t.shape[1]);
        if groups <= 0 || c % groups != 0 {
            let dims: Vec<String> = t.shape.iter().map(i64::to_string).collect();
            return self.error(format!(
                "RuntimeError: Expected number of channels in input to be divisible by num_groups, but got input of shape [{}] and num_groups={groups}",
                dims.join(", ")
            ));
        }
        for (name, v) in [("weight", weight), ("bias", bias)] {
            if let Some(p) = self.tensor_data(v)
                && p.numel() != c as u64
            {
                return self.error(format!(
                    "RuntimeError: Expected {name} to be a vector of size equal to the number of channels in input, but got {name} of shape [{}] and input of shape [{}]",
                    p.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(", "),
                    t.shape.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
                ));
            }
        }
        // `param_scalar_type`: float32 when a reduced-precision input meets float32 params.
        let mixed = matches!(t.dtype, Dtype::Float16 | Dtype::BFloat16)
            && self
                .tensor_data(weight)
                .is_some_and(|w| w.dtype == Dtype::Float32);
        let stat_dtype = if mixed { Dtype::Float32 } else { t.dtype };
        let operands = [x, weight, bias];
        let category = self.output_category(&operands);
        let out = self.new_tensor_as(t.shape.clone(), t.dtype, t.device, None, category)?;
        let mut stats = Vec::new();
        for _ in 0..2 {
            stats.push(self.new_storage(&[n, groups], stat_dtype, t.device, category)?);
        }
        let recorded =
            self.grad_enabled && operands.iter().any(|&v| autograd::requires_grad(self, v));
        let Value::Obj(out_id) = out else {
            self.heap.dropped_storage_refs.extend(stats);
            return Ok(out);
        };
        if !recorded {
            self.heap.dropped_storage_refs.extend(stats);
            return Ok(out);
        }
        // input, weight (when given), result1 (mean), result2 (rstd): the table's row.
        self.record_normalization("group_norm", out_id, &operands, &stats);
        self.heap.dropped_storage_refs.extend(stats);
        Ok(out)
    }
}
