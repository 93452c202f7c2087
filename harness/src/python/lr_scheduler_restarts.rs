//! `PolynomialLR` (the rate decays by `(1 - t / total_iters) ** power`) and
//! `CosineAnnealingWarmRestarts` (cosine annealing restarted every `T_i` epochs, `T_i`
//! growing by `T_mult`, with its own `step(epoch)` that accepts fractional epochs), as
//! `torch/optim/lr_scheduler.py` (pytorch/pytorch 008f727) defines them: same float
//! operations in the same order, same attributes, same errors.

use super::interp::{Interpreter, R};
use super::natives::float_of;
use crate::heap::{ObjId, Value};
use ruff_python_ast::Operator;
use std::f64::consts::PI;

type Arg<'x> = &'x dyn Fn(&str) -> Option<Value>;

impl Interpreter<'_> {
    fn op(&mut self, op: Operator, a: Value, b: Value) -> R<Value> {
        self.binary(op, a, b, false)
    }

    fn number_of(&self, v: Value, what: &str) -> R<f64> {
        match float_of(v) {
            Some(f) => Ok(f),
            None => self.unsupported(format!("a scheduler `{what}` that is not a Python number")),
        }
    }

    /// `PolynomialLR.get_lr`: unchanged at the initial step and past `total_iters`, else
    /// `lr * ((1.0 - t / T) / (1.0 - (t - 1) / T)) ** power`.
    pub(super) fn polynomial_rates(
        &mut self,
        sched: ObjId,
        epoch: i64,
        initial: bool,
        lrs: &[Value],
    ) -> R<Vec<Value>> {
        let total = self.sched_attr(sched, "total_iters").unwrap_or(Value::None);
        let power = self.sched_attr(sched, "power").unwrap_or(Value::None);
        if initial || epoch as f64 > self.number_of(total, "total_iters")? {
            return Ok(lrs.to_vec());
        }
        let now = self.op(Operator::Div, Value::Int(epoch), total)?;
        let num = self.op(Operator::Sub, Value::Float(1.0), now)?;
        let before = self.op(Operator::Div, Value::Int(epoch - 1), total)?;
        let den = self.op(Operator::Sub, Value::Float(1.0), before)?;
        let ratio = self.op(Operator::Div, num, den)?;
        let factor = self.op(Operator::Pow, ratio, power)?;
        lrs.iter()
            .map(|&lr| self.op(Operator::Mult, lr, factor))
            .collect()
    }

    /// `PolynomialLR._get_closed_form_lr`: `base_lr * (1.0 - min(T, t) / T) ** power`.
    pub(super) fn polynomial_closed_form(&mut self, sched: ObjId, epoch: i64) -> R<Vec<Value>> {
        let total = self.sched_attr(sched, "total_iters").unwrap_or(Value::None);
        let power = self.sched_attr(sched, "power").unwrap_or(Value::None);
        let t = self.number_of(total, "total_iters")?;
        let least = if (epoch as f64) < t {
            Value::Int(epoch)
        } else {
            total
        };
        let part = self.op(Operator::Div, least, total)?;
        let rest = self.op(Operator::Sub, Value::Float(1.0), part)?;
        let factor = self.op(Operator::Pow, rest, power)?;
        let bases = self.sched_attr(sched, "base_lrs").unwrap_or(Value::None);
        let bases = self.iterable_items(bases)?;
        bases
            .into_iter()
            .map(|b| self.op(Operator::Mult, b, factor))
            .collect()
    }

    /// `CosineAnnealingWarmRestarts.__init__`: the checks of `T_0`, `T_mult`, `eta_min`,
    /// then `T_0`, `T_i`, `T_mult`, `eta_min`, `T_cur = last_epoch`.
    pub(super) fn warm_restarts_settings(&mut self, arg: Arg<'_>) -> R<Vec<(&'static str, Value)>> {
        let Some(t0) = arg("T_0") else {
            return self
                .error("TypeError: __init__() missing 1 required positional argument: 'T_0'");
        };
        let t_mult = arg("T_mult").unwrap_or(Value::Int(1));
        let eta_min = arg("eta_min").unwrap_or(Value::Float(0.0));
        let last_epoch = arg("last_epoch").unwrap_or(Value::Int(-1));
        let compare = |it: &Self, v: Value| -> R<f64> {
            match float_of(v) {
                Some(f) => Ok(f),
                None => it.error(format!(
                    "TypeError: '<' not supported between instances of '{}' and 'int'",
                    it.type_name_of(v)
                )),
            }
        };
        let is_int = |v: Value| matches!(v, Value::Int(_) | Value::Bool(_));
        if compare(self, t0)? <= 0.0 || !is_int(t0) {
            return self.error(format!(
                "ValueError: Expected positive integer T_0, but got {}",
                self.display(t0)
            ));
        }
        if compare(self, t_mult)? < 1.0 || !is_int(t_mult) {
            return self.error(format!(
                "ValueError: Expected integer T_mult >= 1, but got {}",
                self.display(t_mult)
            ));
        }
        if !matches!(eta_min, Value::Int(_) | Value::Float(_) | Value::Bool(_)) {
            let shown = self.display(eta_min);
            let t = self.type_name_of(eta_min);
            return self.error(format!(
                "ValueError: Expected float or int eta_min, but got {shown} of type <class '{t}'>"
            ));
        }
        Ok(vec![
            ("T_0", t0),
            ("T_i", t0),
            ("T_mult", t_mult),
            ("eta_min", eta_min),
            ("T_cur", last_epoch),
        ])
    }

    /// `CosineAnnealingWarmRestarts.step(epoch=None)`: it replaces `LRScheduler.step` (no
    /// `_step_count` increment, no order warning): `T_cur`/`T_i` advance (or are derived
    /// from the epoch given, fractional or not), `last_epoch = floor(epoch)`, then the rates
    /// are written inside `_enable_get_lr_call` through a `zip` and `_last_lr` is rebuilt.
    pub(super) fn warm_restarts_step(&mut self, sched: ObjId, epoch: Option<Value>) -> R<()> {
        let attr = |it: &Self, n: &str| it.sched_attr(sched, n).unwrap_or(Value::None);
        let last = attr(self, "last_epoch");
        let mut epoch = epoch;
        if epoch.is_none() && self.number_of(last, "last_epoch")? < 0.0 {
            epoch = Some(Value::Int(0));
        }
        let epoch = match epoch {
            None => {
                let next = self.op(Operator::Add, last, Value::Int(1))?;
                let cur = self.op(Operator::Add, attr(self, "T_cur"), Value::Int(1))?;
                self.sched_set(sched, "T_cur", cur)?;
                let t_i = attr(self, "T_i");
                if self.number_of(cur, "T_cur")? >= self.number_of(t_i, "T_i")? {
                    let wrapped = self.op(Operator::Mod, cur, t_i)?;
                    self.sched_set(sched, "T_cur", wrapped)?;
                    let grown = self.op(Operator::Mult, t_i, attr(self, "T_mult"))?;
                    self.sched_set(sched, "T_i", grown)?;
                }
                next
            }
            Some(e) => {
                let e_f = self.number_of(e, "epoch")?;
                if e_f < 0.0 {
                    return self.error(format!(
                        "ValueError: Expected non-negative epoch, but got {}",
                        self.display(e)
                    ));
                }
                let t0 = attr(self, "T_0");
                let t_mult = attr(self, "T_mult");
                if e_f >= self.number_of(t0, "T_0")? {
                    if self.number_of(t_mult, "T_mult")? == 1.0 {
                        let cur = self.op(Operator::Mod, e, t0)?;
                        self.sched_set(sched, "T_cur", cur)?;
                    } else {
                        // n = int(math.log(epoch / T_0 * (T_mult - 1) + 1, T_mult))
                        let q = self.op(Operator::Div, e, t0)?;
                        let m1 = self.op(Operator::Sub, t_mult, Value::Int(1))?;
                        let q = self.op(Operator::Mult, q, m1)?;
                        let q = self.op(Operator::Add, q, Value::Int(1))?;
                        let q = self.number_of(q, "epoch")?;
                        let base = self.number_of(t_mult, "T_mult")?;
                        let n = Value::Int((q.ln() / base.ln()).trunc() as i64);
                        let grown = self.op(Operator::Pow, t_mult, n)?;
                        let g1 = self.op(Operator::Sub, grown, Value::Int(1))?;
                        let done = self.op(Operator::Mult, t0, g1)?;
                        let done = self.op(Operator::Div, done, m1)?;
                        let cur = self.op(Operator::Sub, e, done)?;
                        self.sched_set(sched, "T_cur", cur)?;
                        let t_i = self.op(Operator::Mult, t0, grown)?;
                        self.sched_set(sched, "T_i", t_i)?;
                    }
                } else {
                    self.sched_set(sched, "T_i", t0)?;
                    self.sched_set(sched, "T_cur", e)?;
                }
                e
            }
        };
        let floor = self.number_of(epoch, "epoch")?.floor() as i64;
        self.sched_set(sched, "last_epoch", Value::Int(floor))?;
        // `with _enable_get_lr_call(self)`: the rates and the `zip` writing them.
        self.scheduler_helper_object();
        self.sched_set(sched, "_get_lr_called_within_step", Value::Bool(true))?;
        let values = self.warm_restarts_rates(sched);
        let written = values.and_then(|values| {
            let list = self.comprehension_list(values.clone());
            let w = self.write_group_rates(sched, &values);
            self.heap.decref_id(list);
            w
        });
        let exited = self.sched_set(sched, "_get_lr_called_within_step", Value::Bool(false));
        self.scheduler_helper_object_freed();
        written?;
        exited?;
        self.refresh_last_lr(sched)
    }

    /// `get_lr`: `eta_min + (base_lr - eta_min) * (1 + cos(pi * T_cur / T_i)) / 2`.
    fn warm_restarts_rates(&mut self, sched: ObjId) -> R<Vec<Value>> {
        let attr = |it: &Self, n: &str| it.sched_attr(sched, n).unwrap_or(Value::None);
        let eta = attr(self, "eta_min");
        let cur = self.number_of(attr(self, "T_cur"), "T_cur")?;
        let t_i = self.number_of(attr(self, "T_i"), "T_i")?;
        if t_i == 0.0 {
            return self.error("ZeroDivisionError: float division by zero");
        }
        let cos = Value::Float(1.0 + (PI * cur / t_i).cos());
        let bases = self.iterable_items(attr(self, "base_lrs"))?;
        let mut out = Vec::new();
        for b in bases {
            let span = self.op(Operator::Sub, b, eta)?;
            let v = self.op(Operator::Mult, span, cos)?;
            let v = self.op(Operator::Div, v, Value::Int(2))?;
            out.push(self.op(Operator::Add, eta, v)?);
        }
        Ok(out)
    }
}
