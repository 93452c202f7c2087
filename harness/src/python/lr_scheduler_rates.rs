//! The learning rates of each scheduler: PyTorch's chainable `get_lr()` (each step
//! derives the new rate from the group's current `lr`), the closed forms used when
//! `step(epoch)` is given, `OneCycleLR`'s phases (and its momentum or `betas` cycling) and
//! `ReduceLROnPlateau`'s metric-driven reductions. Every formula keeps the order of
//! PyTorch's float operations, so the rates are PyTorch's floats bit for bit.

use super::interp::{Interpreter, R};
use super::natives::float_of;
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};
use std::f64::consts::PI;

/// `a * b` with Python's numeric rules (int times int stays an int).
fn mul(a: Value, b: Value) -> Option<Value> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x.checked_mul(y).map(Value::Int),
        _ => Some(Value::Float(float_of(a)? * float_of(b)?)),
    }
}

/// `a ** n` for a number and an int count (`gamma ** milestones[epoch]`).
fn pow(a: Value, n: i64) -> Option<Value> {
    match a {
        Value::Int(x) if n >= 0 => x.checked_pow(u32::try_from(n).ok()?).map(Value::Int),
        _ => Some(Value::Float(float_of(a)?.powf(n as f64))),
    }
}

/// Python's `%` on ints (the result takes the divisor's sign).
fn py_mod(a: i64, b: i64) -> i64 {
    let r = a % b;
    if r != 0 && (r < 0) != (b < 0) {
        r + b
    } else {
        r
    }
}

impl Interpreter<'_> {
    fn num(&self, v: Option<Value>, what: &str) -> R<f64> {
        match v.and_then(float_of) {
            Some(f) => Ok(f),
            None => self.unsupported(format!("a scheduler `{what}` that is not a Python number")),
        }
    }

    fn int_attr(&self, sched: ObjId, name: &str) -> R<i64> {
        match self.sched_attr(sched, name) {
            Some(Value::Int(i)) => Ok(i),
            Some(Value::Bool(b)) => Ok(b as i64),
            _ => self.unsupported(format!("a scheduler `{name}` that is not an int")),
        }
    }

    /// Each group's current `lr` (borrowed).
    fn group_rates(&mut self, sched: ObjId) -> R<(Vec<ObjId>, Vec<Value>)> {
        let groups = self.sched_groups(sched)?;
        let lr_key = self.sym("lr");
        let lrs: Vec<Value> = groups
            .iter()
            .map(|&g| self.dict_str_get(g, lr_key).unwrap_or(Value::None))
            .collect();
        if lrs.iter().any(|v| float_of(*v).is_none()) {
            return self.unsupported("a learning rate that is not a Python number in a scheduler");
        }
        Ok((groups, lrs))
    }

    /// `[group['lr'] * factor for group in ...]`.
    fn scaled(&self, lrs: &[Value], factor: Value) -> R<Vec<Value>> {
        lrs.iter()
            .map(|&lr| match mul(lr, factor) {
                Some(v) => Ok(v),
                None => self.unsupported("a scheduler factor that is not a Python number"),
            })
            .collect()
    }

    /// The class's `get_lr()` (chainable form).
    pub(super) fn scheduler_rates(&mut self, sched: ObjId, kind: TorchClass) -> R<Vec<Value>> {
        let epoch = self.int_attr(sched, "last_epoch")?;
        let initial = matches!(
            self.sched_attr(sched, "_is_initial"),
            Some(Value::Bool(true))
        );
        let (groups, lrs) = self.group_rates(sched)?;
        let attr = |it: &Self, n: &str| it.sched_attr(sched, n).unwrap_or(Value::None);
        match kind {
            TorchClass::LambdaLr => {
                let bases = attr(self, "base_lrs");
                let bases = self.iterable_items(bases)?;
                self.lambda_rates(sched, epoch, &bases)
            }
            TorchClass::MultiplicativeLr if initial => Ok(lrs),
            TorchClass::MultiplicativeLr => self.lambda_rates(sched, epoch, &lrs),
            TorchClass::StepLr => {
                let step = self.int_attr(sched, "step_size")?;
                if step == 0 {
                    return self.error("ZeroDivisionError: integer modulo by zero");
                }
                if epoch == 0 || py_mod(epoch, step) != 0 {
                    Ok(lrs)
                } else {
                    self.scaled(&lrs, attr(self, "gamma"))
                }
            }
            TorchClass::MultiStepLr => {
                let ms = attr(self, "milestones");
                let count = match ms.obj().map(|m| self.heap.kind(m)) {
                    Some(ObjKind::Dict(items)) => items
                        .iter()
                        .find(|(k, _)| *k == Value::Int(epoch))
                        .map(|(_, v)| *v),
                    _ => None,
                };
                match count {
                    Some(Value::Int(n)) => {
                        let Some(g) = pow(attr(self, "gamma"), n) else {
                            return self.unsupported("a `gamma` that is not a Python number");
                        };
                        self.scaled(&lrs, g)
                    }
                    _ => Ok(lrs),
                }
            }
            TorchClass::ConstantLr => {
                let factor = attr(self, "factor");
                if epoch == 0 {
                    return self.scaled(&lrs, factor);
                }
                if Value::Int(epoch) != attr(self, "total_iters") {
                    return Ok(lrs);
                }
                let f = self.num(Some(factor), "factor")?;
                if f == 0.0 {
                    return self.error("ZeroDivisionError: float division by zero");
                }
                self.scaled(&lrs, Value::Float(1.0 / f))
            }
            TorchClass::LinearLr => {
                let start = attr(self, "start_factor");
                if epoch == 0 {
                    return self.scaled(&lrs, start);
                }
                let total = self.num(Some(attr(self, "total_iters")), "total_iters")?;
                if initial || epoch as f64 > total {
                    return Ok(lrs);
                }
                let s = self.num(Some(start), "start_factor")?;
                let e = self.num(Some(attr(self, "end_factor")), "end_factor")?;
                let factor = 1.0 + (e - s) / (total * s + (epoch - 1) as f64 * (e - s));
                self.scaled(&lrs, Value::Float(factor))
            }
            TorchClass::ExponentialLr if initial => Ok(lrs),
            TorchClass::ExponentialLr => self.scaled(&lrs, attr(self, "gamma")),
            TorchClass::CosineAnnealingLr => self.cosine_rates(sched, epoch, initial, &lrs),
            TorchClass::OneCycleLr => self.one_cycle_rates(sched, epoch, &groups),
            TorchClass::CyclicLr => self.cyclic_rates(sched, epoch),
            TorchClass::PolynomialLr => self.polynomial_rates(sched, epoch, initial, &lrs),
            _ => Ok(lrs),
        }
    }

    /// `LambdaLR`: `base_lr * lmbda(last_epoch)`; `MultiplicativeLR`: `group['lr'] *
    /// lmbda(last_epoch)`; both through a `zip` with the functions.
    fn lambda_rates(&mut self, sched: ObjId, epoch: i64, factors_of: &[Value]) -> R<Vec<Value>> {
        let fs = self.sched_attr(sched, "lr_lambdas").unwrap_or(Value::None);
        let fs = self.iterable_items(fs)?;
        self.scheduler_helper_object();
        let mut out = Vec::new();
        let mut result = Ok(());
        for (f, &base) in fs.into_iter().zip(factors_of) {
            self.heap.incref(f);
            let r = self.call(f, vec![Value::Int(epoch)], Vec::new());
            self.heap.decref(f);
            let factor = match r {
                Ok(v) => v,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            let lr = mul(base, factor);
            self.heap.decref(factor);
            match lr {
                Some(v) => out.push(v),
                None => {
                    result = self.unsupported("an lr_lambda that returns no Python number");
                    break;
                }
            }
        }
        self.scheduler_helper_object_freed();
        result.map(|()| out)
    }

    /// `CosineAnnealingLR.get_lr`: the recursive form (each rate from the previous one),
    /// with the restart step at `(last_epoch - 1 - T_max) % (2 * T_max) == 0`.
    fn cosine_rates(
        &mut self,
        sched: ObjId,
        epoch: i64,
        initial: bool,
        lrs: &[Value],
    ) -> R<Vec<Value>> {
        if initial {
            return Ok(lrs.to_vec());
        }
        let t_max_v = self.sched_attr(sched, "T_max");
        let t_max = self.num(t_max_v, "T_max")?;
        let eta_min = self.num(self.sched_attr(sched, "eta_min"), "eta_min")?;
        let bases = self.sched_attr(sched, "base_lrs").unwrap_or(Value::None);
        let bases: Vec<f64> = self
            .iterable_items(bases)?
            .into_iter()
            .map(|b| float_of(b).unwrap_or(f64::NAN))
            .collect();
        let step_count = self.int_attr(sched, "_step_count")?;
        if t_max == 0.0 {
            return self.error("ZeroDivisionError: float division by zero");
        }
        let e = epoch as f64;
        if step_count == 1 && epoch > 0 {
            return Ok(bases
                .iter()
                .map(|b| {
                    Value::Float(eta_min + (b - eta_min) * (1.0 + (e * PI / t_max).cos()) / 2.0)
                })
                .collect());
        }
        let restart = match t_max_v {
            Some(Value::Int(t)) => py_mod(epoch - 1 - t, 2 * t) == 0,
            _ => ((e - 1.0 - t_max).rem_euclid(2.0 * t_max)) == 0.0,
        };
        if restart {
            return Ok(lrs
                .iter()
                .zip(&bases)
                .map(|(lr, b)| {
                    let lr = float_of(*lr).unwrap_or(f64::NAN);
                    Value::Float(lr + (b - eta_min) * (1.0 - (PI / t_max).cos()) / 2.0)
                })
                .collect());
        }
        Ok(lrs
            .iter()
            .map(|lr| {
                let lr = float_of(*lr).unwrap_or(f64::NAN);
                Value::Float(
                    (1.0 + (PI * e / t_max).cos()) / (1.0 + (PI * (e - 1.0) / t_max).cos())
                        * (lr - eta_min)
                        + eta_min,
                )
            })
            .collect())
    }

    /// `_get_closed_form_lr` of the classes that have one (used by `step(epoch)`).
    pub(super) fn closed_form_rates(
        &mut self,
        sched: ObjId,
        kind: TorchClass,
    ) -> R<Option<Vec<Value>>> {
        let epoch = self.int_attr(sched, "last_epoch")?;
        let bases = self.sched_attr(sched, "base_lrs").unwrap_or(Value::None);
        let bases = self.iterable_items(bases)?;
        let attr = |it: &Self, n: &str| it.sched_attr(sched, n).unwrap_or(Value::None);
        let factor = match kind {
            TorchClass::StepLr => {
                let step = self.int_attr(sched, "step_size")?;
                if step == 0 {
                    return self.error("ZeroDivisionError: integer division or modulo by zero");
                }
                pow(attr(self, "gamma"), epoch.div_euclid(step))
            }
            TorchClass::MultiStepLr => {
                let ms = attr(self, "milestones");
                let passed: i64 = match ms.obj().map(|m| self.heap.kind(m)) {
                    Some(ObjKind::Dict(items)) => items
                        .iter()
                        .filter_map(|(k, v)| match (k, v) {
                            (Value::Int(m), Value::Int(n)) if *m <= epoch => Some(*n),
                            _ => None,
                        })
                        .sum(),
                    _ => 0,
                };
                pow(attr(self, "gamma"), passed)
            }
            TorchClass::ConstantLr => {
                let f = self.num(Some(attr(self, "factor")), "factor")?;
                let total = self.num(Some(attr(self, "total_iters")), "total_iters")?;
                let reached = if epoch as f64 >= total { 1.0 } else { 0.0 };
                Some(Value::Float(f + reached * (1.0 - f)))
            }
            TorchClass::LinearLr => {
                let s = self.num(Some(attr(self, "start_factor")), "start_factor")?;
                let e = self.num(Some(attr(self, "end_factor")), "end_factor")?;
                let total = self.num(Some(attr(self, "total_iters")), "total_iters")?;
                Some(Value::Float(s + (e - s) * total.min(epoch as f64) / total))
            }
            TorchClass::ExponentialLr => pow(attr(self, "gamma"), epoch),
            TorchClass::PolynomialLr => return self.polynomial_closed_form(sched, epoch).map(Some),
            TorchClass::CosineAnnealingLr => {
                let t_max = self.num(Some(attr(self, "T_max")), "T_max")?;
                let eta = self.num(Some(attr(self, "eta_min")), "eta_min")?;
                let cos = 1.0 + (PI * epoch as f64 / t_max).cos();
                return Ok(Some(
                    bases
                        .iter()
                        .map(|b| {
                            let b = float_of(*b).unwrap_or(f64::NAN);
                            Value::Float(eta + (b - eta) * cos / 2.0)
                        })
                        .collect(),
                ));
            }
            _ => return Ok(None),
        };
        let Some(factor) = factor else {
            return self.unsupported("a scheduler factor that is not a Python number");
        };
        self.scaled(&bases, factor).map(Some)
    }
}
