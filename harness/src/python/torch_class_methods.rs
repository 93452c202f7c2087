//! Methods that torch classes provide natively on their instances (`model.parameters()`,
//! `opt.zero_grad()`, `ctx.save_for_backward(...)`), dispatched by class.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, DeviceKind, Dtype};

impl Interpreter<'_> {
    /// Methods torch classes provide natively on their instances (`model.parameters()`,
    /// `opt.step()`, `ctx.save_for_backward(...)`): `None` when `name` is not one of them.
    pub(super) fn torch_method(
        &mut self,
        recv: ObjId,
        kind: TorchClass,
        name: &str,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<Option<Value>> {
        let kw = |it: &Self, n: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == n)
                .map(|(_, v)| *v)
        };
        let is_module = kind.is_module();
        let is_optimizer = kind.is_optimizer();
        if is_module && let Some(v) = self.module_api_method(recv, name, args, kwargs)? {
            return Ok(Some(v));
        }
        if kind == TorchClass::Function && name == "apply" {
            // `apply` is a classmethod: an instance reaches its class's.
            let ObjKind::Instance { class, .. } = self.heap.kind(recv) else {
                return Ok(None);
            };
            let class = *class;
            for &a in args {
                self.heap.incref(a);
            }
            return self.custom_function_apply(class, args.to_vec()).map(Some);
        }
        if kind == TorchClass::DistributedDataParallel && name == "no_sync" {
            // Gradients accumulate in the parameters without the reducer's copy into its
            // buckets (which allocates nothing): a context manager that only restores state.
            self.heap.incref(Value::None);
            return Ok(Some(self.new_wrapper(
                crate::heap::WrapperKind::NullContext,
                vec![Value::None],
            )));
        }
        if kind == TorchClass::RemovableHandle && name == "remove" {
            return self.remove_hook(recv).map(Some);
        }
        if kind.is_scheduler() {
            return self.scheduler_method(recv, kind, name, args);
        }
        if kind == TorchClass::GradScaler {
            return self.grad_scaler_method(recv, name, args);
        }
        if let Some(v) = self.container_method(recv, kind, name, args)? {
            return Ok(Some(v));
        }
        let result = match name {
            "parameters" if is_module => {
                let mut ps = Vec::new();
                self.module_parameters(recv, &mut ps);
                let items: Vec<Value> = ps.into_iter().map(Value::Obj).collect();
                for &p in &items {
                    self.heap.incref(p);
                }
                Value::Obj(self.alloc(ObjKind::List(items)))
            }
            "zero_grad" if is_module || is_optimizer => {
                let set_to_none = match kw(self, "set_to_none").or(args.first().copied()) {
                    Some(v) => self.truth(v)?,
                    None => true,
                };
                let params = if is_module {
                    let mut ps = Vec::new();
                    self.module_parameters(recv, &mut ps);
                    ps
                } else {
                    self.optimizer_params(recv)?
                };
                if set_to_none {
                    for p in params {
                        let old = match self.heap.kind_mut(p) {
                            ObjKind::Tensor(t) => t.grad.take(),
                            _ => None,
                        };
                        if let Some(g) = old {
                            self.heap.decref_id(g);
                        }
                    }
                }
                Value::None
            }
            "cuda" | "half" | "float" | "to" | "cpu" | "bfloat16" | "double" if is_module => {
                let mut params = Vec::new();
                self.module_parameters(recv, &mut params);
                // `Module._apply` moves buffers too.
                let mut buffers = Vec::new();
                self.walk_module(recv, "", "buffers", &mut buffers)?;
                for (k, b) in buffers {
                    self.heap.decref(k);
                    if let Value::Obj(b) = b {
                        if !params.contains(&b) {
                            params.push(b);
                        }
                        self.heap.decref_id(b);
                    }
                }
                for p in params {
                    let Some(t) = self.tensor_data(Value::Obj(p)) else {
                        continue;
                    };
                    let (mut device, mut dtype) = (t.device, t.dtype);
                    match name {
                        "cuda" => device = DeviceKind::Cuda,
                        "cpu" => device = DeviceKind::Cpu,
                        "half" => dtype = Dtype::Float16,
                        "float" => dtype = Dtype::Float32,
                        "double" => dtype = Dtype::Float64,
                        "bfloat16" => dtype = Dtype::BFloat16,
                        _ => {
                            for &v in args {
                                match v {
                                    Value::Dtype(d) => dtype = d,
                                    Value::Str(s) if self.names.name(s).starts_with("cuda") => {
                                        device = DeviceKind::Cuda
                                    }
                                    Value::Str(_) => device = DeviceKind::Cpu,
                                    Value::Device(d) => device = d,
                                    Value::Int(_) => device = DeviceKind::Cuda,
                                    _ => {}
                                }
                            }
                        }
                    }
                    // Dtype casts apply to floating tensors only (`num_batches_tracked`
                    // stays an integer).
                    if !t.dtype.is_floating() {
                        dtype = t.dtype;
                    }
                    if device == t.device && dtype == t.dtype {
                        continue;
                    }
                    // `Module._apply`: `param.data = fn(param.data)`, the object stays.
                    let storage = self.new_storage(&t.shape, dtype, device, Category::Parameter)?;
                    if let ObjKind::Tensor(pt) = self.heap.kind_mut(p) {
                        pt.storage = storage;
                        pt.dtype = dtype;
                        pt.device = device;
                    }
                    self.heap.dropped_storage_refs.push(t.storage);
                }
                self.heap.incref(Value::Obj(recv));
                Value::Obj(recv)
            }
            "train" | "eval" | "requires_grad_" if is_module => {
                self.heap.incref(Value::Obj(recv));
                Value::Obj(recv)
            }
            "step" if is_optimizer => {
                self.optimizer_step(recv, kind)?;
                Value::None
            }
            "state_dict" if is_optimizer => self.optimizer_state_dict(recv)?,
            "load_state_dict" if is_optimizer => {
                let Some(&sd) = args.first().or(kwargs.first().map(|(_, v)| v)) else {
                    return self.error("TypeError: load_state_dict() missing 'state_dict'");
                };
                self.optimizer_load_state_dict(recv, sd)?
            }
            "add_param_group" if is_optimizer => {
                let Some(&g) = args.first().or(kwargs.first().map(|(_, v)| v)) else {
                    return self.error("TypeError: add_param_group() missing 'param_group'");
                };
                self.add_param_group(recv, g)?;
                Value::None
            }
            "save_for_backward" if kind == TorchClass::FunctionCtx => {
                for &a in args {
                    self.heap.incref(a);
                }
                let t = self.alloc(ObjKind::Tuple(args.to_vec()));
                let s = self.sym("to_save");
                self.set_attr(Value::Obj(recv), s, Value::Obj(t))?;
                Value::None
            }
            // `Fn.apply` reads both: the named outputs get no history, and a `False`
            // here passes `None` to `backward` for a gradient that did not arrive.
            "mark_non_differentiable" | "set_materialize_grads"
                if kind == TorchClass::FunctionCtx =>
            {
                let (name, value) = if name == "set_materialize_grads" {
                    let on = match args.first() {
                        Some(&v) => self.truth(v)?,
                        None => return self.error("TypeError: set_materialize_grads() missing 1 required positional argument: 'value'"),
                    };
                    ("materialize_grads", Value::Bool(on))
                } else {
                    for &a in args {
                        self.heap.incref(a);
                    }
                    (
                        "non_differentiable",
                        Value::Obj(self.alloc(ObjKind::Tuple(args.to_vec()))),
                    )
                };
                let s = self.sym(name);
                self.set_attr(Value::Obj(recv), s, value)?;
                Value::None
            }
            // `ctx.dirty_tensors`: `Fn.apply` bumps their versions and rebases their history
            // (custom_function_dirty.rs).
            "mark_dirty" if kind == TorchClass::FunctionCtx => {
                for &a in args {
                    self.heap.incref(a);
                }
                let t = self.alloc(ObjKind::Tuple(args.to_vec()));
                let s = self.sym("dirty_tensors");
                self.set_attr(Value::Obj(recv), s, Value::Obj(t))?;
                Value::None
            }
            _ => return Ok(None),
        };
        Ok(Some(result))
    }
}
