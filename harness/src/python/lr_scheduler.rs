//! `torch.optim.lr_scheduler`: what a scheduler holds. Learning rates are values and are
//! not modelled; the references are. Every scheduler holds its optimizer (and through it
//! the parameters and their state); `LambdaLR` also holds the functions it is given, in a
//! list (`lr_lambdas`, one per parameter group) and calls them at each `step()`, so a
//! lambda that reads `self` of a trainer holding the scheduler makes a reference cycle,
//! and whatever the trainer holds (model, optimizer state) waits for the collector.
//!
//! Every parameter group is scheduled: the constructor sets each group's `initial_lr`
//! (`base_lrs` lists them), and `LambdaLR` writes `base_lr * lr_lambda(epoch)` into each
//! group's `lr` (the other schedulers keep their groups' rates).

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Sym, Value};

impl Interpreter<'_> {
    /// `LambdaLR(optimizer, lr_lambda)`, `StepLR(optimizer, step_size)`, ...
    pub(super) fn construct_scheduler(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let kw = |it: &Self, n: &str| {
            kwargs
                .iter()
                .find(|(k, _)| it.names.name(*k) == n)
                .map(|(_, v)| *v)
        };
        let Some(optimizer) = kw(self, "optimizer").or(args.first().copied()) else {
            return self.error("TypeError: a scheduler needs its optimizer");
        };
        if !self
            .instance_torch_class(optimizer)
            .is_some_and(TorchClass::is_optimizer)
        {
            return self.error("TypeError: the scheduler's first argument must be an optimizer");
        }
        self.heap.incref(optimizer);
        let mut attrs: Vec<(&str, Value)> =
            vec![("optimizer", optimizer), ("last_epoch", Value::Int(0))];
        // `group.setdefault('initial_lr', group['lr'])` for each group (`last_epoch=-1`);
        // `base_lrs` lists them, `_last_lr` the groups' current rates.
        let Some(opt) = optimizer.obj() else {
            return self.error("TypeError: the scheduler's first argument must be an optimizer");
        };
        let groups = self.optimizer_groups(opt)?;
        let (lr_key, initial_key) = (self.sym("lr"), self.sym("initial_lr"));
        let mut base_lrs = Vec::new();
        let mut last_lrs = Vec::new();
        for (g, _) in &groups {
            let lr = self.dict_str_get(*g, lr_key).unwrap_or(Value::None);
            if self.dict_str_get(*g, initial_key).is_none() {
                self.heap.incref(lr);
                self.dict_set(*g, Value::Str(initial_key), lr);
            }
            let initial = self.dict_str_get(*g, initial_key).unwrap_or(Value::None);
            self.heap.incref(initial);
            self.heap.incref(lr);
            base_lrs.push(initial);
            last_lrs.push(lr);
        }
        let base = self.alloc(ObjKind::List(base_lrs));
        attrs.push(("base_lrs", Value::Obj(base)));
        let last = self.alloc(ObjKind::List(last_lrs));
        attrs.push(("_last_lr", Value::Obj(last)));
        if kind == TorchClass::LambdaLr {
            let Some(f) = kw(self, "lr_lambda").or(args.get(1).copied()) else {
                return self.error("TypeError: LambdaLR(optimizer, lr_lambda)");
            };
            // `[lr_lambda] * len(optimizer.param_groups)`, or a list with one per group.
            let is_list = matches!(
                f.obj().map(|o| self.heap.kind(o)),
                Some(ObjKind::List(_) | ObjKind::Tuple(_))
            );
            let fs = if is_list {
                let fs = self.iterable_items(f)?;
                if fs.len() != groups.len() {
                    return self.error(format!(
                        "ValueError: Expected {} lr_lambdas, but got {}",
                        groups.len(),
                        fs.len()
                    ));
                }
                fs
            } else {
                vec![f; groups.len()]
            };
            for &f in &fs {
                self.heap.incref(f);
            }
            let lambdas = self.alloc(ObjKind::List(fs));
            attrs.push(("lr_lambdas", Value::Obj(lambdas)));
        }
        let sched = self.new_torch_instance(kind, attrs)?;
        // The constructor takes an initial step (`_initial_step`).
        self.scheduler_step(sched, kind)?;
        Ok(sched)
    }

    /// `LambdaLR`: each group's `lr = base_lr * lr_lambda(last_epoch)`; `_last_lr` follows.
    fn scheduler_step(&mut self, sched: ObjId, kind: TorchClass) -> R<()> {
        if kind != TorchClass::LambdaLr {
            return Ok(());
        }
        let e = self.names.intern("last_epoch");
        let epoch = self.get_attr(Value::Obj(sched), e)?;
        let l = self.names.intern("lr_lambdas");
        let lambdas = self.get_attr(Value::Obj(sched), l)?;
        let items = self.iterable_items(lambdas)?;
        self.heap.decref(lambdas);
        let b = self.names.intern("base_lrs");
        let bases = self.get_attr(Value::Obj(sched), b)?;
        let base_lrs = self.iterable_items(bases)?;
        self.heap.decref(bases);
        let o = self.names.intern("optimizer");
        let opt = self.get_attr(Value::Obj(sched), o)?;
        let groups = match opt.obj() {
            Some(id) => self.optimizer_groups(id),
            None => Ok(Vec::new()),
        };
        self.heap.decref(opt);
        let groups = groups?;
        let lr_key = self.sym("lr");
        let mut last = Vec::new();
        for (i, f) in items.into_iter().enumerate() {
            self.heap.incref(f);
            let r = self.call(f, vec![epoch], Vec::new());
            self.heap.decref(f);
            let factor = r?;
            let base = base_lrs.get(i).copied().unwrap_or(Value::None);
            let lr = match (base, factor) {
                (Value::Float(b), Value::Float(x)) => Value::Float(b * x),
                (Value::Float(b), Value::Int(x)) => Value::Float(b * x as f64),
                (Value::Int(b), Value::Float(x)) => Value::Float(b as f64 * x),
                (Value::Int(b), Value::Int(x)) => Value::Int(b * x),
                _ => Value::None,
            };
            self.heap.decref(factor);
            if lr != Value::None {
                if let Some((g, _)) = groups.get(i) {
                    self.dict_set(*g, Value::Str(lr_key), lr);
                }
                last.push(lr);
            }
        }
        if last.len() == groups.len() && !last.is_empty() {
            let list = self.alloc(ObjKind::List(last));
            let s = self.names.intern("_last_lr");
            self.set_attr(Value::Obj(sched), s, Value::Obj(list))?;
        }
        Ok(())
    }

    /// `step()`, `get_last_lr()`, `state_dict()` of a scheduler.
    pub(super) fn scheduler_method(
        &mut self,
        sched: ObjId,
        kind: TorchClass,
        name: &str,
        _args: &[Value],
    ) -> R<Option<Value>> {
        match name {
            "step" => {
                let e = self.names.intern("last_epoch");
                let epoch = self.get_attr(Value::Obj(sched), e)?;
                let next = match epoch {
                    Value::Int(i) => Value::Int(i + 1),
                    other => other,
                };
                self.set_attr(Value::Obj(sched), e, next)?;
                self.scheduler_step(sched, kind)?;
                Ok(Some(Value::None))
            }
            "get_last_lr" => {
                let l = self.names.intern("_last_lr");
                let last = self.get_attr(Value::Obj(sched), l)?;
                let items = self.iterable_items(last)?;
                self.heap.decref(last);
                Ok(Some(Value::Obj(self.alloc(ObjKind::List(items)))))
            }
            _ => Ok(None),
        }
    }
}
