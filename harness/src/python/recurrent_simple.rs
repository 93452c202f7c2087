//! `nn.RNN`'s cell and the dropout `RNNBase` applies between stacked layers.
//!
//! `RNN.cpp`'s `SimpleCell` computes `nonlinearity(linear_hh(h).add_(linear_ih(x_t)))`:
//!
//! | op                     | node                                 | saves                                          |
//! |------------------------|--------------------------------------|------------------------------------------------|
//! | `linear_hh(h)`         | `AddmmBackward0` (`MmBackward0` without bias) | `h` (already alive: the previous step's output or `h_0`), the weight (a view, no bytes) |
//! | `linear_ih(x_t)`       | `AddmmBackward0` / `MmBackward0`     | `x_t` (a view of the layer input), the weight  |
//! | `add_`                 | `AddBackward0`                       | nothing                                        |
//! | `tanh` / `relu`        | `TanhBackward0` / `ReluBackward0`    | its result `h'` `[B, H]`                       |
//!
//! So a step keeps one `[B, H]` state (its output) until backward; the two products are
//! freed when the step ends (both live while the nonlinearity allocates its result: C++
//! destroys the temporaries at the end of the full expression).
//!
//! Between layers `apply_layer_stack` calls `dropout(output, p, train=True)` on every
//! layer's output but the last when the module is training and `p > 0`. On CUDA with
//! `0 < p < 1` that is `native_dropout`: a new output and a `bool` mask (one byte per
//! element), the mask saved by `NativeDropoutBackward0`; the undropped output is freed
//! (the stack/cat nodes that made it keep sizes only). With `p == 1` ATen multiplies by
//! a zero scalar instead (`MulBackward0` saves the scalar).

use super::autograd::{self, Internal};
use super::interp::{Interpreter, R};
use super::recurrent::CellKind;
use crate::heap::{ObjId, Value};
use crate::torch::{Category, Dtype, GradFlow};

impl Interpreter<'_> {
    /// One step of `nn.RNN`'s cell: returns `h'`.
    pub(super) fn simple_cell_step(
        &mut self,
        kind: CellKind,
        x_t: &Internal,
        h: &Internal,
        params: &[Option<Internal>],
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let (Some(Some(w_ih)), Some(Some(w_hh))) = (params.first(), params.get(1)) else {
            return self.error("RuntimeError: the recurrent layer's weights are missing");
        };
        let bias = |i: usize| params.get(i).and_then(Option::as_ref);
        let mut hh = self.cell_linear(h, w_hh, bias(3), recording, category)?;
        let ih = match self.cell_linear(x_t, w_ih, bias(2), recording, category) {
            Ok(t) => t,
            Err(e) => {
                hh.release(self);
                return Err(e);
            }
        };
        // `hh.add_(ih)`: in place, so `hh`'s history becomes `AddBackward0`.
        if recording && (hh.requires_grad() || ih.requires_grad()) {
            let edges = vec![hh.edge(self), ih.edge(self)];
            let node = autograd::new_node(
                self,
                super::autograd::row("add").node,
                GradFlow::Split,
                edges,
                Vec::new(),
            );
            if let Some(old) = hh.node.replace(node) {
                self.heap.decref_id(old);
            }
        }
        let out = Internal::new(self, h.shape.clone(), h.dtype, h.device, category);
        let out = match out {
            Ok(mut out) => {
                if recording && hh.requires_grad() {
                    let edges = vec![hh.edge(self)];
                    let saved = vec![out.saved(self)];
                    out.node = Some(autograd::new_node(
                        self,
                        kind.node_name(),
                        GradFlow::Compute,
                        edges,
                        saved,
                    ));
                }
                Ok(out)
            }
            Err(e) => Err(e),
        };
        ih.release(self);
        hh.release(self);
        self.release_dropped_storages(None);
        out
    }

    /// `at::linear(a, w, b)` on 2-d operands: `addmm` with a bias (`AddmmBackward0`),
    /// `mm` without; both save `a` for the weight's gradient and the weight for `a`'s.
    pub(super) fn cell_linear(
        &mut self,
        a: &Internal,
        w: &Internal,
        b: Option<&Internal>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let rows = a.shape.first().copied().unwrap_or(1);
        let cols = w.shape.first().copied().unwrap_or(0);
        let mut out = Internal::new(self, vec![rows, cols], a.dtype, a.device, category)?;
        let bias_grad = b.is_some_and(Internal::requires_grad);
        if recording && (a.requires_grad() || w.requires_grad() || bias_grad) {
            let mut saved = Vec::new();
            if w.requires_grad() {
                saved.push(a.saved(self));
            }
            if a.requires_grad() {
                saved.push(w.saved(self));
            }
            let mut edges = Vec::new();
            if let Some(b) = b {
                edges.push(b.edge(self));
            }
            edges.push(a.edge(self));
            edges.push(w.edge(self));
            let name = if b.is_some() {
                super::autograd::row("linear").node
            } else {
                super::autograd::row("matmul").node
            };
            out.node = Some(autograd::new_node(
                self,
                name,
                GradFlow::Compute,
                edges,
                saved,
            ));
        }
        Ok(out)
    }

    /// `dropout(x, p, train=True)` between stacked layers (see the module docs).
    pub(super) fn internal_dropout(
        &mut self,
        x: Internal,
        p: f64,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let out = Internal::new(self, x.shape.clone(), x.dtype, x.device, category);
        let mut out = match out {
            Ok(o) => o,
            Err(e) => {
                x.release(self);
                return Err(e);
            }
        };
        let (saved_shape, saved_dtype, name) = if p < 1.0 {
            (
                x.shape.clone(),
                Dtype::Bool,
                super::autograd::row("dropout").node,
            )
        } else {
            (Vec::new(), x.dtype, super::autograd::row("mul").node)
        };
        let saved = match Internal::new(self, saved_shape, saved_dtype, x.device, category) {
            Ok(m) => m,
            Err(e) => {
                out.release(self);
                x.release(self);
                return Err(e);
            }
        };
        if recording && x.requires_grad() {
            let edges = vec![x.edge(self)];
            let kept = vec![saved.saved(self)];
            out.node = Some(autograd::new_node(
                self,
                name,
                GradFlow::Compute,
                edges,
                kept,
            ));
        }
        saved.release(self);
        x.release(self);
        self.release_dropped_storages(None);
        Ok(out)
    }

    /// A float attribute of a module (`dropout`; 0 when absent).
    pub(super) fn module_float(&mut self, module: ObjId, name: &str) -> R<f64> {
        let s = self.sym(name);
        if !self.attr_values(module).iter().any(|(k, _)| *k == s) {
            return Ok(0.0);
        }
        let v = self.get_attr(Value::Obj(module), s)?;
        let f = super::natives::float_of(v);
        self.heap.decref(v);
        match f {
            Some(f) => Ok(f),
            None => self.error(format!("TypeError: {name} must be a number")),
        }
    }

    /// `module.training`: set by `train()`/`eval()`; a new module trains.
    pub(super) fn module_training(&mut self, module: ObjId) -> R<bool> {
        let training = self.sym("training");
        match self
            .attr_values(module)
            .into_iter()
            .find(|(k, _)| *k == training)
        {
            Some((_, v)) => self.truth(v),
            None => Ok(true),
        }
    }

    /// `nn.RNN`'s cell, from its `nonlinearity` attribute.
    pub(super) fn rnn_nonlinearity(&mut self, module: ObjId) -> R<CellKind> {
        let s = self.sym("nonlinearity");
        let v = self.get_attr(Value::Obj(module), s)?;
        let kind = match v {
            Value::Str(t) if self.names.name(t) == "relu" => Some(CellKind::RnnRelu),
            Value::Str(t) if self.names.name(t) == "tanh" => Some(CellKind::RnnTanh),
            _ => None,
        };
        self.heap.decref(v);
        match kind {
            Some(k) => Ok(k),
            None => self.error("ValueError: Unknown nonlinearity. Select from 'tanh' or 'relu'."),
        }
    }
}
