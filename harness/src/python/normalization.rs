//! `nn.LayerNorm` and `nn.BatchNorm1d`/`nn.BatchNorm2d`: their parameters, the running
//! statistics buffers, and what one call saves for backward.
//!
//! # What they save (PyTorch's `derivatives.yaml`, `aten/src/ATen/native/layer_norm.cpp`,
//! `aten/src/ATen/native/cuda/Normalization.cu`)
//!
//! | op                   | node                          | saves                                              |
//! |----------------------|-------------------------------|----------------------------------------------------|
//! | `native_layer_norm`  | `NativeLayerNormBackward0`    | `input`, `weight`, `bias`, `result1` (mean) and `result2` (rstd), one element per normalized row, in the accumulation type (float32 for half/bfloat16 inputs) |
//! | `native_batch_norm`  | `NativeBatchNormBackward0`    | `input`, `weight`, `running_mean`, `running_var`, `result1` (save_mean) and `result2` (save_invstd): `[C]` each in training, empty in eval |
//!
//! All three results of each op are allocated whether or not autograd records it (the
//! output first, then the two statistics); without a node the statistics are freed at once.
//! In training, `BatchNorm` updates `running_mean`/`running_var` in place (a version bump,
//! no bytes, no history: buffers never require grad) and `num_batches_tracked.add_(1)`.
//!
//! Approximation: on CUDA with cuDNN, batch norm runs `cudnn_batch_norm`, which also saves
//! a reserve buffer of a size cuDNN picks; the native path above is what is modelled.

use super::autograd;
use super::interp::{Interpreter, R};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, Dtype, Saved, StorageId};

/// The type statistics are kept in: float32 for reduced-precision floats (`acc_type`).
fn accumulation_type(dtype: Dtype) -> Dtype {
    match dtype {
        Dtype::Float64 => Dtype::Float64,
        _ => Dtype::Float32,
    }
}

fn shape_text(shape: &[i64]) -> String {
    let items: Vec<String> = shape.iter().map(i64::to_string).collect();
    format!("[{}]", items.join(", "))
}

impl Interpreter<'_> {
    /// `nn.LayerNorm(normalized_shape, eps, elementwise_affine=True, bias=True)` and
    /// `nn.BatchNorm1d/2d(num_features, eps, momentum, affine=True, track_running_stats=True)`.
    pub(super) fn construct_norm(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        let flag = |it: &mut Self, v: Option<Value>| -> R<bool> {
            match v {
                None => Ok(true),
                Some(v) => it.truth(v),
            }
        };
        let (device, dtype) = self.factory_kwargs(kwargs);
        if kind == TorchClass::LayerNorm {
            let shape = match arg(self, 0, "normalized_shape") {
                Some(Value::Int(n)) => vec![n],
                Some(v @ Value::Obj(_)) => {
                    let items = self.iterable_items(v)?;
                    let mut dims = Vec::with_capacity(items.len());
                    for d in items {
                        match d {
                            Value::Int(n) => dims.push(n),
                            _ => return self.error("TypeError: normalized_shape must hold ints"),
                        }
                    }
                    dims
                }
                _ => return self.error("TypeError: LayerNorm(normalized_shape)"),
            };
            let affine = flag(self, arg(self, 2, "elementwise_affine"))?;
            let has_bias = flag(self, arg(self, 3, "bias"))?;
            let (w, b) = if affine {
                let w = self.new_parameter(shape.clone(), dtype, device)?;
                let b = if has_bias {
                    self.new_parameter(shape.clone(), dtype, device)?
                } else {
                    Value::None
                };
                (w, b)
            } else {
                (Value::None, Value::None)
            };
            let dims = shape.iter().map(|&d| Value::Int(d)).collect();
            let shape_tuple = Value::Obj(self.alloc(ObjKind::Tuple(dims)));
            let eps = arg(self, 1, "eps").unwrap_or(Value::Float(1e-5));
            return self.new_torch_instance(
                kind,
                vec![
                    ("normalized_shape", shape_tuple),
                    ("eps", eps),
                    ("weight", w),
                    ("bias", b),
                ],
            );
        }
        let Some(Value::Int(features)) = arg(self, 0, "num_features") else {
            return self.error("TypeError: BatchNorm(num_features) needs an integer");
        };
        let affine = flag(self, arg(self, 3, "affine"))?;
        let track = flag(self, arg(self, 4, "track_running_stats"))?;
        let (w, b) = if affine {
            (
                self.new_parameter(vec![features], dtype, device)?,
                self.new_parameter(vec![features], dtype, device)?,
            )
        } else {
            (Value::None, Value::None)
        };
        let eps = arg(self, 1, "eps").unwrap_or(Value::Float(1e-5));
        let momentum = arg(self, 2, "momentum").unwrap_or(Value::Float(0.1));
        let m = self.new_torch_instance(
            kind,
            vec![
                ("num_features", Value::Int(features)),
                ("eps", eps),
                ("momentum", momentum),
                ("weight", w),
                ("bias", b),
            ],
        )?;
        // `_NormBase.__init__`: `register_buffer` for each, in this order.
        let buffers: [(&str, Vec<i64>, Dtype); 3] = [
            ("running_mean", vec![features], dtype),
            ("running_var", vec![features], dtype),
            ("num_batches_tracked", vec![], Dtype::Int64),
        ];
        for (name, shape, dt) in buffers {
            let t = if track {
                self.new_tensor_as(shape, dt, device, None, Category::Parameter)?
            } else {
                Value::None
            };
            let n = Value::Str(self.names.intern(name));
            self.module_api_method(m, "register_buffer", &[n, t], &[])?;
            self.heap.decref(t);
        }
        Ok(m)
    }

    /// `module.name` for a native layer's forward (borrowed-safe: a new reference).
    fn layer_attr(&mut self, module: ObjId, name: &str) -> R<Value> {
        let s = self.sym(name);
        self.get_attr(Value::Obj(module), s)
    }

    /// The forward of a `LayerNorm` or `BatchNorm` module.
    pub(super) fn norm_forward(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        args: &[Value],
    ) -> R<Value> {
        let Some(&x) = args.first() else {
            return self.error("TypeError: forward() missing input");
        };
        let weight = self.layer_attr(module, "weight")?;
        let bias = self.layer_attr(module, "bias")?;
        let result = if kind == TorchClass::LayerNorm {
            let shape = self.layer_attr(module, "normalized_shape")?;
            let dims = self.iterable_items(shape).map(|items| {
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        Value::Int(d) => Some(d),
                        _ => None,
                    })
                    .collect::<Vec<i64>>()
            });
            self.heap.decref(shape);
            match dims {
                Ok(dims) => self.layer_norm(x, &dims, weight, bias),
                Err(e) => Err(e),
            }
        } else {
            self.batch_norm_module(module, kind, x, weight, bias)
        };
        self.heap.decref(weight);
        self.heap.decref(bias);
        result
    }

    fn batch_norm_module(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        x: Value,
        weight: Value,
        bias: Value,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error("TypeError: BatchNorm expects a tensor");
        };
        let rank = t.shape.len();
        match kind {
            TorchClass::BatchNorm1d if rank != 2 && rank != 3 => {
                return self.error(format!(
                    "ValueError: expected 2D or 3D input (got {rank}D input)"
                ));
            }
            TorchClass::BatchNorm2d if rank != 4 => {
                return self.error(format!("ValueError: expected 4D input (got {rank}D input)"));
            }
            _ => {}
        }
        let training_sym = self.sym("training");
        let training = match self
            .attr_values(module)
            .into_iter()
            .find(|(k, _)| *k == training_sym)
        {
            Some((_, v)) => self.truth(v)?,
            None => true,
        };
        let running_mean = self.layer_attr(module, "running_mean")?;
        let running_var = self.layer_attr(module, "running_var")?;
        // `_BatchNorm.forward`: batch statistics in training or without running stats.
        let use_batch_stats = training || running_mean == Value::None;
        if training && let Ok(Value::Obj(n)) = self.layer_attr(module, "num_batches_tracked") {
            // `self.num_batches_tracked.add_(1)`: in place, a version bump.
            if let Some(nt) = self.tensor_data(Value::Obj(n)) {
                self.storages.bump_version(nt.storage);
            }
            self.heap.decref_id(n);
        }
        let r = self.batch_norm(x, running_mean, running_var, weight, bias, use_batch_stats);
        self.heap.decref(running_mean);
        self.heap.decref(running_var);
        r
    }

    /// `F.layer_norm(input, normalized_shape, weight, bias)`: `native_layer_norm`, on
    /// autocast's float32 list (its inputs cast up inside an enabled region).
    pub(super) fn layer_norm(
        &mut self,
        x: Value,
        normalized: &[i64],
        weight: Value,
        bias: Value,
    ) -> R<Value> {
        let cast = self.autocast_inputs(&[x, weight, bias], super::amp::CastPolicy::Float32)?;
        let r = self.layer_norm_as_given(cast[0], normalized, cast[1], cast[2]);
        self.heap.decref_all(cast);
        r
    }

    fn layer_norm_as_given(
        &mut self,
        x: Value,
        normalized: &[i64],
        weight: Value,
        bias: Value,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error("TypeError: layer_norm expects a tensor");
        };
        let k = normalized.len();
        if k == 0 || t.shape.len() < k || t.shape[t.shape.len() - k..] != *normalized {
            return self.error(format!(
                "RuntimeError: Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
                shape_text(normalized),
                normalized
                    .iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                shape_text(&t.shape)
            ));
        }
        let rows: Vec<i64> = t.shape[..t.shape.len() - k].to_vec();
        let mut stat_shape = rows.clone();
        stat_shape.extend(std::iter::repeat_n(1, k));
        self.normalization(x, &[x, weight, bias], "layer_norm", Some(stat_shape))
    }

    /// `F.batch_norm(input, running_mean, running_var, weight, bias, training)`:
    /// `native_batch_norm`; running statistics are updated in place in training.
    pub(super) fn batch_norm(
        &mut self,
        x: Value,
        running_mean: Value,
        running_var: Value,
        weight: Value,
        bias: Value,
        training: bool,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error("TypeError: batch_norm expects a tensor");
        };
        let channels = t.shape.get(1).copied().unwrap_or(0);
        for (name, v) in [
            ("running_mean", running_mean),
            ("running_var", running_var),
            ("weight", weight),
            ("bias", bias),
        ] {
            if let Some(s) = self.tensor_data(v)
                && s.shape.iter().product::<i64>() != channels
            {
                return self.error(format!(
                    "RuntimeError: {name} should contain {channels} elements not {}",
                    s.shape.iter().product::<i64>()
                ));
            }
        }
        if training {
            let per_channel: i64 = t
                .shape
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != 1)
                .map(|(_, d)| *d)
                .product();
            if per_channel <= 1 {
                return self.error(format!(
                    "ValueError: Expected more than 1 value per channel when training, got input size torch.Size({})",
                    shape_text(&t.shape)
                ));
            }
            for v in [running_mean, running_var] {
                if let Some(s) = self.tensor_data(v) {
                    self.storages.bump_version(s.storage);
                }
            }
        }
        // Eval returns empty save_mean / save_invstd: nothing is allocated for them.
        let stats = training.then(|| vec![channels]);
        self.normalization(
            x,
            &[x, weight, bias, running_mean, running_var],
            "batch_norm",
            stats,
        )
    }

    /// The shared shape of both ops: an output like the input, then two statistics
    /// tensors of `stat_shape` (if any), results 1 and 2; when recorded, the node saves
    /// what the autograd table's row of `op` says (`torch::OP_RULES`).
    fn normalization(
        &mut self,
        x: Value,
        operands: &[Value],
        op: &str,
        stat_shape: Option<Vec<i64>>,
    ) -> R<Value> {
        let Some(t) = self.tensor_data(x) else {
            return self.error("TypeError: normalization expects a tensor");
        };
        let category = self.output_category(operands);
        let out = self.new_tensor_as(t.shape.clone(), t.dtype, t.device, None, category)?;
        let mut stats = Vec::new();
        if let Some(shape) = stat_shape {
            for _ in 0..2 {
                stats.push(self.new_storage(
                    &shape,
                    accumulation_type(t.dtype),
                    t.device,
                    category,
                )?);
            }
        }
        let recorded =
            self.grad_enabled && operands.iter().any(|&v| autograd::requires_grad(self, v));
        if let (true, Value::Obj(out_id)) = (recorded, out) {
            self.record_normalization(op, out_id, operands, &stats);
        }
        // The node took references of its own to the statistics it saves.
        self.heap.dropped_storage_refs.extend(stats);
        Ok(out)
    }

    /// Records the node of normalization `op` (a row of the autograd table) over
    /// `operands`, whose first three (input, weight, bias) are the differentiable ones, with
    /// `stats` as results 1 and 2; it becomes `out_id`'s history.
    pub(super) fn record_normalization(
        &mut self,
        op: &str,
        out_id: ObjId,
        operands: &[Value],
        stats: &[StorageId],
    ) {
        let rule =
            crate::torch::op_rule(op).expect("normalizations are rows of the autograd table");
        let outputs = autograd::Outputs {
            first: Some(out_id),
            rest: stats,
        };
        // Edges go to the differentiable operands only (input, weight, bias); batch norm's
        // running statistics are read, not differentiated.
        let node = autograd::build_node_with_results(
            self,
            rule.node,
            rule.flow,
            (operands, 3),
            rule.saves,
            outputs,
        );
        // The op updates its running statistics itself (a version bump with no history);
        // a later forward's update does not invalidate this node, so their versions are
        // not checked.
        let running: Vec<Saved> = operands
            .iter()
            .skip(3)
            .filter_map(|v| match v {
                Value::Obj(id) => Some(Saved::Tensor(*id)),
                _ => None,
            })
            .collect();
        if let ObjKind::GradNode(n) = self.heap.kind_mut(node) {
            let saved = n.saved.clone();
            n.saved_versions
                .retain(|&(i, _)| !saved.get(i).is_some_and(|s| running.contains(s)));
        }
        autograd::set_history(self, out_id, node);
    }
}
