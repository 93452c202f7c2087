//! `optimizer.step()`: the state each optimizer creates at its first step and the
//! temporaries its foreach kernels allocate per step.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype};

impl Interpreter<'_> {
    pub(super) fn optimizer_params(&mut self, opt: ObjId) -> R<Vec<ObjId>> {
        let s = self.sym("params");
        let list = self.get_attr(Value::Obj(opt), s)?;
        let items = self.iterable_items(list)?;
        self.heap.decref(list);
        Ok(items.into_iter().filter_map(|v| v.obj()).collect())
    }

    /// `optimizer.step()`: state appears at the first step (Adam's `exp_avg` and
    /// `exp_avg_sq`, SGD's momentum buffer, a clone of the gradient), in a dict per
    /// parameter. The foreach kernels update state and parameters in place; what they
    /// allocate for the step, and free when it ends, is Adam's denominator
    /// (`_foreach_sqrt(exp_avg_sq)`, one per parameter) and, with `weight_decay` in SGD
    /// or Adam (not AdamW, which decays in place), the decayed gradients.
    pub(super) fn optimizer_step(&mut self, opt: ObjId, kind: TorchClass) -> R<()> {
        let params = self.optimizer_params(opt)?;
        let s = self.sym("state");
        let state = self.get_attr(Value::Obj(opt), s)?;
        let m = self.sym("momentum");
        let momentum = self.get_attr(Value::Obj(opt), m)?;
        let is_zero = |v: Value| matches!(v, Value::Float(f) if f == 0.0) || v == Value::Int(0);
        let uses_momentum = !is_zero(momentum);
        let wd = self.sym("weight_decay");
        let weight_decay = self.get_attr(Value::Obj(opt), wd)?;
        let decays_out_of_place = !is_zero(weight_decay) && kind != TorchClass::AdamW;
        self.heap.decref(weight_decay);
        let Value::Obj(state_id) = state else {
            return self.error("TypeError: optimizer state is missing");
        };
        let mut temporaries = Vec::new();
        for (i, p) in params.iter().enumerate() {
            let Some(t) = self.tensor_data(Value::Obj(*p)) else {
                continue;
            };
            if t.grad.is_none() {
                continue;
            }
            let key = Value::Int(i as i64);
            let exists = matches!(self.heap.kind(state_id), ObjKind::Dict(items) if items.iter().any(|(k, _)| *k == key));
            let wants_state = kind != TorchClass::Sgd || uses_momentum;
            if !exists && wants_state {
                let mut entries = Vec::new();
                if kind == TorchClass::Sgd {
                    let buf = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("momentum_buffer")), buf));
                } else {
                    let step = self.new_tensor_as(
                        vec![],
                        Dtype::Float32,
                        DeviceKind::Cpu,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("step")), step));
                    let a = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("exp_avg")), a));
                    let b = self.new_tensor_as(
                        t.shape.clone(),
                        t.dtype,
                        t.device,
                        None,
                        Category::OptimizerState,
                    )?;
                    entries.push((Value::Str(self.sym("exp_avg_sq")), b));
                }
                let d = self.alloc(ObjKind::Dict(Vec::new()));
                for (k, v) in entries {
                    self.dict_set(d, k, v);
                }
                self.dict_set(state_id, key, Value::Obj(d));
            }
            let temporaries_per_param =
                usize::from(kind != TorchClass::Sgd) + usize::from(decays_out_of_place);
            for _ in 0..temporaries_per_param {
                temporaries.push(self.new_storage(
                    &t.shape,
                    t.dtype,
                    t.device,
                    Category::Temporary,
                )?);
            }
        }
        for st in temporaries {
            self.heap.dropped_storage_refs.push(st);
        }
        self.heap.decref(state);
        self.heap.decref(momentum);
        Ok(())
    }
}
