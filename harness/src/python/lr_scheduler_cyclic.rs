//! `CyclicLR`: the rate climbs from `base_lr` to `max_lr` over `step_size_up` steps and
//! falls back over `step_size_down`, its amplitude scaled per cycle or per iteration
//! (`triangular`, `triangular2`, `exp_range` or the user's `scale_fn`); momentum (or
//! `betas[0]`) is cycled the other way.
//!
//! Modelled on `torch/optim/lr_scheduler.py` at pytorch/pytorch 008f727 (PyTorch 2.8
//! development): the built-in scale functions are static methods, so `_scale_fn_ref` is
//! the class's plain function (`triangular`, `triangular2`) or a `functools.partial` of it
//! with `gamma` (`exp_range`): nothing refers back to the scheduler, so, unlike PyTorch
//! before 2.2 (a bound method stored on the instance), a dropped `CyclicLR` is freed by
//! reference counting without waiting for the collector. The user's `scale_fn` is held in
//! `_scale_fn_custom` (a lambda reading `self` of a trainer still makes its cycle).

use super::interp::{Interpreter, R};
use super::natives::float_of;
use crate::heap::{ObjId, ObjKind, Value, WrapperKind};
use ruff_python_ast::Operator;

type Arg<'x> = &'x dyn Fn(&str) -> Option<Value>;

/// Stand-ins for the library's static scale functions (module-level objects that live as
/// long as `torch` does; the model names them instead of building them).
const TRIANGULAR: &str = "CyclicLR._triangular_scale_fn";
const TRIANGULAR2: &str = "CyclicLR._triangular2_scale_fn";
const EXP_RANGE: &str = "CyclicLR._exp_range_scale_fn";

impl Interpreter<'_> {
    /// `CyclicLR`/`OneCycleLR` with `cycle_momentum`: whether the optimizer's defaults
    /// cycle `betas[0]` (`use_beta1`) rather than `momentum`; neither is an error.
    pub(super) fn cycled_momentum_is_beta1(&mut self, opt: ObjId) -> R<bool> {
        let defaults = self.optimizer_attr_dict(opt, "defaults")?;
        let (m_key, b_key) = (self.sym("momentum"), self.sym("betas"));
        let has_m = self.dict_str_get(defaults, m_key).is_some();
        let use_beta1 = self.dict_str_get(defaults, b_key).is_some();
        self.heap.decref_id(defaults);
        if !has_m && !use_beta1 {
            return self.error("ValueError: optimizer must support momentum or beta1 with `cycle_momentum` option enabled");
        }
        Ok(use_beta1)
    }

    /// `a <op> b` with Python's numeric rules.
    fn num_op(&mut self, op: Operator, a: Value, b: Value) -> R<Value> {
        self.binary(op, a, b, false)
    }

    /// `_format_param(name, optimizer, param)`: one value per group, as a new list (the
    /// `[param] * n` list, when made, and the `map` are temporaries).
    fn format_param_list(&mut self, name: &str, v: Value, groups: usize) -> R<ObjId> {
        let is_seq = matches!(
            v.obj().map(|o| self.heap.kind(o)),
            Some(ObjKind::List(_) | ObjKind::Tuple(_))
        );
        let items = self.per_group(name, v, groups)?;
        if !is_seq {
            self.scheduler_helper_object();
            self.scheduler_helper_object_freed();
        }
        self.scheduler_helper_object();
        for &i in &items {
            self.heap.incref(i);
        }
        let list = self.alloc(ObjKind::List(items));
        self.scheduler_helper_object_freed();
        Ok(list)
    }

    /// `CyclicLR.__init__` up to `LRScheduler.__init__`; `base_lrs` is written after the
    /// initial step by [`Self::cyclic_set_base_lrs`], as PyTorch does.
    pub(super) fn cyclic_settings(
        &mut self,
        optimizer: Value,
        groups: &[ObjId],
        arg: Arg<'_>,
    ) -> R<Vec<(&'static str, Value)>> {
        let (Some(base_lr), Some(max_lr)) = (arg("base_lr"), arg("max_lr")) else {
            let missing: Vec<&str> = ["base_lr", "max_lr"]
                .into_iter()
                .filter(|n| arg(n).is_none())
                .collect();
            return self.error(match missing.as_slice() {
                [one] => format!(
                    "TypeError: __init__() missing 1 required positional argument: '{one}'"
                ),
                _ => "TypeError: __init__() missing 2 required positional arguments: 'base_lr' and 'max_lr'".to_string(),
            });
        };
        let resuming = arg("last_epoch").is_some_and(|v| v != Value::Int(-1));
        let bases = self.per_group("base_lr", base_lr, groups.len())?;
        if !resuming {
            for (&g, &b) in groups.iter().zip(&bases) {
                self.set_group_key(g, "lr", b);
            }
        }
        let max_lrs = self.format_param_list("max_lr", max_lr, groups.len())?;
        let as_float = |it: &Self, v: Value| match float_of(v) {
            Some(f) => Ok(f),
            None => it.error(format!(
                "TypeError: float() argument must be a string or a real number, not '{}'",
                it.type_name_of(v)
            )),
        };
        let up = as_float(self, arg("step_size_up").unwrap_or(Value::Int(2000)))?;
        let down = match arg("step_size_down").filter(|v| *v != Value::None) {
            Some(v) => as_float(self, v)?,
            None => up,
        };
        let total = up + down;
        if total == 0.0 {
            self.heap.decref_id(max_lrs);
            return self.error("ZeroDivisionError: float division by zero");
        }
        let mode = arg("mode").unwrap_or(Value::Str(self.sym("triangular")));
        let custom = arg("scale_fn").unwrap_or(Value::None);
        let known_mode = matches!(mode, Value::Str(s)
            if matches!(self.names.name(s), "triangular" | "triangular2" | "exp_range"));
        if !known_mode && custom == Value::None {
            self.heap.decref_id(max_lrs);
            return self.error("ValueError: mode is invalid and scale_fn is None");
        }
        let gamma = arg("gamma").unwrap_or(Value::Float(1.0));
        self.heap.incref(custom);
        self.heap.incref(optimizer);
        let mut attrs = vec![
            ("optimizer", optimizer),
            ("max_lrs", Value::Obj(max_lrs)),
            ("total_size", Value::Float(total)),
            ("step_ratio", Value::Float(up / total)),
            ("mode", mode),
            ("gamma", gamma),
            ("_scale_fn_custom", custom),
            (
                "scale_mode",
                arg("scale_mode").unwrap_or(Value::Str(self.sym("cycle"))),
            ),
        ];
        if custom == Value::None {
            let (scale_ref, scale_mode) = self.builtin_scale_fn(mode, gamma);
            if let Some(m) = attrs.iter_mut().find(|(k, _)| *k == "scale_mode") {
                m.1 = scale_mode;
            }
            attrs.push(("_scale_fn_ref", scale_ref));
        }
        let cycle = match arg("cycle_momentum") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        attrs.push(("cycle_momentum", Value::Bool(cycle)));
        if !cycle {
            return Ok(attrs);
        }
        let Some(opt) = optimizer.obj() else {
            return self.error("TypeError: CyclicLR needs an optimizer");
        };
        let use_beta1 = match self.cycled_momentum_is_beta1(opt) {
            Ok(b) => b,
            Err(e) => {
                self.heap.decref_all(attrs.into_iter().map(|(_, v)| v));
                return Err(e);
            }
        };
        attrs.push(("use_beta1", Value::Bool(use_beta1)));
        let base_m = arg("base_momentum").unwrap_or(Value::Float(0.8));
        let max_m = arg("max_momentum").unwrap_or(Value::Float(0.9));
        let base_ms = self.format_param_list("base_momentum", base_m, groups.len())?;
        attrs.push(("base_momentums", Value::Obj(base_ms)));
        let max_ms = self.format_param_list("max_momentum", max_m, groups.len())?;
        attrs.push(("max_momentums", Value::Obj(max_ms)));
        if !resuming {
            let maxes = self.iterable_items(Value::Obj(max_ms))?;
            let bases = self.iterable_items(Value::Obj(base_ms))?;
            for ((&g, &m), &b) in groups.iter().zip(&maxes).zip(&bases) {
                self.set_group_momentum(g, use_beta1, m)?;
                self.set_group_key(g, "max_momentum", m);
                self.set_group_key(g, "base_momentum", b);
            }
        }
        Ok(attrs)
    }

    /// `_init_scale_fn` without a custom function: the static function (or a partial of it
    /// with `gamma`) and the `scale_mode` the mode implies; an unknown mode sets neither.
    fn builtin_scale_fn(&mut self, mode: Value, gamma: Value) -> (Value, Value) {
        let name = match mode {
            Value::Str(s) => self.names.name(s).to_string(),
            _ => String::new(),
        };
        let (cycle, iterations) = (self.sym("cycle"), self.sym("iterations"));
        match name.as_str() {
            "triangular" => (Value::Str(self.sym(TRIANGULAR)), Value::Str(cycle)),
            "triangular2" => (Value::Str(self.sym(TRIANGULAR2)), Value::Str(cycle)),
            _ => {
                let f = Value::Str(self.sym(EXP_RANGE));
                self.heap.incref(gamma);
                let args = Value::Obj(self.alloc(ObjKind::Tuple(vec![gamma])));
                let kw = Value::Obj(self.alloc(ObjKind::Dict(Vec::new())));
                let p = self.new_wrapper(WrapperKind::Partial, vec![f, args, kw]);
                (p, Value::Str(iterations))
            }
        }
    }

    /// `self.base_lrs = base_lrs` after `super().__init__` (the initial step used the
    /// groups' `initial_lr`).
    pub(super) fn cyclic_set_base_lrs(&mut self, sched: ObjId, arg: Arg<'_>) -> R<()> {
        let groups = self.sched_groups(sched)?.len();
        let base = arg("base_lr").unwrap_or(Value::None);
        let list = self.format_param_list("base_lr", base, groups)?;
        self.sched_set(sched, "base_lrs", Value::Obj(list))
    }

    /// `scale_fn(x)`: the custom function, or `_scale_fn_ref` (1.0, `1 / 2.0 ** (x - 1)` or
    /// `gamma ** x`).
    fn cyclic_scale(&mut self, sched: ObjId, x: Value) -> R<Value> {
        let custom = self
            .sched_attr(sched, "_scale_fn_custom")
            .unwrap_or(Value::None);
        if custom != Value::None {
            self.heap.incref(custom);
            let r = self.call(custom, vec![x], Vec::new());
            self.heap.decref(custom);
            return r;
        }
        let Some(f) = self.sched_attr(sched, "_scale_fn_ref") else {
            return self
                .error("AttributeError: 'CyclicLR' object has no attribute '_scale_fn_ref'");
        };
        let (name, bound) = match f {
            Value::Str(s) => (self.names.name(s).to_string(), None),
            Value::Obj(p) => match self.heap.kind(p) {
                ObjKind::Wrapper(WrapperKind::Partial, items) => {
                    let name = match items.first() {
                        Some(Value::Str(s)) => self.names.name(*s).to_string(),
                        _ => String::new(),
                    };
                    let gamma = match items.get(1).and_then(|t| t.obj()) {
                        Some(t) => match self.heap.kind(t) {
                            ObjKind::Tuple(a) => a.first().copied(),
                            _ => None,
                        },
                        None => None,
                    };
                    (name, gamma)
                }
                _ => (String::new(), None),
            },
            _ => (String::new(), None),
        };
        match (name.as_str(), bound) {
            (TRIANGULAR, None) => Ok(Value::Float(1.0)),
            (TRIANGULAR2, None) => {
                let e = self.num_op(Operator::Sub, x, Value::Int(1))?;
                let p = self.num_op(Operator::Pow, Value::Float(2.0), e)?;
                self.num_op(Operator::Div, Value::Int(1), p)
            }
            (EXP_RANGE, Some(gamma)) => self.num_op(Operator::Pow, gamma, x),
            _ => self.unsupported("a CyclicLR `_scale_fn_ref` replaced by the workload"),
        }
    }

    /// `CyclicLR.get_lr`: the position in the cycle, the rates, and (with
    /// `cycle_momentum`) each group's momentum or `betas[0]` written as a side effect.
    pub(super) fn cyclic_rates(&mut self, sched: ObjId, epoch: i64) -> R<Vec<Value>> {
        let attr = |it: &Self, n: &str| it.sched_attr(sched, n).unwrap_or(Value::None);
        let total = self.num_op(Operator::Div, Value::Int(epoch), attr(self, "total_size"))?;
        let Some(t) = float_of(total) else {
            return self.unsupported("a CyclicLR `total_size` that is not a Python number");
        };
        let cycle = (1.0 + t).floor() as i64;
        let x = 1.0 + t - cycle as f64;
        let Some(ratio) = float_of(attr(self, "step_ratio")) else {
            return self.unsupported("a CyclicLR `step_ratio` that is not a Python number");
        };
        let scale_factor = if x <= ratio {
            x / ratio
        } else {
            (x - 1.0) / (ratio - 1.0)
        };
        let by_cycle =
            matches!(attr(self, "scale_mode"), Value::Str(s) if self.names.name(s) == "cycle");
        let at = if by_cycle {
            Value::Int(cycle)
        } else {
            Value::Int(epoch)
        };
        let bases = self.iterable_items(attr(self, "base_lrs"))?;
        let maxes = self.iterable_items(attr(self, "max_lrs"))?;
        let mut lrs = Vec::new();
        self.scheduler_helper_object();
        for (&b, &m) in bases.iter().zip(&maxes) {
            let span = self.num_op(Operator::Sub, m, b)?;
            let height = self.num_op(Operator::Mult, span, Value::Float(scale_factor))?;
            let s = self.cyclic_scale(sched, at)?;
            let scaled = self.num_op(Operator::Mult, height, s);
            self.heap.decref(s);
            let lr = self.num_op(Operator::Add, b, scaled?)?;
            lrs.push(lr);
        }
        self.scheduler_helper_object_freed();
        if !matches!(attr(self, "cycle_momentum"), Value::Bool(true)) {
            return Ok(lrs);
        }
        let use_beta1 = matches!(attr(self, "use_beta1"), Value::Bool(true));
        let base_ms = self.iterable_items(attr(self, "base_momentums"))?;
        let max_ms = self.iterable_items(attr(self, "max_momentums"))?;
        let mut momentums = Vec::new();
        self.scheduler_helper_object();
        for (&b, &m) in base_ms.iter().zip(&max_ms) {
            let span = self.num_op(Operator::Sub, m, b)?;
            let height = self.num_op(Operator::Mult, span, Value::Float(scale_factor))?;
            let s = self.cyclic_scale(sched, at)?;
            let scaled = self.num_op(Operator::Mult, height, s);
            self.heap.decref(s);
            momentums.push(self.num_op(Operator::Sub, m, scaled?)?);
        }
        self.scheduler_helper_object_freed();
        // The `momentums` list, then the `zip` with the groups.
        let list = self.alloc(ObjKind::List(momentums.clone()));
        let groups = self.sched_groups(sched)?;
        self.scheduler_helper_object();
        for (&g, &m) in groups.iter().zip(&momentums) {
            self.set_group_momentum(g, use_beta1, m)?;
        }
        self.scheduler_helper_object_freed();
        self.heap.decref_id(list);
        Ok(lrs)
    }

    /// `CyclicLR.state_dict`: every attribute but the optimizer and `_scale_fn_ref`, with
    /// `_scale_fn_custom` moved last (`None` for a function, a copy of a callable object's
    /// `__dict__`).
    pub(super) fn cyclic_state_dict(&mut self, sched: ObjId) -> R<Value> {
        let mut items = Vec::new();
        for (k, v) in self.attr_values(sched) {
            if matches!(
                self.names.name(k),
                "optimizer" | "_scale_fn_ref" | "_scale_fn_custom"
            ) {
                continue;
            }
            self.heap.incref(v);
            items.push((Value::Str(k), v));
        }
        let custom = self
            .sched_attr(sched, "_scale_fn_custom")
            .unwrap_or(Value::None);
        let saved = match custom.obj() {
            Some(o) if matches!(self.heap.kind(o), ObjKind::Instance { .. }) => {
                let attrs = self.attr_values(o);
                for (_, v) in &attrs {
                    self.heap.incref(*v);
                }
                let copy = attrs.into_iter().map(|(k, v)| (Value::Str(k), v)).collect();
                Value::Obj(self.alloc(ObjKind::Dict(copy)))
            }
            _ => Value::None,
        };
        items.push((Value::Str(self.sym("_scale_fn_custom")), saved));
        Ok(Value::Obj(self.alloc(ObjKind::Dict(items))))
    }

    /// `fn = state_dict.pop('_scale_fn_custom')` (the caller's dict loses the key, as in
    /// PyTorch): the popped value, for the caller to apply after `__dict__.update`.
    pub(super) fn cyclic_pop_custom(&mut self, sd: ObjId) -> R<Value> {
        let key = Value::Str(self.sym("_scale_fn_custom"));
        let popped = match self.heap.kind_mut(sd) {
            ObjKind::Dict(items) => items
                .iter()
                .position(|(k, _)| *k == key)
                .map(|i| items.remove(i).1),
            _ => None,
        };
        match popped {
            Some(v) => Ok(v),
            None => self.error("KeyError: '_scale_fn_custom'"),
        }
    }

    /// After `__dict__.update`: the saved `__dict__` into the custom callable, then
    /// `_init_scale_fn()`.
    pub(super) fn cyclic_after_load(&mut self, sched: ObjId, saved: Value) -> R<()> {
        if let Some(d) = saved.obj() {
            let entries = match self.heap.kind(d) {
                ObjKind::Dict(e) => e.clone(),
                _ => Vec::new(),
            };
            let custom = self
                .sched_attr(sched, "_scale_fn_custom")
                .unwrap_or(Value::None);
            for (k, v) in entries {
                if let Value::Str(name) = k {
                    self.heap.incref(v);
                    self.set_attr(custom, name, v)?;
                }
            }
        }
        self.heap.decref(saved);
        let custom = self.sched_attr(sched, "_scale_fn_custom");
        if custom.is_some_and(|c| c != Value::None) {
            return Ok(());
        }
        let mode = self.sched_attr(sched, "mode").unwrap_or(Value::None);
        let known = matches!(mode, Value::Str(s)
            if matches!(self.names.name(s), "triangular" | "triangular2" | "exp_range"));
        if !known {
            return Ok(());
        }
        let gamma = self.sched_attr(sched, "gamma").unwrap_or(Value::None);
        let (f, scale_mode) = self.builtin_scale_fn(mode, gamma);
        self.sched_set(sched, "_scale_fn_ref", f)?;
        self.sched_set(sched, "scale_mode", scale_mode)
    }
}
