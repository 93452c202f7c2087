//! The two schedulers with their own rules: `OneCycleLR` (phases of `initial_lr` ->
//! `max_lr` -> `min_lr`, cosine or linear anneal, momentum or `betas[0]` cycled the other
//! way) and `ReduceLROnPlateau` (the rate drops by `factor` after `patience` epochs
//! without improvement of the metric given to `step`), as PyTorch's `lr_scheduler.py`
//! defines them, with its error messages.

use super::interp::{Interpreter, R};
use super::natives::float_of;
use crate::heap::{ObjId, ObjKind, Value};
use std::f64::consts::PI;

type Arg<'x> = &'x dyn Fn(&str) -> Option<Value>;

impl Interpreter<'_> {
    /// `_format_param`: one value per group (a list or tuple must have one per group).
    pub(super) fn per_group(&mut self, name: &str, v: Value, groups: usize) -> R<Vec<Value>> {
        let is_seq = matches!(
            v.obj().map(|o| self.heap.kind(o)),
            Some(ObjKind::List(_) | ObjKind::Tuple(_))
        );
        if !is_seq {
            return Ok(vec![v; groups]);
        }
        let items = self.iterable_items(v)?;
        if items.len() != groups {
            return self.error(format!(
                "ValueError: {name} must have the same length as optimizer.param_groups. {name} has {} values, param_groups has {groups}.",
                items.len()
            ));
        }
        Ok(items)
    }

    pub(super) fn set_group_key(&mut self, g: ObjId, key: &str, v: Value) {
        let k = self.sym(key);
        self.heap.incref(v);
        self.dict_set(g, Value::Str(k), v);
    }

    /// `OneCycleLR.__init__` up to `LRScheduler.__init__`: the total steps, the phases
    /// (a list of dicts, as PyTorch keeps them), and each group's `initial_lr`, `max_lr`,
    /// `min_lr` (and `max_momentum`, `base_momentum`, with `momentum` or `betas[0]` set to
    /// the maximum) when `last_epoch == -1`.
    pub(super) fn one_cycle_settings(
        &mut self,
        optimizer: Value,
        groups: &[ObjId],
        arg: Arg<'_>,
    ) -> R<Vec<(&'static str, Value)>> {
        let given = |n: &str| arg(n).filter(|v| *v != Value::None);
        let positive = |it: &Self, n: &str, v: Value| match v {
            Value::Int(i) if i > 0 => Ok(i),
            other => it.error(format!(
                "ValueError: Expected positive integer {n}, but got {}",
                it.display(other)
            )),
        };
        let total = if let Some(t) = given("total_steps") {
            positive(self, "total_steps", t)?
        } else if let (Some(e), Some(s)) = (given("epochs"), given("steps_per_epoch")) {
            let e = positive(self, "epochs", e)?;
            let s = positive(self, "steps_per_epoch", s)?;
            e.saturating_mul(s)
        } else {
            return self.error(
                "ValueError: You must define either total_steps OR (epochs AND steps_per_epoch)",
            );
        };
        let pct_v = arg("pct_start").unwrap_or(Value::Float(0.3));
        let pct = float_of(pct_v).unwrap_or(f64::NAN);
        let three = match arg("three_phase") {
            Some(v) => self.truth(v)?,
            None => false,
        };
        let t = total as f64;
        let phases: Vec<(Value, &str, &str, &str, &str)> = if three {
            vec![
                (
                    Value::Float(pct * t - 1.0),
                    "initial_lr",
                    "max_lr",
                    "max_momentum",
                    "base_momentum",
                ),
                (
                    Value::Float(2.0 * pct * t - 2.0),
                    "max_lr",
                    "initial_lr",
                    "base_momentum",
                    "max_momentum",
                ),
                (
                    Value::Int(total - 1),
                    "initial_lr",
                    "min_lr",
                    "max_momentum",
                    "max_momentum",
                ),
            ]
        } else {
            vec![
                (
                    Value::Float(pct * t - 1.0),
                    "initial_lr",
                    "max_lr",
                    "max_momentum",
                    "base_momentum",
                ),
                (
                    Value::Int(total - 1),
                    "max_lr",
                    "min_lr",
                    "base_momentum",
                    "max_momentum",
                ),
            ]
        };
        if !matches!(pct_v, Value::Float(p) if (0.0..=1.0).contains(&p)) {
            return self.error(format!(
                "ValueError: Expected float between 0 and 1 pct_start, but got {}",
                self.display(pct_v)
            ));
        }
        let anneal = arg("anneal_strategy").unwrap_or(Value::Str(self.sym("cos")));
        let anneal_ok =
            matches!(anneal, Value::Str(s) if matches!(self.names.name(s), "cos" | "linear"));
        if !anneal_ok {
            return self.error(format!(
                "ValueError: anneal_strategy must be one of 'cos' or 'linear', instead got {}",
                self.display(anneal)
            ));
        }
        let mut phase_dicts = Vec::new();
        for (end, start_lr, end_lr, start_m, end_m) in phases {
            let keys = [
                "end_step",
                "start_lr",
                "end_lr",
                "start_momentum",
                "end_momentum",
            ];
            let mut items = vec![(Value::Str(self.sym(keys[0])), end)];
            for (k, v) in keys[1..].iter().zip([start_lr, end_lr, start_m, end_m]) {
                items.push((Value::Str(self.sym(k)), Value::Str(self.sym(v))));
            }
            phase_dicts.push(Value::Obj(self.alloc(ObjKind::Dict(items))));
        }
        let phases = self.alloc(ObjKind::List(phase_dicts));
        let resuming = arg("last_epoch").is_some_and(|v| v != Value::Int(-1));
        let max_lr = match arg("max_lr") {
            Some(v) => v,
            None => {
                return self.error(
                    "TypeError: __init__() missing 1 required positional argument: 'max_lr'",
                );
            }
        };
        let max_lrs = self.per_group("max_lr", max_lr, groups.len())?;
        let div = float_of(arg("div_factor").unwrap_or(Value::Float(25.0)));
        let final_div = float_of(arg("final_div_factor").unwrap_or(Value::Float(1e4)));
        let (Some(div), Some(final_div)) = (div, final_div) else {
            return self.unsupported("a OneCycleLR div factor that is not a Python number");
        };
        if !resuming {
            for (&g, &m) in groups.iter().zip(&max_lrs) {
                let Some(m_f) = float_of(m) else {
                    return self.unsupported("a `max_lr` that is not a Python number");
                };
                let initial = m_f / div;
                self.set_group_key(g, "initial_lr", Value::Float(initial));
                self.set_group_key(g, "max_lr", m);
                self.set_group_key(g, "min_lr", Value::Float(initial / final_div));
            }
        }
        let mut attrs = vec![
            ("optimizer", optimizer),
            ("total_steps", Value::Int(total)),
            ("_schedule_phases", Value::Obj(phases)),
            ("_anneal_func_type", anneal),
        ];
        let cycle = match arg("cycle_momentum") {
            Some(v) => self.truth(v)?,
            None => true,
        };
        attrs.push(("cycle_momentum", Value::Bool(cycle)));
        if cycle {
            let Some(opt) = optimizer.obj() else {
                return self.error("TypeError: OneCycleLR needs an optimizer");
            };
            let use_beta1 = self.cycled_momentum_is_beta1(opt)?;
            attrs.push(("use_beta1", Value::Bool(use_beta1)));
            let max_m = arg("max_momentum").unwrap_or(Value::Float(0.95));
            let base_m = arg("base_momentum").unwrap_or(Value::Float(0.85));
            let max_ms = self.per_group("max_momentum", max_m, groups.len())?;
            let base_ms = self.per_group("base_momentum", base_m, groups.len())?;
            if !resuming {
                for ((&g, &m), &b) in groups.iter().zip(&max_ms).zip(&base_ms) {
                    self.set_group_momentum(g, use_beta1, m)?;
                    self.set_group_key(g, "max_momentum", m);
                    self.set_group_key(g, "base_momentum", b);
                }
            }
        }
        self.heap.incref(optimizer);
        Ok(attrs)
    }

    /// `group['betas'] = (m, *group['betas'][1:])` (a new tuple; the slice is a temporary
    /// tuple) or `group['momentum'] = m`.
    pub(super) fn set_group_momentum(&mut self, g: ObjId, use_beta1: bool, m: Value) -> R<()> {
        if !use_beta1 {
            self.set_group_key(g, "momentum", m);
            return Ok(());
        }
        let key = self.sym("betas");
        let old = self.dict_str_get(g, key).unwrap_or(Value::None);
        let rest: Vec<Value> = match old.obj().map(|o| self.heap.kind(o)) {
            Some(ObjKind::Tuple(items) | ObjKind::List(items)) if !items.is_empty() => {
                items[1..].to_vec()
            }
            _ => return self.error("TypeError: the group's 'betas' must be a tuple"),
        };
        self.temporary_tuple_of(rest.len());
        let mut items = vec![m];
        items.extend(rest);
        for &v in &items {
            self.heap.incref(v);
        }
        let t = self.alloc(ObjKind::Tuple(items));
        self.dict_set(g, Value::Str(key), Value::Obj(t));
        Ok(())
    }

    /// A tuple made and dropped at once (`betas[1:]` unpacked into a new tuple).
    fn temporary_tuple_of(&mut self, len: usize) {
        if self.heap.count_tuple_allocation(len) {
            self.collection_due();
        }
        self.heap.count_tuple_deallocation(len);
    }

    /// `OneCycleLR.get_lr`: per group, the phase holding `last_epoch`, its fraction `pct`
    /// and the anneal between the phase's two group keys; momentum is annealed the same
    /// way and written into the group.
    pub(super) fn one_cycle_rates(
        &mut self,
        sched: ObjId,
        step: i64,
        groups: &[ObjId],
    ) -> R<Vec<Value>> {
        let total = match self.sched_attr(sched, "total_steps") {
            Some(Value::Int(t)) => t,
            _ => return self.unsupported("a OneCycleLR `total_steps` that is not an int"),
        };
        if step > total {
            return self.error(format!(
                "ValueError: Tried to step {step} times. The specified number of total steps is {total}"
            ));
        }
        let cos = match self.sched_attr(sched, "_anneal_func_type") {
            Some(Value::Str(s)) => self.names.name(s) == "cos",
            _ => true,
        };
        let cycle = matches!(
            self.sched_attr(sched, "cycle_momentum"),
            Some(Value::Bool(true))
        );
        let use_beta1 = matches!(self.sched_attr(sched, "use_beta1"), Some(Value::Bool(true)));
        let phases = self
            .sched_attr(sched, "_schedule_phases")
            .unwrap_or(Value::None);
        let phases: Vec<ObjId> = self
            .iterable_items(phases)?
            .into_iter()
            .filter_map(|p| p.obj())
            .collect();
        let anneal = |start: f64, end: f64, pct: f64| {
            if cos {
                end + (start - end) / 2.0 * ((PI * pct).cos() + 1.0)
            } else {
                (end - start) * pct + start
            }
        };
        let mut lrs = Vec::new();
        for &g in groups {
            let mut start_step = 0.0;
            let mut found = None;
            // `for i, phase in enumerate(self._schedule_phases)`.
            self.scheduler_helper_object();
            for (i, &p) in phases.iter().enumerate() {
                let field = |it: &mut Self, k: &str| {
                    let k = it.sym(k);
                    it.dict_str_get(p, k).unwrap_or(Value::None)
                };
                let end_step = float_of(field(self, "end_step")).unwrap_or(f64::NAN);
                if step as f64 <= end_step || i == phases.len() - 1 {
                    if end_step == start_step {
                        self.scheduler_helper_object_freed();
                        return self.error("ZeroDivisionError: float division by zero");
                    }
                    let pct = (step as f64 - start_step) / (end_step - start_step);
                    let value_of = |it: &mut Self, k: &str| -> R<f64> {
                        let Value::Str(name) = field(it, k) else {
                            return it.error("KeyError: a OneCycleLR phase key");
                        };
                        match it.dict_str_get(g, name).and_then(float_of) {
                            Some(f) => Ok(f),
                            None => {
                                let n = it.names.name(name).to_string();
                                it.error(format!("KeyError: '{n}'"))
                            }
                        }
                    };
                    let lr = anneal(value_of(self, "start_lr")?, value_of(self, "end_lr")?, pct);
                    let momentum = if cycle {
                        let s = value_of(self, "start_momentum")?;
                        Some(anneal(s, value_of(self, "end_momentum")?, pct))
                    } else {
                        None
                    };
                    found = Some((lr, momentum));
                    break;
                }
                start_step = end_step;
            }
            self.scheduler_helper_object_freed();
            let Some((lr, momentum)) = found else {
                return self.error("ValueError: OneCycleLR has no phases");
            };
            lrs.push(Value::Float(lr));
            if let Some(m) = momentum {
                self.set_group_momentum(g, use_beta1, Value::Float(m))?;
            }
        }
        Ok(lrs)
    }

    /// `ReduceLROnPlateau.__init__` (it does not run `LRScheduler.__init__`: no
    /// `initial_lr`, no `base_lrs`, no initial step).
    pub(super) fn construct_plateau(
        &mut self,
        optimizer: Value,
        groups: &[ObjId],
        arg: Arg<'_>,
    ) -> R<ObjId> {
        let factor = arg("factor").unwrap_or(Value::Float(0.1));
        if float_of(factor).is_none_or(|f| f >= 1.0) {
            return self.error("ValueError: Factor should be < 1.0.");
        }
        self.heap.incref(optimizer);
        let min_lr = arg("min_lr").unwrap_or(Value::Int(0));
        let is_seq = matches!(
            min_lr.obj().map(|o| self.heap.kind(o)),
            Some(ObjKind::List(_) | ObjKind::Tuple(_))
        );
        let (default_min, min_lrs) = if is_seq {
            let items = self.iterable_items(min_lr)?;
            if items.len() != groups.len() {
                self.heap.decref(optimizer);
                return self.error(format!(
                    "ValueError: expected {} min_lrs, got {}",
                    groups.len(),
                    items.len()
                ));
            }
            (Value::None, items)
        } else {
            (min_lr, vec![min_lr; groups.len()])
        };
        for &v in &min_lrs {
            self.heap.incref(v);
        }
        let min_lrs = self.alloc(ObjKind::List(min_lrs));
        let attrs = vec![
            ("factor", factor),
            ("optimizer", optimizer),
            ("default_min_lr", default_min),
            ("min_lrs", Value::Obj(min_lrs)),
            ("patience", arg("patience").unwrap_or(Value::Int(10))),
            ("cooldown", arg("cooldown").unwrap_or(Value::Int(0))),
            ("eps", arg("eps").unwrap_or(Value::Float(1e-8))),
            ("last_epoch", Value::Int(0)),
            ("mode", arg("mode").unwrap_or(Value::Str(self.sym("min")))),
            ("threshold", arg("threshold").unwrap_or(Value::Float(1e-4))),
            (
                "threshold_mode",
                arg("threshold_mode").unwrap_or(Value::Str(self.sym("rel"))),
            ),
        ];
        for (_, v) in &attrs[4..] {
            self.heap.incref(*v);
        }
        self.heap.incref(default_min);
        let sched =
            self.new_torch_instance(super::torchlib::TorchClass::ReduceLrOnPlateau, attrs)?;
        self.refresh_last_lr(sched)?;
        self.plateau_check_mode(sched)?;
        // `_reset()`.
        let worse = self.sched_attr(sched, "mode_worse").unwrap_or(Value::None);
        self.sched_set(sched, "best", worse)?;
        self.sched_set(sched, "cooldown_counter", Value::Int(0))?;
        self.sched_set(sched, "num_bad_epochs", Value::Int(0))?;
        Ok(sched)
    }

    /// `_init_is_better`: the mode and threshold mode must be known; `mode_worse` is
    /// `inf` for `min`, `-inf` for `max`.
    pub(super) fn plateau_check_mode(&mut self, sched: ObjId) -> R<()> {
        let text = |it: &Self, n: &str| match it.sched_attr(sched, n) {
            Some(Value::Str(s)) => it.names.name(s).to_string(),
            Some(v) => it.display(v),
            None => String::new(),
        };
        let mode = text(self, "mode");
        if mode != "min" && mode != "max" {
            return self.error(format!("ValueError: mode {mode} is unknown!"));
        }
        let tm = text(self, "threshold_mode");
        if tm != "rel" && tm != "abs" {
            return self.error(format!("ValueError: threshold mode {tm} is unknown!"));
        }
        let worse = if mode == "min" {
            f64::INFINITY
        } else {
            f64::NEG_INFINITY
        };
        self.sched_set(sched, "mode_worse", Value::Float(worse))
    }

    /// `ReduceLROnPlateau.step(metrics, epoch=None)`.
    pub(super) fn plateau_step(&mut self, sched: ObjId, args: &[Value]) -> R<()> {
        let Some(&metrics) = args.first() else {
            return self
                .error("TypeError: step() missing 1 required positional argument: 'metrics'");
        };
        let current = match metrics {
            Value::Obj(t) if self.is_tensor(metrics) => {
                let v = super::tensor_pieces::to_number(self, t, false)?;
                float_of(v).unwrap_or(f64::NAN)
            }
            v => match float_of(v) {
                Some(f) => f,
                None => {
                    return self.unsupported(
                        "a ReduceLROnPlateau metric that is not a number or a tensor",
                    );
                }
            },
        };
        let given = args.get(1).copied().filter(|v| *v != Value::None);
        if given.is_some() {
            self.warn_step_epoch(true);
        }
        let epoch = match given {
            Some(Value::Int(e)) => e,
            Some(_) => return self.unsupported("a ReduceLROnPlateau epoch that is not an int"),
            None => match self.sched_attr(sched, "last_epoch") {
                Some(Value::Int(e)) => e + 1,
                _ => 1,
            },
        };
        self.sched_set(sched, "last_epoch", Value::Int(epoch))?;
        let get = |it: &Self, n: &str| it.sched_attr(sched, n).and_then(float_of).unwrap_or(0.0);
        let best = get(self, "best");
        let threshold = get(self, "threshold");
        let is_str = |it: &Self, n: &str, want: &str| matches!(it.sched_attr(sched, n), Some(Value::Str(s)) if it.names.name(s) == want);
        let better = match (
            is_str(self, "mode", "min"),
            is_str(self, "threshold_mode", "rel"),
        ) {
            (true, true) => current < best * (1.0 - threshold),
            (true, false) => current < best - threshold,
            (false, true) => current > best * (threshold + 1.0),
            (false, false) => current > best + threshold,
        };
        let mut bad = get(self, "num_bad_epochs") as i64;
        if better {
            self.sched_set(sched, "best", Value::Float(current))?;
            bad = 0;
        } else {
            bad += 1;
        }
        let cooldown_counter = get(self, "cooldown_counter") as i64;
        if cooldown_counter > 0 {
            self.sched_set(sched, "cooldown_counter", Value::Int(cooldown_counter - 1))?;
            bad = 0;
        }
        if bad as f64 > get(self, "patience") {
            self.plateau_reduce(sched)?;
            let cooldown = self.sched_attr(sched, "cooldown").unwrap_or(Value::Int(0));
            self.heap.incref(cooldown);
            self.sched_set(sched, "cooldown_counter", cooldown)?;
            bad = 0;
        }
        self.sched_set(sched, "num_bad_epochs", Value::Int(bad))?;
        self.refresh_last_lr(sched)
    }

    /// `_reduce_lr`: each group's `lr = max(old_lr * factor, min_lrs[i])` when that lowers
    /// it by more than `eps`.
    fn plateau_reduce(&mut self, sched: ObjId) -> R<()> {
        let groups = self.sched_groups(sched)?;
        let min_lrs = self.sched_attr(sched, "min_lrs").unwrap_or(Value::None);
        let mut min_lrs = self.iterable_items(min_lrs)?;
        if min_lrs.len() != groups.len() {
            let default = self
                .sched_attr(sched, "default_min_lr")
                .unwrap_or(Value::None);
            if default == Value::None {
                return self.error(format!(
                    "RuntimeError: The number of param groups in the `optimizer` ({}) differs from when `ReduceLROnPlateau` was initialized ({}), usually due to a new param group being added to the optimizer. Please modify the `min_lrs` field to match the length of the `optimizer` param groups.",
                    groups.len(),
                    min_lrs.len()
                ));
            }
            min_lrs = vec![default; groups.len()];
            for &v in &min_lrs {
                self.heap.incref(v);
            }
            let list = self.alloc(ObjKind::List(min_lrs.clone()));
            self.sched_set(sched, "min_lrs", Value::Obj(list))?;
        }
        let factor = self
            .sched_attr(sched, "factor")
            .and_then(float_of)
            .unwrap_or(0.1);
        let eps = self
            .sched_attr(sched, "eps")
            .and_then(float_of)
            .unwrap_or(1e-8);
        let lr_key = self.sym("lr");
        for (&g, &min_lr) in groups.iter().zip(&min_lrs) {
            let Some(old) = self.dict_str_get(g, lr_key).and_then(float_of) else {
                return self
                    .unsupported("a learning rate that is not a Python number in a scheduler");
            };
            let scaled = old * factor;
            // `max(a, b)` keeps `a` unless `b` is larger.
            let new = match float_of(min_lr) {
                Some(m) if m > scaled => min_lr,
                _ => Value::Float(scaled),
            };
            if old - float_of(new).unwrap_or(scaled) > eps {
                self.heap.incref(new);
                self.dict_set(g, Value::Str(lr_key), new);
            }
        }
        Ok(())
    }
}
