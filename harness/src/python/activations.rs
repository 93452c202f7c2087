//! Activation functions and modules beyond `relu`/`leaky_relu`/`silu`/`gelu`: `F.elu`,
//! `F.hardtanh`, `F.relu6`, `F.mish`, `F.hardswish` (each with `inplace=`), and the modules
//! `nn.LeakyReLU`, `nn.SiLU`, `nn.ELU`, `nn.Hardtanh`, `nn.ReLU6`, `nn.GELU`, `nn.Tanh`,
//! `nn.Sigmoid`, `nn.Mish`, `nn.Hardswish`.
//!
//! What each node saves, from `derivatives.yaml` (rows in `torch::OP_RULES`):
//!
//! | op                    | node                 | saves |
//! |-----------------------|----------------------|-------|
//! | `elu`                 | `EluBackward0`       | `self` |
//! | `elu_` (own entry)    | `EluBackward1`       | the result (the written tensor: no new bytes) |
//! | `hardtanh`, `relu6`   | `HardtanhBackward0`  | `self` (`relu6` is ATen's `hardtanh(self, 0, 6)`) |
//! | `hardtanh_`, `relu6_` | `HardtanhBackward0`  | no entry of its own: `hardtanh`'s formula reads `self`, so a copy taken before the write |
//! | `mish`, `mish_`       | `MishBackward0`      | `self` (a copy before the write in place) |
//! | `hardswish`, `hardswish_` | `HardswishBackward0` | `self` (likewise) |
//!
//! A module holds its settings as attributes (as `torch/nn/modules/activation.py` does) and
//! its forward calls the function, in place when its `inplace` attribute is true.

use super::interp::{Interpreter, R};
use super::natives::{Args, Native, tensor_unary};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, Sym, Value};

/// The out-of-place op and the in-place method of an activation function.
fn ops_of(n: Native) -> (&'static str, &'static str) {
    match n {
        Native::FElu => ("elu", "elu_"),
        Native::FMish => ("mish", "mish_"),
        Native::FHardswish => ("hardswish", "hardswish_"),
        // hardtanh and relu6 (ATen's hardtanh(self, 0, 6)).
        _ => ("hardtanh", "hardtanh_"),
    }
}

/// `F.elu(input, alpha, inplace)`, `F.hardtanh(input, min_val, max_val, inplace)`,
/// `F.relu6(input, inplace)`, `F.mish(input, inplace)`, `F.hardswish(input, inplace)`.
pub(super) fn call(it: &mut Interpreter<'_>, n: Native, a: &Args) -> R<Value> {
    let inplace_at = match n {
        Native::FElu => 2,
        Native::FHardtanh => 3,
        _ => 1,
    };
    let inplace = match a.kw(it, "inplace").or(a.pos.get(inplace_at).copied()) {
        Some(v) => it.truth(v)?,
        None => false,
    };
    let input = a.kw(it, "input").or(a.pos.first().copied());
    let (op, method) = ops_of(n);
    activate(it, input.unwrap_or(Value::None), op, method, inplace)
}

/// Runs `op` on `input`, or `method` in place.
fn activate(
    it: &mut Interpreter<'_>,
    input: Value,
    op: &'static str,
    method: &'static str,
    inplace: bool,
) -> R<Value> {
    if inplace {
        return it.activation_in_place(input, method);
    }
    match input {
        Value::Obj(id) if it.is_tensor(input) => tensor_unary(it, id, op),
        _ => it.error(format!(
            "TypeError: {op}(): argument 'input' must be Tensor, not {}",
            it.type_name_of(input)
        )),
    }
}

/// A module class's settings: `(name, positional index, default)`; `inplace` among them
/// where PyTorch takes it.
fn settings(kind: TorchClass) -> &'static [(&'static str, usize, Setting)] {
    use Setting::*;
    match kind {
        TorchClass::LeakyRelu => &[("negative_slope", 0, Float(0.01)), ("inplace", 1, False)],
        TorchClass::Elu => &[("alpha", 0, Float(1.0)), ("inplace", 1, False)],
        TorchClass::Hardtanh => &[
            ("min_val", 0, Float(-1.0)),
            ("max_val", 1, Float(1.0)),
            ("inplace", 2, False),
        ],
        TorchClass::Gelu => &[("approximate", 0, NoneApprox)],
        TorchClass::Silu | TorchClass::Mish | TorchClass::Hardswish => &[("inplace", 0, False)],
        _ => &[],
    }
}

/// A setting's default value.
#[derive(Clone, Copy)]
enum Setting {
    Float(f64),
    False,
    /// `nn.GELU`'s `approximate='none'`.
    NoneApprox,
}

impl Interpreter<'_> {
    /// Constructs one of the activation modules of this file.
    pub(super) fn construct_activation(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        if kind == TorchClass::Relu6 {
            // `ReLU6(inplace)` is `Hardtanh(0.0, 6.0, inplace)`.
            let inplace = match constructor_arg(self, args, kwargs, 0, "inplace") {
                Some(v) => self.truth(v)?,
                None => false,
            };
            return self.new_torch_instance(
                kind,
                vec![
                    ("min_val", Value::Float(0.0)),
                    ("max_val", Value::Float(6.0)),
                    ("inplace", Value::Bool(inplace)),
                ],
            );
        }
        let mut attrs = Vec::new();
        for &(name, at, default) in settings(kind) {
            let given = constructor_arg(self, args, kwargs, at, name);
            let value = match (name, given, default) {
                ("inplace", Some(v), _) => Value::Bool(self.truth(v)?),
                (_, Some(v), _) => {
                    self.heap.incref(v);
                    v
                }
                (_, None, Setting::Float(f)) => Value::Float(f),
                (_, None, Setting::False) => Value::Bool(false),
                (_, None, Setting::NoneApprox) => Value::Str(self.names.intern("none")),
            };
            attrs.push((name, value));
        }
        self.new_torch_instance(kind, attrs)
    }

    /// An activation module's forward: its function, in place when `self.inplace`.
    pub(super) fn activation_forward(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        args: &[Value],
    ) -> R<Value> {
        let [x] = args else {
            return self.error("TypeError: forward() takes one input");
        };
        let (op, method) = match kind {
            TorchClass::LeakyRelu => ("leaky_relu", "leaky_relu_"),
            TorchClass::Silu => ("silu", "silu_"),
            TorchClass::Elu => ("elu", "elu_"),
            TorchClass::Hardtanh | TorchClass::Relu6 => ("hardtanh", "hardtanh_"),
            TorchClass::Mish => ("mish", "mish_"),
            TorchClass::Hardswish => ("hardswish", "hardswish_"),
            TorchClass::Tanh => ("tanh", "tanh_"),
            TorchClass::Sigmoid => ("sigmoid", "sigmoid_"),
            _ => ("gelu", "gelu_"),
        };
        let inplace = self.module_flag(module, "inplace")?;
        activate(self, *x, op, method, inplace)
    }
}
