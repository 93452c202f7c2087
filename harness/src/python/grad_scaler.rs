//! `torch.amp.GradScaler`: its device tensors and when they live. `_scale` (float32) and
//! `_growth_tracker` (int32), one element each, are created at the first `scale()`;
//! `unscale_(opt)` makes a float32 `found_inf` per optimizer, kept in
//! `_per_optimizer_states` until `update()` replaces that dict, and computes the inverse
//! scale through a float64 copy and its reciprocal (freed as the chain goes on). Gradients
//! are unscaled in place. Values are never computed, so no inf is ever found and `step`
//! always runs the optimizer's step.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype};
use ruff_python_ast::Operator;

/// `OptState`: what the scaler has done to an optimizer since the last `update()`.
const UNSCALED: i64 = 1;
const STEPPED: i64 = 2;

impl Interpreter<'_> {
    /// `GradScaler(device="cuda", init_scale=2.0**16, ...)`: nothing on the device yet.
    pub(super) fn construct_grad_scaler(
        &mut self,
        args: &[Value],
        kwargs: &[(crate::heap::Sym, Value)],
    ) -> R<ObjId> {
        let device = kwargs
            .iter()
            .find(|(k, _)| self.names.name(*k) == "device")
            .map(|(_, v)| *v)
            .or(args.first().copied());
        if let Some(Value::Str(s)) = device
            && self.names.name(s) != "cuda"
        {
            return self.unsupported("GradScaler on a device other than \"cuda\"");
        }
        let states = self.alloc(ObjKind::Dict(Vec::new()));
        self.new_torch_instance(
            TorchClass::GradScaler,
            vec![
                ("_scale", Value::None),
                ("_growth_tracker", Value::None),
                ("_per_optimizer_states", Value::Obj(states)),
            ],
        )
    }

    /// `scale`, `unscale_`, `step`, `update`, `get_scale`.
    pub(super) fn grad_scaler_method(
        &mut self,
        scaler: ObjId,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        Ok(Some(match (name, args) {
            ("scale", [outputs]) => self.scaler_scale(scaler, *outputs)?,
            ("unscale_", [Value::Obj(opt)]) => {
                self.scaler_unscale(scaler, *opt)?;
                Value::None
            }
            ("step", [Value::Obj(opt), ..]) => self.scaler_step(scaler, *opt)?,
            ("update", []) => {
                self.scaler_update(scaler)?;
                Value::None
            }
            // Values are not modelled: the initial scale.
            ("get_scale", []) => Value::Float(65536.0),
            _ => return Ok(None),
        }))
    }

    fn scaler_attr(&mut self, scaler: ObjId, name: &str) -> R<Value> {
        let sym = self.names.intern(name);
        self.get_attr(Value::Obj(scaler), sym)
    }

    fn scaler_set(&mut self, scaler: ObjId, name: &str, value: Value) -> R<()> {
        let sym = self.names.intern(name);
        self.set_attr(Value::Obj(scaler), sym, value)
    }

    /// `outputs * self._scale`, creating `_scale` and `_growth_tracker` on first use.
    fn scaler_scale(&mut self, scaler: ObjId, outputs: Value) -> R<Value> {
        let Some(device) = self.tensor_data(outputs).map(|t| t.device) else {
            return self.error("TypeError: GradScaler.scale expects a tensor");
        };
        let mut scale = self.scaler_attr(scaler, "_scale")?;
        if scale == Value::None {
            scale = self.new_tensor_as(
                vec![],
                Dtype::Float32,
                device,
                None,
                Category::OptimizerState,
            )?;
            self.heap.incref(scale);
            self.scaler_set(scaler, "_scale", scale)?;
            let tracker =
                self.new_tensor_as(vec![], Dtype::Int32, device, None, Category::OptimizerState)?;
            self.scaler_set(scaler, "_growth_tracker", tracker)?;
        }
        let r = super::natives::tensor_binary(self, Operator::Mult, outputs, scale, false);
        self.heap.decref(scale);
        r
    }

    /// The per-optimizer state `(stage, found_inf)` of `opt`, if any (borrowed).
    fn scaler_state(&mut self, scaler: ObjId, opt: ObjId) -> R<Option<(i64, Value)>> {
        let states = self.scaler_attr(scaler, "_per_optimizer_states")?;
        self.heap.decref(states);
        let Value::Obj(d) = states else {
            return Ok(None);
        };
        let key = Value::Int(i64::from(opt.0));
        let ObjKind::Dict(items) = self.heap.kind(d) else {
            return Ok(None);
        };
        let Some(&(_, Value::Obj(t))) = items.iter().find(|(k, _)| *k == key) else {
            return Ok(None);
        };
        Ok(match self.heap.kind(t) {
            ObjKind::Tuple(v) => match v.as_slice() {
                [Value::Int(stage), found] => Some((*stage, *found)),
                _ => None,
            },
            _ => None,
        })
    }

    fn scaler_set_state(&mut self, scaler: ObjId, opt: ObjId, stage: i64, found: Value) -> R<()> {
        let states = self.scaler_attr(scaler, "_per_optimizer_states")?;
        self.heap.decref(states);
        let Value::Obj(d) = states else { return Ok(()) };
        let state = self.alloc(ObjKind::Tuple(vec![Value::Int(stage), found]));
        self.dict_set(d, Value::Int(i64::from(opt.0)), Value::Obj(state));
        Ok(())
    }

    /// `unscale_(optimizer)`.
    fn scaler_unscale(&mut self, scaler: ObjId, opt: ObjId) -> R<()> {
        let scale = self.scaler_attr(scaler, "_scale")?;
        let Some(scale_t) = self.tensor_data(scale) else {
            self.heap.decref(scale);
            return self.error(
                "AssertionError: Attempted unscale_ but _scale is None.  This may indicate your script did not use scaler.scale(loss or outputs) earlier in the iteration.",
            );
        };
        self.heap.decref(scale);
        match self.scaler_state(scaler, opt)? {
            Some((UNSCALED, _)) => {
                return self.error("RuntimeError: unscale_() has already been called on this optimizer since the last update().");
            }
            Some((_, _)) => {
                return self.error("RuntimeError: unscale_() is being called after step().");
            }
            None => {}
        }
        // `inv_scale = self._scale.double().reciprocal().float()`.
        let device = scale_t.device;
        let double =
            self.new_tensor_as(vec![], Dtype::Float64, device, None, Category::Temporary)?;
        let reciprocal =
            self.new_tensor_as(vec![], Dtype::Float64, device, None, Category::Temporary)?;
        self.heap.decref(double);
        let inv_scale =
            self.new_tensor_as(vec![], Dtype::Float32, device, None, Category::Temporary)?;
        self.heap.decref(reciprocal);
        let found_inf = self.new_tensor_as(
            vec![],
            Dtype::Float32,
            device,
            None,
            Category::OptimizerState,
        )?;
        // `_unscale_grads_(allow_fp16=False)`: grads are unscaled in place.
        let params = self.optimizer_params(opt)?;
        for p in params {
            let half_grad = match self.heap.kind(p) {
                ObjKind::Tensor(t) => t
                    .grad
                    .and_then(|g| self.tensor_data(Value::Obj(g)))
                    .is_some_and(|g| g.dtype == Dtype::Float16 && g.device == DeviceKind::Cuda),
                _ => false,
            };
            if half_grad {
                self.heap.decref(inv_scale);
                self.heap.decref(found_inf);
                return self.error("ValueError: Attempting to unscale FP16 gradients.");
            }
        }
        self.heap.decref(inv_scale);
        self.scaler_set_state(scaler, opt, UNSCALED, found_inf)
    }

    /// `step(optimizer)`: unscales if not yet done, then runs `optimizer.step()`.
    fn scaler_step(&mut self, scaler: ObjId, opt: ObjId) -> R<Value> {
        match self.scaler_state(scaler, opt)? {
            Some((STEPPED, _)) => {
                return self.error(
                    "RuntimeError: step() has already been called since the last update().",
                );
            }
            Some(_) => {}
            None => self.scaler_unscale(scaler, opt)?,
        }
        let step = self.names.intern("step");
        self.heap.incref(Value::Obj(opt));
        let r = self.call_method(Value::Obj(opt), step, Vec::new(), Vec::new());
        self.heap.decref(Value::Obj(opt));
        let r = r?;
        if let Some((_, found)) = self.scaler_state(scaler, opt)? {
            self.heap.incref(found);
            self.scaler_set_state(scaler, opt, STEPPED, found)?;
        }
        Ok(r)
    }

    /// `update()`: the scale is updated in place and the per-optimizer states are replaced
    /// by a new dict, freeing each `found_inf`.
    fn scaler_update(&mut self, scaler: ObjId) -> R<()> {
        let scale = self.scaler_attr(scaler, "_scale")?;
        self.heap.decref(scale);
        if scale == Value::None {
            return Ok(());
        }
        let states = self.scaler_attr(scaler, "_per_optimizer_states")?;
        self.heap.decref(states);
        if let Value::Obj(d) = states
            && matches!(self.heap.kind(d), ObjKind::Dict(items) if items.is_empty())
        {
            return self.error("AssertionError: No inf checks were recorded prior to update.");
        }
        let fresh = self.alloc(ObjKind::Dict(Vec::new()));
        self.scaler_set(scaler, "_per_optimizer_states", Value::Obj(fresh))
    }
}
