//! `nn.LSTMCell`, `nn.GRUCell` and `nn.RNNCell`: one step of a recurrent layer as a module.
//!
//! `torch/nn/modules/rnn.py`'s `RNNCellBase` registers `weight_ih` `[G*H, I]`, `weight_hh`
//! `[G*H, H]` and, with `bias=True`, `bias_ih` and `bias_hh` `[G*H]` (G gates: 4 for the
//! LSTM, 3 for the GRU, 1 for the plain RNN). Its forward makes a missing state with
//! `torch.zeros(batch, hidden_size)` (the LSTM uses that one tensor as both `h` and `c`)
//! and calls `_VF.lstm_cell` / `gru_cell` / `rnn_tanh_cell` / `rnn_relu_cell`. On CUDA
//! those run (`aten/src/ATen/native/RNN.cpp`) the same code as one step of `nn.LSTM`'s
//! per-step path: `input @ w_ih.t()` and `h @ w_hh.t()` (`MmBackward0` each) and the
//! fused cell (`ThnnFusedLstmCellBackward0`, saving both products, `c`, the biases, `c'`
//! and the workspace; the GRU's likewise without `c'`), or for the plain RNN
//! `act(linear_hh(h).add_(linear_ih(x)))`. So the step itself is `cell_step` of
//! `python/recurrent.rs`.
//!
//! An unbatched input (`[I]`) is run as a batch of one, as PyTorch does after
//! `unsqueeze(0)`; the result has the `[H]` shape (PyTorch's `squeeze(0)` view: the same
//! bytes, but its `grad_fn` there is `SqueezeBackward1`, here the cell's node).

use super::autograd::Internal;
use super::interp::{Interpreter, R};
use super::recurrent::CellKind;
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::Category;

const PARAMS: [&str; 4] = ["weight_ih", "weight_hh", "bias_ih", "bias_hh"];

impl Interpreter<'_> {
    /// `LSTMCell(input_size, hidden_size, bias=True)`, `GRUCell(...)` likewise,
    /// `RNNCell(input_size, hidden_size, bias=True, nonlinearity='tanh')`.
    pub(super) fn construct_recurrent_cell(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let size = |it: &Self, v: Option<Value>| match v {
            Some(Value::Int(i)) if i > 0 => Ok(i),
            _ => it.error("TypeError: a recurrent cell needs input_size and hidden_size > 0"),
        };
        let input_size = size(self, arg(self, 0, "input_size"))?;
        let hidden_size = size(self, arg(self, 1, "hidden_size"))?;
        let bias = match arg(self, 2, "bias") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let cell = match kind {
            TorchClass::LstmCell => CellKind::Lstm,
            TorchClass::GruCell => CellKind::Gru,
            _ => match arg(self, 3, "nonlinearity") {
                None => CellKind::RnnTanh,
                Some(Value::Str(s)) if self.names.name(s) == "tanh" => CellKind::RnnTanh,
                Some(Value::Str(s)) if self.names.name(s) == "relu" => CellKind::RnnRelu,
                Some(other) => {
                    let shown = self.display(other);
                    return self.error(format!("ValueError: Unknown nonlinearity: {shown}"));
                }
            },
        };
        let (device, dtype) = self.factory_kwargs(kwargs);
        let rows = cell.gates() * hidden_size;
        let mut attrs: Vec<(&str, Value)> = vec![
            ("input_size", Value::Int(input_size)),
            ("hidden_size", Value::Int(hidden_size)),
            ("bias", Value::Bool(bias)),
        ];
        if kind == TorchClass::RnnCell {
            let name = if cell == CellKind::RnnRelu {
                "relu"
            } else {
                "tanh"
            };
            attrs.push(("nonlinearity", Value::Str(self.names.intern(name))));
        }
        let shapes = [
            vec![rows, input_size],
            vec![rows, hidden_size],
            vec![rows],
            vec![rows],
        ];
        for (name, shape) in PARAMS.iter().zip(shapes).take(if bias { 4 } else { 2 }) {
            let p = self.new_parameter(shape, dtype, device)?;
            attrs.push((*name, p));
        }
        self.new_torch_instance(kind, attrs)
    }

    /// `cell(input, hx=None)`: `h'` (`(h', c')` for the LSTM cell).
    pub(super) fn recurrent_cell_forward(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        args: &[Value],
    ) -> R<Value> {
        let int = |it: &mut Self, name: &str| -> R<i64> {
            let s = it.names.intern(name);
            match it.get_attr(Value::Obj(module), s)? {
                Value::Int(i) => Ok(i),
                other => {
                    it.heap.decref(other);
                    it.error(format!("TypeError: {name} must be an integer"))
                }
            }
        };
        let (input_size, hidden) = (int(self, "input_size")?, int(self, "hidden_size")?);
        let cell = match kind {
            TorchClass::LstmCell => CellKind::Lstm,
            TorchClass::GruCell => CellKind::Gru,
            _ => self.rnn_nonlinearity(module)?,
        };
        let Some(&input) = args.first() else {
            return self
                .error("TypeError: forward() missing 1 required positional argument: 'input'");
        };
        let Some(x) = self.tensor_data(input) else {
            return self.error("TypeError: the input must be a tensor");
        };
        let (batch, batched) = match x.shape.as_slice() {
            [b, _] => (*b, true),
            [_] => (1, false),
            s => {
                let name = match kind {
                    TorchClass::LstmCell => "LSTMCell",
                    TorchClass::GruCell => "GRUCell",
                    _ => "RNNCell",
                };
                return self.error(format!(
                    "ValueError: {name}: Expected input to be 1D or 2D, got {}D instead",
                    s.len()
                ));
            }
        };
        if x.shape.last() != Some(&input_size) {
            return self.error(format!(
                "RuntimeError: input has inconsistent input_size: got {}, expected {input_size}",
                x.shape.last().copied().unwrap_or(0)
            ));
        }
        let hx = args.get(1).copied().unwrap_or(Value::None);
        let given = match (cell, hx) {
            (_, Value::None) => Vec::new(),
            (CellKind::Lstm, v) => self.iterable_items(v)?,
            (_, v) => vec![v],
        };
        let wanted = if cell == CellKind::Lstm { 2 } else { 1 };
        let state_shape = if batched {
            vec![batch, hidden]
        } else {
            vec![hidden]
        };
        if !given.is_empty() && given.len() != wanted {
            return self.error("TypeError: LSTMCell expects hx as a tuple (h_0, c_0)");
        }
        for (i, &v) in given.iter().enumerate() {
            match self.tensor_data(v) {
                Some(t) if t.shape == state_shape => {}
                Some(t) => {
                    return self.error(format!(
                        "RuntimeError: hidden{i} has inconsistent size: got {:?}, expected {:?}",
                        t.shape, state_shape
                    ));
                }
                None => return self.error("TypeError: the hidden state must be a tensor"),
            }
        }
        let mut params = Vec::new();
        for name in PARAMS {
            let s = self.names.intern(name);
            if !self.attr_values(module).iter().any(|(k, _)| *k == s) {
                params.push(None);
                continue;
            }
            let v = self.get_attr(Value::Obj(module), s)?;
            params.push(Internal::of(self, v));
            self.heap.decref(v);
        }
        let any_grad = params.iter().flatten().any(Internal::requires_grad)
            || given
                .iter()
                .chain(std::iter::once(&input))
                .any(|&v| super::autograd::requires_grad(self, v));
        let recording = self.grad_enabled && any_grad;
        let category = if recording {
            Category::Activation
        } else {
            Category::Temporary
        };
        let step_shape = vec![batch, hidden];
        let mut states = Vec::new();
        if given.is_empty() {
            // `torch.zeros(batch, hidden_size)`: one tensor, the LSTM's `h` and `c` both.
            let zeros = Internal::new(self, step_shape.clone(), x.dtype, x.device, category);
            let zeros = match zeros {
                Ok(z) => z,
                Err(e) => {
                    params.into_iter().flatten().for_each(|p| p.release(self));
                    return Err(e);
                }
            };
            if wanted == 2 {
                states.push(zeros.share(self));
            }
            states.push(zeros);
        } else {
            for &v in &given {
                if let Some(mut s) = Internal::of(self, v) {
                    s.shape = step_shape.clone();
                    states.push(s);
                }
            }
        }
        let mut x_t = match Internal::of(self, input) {
            Some(x_t) => x_t,
            None => return self.error("TypeError: the input must be a tensor"),
        };
        x_t.shape = vec![batch, input_size];
        let step = self.cell_step(
            cell,
            &x_t,
            &states[0],
            states.get(1),
            &params,
            recording,
            category,
        );
        x_t.release(self);
        states.into_iter().for_each(|s| s.release(self));
        params.into_iter().flatten().for_each(|p| p.release(self));
        let (hy, cy) = step?;
        let h = hy.expose(self, state_shape.clone())?;
        match cy {
            Some(mut c) => {
                // `c'` is the fused node's second output.
                c.output_nr = 1;
                let c = c.expose(self, state_shape)?;
                Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![h, c]))))
            }
            None => Ok(h),
        }
    }
}
