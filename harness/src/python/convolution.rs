//! `nn.Conv1d`/`nn.Conv2d`, `nn.MaxPool2d`, `nn.AdaptiveAvgPool2d` and `nn.Flatten`, and
//! their function forms: output shapes from PyTorch's size arithmetic and what each saves.
//!
//! # What they save (PyTorch's `derivatives.yaml`, `aten/src/ATen/native/Convolution.cpp`,
//! `AdaptiveAveragePooling.cpp`)
//!
//! | op                         | node                            | saves                                  |
//! |----------------------------|---------------------------------|----------------------------------------|
//! | `convolution`              | `ConvolutionBackward0`          | `input` and `weight` (the bias's sizes only) |
//! | `max_pool2d_with_indices`  | `MaxPool2DWithIndicesBackward0` | `self` and `result1`, the int64 indices (one per output element) |
//! | `_adaptive_avg_pool2d`     | `AdaptiveAvgPool2DBackward0`    | `self`                                 |
//! | `adaptive_avg_pool2d` to 1×1 | `MeanBackward1`               | nothing: it is `input.mean((-1, -2), keepdim=True)` |
//! | `flatten`                  | `ViewBackward0`                 | nothing (a view)                       |
//!
//! `max_pool2d` on CUDA always runs the `_with_indices` kernel: the indices are allocated
//! even when nothing records them (then freed at once).
//!
//! Approximation: cuDNN's convolution workspace (a temporary whose size cuDNN's algorithm
//! search picks) is not modelled.

use super::autograd;
use super::interp::{Interpreter, R};
use super::torchlib::{TorchClass, constructor_arg};
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::Dtype;

/// Stride, padding and dilation of a convolution or pooling, one per spatial dimension.
pub(super) struct Window {
    pub kernel: Vec<i64>,
    pub stride: Vec<i64>,
    pub padding: Vec<i64>,
    pub dilation: Vec<i64>,
}

fn joined(values: &[i64], separator: &str) -> String {
    values
        .iter()
        .map(i64::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

impl Interpreter<'_> {
    /// An int or a sequence of `n` ints (`kernel_size=3`, `stride=(2, 1)`).
    pub(super) fn spatial_ints(&self, v: Value, n: usize, what: &str) -> R<Vec<i64>> {
        match v {
            Value::Int(i) => Ok(vec![i; n]),
            Value::Bool(b) => Ok(vec![i64::from(b); n]),
            Value::Obj(_) => {
                let items = self.iterable_items(v)?;
                let ints: Vec<i64> = items
                    .iter()
                    .filter_map(|v| match v {
                        Value::Int(i) => Some(*i),
                        _ => None,
                    })
                    .collect();
                if ints.len() == items.len() && ints.len() == n {
                    Ok(ints)
                } else if ints.len() == items.len() && ints.len() == 1 {
                    Ok(vec![ints[0]; n])
                } else {
                    self.error(format!(
                        "TypeError: {what} must be an int or a tuple of {n} ints"
                    ))
                }
            }
            _ => self.error(format!(
                "TypeError: {what} must be an int or a tuple of {n} ints"
            )),
        }
    }

    fn ints_tuple(&mut self, values: &[i64]) -> Value {
        let items = values.iter().map(|&d| Value::Int(d)).collect();
        Value::Obj(self.alloc(ObjKind::Tuple(items)))
    }

    /// `nn.Conv1d/2d(in, out, kernel_size, stride=1, padding=0, dilation=1, groups=1,
    /// bias=True)`, `nn.MaxPool2d(kernel_size, stride=None, padding=0, dilation=1,
    /// ceil_mode=False)`, `nn.AdaptiveAvgPool2d(output_size)`, `nn.Flatten(1, -1)`.
    pub(super) fn construct_spatial(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let arg = |it: &Self, i: usize, name: &str| constructor_arg(it, args, kwargs, i, name);
        match kind {
            TorchClass::Conv1d | TorchClass::Conv2d => {
                let n = if kind == TorchClass::Conv1d { 1 } else { 2 };
                let (Some(Value::Int(c_in)), Some(Value::Int(c_out)), Some(k)) = (
                    arg(self, 0, "in_channels"),
                    arg(self, 1, "out_channels"),
                    arg(self, 2, "kernel_size"),
                ) else {
                    return self.error(
                        "TypeError: Conv(in_channels, out_channels, kernel_size) needs ints",
                    );
                };
                let kernel = self.spatial_ints(k, n, "kernel_size")?;
                let groups = match arg(self, 6, "groups") {
                    None => 1,
                    Some(Value::Int(g)) if g > 0 => g,
                    Some(_) => return self.error("ValueError: groups must be a positive integer"),
                };
                if c_in % groups != 0 {
                    return self.error("ValueError: in_channels must be divisible by groups");
                }
                if c_out % groups != 0 {
                    return self.error("ValueError: out_channels must be divisible by groups");
                }
                let stride = match arg(self, 3, "stride") {
                    Some(v) => self.spatial_ints(v, n, "stride")?,
                    None => vec![1; n],
                };
                let dilation = match arg(self, 5, "dilation") {
                    Some(v) => self.spatial_ints(v, n, "dilation")?,
                    None => vec![1; n],
                };
                let padding = match arg(self, 4, "padding") {
                    None => self.ints_tuple(&vec![0; n]),
                    Some(Value::Str(s)) => match self.names.name(s) {
                        "valid" => self.ints_tuple(&vec![0; n]),
                        "same" if stride.iter().any(|&s| s != 1) => {
                            return self.error(
                                "ValueError: padding='same' is not supported for strided convolutions",
                            );
                        }
                        "same" => Value::Str(s),
                        other => {
                            return self.error(format!(
                                "ValueError: Invalid padding string '{other}', should be one of {{'valid', 'same'}}"
                            ));
                        }
                    },
                    Some(v) => {
                        let p = self.spatial_ints(v, n, "padding")?;
                        self.ints_tuple(&p)
                    }
                };
                if let Some(Value::Str(mode)) = arg(self, 8, "padding_mode")
                    && self.names.name(mode) != "zeros"
                {
                    return self.unsupported(format!(
                        "Conv padding_mode='{}' (its padded copy is not modelled); use padding_mode='zeros'",
                        self.names.name(mode)
                    ));
                }
                let has_bias = match arg(self, 7, "bias") {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                let (device, dtype) = self.factory_kwargs(kwargs);
                let mut shape = vec![c_out, c_in / groups];
                shape.extend_from_slice(&kernel);
                let w = self.new_parameter(shape, dtype, device)?;
                let b = if has_bias {
                    self.new_parameter(vec![c_out], dtype, device)?
                } else {
                    Value::None
                };
                let stride = self.ints_tuple(&stride);
                let dilation = self.ints_tuple(&dilation);
                self.new_torch_instance(
                    kind,
                    vec![
                        ("stride", stride),
                        ("padding", padding),
                        ("dilation", dilation),
                        ("groups", Value::Int(groups)),
                        ("weight", w),
                        ("bias", b),
                    ],
                )
            }
            TorchClass::MaxPool2d => {
                let Some(k) = arg(self, 0, "kernel_size") else {
                    return self.error("TypeError: MaxPool2d(kernel_size)");
                };
                let kernel = self.spatial_ints(k, 2, "kernel_size")?;
                let stride = match arg(self, 1, "stride") {
                    None | Some(Value::None) => kernel.clone(),
                    Some(v) => self.spatial_ints(v, 2, "stride")?,
                };
                let padding = match arg(self, 2, "padding") {
                    None => vec![0, 0],
                    Some(v) => self.spatial_ints(v, 2, "padding")?,
                };
                let dilation = match arg(self, 3, "dilation") {
                    None => vec![1, 1],
                    Some(v) => self.spatial_ints(v, 2, "dilation")?,
                };
                let indices = match arg(self, 4, "return_indices") {
                    Some(v) => self.truth(v)?,
                    None => false,
                };
                let ceil = match arg(self, 5, "ceil_mode") {
                    Some(v) => self.truth(v)?,
                    None => false,
                };
                let values = [
                    self.ints_tuple(&kernel),
                    self.ints_tuple(&stride),
                    self.ints_tuple(&padding),
                    self.ints_tuple(&dilation),
                ];
                self.new_torch_instance(
                    kind,
                    vec![
                        ("kernel_size", values[0]),
                        ("stride", values[1]),
                        ("padding", values[2]),
                        ("dilation", values[3]),
                        ("return_indices", Value::Bool(indices)),
                        ("ceil_mode", Value::Bool(ceil)),
                    ],
                )
            }
            TorchClass::AdaptiveAvgPool2d => {
                let Some(size) = arg(self, 0, "output_size") else {
                    return self.error("TypeError: AdaptiveAvgPool2d(output_size)");
                };
                self.heap.incref(size);
                self.new_torch_instance(kind, vec![("output_size", size)])
            }
            _ => {
                let start = match arg(self, 0, "start_dim") {
                    Some(Value::Int(d)) => d,
                    _ => 1,
                };
                let end = match arg(self, 1, "end_dim") {
                    Some(Value::Int(d)) => d,
                    _ => -1,
                };
                self.new_torch_instance(
                    kind,
                    vec![
                        ("start_dim", Value::Int(start)),
                        ("end_dim", Value::Int(end)),
                    ],
                )
            }
        }
    }

    fn int_attrs(&mut self, module: ObjId, name: &str) -> R<Vec<i64>> {
        let s = self.sym(name);
        let v = self.get_attr(Value::Obj(module), s)?;
        let r = self.spatial_ints(v, 1, name).or_else(|_| {
            let n = self.iterable_items(v).map(|i| i.len()).unwrap_or(0);
            self.spatial_ints(v, n, name)
        });
        self.heap.decref(v);
        r
    }

    /// The forward of the modules of this file.
    pub(super) fn spatial_forward(
        &mut self,
        module: ObjId,
        kind: TorchClass,
        args: &[Value],
    ) -> R<Value> {
        let Some(&x) = args.first() else {
            return self.error("TypeError: forward() missing input");
        };
        match kind {
            TorchClass::Conv1d | TorchClass::Conv2d => {
                let (w, b) = (self.sym("weight"), self.sym("bias"));
                let weight = self.get_attr(Value::Obj(module), w)?;
                let bias = self.get_attr(Value::Obj(module), b)?;
                let p = self.sym("padding");
                let padding = self.get_attr(Value::Obj(module), p)?;
                let n = if kind == TorchClass::Conv1d { 1 } else { 2 };
                let same = matches!(padding, Value::Str(_));
                self.heap.decref(padding);
                let groups = self.int_attrs(module, "groups")?[0];
                let window = Window {
                    kernel: Vec::new(),
                    stride: self.int_attrs(module, "stride")?,
                    padding: if same {
                        Vec::new()
                    } else {
                        self.int_attrs(module, "padding")?
                    },
                    dilation: self.int_attrs(module, "dilation")?,
                };
                let r = self.convolution(x, weight, bias, n, window, groups);
                self.heap.decref(weight);
                self.heap.decref(bias);
                r
            }
            TorchClass::MaxPool2d => {
                let window = Window {
                    kernel: self.int_attrs(module, "kernel_size")?,
                    stride: self.int_attrs(module, "stride")?,
                    padding: self.int_attrs(module, "padding")?,
                    dilation: self.int_attrs(module, "dilation")?,
                };
                let (ri, cm) = (self.sym("return_indices"), self.sym("ceil_mode"));
                let indices = self.get_attr(Value::Obj(module), ri)?;
                let ceil = self.get_attr(Value::Obj(module), cm)?;
                let (indices, ceil) = (self.truth(indices)?, self.truth(ceil)?);
                self.max_pool2d(x, window, ceil, indices)
            }
            TorchClass::AdaptiveAvgPool2d => {
                let s = self.sym("output_size");
                let size = self.get_attr(Value::Obj(module), s)?;
                let r = self.adaptive_avg_pool2d(x, size);
                self.heap.decref(size);
                r
            }
            _ => {
                let start = self.int_attrs(module, "start_dim")?[0];
                let end = self.int_attrs(module, "end_dim")?[0];
                let name = self.sym("flatten");
                super::natives::call_method(
                    self,
                    x,
                    name,
                    vec![Value::Int(start), Value::Int(end)],
                    Vec::new(),
                )
            }
        }
    }

    /// `F.conv1d`/`F.conv2d` (`n` spatial dimensions); an empty `window.padding` is
    /// `padding='same'`. On autocast's lower-precision list.
    pub(super) fn convolution(
        &mut self,
        x: Value,
        weight: Value,
        bias: Value,
        n: usize,
        window: Window,
        groups: i64,
    ) -> R<Value> {
        let cast =
            self.autocast_inputs(&[x, weight, bias], super::amp::CastPolicy::LowerPrecision)?;
        let r = self.convolution_as_given(cast[0], cast[1], cast[2], n, window, groups);
        self.heap.decref_all(cast);
        r
    }

    fn convolution_as_given(
        &mut self,
        x: Value,
        weight: Value,
        bias: Value,
        n: usize,
        mut window: Window,
        groups: i64,
    ) -> R<Value> {
        let (Some(xt), Some(wt)) = (self.tensor_data(x), self.tensor_data(weight)) else {
            return self.error("TypeError: conv expects input and weight tensors");
        };
        if wt.shape.len() != n + 2 {
            return self.error(format!(
                "RuntimeError: Expected {}D weight for conv{n}d, but got weight of size {}",
                n + 2,
                shape_list(&wt.shape)
            ));
        }
        let batched = xt.shape.len() == n + 2;
        if !batched && xt.shape.len() != n + 1 {
            return self.error(format!(
                "RuntimeError: Expected {}D (unbatched) or {}D (batched) input to conv{n}d, but got input of size: {}",
                n + 1,
                n + 2,
                shape_list(&xt.shape)
            ));
        }
        let mut shape = xt.shape.clone();
        if !batched {
            shape.insert(0, 1);
        }
        window.kernel = wt.shape[2..].to_vec();
        if window.padding.is_empty() {
            // padding='same': total padding d·(k-1), split evenly (extra on the right).
            window.padding = window
                .kernel
                .iter()
                .zip(&window.dilation)
                .map(|(k, d)| d * (k - 1) / 2)
                .collect();
        }
        if shape[1] != wt.shape[1] * groups {
            return self.error(format!(
                "RuntimeError: Given groups={groups}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
                shape_list(&wt.shape),
                shape_list(&xt.shape),
                wt.shape[1] * groups,
                shape[1]
            ));
        }
        let padded: Vec<i64> = (0..n)
            .map(|i| shape[2 + i] + 2 * window.padding[i])
            .collect();
        let effective: Vec<i64> = (0..n)
            .map(|i| window.dilation[i] * (window.kernel[i] - 1) + 1)
            .collect();
        if padded.iter().zip(&effective).any(|(p, k)| p < k) {
            return self.error(format!(
                "RuntimeError: Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size can't be greater than actual input size",
                joined(&padded, " x "),
                joined(&effective, " x ")
            ));
        }
        let mut out_shape = vec![shape[0], wt.shape[0]];
        for i in 0..n {
            out_shape.push((padded[i] - effective[i]) / window.stride[i].max(1) + 1);
        }
        if !batched {
            out_shape.remove(0);
        }
        let category = self.output_category(&[x, weight, bias]);
        let out = self.new_tensor_as(out_shape, xt.dtype, xt.device, None, category)?;
        autograd::record_op(self, out, "convolution", &[x, weight, bias]);
        Ok(out)
    }

    /// `F.max_pool2d`: `max_pool2d_with_indices`, whose indices the node keeps.
    pub(super) fn max_pool2d(
        &mut self,
        x: Value,
        window: Window,
        ceil_mode: bool,
        return_indices: bool,
    ) -> R<Value> {
        let Some(xt) = self.tensor_data(x) else {
            return self.error("TypeError: max_pool2d expects a tensor");
        };
        let rank = xt.shape.len();
        if rank != 3 && rank != 4 {
            return self.error(format!(
                "RuntimeError: non-empty 3D or 4D (batch mode) tensor expected for input, but got: {}",
                shape_list(&xt.shape)
            ));
        }
        let mut out_shape = xt.shape[..rank - 2].to_vec();
        for i in 0..2 {
            let (k, s, p, d) = (
                window.kernel[i],
                window.stride[i].max(1),
                window.padding[i],
                window.dilation[i],
            );
            let effective = d * (k - 1) + 1;
            if p > effective / 2 {
                return self.error(format!(
                    "RuntimeError: pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} and dilation={d}"
                ));
            }
            let size = xt.shape[rank - 2 + i];
            let span = size + 2 * p - effective + if ceil_mode { s - 1 } else { 0 };
            let mut o = span.div_euclid(s) + 1;
            if ceil_mode && (o - 1) * s >= size + p {
                o -= 1;
            }
            out_shape.push(o);
        }
        if out_shape[rank - 2] < 1 || out_shape[rank - 1] < 1 {
            let input: Vec<i64> = xt.shape[rank - 3..].to_vec();
            let mut output = vec![xt.shape[rank - 3]];
            output.extend_from_slice(&out_shape[rank - 2..]);
            return self.error(format!(
                "RuntimeError: Given input size: ({}). Calculated output size: ({}). Output size is too small",
                joined(&input, "x"),
                joined(&output, "x")
            ));
        }
        let category = self.output_category(&[x]);
        let out = self.new_tensor_as(out_shape.clone(), xt.dtype, xt.device, None, category)?;
        let indices = self.new_tensor_as(out_shape, Dtype::Int64, xt.device, None, category)?;
        let recorded = self.grad_enabled && autograd::requires_grad(self, x);
        if let (true, Value::Obj(out_id), Some(it)) = (recorded, out, self.tensor_data(indices)) {
            // self and result1 (the indices), as the table's row says.
            let rule = autograd::row("max_pool2d");
            let outputs = autograd::Outputs {
                first: Some(out_id),
                rest: &[it.storage],
            };
            let node = autograd::build_node_with_results(
                self,
                rule.node,
                rule.flow,
                (&[x], 1),
                rule.saves,
                outputs,
            );
            autograd::set_history(self, out_id, node);
        }
        if return_indices {
            Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![out, indices]))))
        } else {
            self.heap.decref(indices);
            Ok(out)
        }
    }

    /// `F.adaptive_avg_pool2d(input, output_size)`; a 1×1 output is a mean over the last
    /// two dimensions, as ATen computes it.
    pub(super) fn adaptive_avg_pool2d(&mut self, x: Value, size: Value) -> R<Value> {
        let Some(xt) = self.tensor_data(x) else {
            return self.error("TypeError: adaptive_avg_pool2d expects a tensor");
        };
        let rank = xt.shape.len();
        if rank != 3 && rank != 4 {
            return self.error(format!(
                "RuntimeError: adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {}",
                shape_list(&xt.shape)
            ));
        }
        let wanted: Vec<Value> = match size {
            Value::Int(_) | Value::None => vec![size, size],
            v => self.iterable_items(v)?,
        };
        if wanted.len() != 2 {
            return self.error("RuntimeError: adaptive_avg_pool2d: output_size must be 2");
        }
        let mut out_shape = xt.shape[..rank - 2].to_vec();
        for (i, w) in wanted.iter().enumerate() {
            out_shape.push(match w {
                Value::Int(d) => *d,
                Value::None => xt.shape[rank - 2 + i],
                _ => return self.error("TypeError: output_size must hold ints or None"),
            });
        }
        let global = out_shape[rank - 2..] == [1, 1];
        let category = self.output_category(&[x]);
        let out = self.new_tensor_as(out_shape, xt.dtype, xt.device, None, category)?;
        if global {
            autograd::record_op(self, out, "mean_dim", &[x]);
        } else {
            autograd::record_op(self, out, "adaptive_avg_pool2d", &[x]);
        }
        Ok(out)
    }
}

/// `[a, b, c]`, as PyTorch prints sizes.
fn shape_list(shape: &[i64]) -> String {
    format!("[{}]", joined(shape, ", "))
}
