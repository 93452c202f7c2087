//! The recurrent layers `nn.LSTM` / `nn.GRU`, whose C++ forward builds several graph
//! nodes per time step. Their intermediates never get Python objects (they are
//! [`Internal`] tensors): only storages, saved by the nodes that need them.
//!
//! # What they save (PyTorch's `derivatives.yaml` and `aten/src/ATen/native/RNN.cpp`)
//!
//! | op                     | nodes                                | saves                                          |
//! |------------------------|--------------------------------------|------------------------------------------------|
//! | LSTM, one step         | 2 × `MmBackward0`                    | `x_t` and `h` (for the weights' gradients), the weights (views, no bytes) |
//! |                        | `ThnnFusedLstmCellBackward0`         | both gate products `[B, 4H]`, `c`, the biases, `c'` and a workspace `[B, 4H]` |
//! | GRU, one step          | 2 × `MmBackward0`                    | as for LSTM                                    |
//! |                        | `ThnnFusedGruCellBackward0`          | both gate products `[B, 3H]`, `h`, the biases and a workspace `[B, 5H]` |
//! | the layer              | `UnbindBackward0`, `StackBackward0`  | nothing (the stacked output and `h_n`/`c_n` are copies) |
//! | bidirectional layer    | `CatBackward0`                       | nothing: the two directions' stacked outputs are copied into `[T, B, 2H]` and freed |
//!
//! A bidirectional layer (`_reverse` parameters, `RNN.cpp`'s `bidirectional_layer`) runs
//! the reverse direction over the same unbound steps backwards, each step saving what a
//! forward step saves; layer `l > 0` reads `2H` features; `h_n` holds one state per layer
//! and direction (layer 0 forward, layer 0 reverse, ...).
//!
//! So an LSTM step keeps 14·B·H elements alive until backward (a GRU step 12·B·H, `h` being
//! the previous step's output), and a hidden state carried into the next batch without
//! `detach()` keeps the previous batch's whole graph reachable.
//!
//! The recurrent layers run PyTorch's per-step native path (`_thnn_fused_*_cell`, what runs
//! on CUDA without cuDNN). cuDNN runs the whole sequence as one op that saves a reserve
//! buffer instead, of a size cuDNN chooses; the run's approximation notes say so.

use super::autograd::{self, Internal};
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, GradFlow};

/// The cell a recurrent layer runs per step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum CellKind {
    Lstm,
    Gru,
    /// `nn.RNN(nonlinearity='tanh')`.
    RnnTanh,
    /// `nn.RNN(nonlinearity='relu')`.
    RnnRelu,
}

impl CellKind {
    /// Gate rows per hidden unit (`weight_ih` is `[gates·H, I]`).
    pub(super) fn gates(self) -> i64 {
        match self {
            CellKind::Lstm => 4,
            CellKind::Gru => 3,
            CellKind::RnnTanh | CellKind::RnnRelu => 1,
        }
    }

    /// Width of the fused cell's saved workspace, in hidden sizes.
    fn workspace(self) -> i64 {
        match self {
            CellKind::Lstm => 4,
            CellKind::Gru => 5,
            // The plain cells have no fused kernel and no workspace.
            CellKind::RnnTanh | CellKind::RnnRelu => 0,
        }
    }

    pub(super) fn node_name(self) -> &'static str {
        match self {
            CellKind::Lstm => super::autograd::row("lstm_cell").node,
            CellKind::Gru => super::autograd::row("gru_cell").node,
            CellKind::RnnTanh => super::autograd::row("tanh").node,
            CellKind::RnnRelu => super::autograd::row("relu").node,
        }
    }

    /// The module's name, as PyTorch's messages give it.
    fn module_name(self) -> &'static str {
        match self {
            CellKind::Lstm => "LSTM",
            CellKind::Gru => "GRU",
            CellKind::RnnTanh | CellKind::RnnRelu => "RNN",
        }
    }
}

/// The configuration of a recurrent layer, read from its attributes.
struct RnnConfig {
    input_size: i64,
    hidden_size: i64,
    num_layers: i64,
    batch_first: bool,
    /// 2 for a bidirectional layer, else 1.
    directions: i64,
    /// `dropout=`: applied to every layer's output but the last, in training mode.
    dropout: f64,
    /// `module.training` (set by `train()`/`eval()`).
    training: bool,
}

const RECURRENT_NOTE: &str = "nn.RNN, nn.LSTM and nn.GRU run PyTorch's per-step cell path (what runs without cuDNN); with cuDNN the sequence is one op that saves a reserve buffer of a size cuDNN chooses, so saved activations may differ somewhat.";

impl Interpreter<'_> {
    fn rnn_config(&mut self, module: ObjId) -> R<RnnConfig> {
        let int = |it: &mut Self, name: &str| -> R<i64> {
            let s = it.names.intern(name);
            match it.get_attr(Value::Obj(module), s)? {
                Value::Int(i) => Ok(i),
                Value::Bool(b) => Ok(i64::from(b)),
                other => {
                    it.heap.decref(other);
                    it.error(format!("TypeError: {name} must be an integer"))
                }
            }
        };
        Ok(RnnConfig {
            input_size: int(self, "input_size")?,
            hidden_size: int(self, "hidden_size")?,
            num_layers: int(self, "num_layers")?,
            batch_first: int(self, "batch_first")? != 0,
            directions: 1 + int(self, "bidirectional")?,
            dropout: self.module_float(module, "dropout")?,
            training: self.module_training(module)?,
        })
    }

    /// Parameters of layer `l` in one direction (`suffix` is `""` or `"_reverse"`) as
    /// internal tensors (weights, then biases when present).
    fn rnn_layer_params(
        &mut self,
        module: ObjId,
        l: i64,
        suffix: &str,
    ) -> R<Vec<Option<Internal>>> {
        let mut out = Vec::new();
        for prefix in ["weight_ih", "weight_hh", "bias_ih", "bias_hh"] {
            let s = self.names.intern(&format!("{prefix}_l{l}{suffix}"));
            // `bias=False` registers no bias attributes.
            if prefix.starts_with("bias") && !self.attr_values(module).iter().any(|(k, _)| *k == s)
            {
                out.push(None);
                continue;
            }
            let v = self.get_attr(Value::Obj(module), s)?;
            out.push(Internal::of(self, v));
            self.heap.decref(v);
        }
        Ok(out)
    }

    /// `lstm(x, (h0, c0))` / `gru(x, h0)`: returns `(output, (h_n, c_n))` / `(output, h_n)`.
    pub(super) fn recurrent_forward(
        &mut self,
        module: ObjId,
        kind: CellKind,
        args: &[Value],
    ) -> R<Value> {
        if !self.torch_classes.recurrent_noted {
            self.torch_classes.recurrent_noted = true;
            self.recorder.approximation(RECURRENT_NOTE);
        }
        let cfg = self.rnn_config(module)?;
        let Some(&input) = args.first() else {
            return self.error("TypeError: forward() missing input");
        };
        let Some(x) = self.tensor_data(input) else {
            return self.error("TypeError: the input must be a tensor");
        };
        let (steps, batch, batched) = match (x.shape.len(), cfg.batch_first) {
            (3, false) => (x.shape[0], x.shape[1], true),
            (3, true) => (x.shape[1], x.shape[0], true),
            (2, _) => (x.shape[0], 1, false),
            (n, _) => {
                return self.error(format!(
                    "ValueError: {}: Expected input to be 2D or 3D, got {n}D instead",
                    kind.module_name()
                ));
            }
        };
        if x.shape.last() != Some(&cfg.input_size) {
            return self.error(format!(
                "RuntimeError: input.size(-1) must be equal to input_size. Expected {}, got {}",
                cfg.input_size,
                x.shape.last().copied().unwrap_or(0)
            ));
        }
        let (layers, hidden, dirs) = (cfg.num_layers, cfg.hidden_size, cfg.directions);
        // `h_0`/`h_n`: one state per layer and direction (layer 0 forward, layer 0
        // reverse, layer 1 forward, ...).
        let state_shape = if batched {
            vec![layers * dirs, batch, hidden]
        } else {
            vec![layers * dirs, hidden]
        };
        let hx = args.get(1).copied().unwrap_or(Value::None);
        let given: Vec<Value> = match (kind, hx) {
            (_, Value::None) => Vec::new(),
            (CellKind::Gru | CellKind::RnnTanh | CellKind::RnnRelu, v) => vec![v],
            (CellKind::Lstm, v) => self.iterable_items(v)?,
        };
        let wanted = if kind == CellKind::Lstm { 2 } else { 1 };
        if !given.is_empty() && given.len() != wanted {
            return self.error("TypeError: LSTM expects hx as a tuple (h_0, c_0)");
        }
        let mut states = Vec::new();
        for (i, &v) in given.iter().enumerate() {
            let Some(t) = self.tensor_data(v) else {
                return self.error("TypeError: the hidden state must be a tensor");
            };
            if t.shape != state_shape {
                let which = if kind == CellKind::Lstm {
                    format!("hidden[{i}]")
                } else {
                    "hidden".to_string()
                };
                return self.error(format!(
                    "RuntimeError: Expected {which} size {}, got {:?}",
                    tuple_text(&state_shape),
                    t.shape
                ));
            }
        }
        let mut any_grad = given
            .iter()
            .chain(std::iter::once(&input))
            .any(|&v| autograd::requires_grad(self, v));
        let mut params = Vec::new();
        for l in 0..layers {
            let mut per_direction = Vec::new();
            for suffix in ["", "_reverse"].iter().take(dirs as usize) {
                let p = self.rnn_layer_params(module, l, suffix)?;
                any_grad |= p.iter().flatten().any(Internal::requires_grad);
                per_direction.push(p);
            }
            params.push(per_direction);
        }
        let recording = self.grad_enabled && any_grad;
        let category = if recording {
            Category::Activation
        } else {
            Category::Temporary
        };
        for i in 0..wanted {
            let state = match given.get(i) {
                Some(&v) => Internal::of(self, v),
                None => Some(Internal::new(
                    self,
                    state_shape.clone(),
                    x.dtype,
                    x.device,
                    Category::Temporary,
                )?),
            };
            if let Some(s) = state {
                states.push(s);
            }
        }
        let step_shape = vec![batch, hidden];
        let mut per_state: Vec<std::collections::VecDeque<Internal>> = Vec::new();
        for s in &states {
            per_state.push(
                self.unbind(s, (layers * dirs) as usize, &step_shape, recording)
                    .into(),
            );
        }
        for s in states {
            s.release(self);
        }
        let mut layer_input = Internal::of(self, input);
        let mut finals: Vec<Vec<Internal>> = vec![Vec::new(); wanted];
        let mut feature = cfg.input_size;
        for (l, layer_params) in params.into_iter().enumerate() {
            let Some(current) = layer_input.take() else {
                break;
            };
            let xs = self.unbind(&current, steps as usize, &[batch, feature], recording);
            current.release(self);
            let mut direction_outputs = Vec::new();
            let mut failure: Option<R<()>> = None;
            let count = layer_params.len();
            let mut pending_xs = Some(xs);
            for (d, p) in layer_params.into_iter().enumerate() {
                // Both directions read the same unbound steps; the reverse one backwards.
                let Some(all) = pending_xs.take() else {
                    break;
                };
                let mut xs = if d + 1 < count {
                    let copies = all.iter().map(|x| x.share(self)).collect();
                    pending_xs = Some(all);
                    copies
                } else {
                    all
                };
                if d == 1 {
                    xs.reverse();
                }
                let mut layer_states = per_state.iter_mut().map(|s| s.pop_front());
                let (Some(Some(h)), c) = (layer_states.next(), layer_states.next().flatten())
                else {
                    current_states_missing(self, xs, p);
                    failure = Some(self.error("RuntimeError: the hidden state is missing"));
                    break;
                };
                match self.run_direction(kind, xs, h, c, p, recording, category) {
                    Ok((mut outs, h, c)) => {
                        if d == 1 {
                            outs.reverse();
                        }
                        finals[0].push(h);
                        if let Some(c) = c {
                            finals[1].push(c);
                        }
                        match self.stack(outs, vec![steps, batch, hidden], recording, category) {
                            Ok(o) => direction_outputs.push(o),
                            Err(e) => {
                                failure = Some(Err(e));
                                break;
                            }
                        }
                    }
                    Err(e) => {
                        failure = Some(Err(e));
                        break;
                    }
                }
            }
            if let Some(rest) = pending_xs {
                for x in rest {
                    x.release(self);
                }
            }
            if let Some(Err(e)) = failure {
                for o in direction_outputs {
                    o.release(self);
                }
                for rest in per_state
                    .into_iter()
                    .flatten()
                    .chain(finals.into_iter().flatten())
                {
                    rest.release(self);
                }
                return Err(e);
            }
            layer_input = Some(if direction_outputs.len() == 2 {
                self.cat_last(direction_outputs, recording, category)?
            } else {
                match direction_outputs.pop() {
                    Some(o) => o,
                    None => return self.error("ValueError: num_layers must be at least 1"),
                }
            });
            // `apply_layer_stack`: `dropout(layer_output, p, train=True)` between layers.
            if cfg.training && cfg.dropout > 0.0 && (l as i64) < layers - 1 {
                let Some(current) = layer_input.take() else {
                    break;
                };
                layer_input =
                    Some(self.internal_dropout(current, cfg.dropout, recording, category)?);
            }
            feature = hidden * dirs;
        }
        for rest in per_state.into_iter().flatten() {
            rest.release(self);
        }
        let Some(output) = layer_input else {
            return self.error("ValueError: num_layers must be at least 1");
        };
        let width = hidden * dirs;
        let out_shape = match (batched, cfg.batch_first) {
            (false, _) => vec![steps, width],
            (true, false) => vec![steps, batch, width],
            (true, true) => vec![batch, steps, width],
        };
        let output = output.expose(self, out_shape)?;
        let mut hidden_values = Vec::new();
        for f in finals {
            let s = self.stack(f, vec![layers * dirs, batch, hidden], recording, category)?;
            hidden_values.push(s.expose(self, state_shape.clone())?);
        }
        let hidden_value = if kind == CellKind::Lstm {
            Value::Obj(self.alloc(ObjKind::Tuple(hidden_values)))
        } else {
            hidden_values.pop().unwrap_or(Value::None)
        };
        Ok(Value::Obj(
            self.alloc(ObjKind::Tuple(vec![output, hidden_value])),
        ))
    }

    /// One direction of one layer over its steps (in the order given): the outputs per
    /// step and the final `h` (and `c`).
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn run_direction(
        &mut self,
        kind: CellKind,
        xs: Vec<Internal>,
        mut h: Internal,
        mut c: Option<Internal>,
        p: Vec<Option<Internal>>,
        recording: bool,
        category: Category,
    ) -> R<(Vec<Internal>, Internal, Option<Internal>)> {
        let mut outs = Vec::new();
        let mut xs = xs.into_iter();
        let result: R<()> = (|| {
            for x_t in xs.by_ref() {
                let step = self.cell_step(kind, &x_t, &h, c.as_ref(), &p, recording, category);
                x_t.release(self);
                let (hy, cy) = step?;
                outs.push(hy.share(self));
                std::mem::replace(&mut h, hy).release(self);
                if let (Some(old), Some(new)) = (c.take(), cy) {
                    old.release(self);
                    c = Some(new);
                }
            }
            Ok(())
        })();
        for rest in xs {
            rest.release(self);
        }
        for q in p.into_iter().flatten() {
            q.release(self);
        }
        if let Err(e) = result {
            for o in outs {
                o.release(self);
            }
            h.release(self);
            if let Some(c) = c {
                c.release(self);
            }
            return Err(e);
        }
        Ok((outs, h, c))
    }

    /// `torch.cat([forward, reverse], -1)` of a bidirectional layer's outputs: a copy;
    /// `CatBackward0` keeps sizes only, so the two halves are freed here.
    fn cat_last(
        &mut self,
        parts: Vec<Internal>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let Some(first) = parts.first() else {
            return self.error("RuntimeError: torch.cat(): expected a non-empty list of Tensors");
        };
        let mut shape = first.shape.clone();
        let (dtype, device) = (first.dtype, first.device);
        if let Some(last) = shape.last_mut() {
            *last = parts
                .iter()
                .map(|p| p.shape.last().copied().unwrap_or(0))
                .sum();
        }
        let mut out = Internal::new(self, shape, dtype, device, category);
        if let Ok(out) = &mut out
            && recording
            && parts.iter().any(Internal::requires_grad)
        {
            let edges = parts.iter().map(|p| p.edge(self)).collect();
            out.node = Some(autograd::new_node(
                self,
                super::autograd::row("cat").node,
                GradFlow::Split,
                edges,
                Vec::new(),
            ));
        }
        for p in parts {
            p.release(self);
        }
        out
    }

    /// `tensor.unbind(0)`: `count` views of `shape` sharing one `UnbindBackward0`.
    fn unbind(
        &mut self,
        whole: &Internal,
        count: usize,
        shape: &[i64],
        recording: bool,
    ) -> Vec<Internal> {
        let node = if recording && whole.requires_grad() {
            let edge = whole.edge(self);
            Some(autograd::new_node(
                self,
                super::autograd::row("unbind").node,
                GradFlow::Compute,
                vec![edge],
                Vec::new(),
            ))
        } else {
            None
        };
        let mut parts = Vec::with_capacity(count);
        for _ in 0..count {
            self.storages.add_ref(whole.storage);
            if let Some(n) = node {
                self.heap.incref(Value::Obj(n));
            }
            parts.push(Internal {
                storage: whole.storage,
                shape: shape.to_vec(),
                dtype: whole.dtype,
                device: whole.device,
                node,
                output_nr: 0,
            });
        }
        if let Some(n) = node {
            self.heap.decref_id(n);
        }
        parts
    }

    /// `torch.stack(parts)`: a copy of `shape`; backward hands each part a slice.
    fn stack(
        &mut self,
        parts: Vec<Internal>,
        shape: Vec<i64>,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let (dtype, device) = match parts.first() {
            Some(p) => (p.dtype, p.device),
            None => return self.error("RuntimeError: stack expects a non-empty TensorList"),
        };
        let mut out = Internal::new(self, shape, dtype, device, category);
        if let Ok(out) = &mut out
            && recording
            && parts.iter().any(Internal::requires_grad)
        {
            let edges = parts.iter().map(|p| p.edge(self)).collect();
            out.node = Some(autograd::new_node(
                self,
                super::autograd::row("stack").node,
                GradFlow::Split,
                edges,
                Vec::new(),
            ));
        }
        for p in parts {
            p.release(self);
        }
        out
    }

    /// `a @ w.t()`: `MmBackward0` saves `a` when the weight needs a gradient and the
    /// weight (a view: no bytes) when `a` does.
    fn cell_matmul(
        &mut self,
        a: &Internal,
        w: &Internal,
        recording: bool,
        category: Category,
    ) -> R<Internal> {
        let rows = a.shape.first().copied().unwrap_or(1);
        let cols = w.shape.first().copied().unwrap_or(0);
        let mut out = Internal::new(self, vec![rows, cols], a.dtype, a.device, category)?;
        if recording && (a.requires_grad() || w.requires_grad()) {
            let mut saved = Vec::new();
            if w.requires_grad() {
                saved.push(a.saved(self));
            }
            if a.requires_grad() {
                saved.push(w.saved(self));
            }
            let edges = vec![a.edge(self), w.edge(self)];
            out.node = Some(autograd::new_node(
                self,
                super::autograd::row("matmul").node,
                GradFlow::Compute,
                edges,
                saved,
            ));
        }
        Ok(out)
    }

    /// One time step of one layer: the two gate products and the fused cell. Returns
    /// `h'` and, for an LSTM, `c'`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn cell_step(
        &mut self,
        kind: CellKind,
        x_t: &Internal,
        h: &Internal,
        c: Option<&Internal>,
        params: &[Option<Internal>],
        recording: bool,
        category: Category,
    ) -> R<(Internal, Option<Internal>)> {
        if matches!(kind, CellKind::RnnTanh | CellKind::RnnRelu) {
            return self
                .simple_cell_step(kind, x_t, h, params, recording, category)
                .map(|hy| (hy, None));
        }
        let (Some(Some(w_ih)), Some(Some(w_hh))) = (params.first(), params.get(1)) else {
            return self.error("RuntimeError: the recurrent layer's weights are missing");
        };
        let biases: Vec<&Internal> = params.iter().skip(2).flatten().collect();
        let igates = self.cell_matmul(x_t, w_ih, recording, category)?;
        let hgates = match self.cell_matmul(h, w_hh, recording, category) {
            Ok(g) => g,
            Err(e) => {
                igates.release(self);
                return Err(e);
            }
        };
        let batch = h.shape.first().copied().unwrap_or(1);
        let hidden = h.shape.last().copied().unwrap_or(0);
        let (dtype, device) = (h.dtype, h.device);
        let mut made = Vec::new();
        let mut result: R<()> = Ok(());
        let wanted = [
            vec![batch, hidden],
            vec![batch, hidden],
            vec![batch, kind.workspace() * hidden],
        ];
        let count = if kind == CellKind::Lstm { 3 } else { 2 };
        for shape in wanted.iter().skip(3 - count) {
            match Internal::new(self, shape.clone(), dtype, device, category) {
                Ok(t) => made.push(t),
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        if let Err(e) = result {
            for t in made {
                t.release(self);
            }
            igates.release(self);
            hgates.release(self);
            return Err(e);
        }
        let workspace = made.pop();
        let mut hy = made.remove(0);
        let mut cy = made.pop();
        let previous = c.unwrap_or(h);
        let needs_grad = igates.requires_grad()
            || hgates.requires_grad()
            || previous.requires_grad()
            || biases.iter().any(|b| b.requires_grad());
        if recording && needs_grad {
            let mut edges = vec![igates.edge(self), hgates.edge(self), previous.edge(self)];
            let mut saved = vec![igates.saved(self), hgates.saved(self), previous.saved(self)];
            for b in &biases {
                edges.push(b.edge(self));
                saved.push(b.saved(self));
            }
            if let Some(cy) = &cy {
                saved.push(cy.saved(self));
            }
            if let Some(w) = &workspace {
                saved.push(w.saved(self));
            }
            let node = autograd::new_node(self, kind.node_name(), GradFlow::Compute, edges, saved);
            if let Some(cy) = &mut cy {
                self.heap.incref(Value::Obj(node));
                cy.node = Some(node);
            }
            hy.node = Some(node);
        }
        if let Some(w) = workspace {
            w.release(self);
        }
        igates.release(self);
        hgates.release(self);
        Ok((hy, cy))
    }
}

impl Internal {
    /// Another reference to the same tensor.
    pub(super) fn share(&self, it: &mut Interpreter<'_>) -> Internal {
        it.storages.add_ref(self.storage);
        if let Some(n) = self.node {
            it.heap.incref(Value::Obj(n));
        }
        self.clone()
    }
}

/// `(1, 4, 32)`, as PyTorch prints expected sizes.
fn tuple_text(shape: &[i64]) -> String {
    let dims: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("({})", dims.join(", "))
}

/// Drops what a layer holds when its states are missing (cannot happen for valid input).
fn current_states_missing(it: &mut Interpreter<'_>, xs: Vec<Internal>, p: Vec<Option<Internal>>) {
    for t in xs.into_iter().chain(p.into_iter().flatten()) {
        t.release(it);
    }
}
