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
        TorchClass::Softmax | TorchClass::LogSoftmax | TorchClass::Softmin => {
            &[("dim", 0, NoValue)]
        }
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
    /// `None` (the softmax modules' `dim`).
    NoValue,
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
                (_, None, Setting::NoValue) => Value::None,
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
        if matches!(
            kind,
            TorchClass::Softmax | TorchClass::LogSoftmax | TorchClass::Softmin
        ) {
            return self.softmax_module_forward(module, kind, *x);
        }
        if kind == TorchClass::Gelu {
            self.check_gelu_approximate(module)?;
        }
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

impl Interpreter<'_> {
    /// `nn.Softmax`/`nn.LogSoftmax`/`nn.Softmin` forward: `F.softmax(input, self.dim)` and
    /// friends. `F.softmin` is `(-input).softmax(dim)`: a negated copy (`NegBackward0`,
    /// nothing saved) freed once the softmax (saving its result) exists. With `dim=None`
    /// `_get_softmax_dim` picks 0 for 0-, 1- and 3-d inputs and 1 otherwise, warning that the
    /// implicit choice is deprecated.
    fn softmax_module_forward(&mut self, module: ObjId, kind: TorchClass, x: Value) -> R<Value> {
        let dim_name = self.sym("dim");
        let dim = self.get_attr(Value::Obj(module), dim_name)?;
        let r = self.softmax_family(kind, x, dim);
        self.heap.decref(dim);
        r
    }

    /// `F.softmax`/`F.log_softmax`/`F.softmin(x, dim)` as the softmax modules run them.
    fn softmax_family(&mut self, kind: TorchClass, x: Value, dim: Value) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error(format!(
                "TypeError: {}(): argument 'input' must be Tensor, not {}",
                softmax_op(kind),
                self.type_name_of(x)
            ));
        };
        let ndim = t.shape.len();
        let dim = match dim {
            Value::None => {
                let op = softmax_op(kind);
                self.recorder.approximation(format!(
                    "PyTorch warns: UserWarning: Implicit dimension choice for {op} has been \
                     deprecated. Change the call to include dim=X as an argument."
                ));
                if matches!(ndim, 0 | 1 | 3) { 0 } else { 1 }
            }
            v => super::natives::int_arg(self, v, "dim")?,
        };
        super::natives::norm_dim(self, dim, ndim)?;
        let Value::Obj(id) = x else {
            unreachable!("a tensor")
        };
        match kind {
            TorchClass::Softmin => {
                let negated = tensor_unary(self, id, "neg")?;
                let Value::Obj(n) = negated else {
                    unreachable!("a tensor")
                };
                let r = tensor_unary(self, n, "softmax");
                self.heap.decref(negated);
                r
            }
            _ => tensor_unary(self, id, softmax_op(kind)),
        }
    }

    /// ATen's `get_gelutype_enum`: `approximate` is `'none'` or `'tanh'`, checked when the
    /// module runs (its constructor stores anything).
    fn check_gelu_approximate(&mut self, module: ObjId) -> R<()> {
        let name = self.sym("approximate");
        let v = self.get_attr(Value::Obj(module), name)?;
        self.heap.decref(v);
        match v {
            Value::Str(s) if matches!(self.names.name(s), "none" | "tanh") => Ok(()),
            Value::Str(_) => {
                self.error("RuntimeError: approximate argument must be either none or tanh.")
            }
            other => self.error(format!(
                "TypeError: gelu(): argument 'approximate' must be str, not {}",
                self.type_name_of(other)
            )),
        }
    }
}

/// `F.softmin(input, dim=None)`: `(-input).softmax(dim)`.
pub(super) fn softmin(it: &mut Interpreter<'_>, a: &Args) -> R<Value> {
    let input = a.kw(it, "input").or(a.pos.first().copied());
    let dim = a.kw(it, "dim").or(a.pos.get(1).copied());
    it.softmax_family(
        TorchClass::Softmin,
        input.unwrap_or(Value::None),
        dim.unwrap_or(Value::None),
    )
}

/// The function a softmax-family module runs.
fn softmax_op(kind: TorchClass) -> &'static str {
    match kind {
        TorchClass::LogSoftmax => "log_softmax",
        TorchClass::Softmin => "softmin",
        _ => "softmax",
    }
}
