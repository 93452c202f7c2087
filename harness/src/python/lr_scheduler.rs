//! `torch.optim.lr_scheduler`: what a scheduler holds. Learning rates are values and are
//! not modelled; the references are. Every scheduler holds its optimizer (and through it
//! the parameters and their state); `LambdaLR` also holds the functions it is given, in a
//! list (`lr_lambdas`, one per parameter group) and calls them at each `step()`, so a
//! lambda that reads `self` of a trainer holding the scheduler makes a reference cycle,
//! and whatever the trainer holds (model, optimizer state) waits for the collector.

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
        // `base_lrs` and `_last_lr`: one float per parameter group (the model has one).
        let base = self.alloc(ObjKind::List(vec![Value::Float(0.0)]));
        attrs.push(("base_lrs", Value::Obj(base)));
        let last = self.alloc(ObjKind::List(vec![Value::Float(0.0)]));
        attrs.push(("_last_lr", Value::Obj(last)));
        if kind == TorchClass::LambdaLr {
            let Some(f) = kw(self, "lr_lambda").or(args.get(1).copied()) else {
                return self.error("TypeError: LambdaLR(optimizer, lr_lambda)");
            };
            // `[lr_lambda] * len(optimizer.param_groups)`.
            self.heap.incref(f);
            let lambdas = self.alloc(ObjKind::List(vec![f]));
            attrs.push(("lr_lambdas", Value::Obj(lambdas)));
        }
        let sched = self.new_torch_instance(kind, attrs)?;
        // The constructor takes an initial step (`_initial_step`).
        self.scheduler_step(sched, kind)?;
        Ok(sched)
    }

    fn scheduler_step(&mut self, sched: ObjId, kind: TorchClass) -> R<()> {
        if kind != TorchClass::LambdaLr {
            return Ok(());
        }
        let e = self.names.intern("last_epoch");
        let epoch = self.get_attr(Value::Obj(sched), e)?;
        let l = self.names.intern("lr_lambdas");
        let lambdas = self.get_attr(Value::Obj(sched), l)?;
        let items = self.iterable_items(lambdas)?;
        for f in items {
            self.heap.incref(f);
            let r = self.call(f, vec![epoch], Vec::new());
            self.heap.decref(f);
            self.heap.decref(r?);
        }
        self.heap.decref(lambdas);
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
