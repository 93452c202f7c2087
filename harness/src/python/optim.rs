//! Optimizers: construction (`SGD`, `Adam`, `AdamW`, `RMSprop`, `Adagrad`), the state each
//! creates and when (PyTorch 2.x), and what `optimizer.step()` allocates for the step.
//!
//! State: SGD's `momentum_buffer` (a clone of the gradient at the first step, with
//! momentum); Adam's `step`, `exp_avg`, `exp_avg_sq` and, with `amsgrad`, `max_exp_avg_sq`;
//! RMSprop's `step`, `square_avg`, `momentum_buffer` (momentum > 0) and `grad_avg`
//! (`centered`), all at the first step of a parameter with a gradient; Adagrad's `step` and
//! `sum` (filled with `initial_accumulator_value`) for every parameter at construction.
//! `step` is a 0-d float32 tensor on the CPU, on the parameter's device with `capturable`
//! or `fused`.
//!
//! Step temporaries depend on the implementation PyTorch picks: `fused=True` runs one
//! kernel with none; the foreach path (the default when every parameter is a CUDA tensor
//! and `differentiable` is off, or `foreach=True`) allocates whole lists at once, one
//! tensor per parameter, so its peak is model-sized; the single-tensor path
//! (`foreach=False`, CPU parameters) allocates per parameter and frees before the next.
//! The lists each `_multi_tensor_*` allocates are in [`foreach_plan`].

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};
use crate::torch::{Category, DeviceKind, Dtype, StorageId};

impl TorchClass {
    /// A `torch.optim` optimizer the model implements.
    pub(super) fn is_optimizer(self) -> bool {
        matches!(
            self,
            TorchClass::Sgd
                | TorchClass::Adam
                | TorchClass::AdamW
                | TorchClass::RmsProp
                | TorchClass::Adagrad
        )
    }
}

/// The hyperparameters that change memory, read from the optimizer's attributes.
#[derive(Debug, Clone, Copy, Default)]
struct Hyper {
    momentum: bool,
    weight_decay: bool,
    maximize: bool,
    amsgrad: bool,
    centered: bool,
    capturable: bool,
    differentiable: bool,
    /// `foreach=`: `None` lets PyTorch choose.
    foreach: Option<bool>,
    fused: bool,
}

/// One step of a temporaries plan: allocate a list (one tensor per parameter, or one 0-d
/// tensor per parameter), or free a list allocated earlier.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    /// A list of parameter-shaped tensors, named for readers.
    List(&'static str),
    /// A list of 0-d float32 tensors on the parameters' device.
    Scalars(&'static str),
    Free(&'static str),
}

/// The lists `_multi_tensor_<kind>` allocates in order, and where it frees them (the rest
/// are freed when the step returns).
fn foreach_plan(kind: TorchClass, h: Hyper) -> Vec<Op> {
    let mut ops = Vec::new();
    // `device_grads = torch._foreach_neg(...)` with maximize, or the out-of-place weight
    // decay (`torch._foreach_add(grads, params, alpha=wd)`); maximize then decays in place.
    let decoupled = kind == TorchClass::AdamW;
    let new_grads = h.maximize || (h.weight_decay && !decoupled);
    if new_grads {
        ops.push(Op::List("device_grads"));
    }
    match kind {
        TorchClass::Sgd => {}
        TorchClass::Adam | TorchClass::AdamW => {
            // `del device_grads` before the denominator is built.
            if new_grads {
                ops.push(Op::Free("device_grads"));
            }
            if h.capturable {
                ops.push(Op::Scalars("bias_correction1"));
                ops.push(Op::Scalars("bias_correction2"));
            }
            ops.push(Op::List("exp_avg_sq_sqrt"));
        }
        TorchClass::RmsProp => {
            // `avg = torch._foreach_sqrt(square_avgs)` (centered: `_foreach_addcmul`).
            ops.push(Op::List("avg"));
            if h.momentum && h.capturable {
                ops.push(Op::List("momentum_lr"));
            }
        }
        TorchClass::Adagrad => {
            ops.push(Op::List("std"));
            // Without a gradient copy of its own, `numerator = torch._foreach_mul(...)`.
            if !new_grads {
                ops.push(Op::List("numerator"));
            }
        }
        _ => {}
    }
    ops
}

/// The temporaries `_single_tensor_<kind>` allocates for one parameter (freed before
/// the next parameter's).
fn single_tensor_plan(kind: TorchClass, h: Hyper) -> Vec<Op> {
    let mut ops = Vec::new();
    let decoupled = kind == TorchClass::AdamW;
    if h.maximize {
        ops.push(Op::List("-grad"));
    }
    if h.weight_decay && !decoupled {
        ops.push(Op::List("grad.add(param)"));
        // Rebinding `grad` frees the negated copy.
        if h.maximize {
            ops.push(Op::Free("-grad"));
        }
    }
    match kind {
        TorchClass::Adam | TorchClass::AdamW => {
            // `denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)`.
            ops.push(Op::List("sqrt"));
            ops.push(Op::List("denom"));
            ops.push(Op::Free("sqrt"));
        }
        TorchClass::RmsProp => ops.push(Op::List("avg")),
        TorchClass::Adagrad => {
            // `std = state_sum.sqrt().add_(eps)`; `param.addcdiv_(grad, std, value=-clr)`.
            ops.push(Op::List("std"));
        }
        _ => {}
    }
    ops
}

impl Interpreter<'_> {
    /// Every parameter of every group, in group order.
    pub(super) fn optimizer_params(&mut self, opt: ObjId) -> R<Vec<ObjId>> {
        let groups = self.optimizer_groups(opt)?;
        Ok(groups.into_iter().flat_map(|(_, ps)| ps).collect())
    }

    /// `torch.optim.<kind>(params, ...)`: the parameter list, the state dict, the
    /// memory-relevant hyperparameters; Adagrad's state for every parameter.
    pub(super) fn construct_optimizer(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let Some(&params) = args.first() else {
            return self.error("TypeError: the optimizer needs parameters");
        };
        let on = |it: &mut Self, name: &str| -> R<bool> {
            match it.keyword(kwargs, name) {
                Some(v) => it.truth(v),
                None => Ok(false),
            }
        };
        if on(self, "fused")? && on(self, "foreach")? {
            return self.error("RuntimeError: `fused` and `foreach` cannot be `True` together.");
        }
        let defaults = self.optimizer_defaults(kind, args, kwargs);
        let groups = self.alloc(ObjKind::List(Vec::new()));
        let state = self.new_optimizer_state()?;
        let attrs = vec![
            ("defaults", Value::Obj(defaults)),
            ("param_groups", Value::Obj(groups)),
            ("state", Value::Obj(state)),
        ];
        let opt = self.new_torch_instance(kind, attrs)?;
        self.install_param_groups(opt, params)?;
        if kind == TorchClass::Adagrad {
            // Adagrad's `__init__` fills the state of the groups given to it.
            for (group, params) in self.optimizer_groups(opt)? {
                let h = self.hyper(group)?;
                for p in params {
                    let Some(t) = self.tensor_data(Value::Obj(p)) else {
                        continue;
                    };
                    let step = self.state_step_tensor(t.device, h)?;
                    let sum = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    self.new_param_state(state, p, vec![("step", step), ("sum", sum)]);
                }
            }
        }
        Ok(opt)
    }

    /// The memory-relevant settings of one parameter group (its dict's entries).
    fn hyper(&mut self, group: ObjId) -> R<Hyper> {
        let flag = |it: &mut Self, name: &'static str| -> R<Option<bool>> {
            let s = it.names.intern_static(name);
            let r = match it.dict_str_get(group, s) {
                None | Some(Value::None) => None,
                Some(Value::Float(f)) => Some(f != 0.0),
                Some(Value::Int(i)) => Some(i != 0),
                Some(other) => Some(it.truth(other)?),
            };
            Ok(r)
        };
        Ok(Hyper {
            momentum: flag(self, "momentum")?.unwrap_or(false),
            weight_decay: flag(self, "weight_decay")?.unwrap_or(false),
            maximize: flag(self, "maximize")?.unwrap_or(false),
            amsgrad: flag(self, "amsgrad")?.unwrap_or(false),
            centered: flag(self, "centered")?.unwrap_or(false),
            capturable: flag(self, "capturable")?.unwrap_or(false),
            differentiable: flag(self, "differentiable")?.unwrap_or(false),
            foreach: flag(self, "foreach")?,
            fused: flag(self, "fused")?.unwrap_or(false),
        })
    }

    /// `state['step']`: a 0-d float32 tensor, on the parameter's device when capturable
    /// or fused (on the CPU it costs no device memory).
    fn state_step_tensor(&mut self, device: DeviceKind, h: Hyper) -> R<Value> {
        let device = if h.capturable || h.fused {
            device
        } else {
            DeviceKind::Cpu
        };
        self.new_tensor_as(
            vec![],
            Dtype::Float32,
            device,
            None,
            Category::OptimizerState,
        )
    }

    /// `self.state[p] = {...}`, keyed by the parameter tensor.
    fn new_param_state(&mut self, state: ObjId, param: ObjId, entries: Vec<(&str, Value)>) {
        let d = self.alloc(ObjKind::Dict(Vec::new()));
        for (k, v) in entries {
            let k = Value::Str(self.sym(k));
            self.dict_set(d, k, v);
        }
        self.heap.incref(Value::Obj(param));
        self.dict_set(state, Value::Obj(param), Value::Obj(d));
    }

    /// `optimizer.step()`: lazily created state, then the step's temporaries.
    /// PyTorch steps each group in turn (one `_multi_tensor_*` call per group, its
    /// temporaries freed before the next group's).
    pub(super) fn optimizer_step(&mut self, opt: ObjId, kind: TorchClass) -> R<()> {
        let groups = self.optimizer_groups(opt)?;
        let state = self.optimizer_state(opt)?;
        let mut r = Ok(());
        for (group, params) in groups {
            r = self.group_step(kind, state, group, &params);
            if r.is_err() {
                break;
            }
        }
        self.heap.decref_id(state);
        r
    }

    /// One group's step: state created as the group's settings say, then temporaries.
    fn group_step(
        &mut self,
        kind: TorchClass,
        state: ObjId,
        group: ObjId,
        params: &[ObjId],
    ) -> R<()> {
        let h = self.hyper(group)?;
        let mut with_grad = Vec::new();
        for &p in params {
            let Some(t) = self.tensor_data(Value::Obj(p)) else {
                continue;
            };
            if t.grad.is_none() {
                continue;
            }
            let key = Value::Obj(p);
            let exists = matches!(self.heap.kind(state), ObjKind::Dict(items) if items.iter().any(|(k, _)| *k == key));
            if !exists && kind == TorchClass::Adagrad {
                // Adagrad fills its state only in `__init__`: a parameter added later by
                // `add_param_group` has none (pytorch/pytorch#53712).
                return self.error("KeyError: 'sum'");
            }
            if !exists {
                let mut names: Vec<&str> = Vec::new();
                match kind {
                    TorchClass::Sgd if h.momentum => names.push("momentum_buffer"),
                    TorchClass::Adam | TorchClass::AdamW => {
                        names.extend(["step", "exp_avg", "exp_avg_sq"]);
                        if h.amsgrad {
                            names.push("max_exp_avg_sq");
                        }
                    }
                    TorchClass::RmsProp => {
                        names.extend(["step", "square_avg"]);
                        if h.momentum {
                            names.push("momentum_buffer");
                        }
                        if h.centered {
                            names.push("grad_avg");
                        }
                    }
                    _ => {}
                }
                if !names.is_empty() {
                    let mut entries = Vec::new();
                    for name in names {
                        let v = if name == "step" {
                            self.state_step_tensor(t.device, h)?
                        } else {
                            self.new_tensor_as(
                                t.shape.clone(),
                                t.dtype,
                                t.device,
                                None,
                                Category::OptimizerState,
                            )?
                        };
                        entries.push((name, v));
                    }
                    self.new_param_state(state, p, entries);
                }
            }
            with_grad.push(t);
        }
        // The update writes each parameter in place (`add_`/`addcdiv_`, their foreach and
        // fused forms; AdamW's decoupled weight decay is a `mul_` before it), bumping the
        // version that backward checks against what graph nodes saved.
        let writes = if kind == TorchClass::AdamW && h.weight_decay {
            2
        } else {
            1
        };
        for t in &with_grad {
            for _ in 0..writes {
                self.storages.bump_version(t.storage);
            }
        }
        if h.fused || with_grad.is_empty() {
            return Ok(());
        }
        // `_default_to_fused_or_foreach`: foreach when every parameter is a CUDA tensor.
        let foreach = !h.differentiable
            && h.foreach
                .unwrap_or_else(|| with_grad.iter().all(|t| t.device == DeviceKind::Cuda));
        let shapes: Vec<_> = with_grad
            .iter()
            .map(|t| (t.shape.clone(), t.dtype, t.device))
            .collect();
        if foreach {
            self.run_temporaries_plan(&foreach_plan(kind, h), &shapes)
        } else {
            let plan = single_tensor_plan(kind, h);
            for one in &shapes {
                self.run_temporaries_plan(&plan, std::slice::from_ref(one))?;
            }
            Ok(())
        }
    }

    /// Allocates and frees the lists of `plan` for `params`; whatever is still allocated
    /// at the end is freed then.
    fn run_temporaries_plan(
        &mut self,
        plan: &[Op],
        params: &[(Vec<i64>, Dtype, DeviceKind)],
    ) -> R<()> {
        let mut live: Vec<(&'static str, Vec<StorageId>)> = Vec::new();
        for op in plan {
            match *op {
                Op::List(name) | Op::Scalars(name) => {
                    let mut list = Vec::with_capacity(params.len());
                    for (shape, dtype, device) in params {
                        let st = if matches!(op, Op::Scalars(_)) {
                            self.new_storage(&[], Dtype::Float32, *device, Category::Temporary)?
                        } else {
                            self.new_storage(shape, *dtype, *device, Category::Temporary)?
                        };
                        list.push(st);
                    }
                    live.push((name, list));
                }
                Op::Free(name) => {
                    if let Some(i) = live.iter().position(|(n, _)| *n == name) {
                        let (_, list) = live.remove(i);
                        self.heap.dropped_storage_refs.extend(list);
                        self.release_dropped_storages(None);
                    }
                }
            }
        }
        // Freed with the statement's other releases.
        for (_, list) in live {
            self.heap.dropped_storage_refs.extend(list);
        }
        Ok(())
    }
}
