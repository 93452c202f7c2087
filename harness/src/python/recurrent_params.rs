//! Constructing `nn.RNN`, `nn.LSTM` and `nn.GRU` (`torch/nn/modules/rnn.py`'s `RNNBase`):
//! per layer and direction `weight_ih_l{k}`, `weight_hh_l{k}`, `bias_ih_l{k}`,
//! `bias_hh_l{k}` in PyTorch's order, and the configuration the forward reads back.

use super::interp::{Interpreter, R};
use super::recurrent::CellKind;
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, Sym, Value};

/// `RNNBase.__init__`'s warning for dropout with a single layer (it applies to no layer).
fn single_layer_dropout_warning(dropout: f64, num_layers: i64) -> String {
    format!(
        "PyTorch warns: UserWarning: dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}"
    )
}

impl Interpreter<'_> {
    /// `nn.LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False,
    /// dropout=0.0, bidirectional=False)`, `nn.GRU(...)` likewise, and `nn.RNN(input_size,
    /// hidden_size, num_layers=1, nonlinearity='tanh', bias=True, ...)` (`RNN.__init__`
    /// takes a fourth positional argument as `nonlinearity` and shifts the rest).
    pub(super) fn construct_recurrent(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let mut positional = args.to_vec();
        let mut nonlinearity = None;
        if kind == TorchClass::Rnn && positional.len() > 3 {
            nonlinearity = Some(positional.remove(3));
        }
        let args = positional.as_slice();
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let int = |it: &Self, v: Option<Value>, default: i64| -> R<i64> {
            match v {
                None => Ok(default),
                Some(Value::Int(i)) => Ok(i),
                Some(Value::Bool(b)) => Ok(i64::from(b)),
                Some(_) => it.error("TypeError: RNN/LSTM/GRU sizes must be integers"),
            }
        };
        let input_size = int(self, arg(self, 0, "input_size"), -1)?;
        let hidden_size = int(self, arg(self, 1, "hidden_size"), -1)?;
        let num_layers = int(self, arg(self, 2, "num_layers"), 1)?;
        let bias = int(self, arg(self, 3, "bias"), 1)? != 0;
        let batch_first = int(self, arg(self, 4, "batch_first"), 0)? != 0;
        if input_size < 0 || hidden_size <= 0 || num_layers < 1 {
            return self.error(
                "TypeError: RNN/LSTM/GRU need input_size, hidden_size > 0 and num_layers >= 1",
            );
        }
        let bidirectional = match arg(self, 6, "bidirectional") {
            Some(v) => self.truth(v)?,
            None => false,
        };
        let directions: &[&str] = if bidirectional {
            &["", "_reverse"]
        } else {
            &[""]
        };
        let dropout = match arg(self, 5, "dropout") {
            None => 0.0,
            Some(Value::Int(i)) => i as f64,
            Some(Value::Float(f)) => f,
            Some(_) => f64::NAN,
        };
        if !(0.0..=1.0).contains(&dropout) {
            return self.error(
                "ValueError: dropout should be a number in range [0, 1] representing the probability of an element being zeroed",
            );
        }
        if dropout > 0.0 && num_layers == 1 {
            self.recorder
                .approximation(single_layer_dropout_warning(dropout, num_layers));
        }
        let cell = match kind {
            TorchClass::Lstm => CellKind::Lstm,
            TorchClass::Gru => CellKind::Gru,
            _ => {
                let text = match nonlinearity.or_else(|| {
                    kwargs
                        .iter()
                        .find(|(k, _)| self.names.name(*k) == "nonlinearity")
                        .map(|(_, v)| *v)
                }) {
                    None => "tanh".to_string(),
                    Some(Value::Str(s)) => self.names.name(s).to_string(),
                    Some(other) => self.type_name_of(other).to_string(),
                };
                match text.as_str() {
                    "tanh" => CellKind::RnnTanh,
                    "relu" => CellKind::RnnRelu,
                    _ => {
                        return self.error(format!(
                            "ValueError: Unknown nonlinearity '{text}'. Select from 'tanh' or 'relu'."
                        ));
                    }
                }
            }
        };
        let (device, dtype) = self.factory_kwargs(kwargs);
        let gates = cell.gates();
        let mut names = Vec::new();
        let mut values = Vec::new();
        for l in 0..num_layers {
            // A later layer reads both directions' outputs.
            let fan_in = if l == 0 {
                input_size
            } else {
                hidden_size * directions.len() as i64
            };
            for suffix in directions {
                names.push(format!("weight_ih_l{l}{suffix}"));
                values.push(self.new_parameter(
                    vec![gates * hidden_size, fan_in],
                    dtype,
                    device,
                )?);
                names.push(format!("weight_hh_l{l}{suffix}"));
                values.push(self.new_parameter(
                    vec![gates * hidden_size, hidden_size],
                    dtype,
                    device,
                )?);
                if bias {
                    for prefix in ["bias_ih", "bias_hh"] {
                        names.push(format!("{prefix}_l{l}{suffix}"));
                        values.push(self.new_parameter(
                            vec![gates * hidden_size],
                            dtype,
                            device,
                        )?);
                    }
                }
            }
        }
        let nonlinearity_name = match cell {
            CellKind::RnnRelu => "relu",
            _ => "tanh",
        };
        let nonlinearity_value = Value::Str(self.names.intern(nonlinearity_name));
        let mut attrs: Vec<(&str, Value)> = vec![
            ("input_size", Value::Int(input_size)),
            ("hidden_size", Value::Int(hidden_size)),
            ("num_layers", Value::Int(num_layers)),
            ("batch_first", Value::Bool(batch_first)),
            ("bidirectional", Value::Bool(bidirectional)),
            ("dropout", Value::Float(dropout)),
        ];
        if kind == TorchClass::Rnn {
            attrs.push(("nonlinearity", nonlinearity_value));
        }
        for (n, v) in names.iter().zip(values) {
            attrs.push((n.as_str(), v));
        }
        self.new_torch_instance(kind, attrs)
    }
}
