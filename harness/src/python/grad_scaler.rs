//! `torch.amp.GradScaler`: its device tensors and when they live. `_scale` (float32) and
//! `_growth_tracker` (int32), one element each, are created at the first `scale()`;
//! `unscale_(opt)` makes a float32 `found_inf` per optimizer, kept in
//! `_per_optimizer_states` until `update()` replaces that dict, and computes the inverse
//! scale through a float64 copy and its reciprocal (freed as the chain goes on). Gradients
//! are unscaled in place. Values are never computed, so no inf is ever found and `step`
//! always runs the optimizer's step; the scale's value follows from that (it grows by
//! `growth_factor` every `growth_interval` updates), which `get_scale()` and `state_dict()`
//! report. With `enabled=False` every method passes through and no tensor is made.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};
use crate::torch::{Category, DeviceKind, Dtype};
use ruff_python_ast::Operator;

/// `OptState`: what the scaler has done to an optimizer since the last `update()`.
const UNSCALED: i64 = 1;
const STEPPED: i64 = 2;
/// Attributes holding what the model knows of the values in `_scale` and `_growth_tracker`.
const SCALE_VALUE: &str = "_modelled_scale_value";
const TRACKER_VALUE: &str = "_modelled_growth_tracker_value";

impl Interpreter<'_> {
    /// `GradScaler(device="cuda", init_scale=2.0**16, growth_factor=2.0,
    /// backoff_factor=0.5, growth_interval=2000, enabled=True)`: nothing on the device yet.
    /// Disabled, it keeps only `_device` and `_enabled`, as PyTorch's does.
    pub(super) fn construct_grad_scaler(
        &mut self,
        args: &[Value],
        kwargs: &[(crate::heap::Sym, Value)],
    ) -> R<ObjId> {
        // `torch.amp.GradScaler(device, init_scale, ...)`; `torch.cuda.amp.GradScaler`
        // has no `device` and starts at `init_scale`.
        let device_first = matches!(args.first(), None | Some(Value::Str(_)));
        let arg = |it: &Self, name: &str, position: usize| {
            let at = if device_first {
                Some(position)
            } else {
                position.checked_sub(1)
            };
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == name)
                .map(|(_, v)| *v)
                .or(at.and_then(|p| args.get(p).copied()))
        };
        let device = arg(self, "device", 0);
        if let Some(Value::Str(s)) = device
            && self.names.name(s) != "cuda"
        {
            return self.unsupported("GradScaler on a device other than \"cuda\"");
        }
        let enabled = match arg(self, "enabled", 5) {
            Some(v) => self.truth(v)?,
            None => true,
        };
        let cuda = Value::Str(self.names.intern("cuda"));
        if !enabled {
            return self.new_torch_instance(
                TorchClass::GradScaler,
                vec![("_device", cuda), ("_enabled", Value::Bool(false))],
            );
        }
        let number = |it: &Self, name: &str, position: usize, default: f64| -> R<f64> {
            match arg(it, name, position) {
                None => Ok(default),
                Some(v) => match super::natives::float_of(v) {
                    Some(f) => Ok(f),
                    None => it.error(format!("TypeError: GradScaler {name} must be a number")),
                },
            }
        };
        let init_scale = number(self, "init_scale", 1, 65536.0)?;
        let growth_factor = number(self, "growth_factor", 2, 2.0)?;
        let backoff_factor = number(self, "backoff_factor", 3, 0.5)?;
        let growth_interval = match arg(self, "growth_interval", 4) {
            None => 2000,
            Some(Value::Int(i)) => i,
            Some(_) => return self.error("TypeError: GradScaler growth_interval must be an int"),
        };
        if growth_factor <= 1.0 {
            return self.error("AssertionError: The growth factor must be > 1.0.");
        }
        if backoff_factor >= 1.0 {
            return self.error("AssertionError: The backoff factor must be < 1.0.");
        }
        let states = self.alloc(ObjKind::Dict(Vec::new()));
        self.new_torch_instance(
            TorchClass::GradScaler,
            vec![
                ("_device", cuda),
                ("_enabled", Value::Bool(true)),
                ("_init_scale", Value::Float(init_scale)),
                ("_scale", Value::None),
                ("_growth_factor", Value::Float(growth_factor)),
                ("_backoff_factor", Value::Float(backoff_factor)),
                ("_growth_interval", Value::Int(growth_interval)),
                ("_init_growth_tracker", Value::Int(0)),
                ("_growth_tracker", Value::None),
                ("_per_optimizer_states", Value::Obj(states)),
                // The model's stand-ins for the contents of `_scale` and
                // `_growth_tracker` (no inf is ever found, so each `update()` counts).
                (SCALE_VALUE, Value::Float(init_scale)),
                (TRACKER_VALUE, Value::Int(0)),
            ],
        )
    }

    /// `scale`, `unscale_`, `step`, `update`, `get_scale`, `state_dict`,
    /// `load_state_dict`, `is_enabled`; disabled, each is a pass-through that makes no
    /// tensor.
    pub(super) fn grad_scaler_method(
        &mut self,
        scaler: ObjId,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        let enabled = self.scaler_attr(scaler, "_enabled")? != Value::Bool(false);
        if !enabled {
            return self.disabled_scaler_method(name, args);
        }
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
            // `_init_scale` until `_scale` exists, then its (modelled) value.
            ("get_scale", []) => {
                let scale = self.scaler_attr(scaler, "_scale")?;
                self.heap.decref(scale);
                if scale == Value::None {
                    self.scaler_attr(scaler, "_init_scale")?
                } else {
                    self.scaler_attr(scaler, SCALE_VALUE)?
                }
            }
            ("state_dict", []) => self.scaler_state_dict(scaler)?,
            ("load_state_dict", [source]) => {
                self.scaler_load_state_dict(scaler, *source)?;
                Value::None
            }
            ("is_enabled", []) => Value::Bool(true),
            _ => return Ok(None),
        }))
    }

    /// A disabled scaler's methods: `scale` returns its argument, `step` calls the
    /// optimizer's, the rest do nothing (`get_scale()` is 1.0, `state_dict()` empty).
    fn disabled_scaler_method(&mut self, name: &str, args: &[Value]) -> R<Option<Value>> {
        Ok(Some(match (name, args) {
            ("scale", [outputs]) => {
                self.heap.incref(*outputs);
                *outputs
            }
            ("step", [opt, ..]) => {
                let step = self.names.intern("step");
                self.heap.incref(*opt);
                let r = self.call_method(*opt, step, Vec::new(), Vec::new());
                self.heap.decref(*opt);
                r?
            }
            ("unscale_", [_]) | ("update", []) | ("load_state_dict", [_]) => Value::None,
            ("get_scale", []) => Value::Float(1.0),
            ("state_dict", []) => Value::Obj(self.alloc(ObjKind::Dict(Vec::new()))),
            ("is_enabled", []) => Value::Bool(false),
            _ => return Ok(None),
        }))
    }

    /// `state_dict()`: Python numbers only (the scale and tracker are read with
    /// `.item()`), no tensors.
    fn scaler_state_dict(&mut self, scaler: ObjId) -> R<Value> {
        let scale = self.scaler_attr(scaler, "_scale")?;
        self.heap.decref(scale);
        let created = scale != Value::None;
        let (scale_name, tracker_name) = if created {
            (SCALE_VALUE, TRACKER_VALUE)
        } else {
            ("_init_scale", "_init_growth_tracker")
        };
        let d = self.alloc(ObjKind::Dict(Vec::new()));
        for (key, attr) in [
            ("scale", scale_name),
            ("growth_factor", "_growth_factor"),
            ("backoff_factor", "_backoff_factor"),
            ("growth_interval", "_growth_interval"),
            ("_growth_tracker", tracker_name),
        ] {
            let v = self.scaler_attr(scaler, attr)?;
            let k = Value::Str(self.names.intern(key));
            self.dict_set(d, k, v);
        }
        Ok(Value::Obj(d))
    }

    /// `load_state_dict(state)`: the numbers are read back; existing `_scale` and
    /// `_growth_tracker` are filled in place (no new tensors).
    fn scaler_load_state_dict(&mut self, scaler: ObjId, source: Value) -> R<()> {
        let items = match source {
            Value::Obj(d) => match self.heap.kind(d) {
                ObjKind::Dict(items) => items.clone(),
                _ => return self.error("TypeError: load_state_dict expects a dict"),
            },
            _ => return self.error("TypeError: load_state_dict expects a dict"),
        };
        if items.is_empty() {
            return self.error("RuntimeError: The source state dict is empty, possibly because it was saved from a disabled instance of GradScaler.");
        }
        let get = |it: &Self, key: &str| {
            items
                .iter()
                .find(|(k, _)| matches!(k, Value::Str(s) if it.names.name(*s) == key))
                .map(|(_, v)| *v)
        };
        let scale = self.scaler_attr(scaler, "_scale")?;
        self.heap.decref(scale);
        let created = scale != Value::None;
        for (key, attr, filled) in [
            ("scale", "_init_scale", Some(SCALE_VALUE)),
            ("growth_factor", "_growth_factor", None),
            ("backoff_factor", "_backoff_factor", None),
            ("growth_interval", "_growth_interval", None),
            (
                "_growth_tracker",
                "_init_growth_tracker",
                Some(TRACKER_VALUE),
            ),
        ] {
            let Some(v) = get(self, key) else {
                return self.error(format!("KeyError: '{key}'"));
            };
            self.scaler_set(scaler, attr, v)?;
            if let Some(f) = filled.filter(|_| created) {
                self.scaler_set(scaler, f, v)?;
            }
        }
        Ok(())
    }

    fn scaler_attr(&mut self, scaler: ObjId, name: &str) -> R<Value> {
        let sym = self.names.intern(name);
        self.get_attr(Value::Obj(scaler), sym)
    }

    fn scaler_set(&mut self, scaler: ObjId, name: &str, value: Value) -> R<()> {
        let sym = self.names.intern(name);
        self.set_attr(Value::Obj(scaler), sym, value)
    }

    /// `scale(outputs)`, holding the stashed `_scale` reference for the whole call.
    fn scaler_scale(&mut self, scaler: ObjId, outputs: Value) -> R<Value> {
        let mut stash = None;
        let r = self.scaler_scale_nested(scaler, outputs, &mut stash);
        if let Some(s) = stash {
            self.heap.decref(s);
        }
        r
    }

    /// `scale(outputs)`: a tensor times `_scale` (created on first use); a list or tuple
    /// (nested) gets each tensor scaled, one `_scale` for all (`_MultiDeviceReplicator`),
    /// in a new container of the same type.
    fn scaler_scale_nested(
        &mut self,
        scaler: ObjId,
        outputs: Value,
        stash: &mut Option<Value>,
    ) -> R<Value> {
        if self.is_tensor(outputs) {
            let scale = match *stash {
                Some(s) => s,
                None => {
                    let s = self.scaler_lazy_scale(scaler, outputs)?;
                    *stash = Some(s);
                    s
                }
            };
            return super::natives::tensor_binary(self, Operator::Mult, outputs, scale, false);
        }
        let (items, is_list) = match outputs {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::List(items) => (items.clone(), true),
                ObjKind::Tuple(items) => (items.clone(), false),
                _ => return self.unsupported("GradScaler.scale of an iterable other than a list or tuple (PyTorch returns a lazy map)"),
            },
            _ => return self.error("ValueError: outputs must be a Tensor or an iterable of Tensors"),
        };
        let mut scaled = Vec::with_capacity(items.len());
        for item in items {
            match self.scaler_scale_nested(scaler, item, stash) {
                Ok(v) => scaled.push(v),
                Err(e) => {
                    self.heap.decref_all(scaled);
                    return Err(e);
                }
            }
        }
        let kind = if is_list {
            ObjKind::List(scaled)
        } else {
            ObjKind::Tuple(scaled)
        };
        Ok(Value::Obj(self.alloc(kind)))
    }

    /// `_scale` (a new reference), with `_growth_tracker`, created on the device of
    /// `output` at first use.
    fn scaler_lazy_scale(&mut self, scaler: ObjId, output: Value) -> R<Value> {
        let Some(device) = self.tensor_data(output).map(|t| t.device) else {
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
            // `torch.full((), self._init_scale)`, `torch.full((), self._init_growth_tracker)`.
            let init = self.scaler_attr(scaler, "_init_scale")?;
            self.scaler_set(scaler, SCALE_VALUE, init)?;
            let init = self.scaler_attr(scaler, "_init_growth_tracker")?;
            self.scaler_set(scaler, TRACKER_VALUE, init)?;
        }
        Ok(scale)
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
        // `_amp_update_scale_` with no inf found: the tracker counts up and, at
        // `growth_interval`, the scale grows by `growth_factor` and the tracker restarts.
        let tracker = match self.scaler_attr(scaler, TRACKER_VALUE)? {
            Value::Int(i) => i + 1,
            _ => 1,
        };
        let interval = match self.scaler_attr(scaler, "_growth_interval")? {
            Value::Int(i) => i,
            _ => 2000,
        };
        if tracker >= interval {
            let value = self.scaler_attr(scaler, SCALE_VALUE)?;
            let factor = self.scaler_attr(scaler, "_growth_factor")?;
            let grown = super::natives::float_of(value).unwrap_or(65536.0)
                * super::natives::float_of(factor).unwrap_or(2.0);
            self.scaler_set(scaler, SCALE_VALUE, Value::Float(grown))?;
            self.scaler_set(scaler, TRACKER_VALUE, Value::Int(0))?;
        } else {
            self.scaler_set(scaler, TRACKER_VALUE, Value::Int(tracker))?;
        }
        let fresh = self.alloc(ObjKind::Dict(Vec::new()));
        self.scaler_set(scaler, "_per_optimizer_states", Value::Obj(fresh))
    }
}
