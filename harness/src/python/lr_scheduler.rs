//! `torch.optim.lr_scheduler`: the scheduler objects, their attributes and the objects each
//! `step()` creates, following `LRScheduler` of PyTorch's `lr_scheduler.py`.
//!
//! Every scheduler holds its optimizer (and through it the parameters and their state);
//! `LambdaLR` and `MultiplicativeLR` also hold the functions they are given, in a list
//! (`lr_lambdas`, one per parameter group) and call them at each `step()`, so a lambda that
//! reads `self` of a trainer holding the scheduler makes a reference cycle, and whatever
//! the trainer holds (model, optimizer state) waits for the collector.
//!
//! The attributes are the instance's `__dict__` as PyTorch fills it (`base_lrs`,
//! `last_epoch`, `_step_count`, `_is_initial`, `_get_lr_called_within_step`, `_last_lr` and
//! each class's own settings), so `state_dict()` is the same dict comprehension over them.
//! The rates themselves are computed in [`super::lr_scheduler_rates`] with PyTorch's
//! chainable formulas, in PyTorch's order of float operations.

use super::interp::{Interpreter, R};
use super::keywords;
use super::torchlib::TorchClass;
use crate::heap::{Function, ObjId, ObjKind, Sym, Value};

impl Interpreter<'_> {
    /// `LambdaLR(optimizer, lr_lambda)`, `StepLR(optimizer, step_size)`, ...: binds the
    /// arguments by the signature (the keyword table lists it in order), runs the class's
    /// own `__init__`, then `LRScheduler.__init__` and its initial step.
    pub(super) fn construct_scheduler(
        &mut self,
        kind: TorchClass,
        args: &[Value],
        kwargs: &[(Sym, Value)],
    ) -> R<ObjId> {
        let names = keywords::for_class(kind);
        if args.len() > names.len() {
            return self.error(format!(
                "TypeError: __init__() takes from 2 to {} positional arguments but {} were given",
                names.len() + 1,
                args.len() + 1
            ));
        }
        let bound: Vec<(&str, Option<Value>)> = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let by_name = kwargs
                    .iter()
                    .find(|(k, _)| self.names.name(*k) == *n)
                    .map(|(_, v)| *v);
                (*n, by_name.or(args.get(i).copied()))
            })
            .collect();
        let arg = |n: &str| bound.iter().find(|(k, _)| *k == n).and_then(|(_, v)| *v);
        if matches!(
            kind,
            TorchClass::SequentialLr | TorchClass::ChainedScheduler
        ) {
            return self.construct_composite_scheduler(kind, &arg);
        }
        let Some(optimizer) = arg("optimizer") else {
            return self.error(
                "TypeError: __init__() missing 1 required positional argument: 'optimizer'",
            );
        };
        let opt = match optimizer.obj() {
            Some(o)
                if self
                    .instance_torch_class(optimizer)
                    .is_some_and(TorchClass::is_optimizer) =>
            {
                o
            }
            _ => {
                let t = self.type_name_of(optimizer);
                return self.error(format!("TypeError: {t} is not an Optimizer"));
            }
        };
        let groups: Vec<ObjId> = self
            .optimizer_groups(opt)?
            .into_iter()
            .map(|(g, _)| g)
            .collect();
        if kind == TorchClass::ReduceLrOnPlateau {
            return self.construct_plateau(optimizer, &groups, &arg);
        }
        // The class's own `__init__` (its settings come before `LRScheduler`'s attributes).
        let mut attrs = self.scheduler_settings(kind, optimizer, &groups, &arg)?;
        // `LRScheduler.__init__`.
        let last_epoch = arg("last_epoch").unwrap_or(Value::Int(-1));
        let (lr_key, initial_key) = (self.sym("lr"), self.sym("initial_lr"));
        if last_epoch == Value::Int(-1) {
            for &g in &groups {
                if self.dict_str_get(g, initial_key).is_none() {
                    let lr = self.dict_str_get(g, lr_key).unwrap_or(Value::None);
                    self.heap.incref(lr);
                    self.dict_set(g, Value::Str(initial_key), lr);
                }
            }
        } else if let Some(i) = groups
            .iter()
            .position(|&g| self.dict_str_get(g, initial_key).is_none())
        {
            return self.error(format!(
                "KeyError: \"param 'initial_lr' is not specified in param_groups[{i}] when resuming an optimizer\""
            ));
        }
        if !attrs.iter().any(|(k, _)| *k == "optimizer") {
            self.heap.incref(optimizer);
            attrs.push(("optimizer", optimizer));
        }
        let base: Vec<Value> = groups
            .iter()
            .map(|&g| self.dict_str_get(g, initial_key).unwrap_or(Value::None))
            .collect();
        for &b in &base {
            self.heap.incref(b);
        }
        let base = self.comprehension_list(base);
        attrs.push(("base_lrs", Value::Obj(base)));
        attrs.push(("last_epoch", last_epoch));
        self.patch_optimizer_step(optimizer)?;
        let sched = self.new_torch_instance(kind, attrs)?;
        self.scheduler_initial_step(sched, kind)?;
        if kind == TorchClass::CyclicLr {
            self.cyclic_set_base_lrs(sched, &arg)?;
        }
        Ok(sched)
    }

    /// `_initial_step`: `_step_count = 0`, then `step()` inside `_initial_mode`.
    pub(super) fn scheduler_initial_step(&mut self, sched: ObjId, kind: TorchClass) -> R<()> {
        self.sched_set(sched, "_step_count", Value::Int(0))?;
        self.sched_set(sched, "_is_initial", Value::Bool(true))?;
        let stepped = self.scheduler_step(sched, kind, None);
        self.sched_set(sched, "_is_initial", Value::Bool(false))?;
        stepped
    }

    /// The attributes a scheduler class's own `__init__` sets, validated as PyTorch does.
    fn scheduler_settings(
        &mut self,
        kind: TorchClass,
        optimizer: Value,
        groups: &[ObjId],
        arg: &dyn Fn(&str) -> Option<Value>,
    ) -> R<Vec<(&'static str, Value)>> {
        let required = |it: &Self, n: &'static str| match arg(n) {
            Some(v) => Ok(v),
            None => it.error(format!(
                "TypeError: __init__() missing 1 required positional argument: '{n}'"
            )),
        };
        let number = |it: &Self, n: &'static str, default: Value| -> R<Value> {
            match arg(n).unwrap_or(default) {
                v @ (Value::Int(_) | Value::Float(_) | Value::Bool(_)) => Ok(v),
                _ => it.unsupported(format!("a `{n}` that is not a Python number")),
            }
        };
        let attrs: Vec<(&'static str, Value)> = match kind {
            TorchClass::LambdaLr | TorchClass::MultiplicativeLr => {
                let f = required(self, "lr_lambda")?;
                let fs = self.lr_lambda_list(f, groups.len())?;
                self.heap.incref(optimizer);
                vec![("optimizer", optimizer), ("lr_lambdas", Value::Obj(fs))]
            }
            TorchClass::StepLr => vec![
                ("step_size", required(self, "step_size")?),
                ("gamma", number(self, "gamma", Value::Float(0.1))?),
            ],
            TorchClass::MultiStepLr => {
                let ms = required(self, "milestones")?;
                let counter = self.milestone_counter(ms)?;
                vec![
                    ("milestones", Value::Obj(counter)),
                    ("gamma", number(self, "gamma", Value::Float(0.1))?),
                ]
            }
            TorchClass::ExponentialLr => vec![("gamma", number(self, "gamma", Value::None)?)],
            TorchClass::ConstantLr => {
                let factor = number(self, "factor", Value::Float(1.0 / 3.0))?;
                let f = super::natives::float_of(factor).unwrap_or(0.0);
                if !(0.0..=1.0).contains(&f) {
                    return self.error(
                        "ValueError: Constant multiplicative factor expected to be between 0 and 1.",
                    );
                }
                vec![
                    ("factor", factor),
                    ("total_iters", number(self, "total_iters", Value::Int(5))?),
                ]
            }
            TorchClass::LinearLr => {
                let start = number(self, "start_factor", Value::Float(1.0 / 3.0))?;
                let end = number(self, "end_factor", Value::Float(1.0))?;
                let s = super::natives::float_of(start).unwrap_or(0.0);
                if s > 1.0 || s <= 0.0 {
                    return self.error("ValueError: Starting multiplicative factor expected to be greater than 0 and less or equal to 1.");
                }
                let e = super::natives::float_of(end).unwrap_or(0.0);
                if !(0.0..=1.0).contains(&e) {
                    return self.error(
                        "ValueError: Ending multiplicative factor expected to be between 0 and 1.",
                    );
                }
                vec![
                    ("start_factor", start),
                    ("end_factor", end),
                    ("total_iters", number(self, "total_iters", Value::Int(5))?),
                ]
            }
            TorchClass::CosineAnnealingLr => vec![
                ("T_max", required(self, "T_max")?),
                ("eta_min", number(self, "eta_min", Value::Float(0.0))?),
            ],
            TorchClass::OneCycleLr => return self.one_cycle_settings(optimizer, groups, arg),
            TorchClass::CyclicLr => return self.cyclic_settings(optimizer, groups, arg),
            TorchClass::PolynomialLr => vec![
                ("total_iters", number(self, "total_iters", Value::Int(5))?),
                ("power", number(self, "power", Value::Float(1.0))?),
            ],
            TorchClass::CosineAnnealingWarmRestarts => return self.warm_restarts_settings(arg),
            _ => Vec::new(),
        };
        Ok(attrs)
    }

    /// `[lr_lambda] * len(param_groups)`, or `list(lr_lambda)` of a list with one per group.
    fn lr_lambda_list(&mut self, f: Value, groups: usize) -> R<ObjId> {
        let is_list = matches!(
            f.obj().map(|o| self.heap.kind(o)),
            Some(ObjKind::List(_) | ObjKind::Tuple(_))
        );
        let fs = if is_list {
            let fs = self.iterable_items(f)?;
            if fs.len() != groups {
                return self.error(format!(
                    "ValueError: Expected {groups} lr_lambdas, but got {}",
                    fs.len()
                ));
            }
            fs
        } else {
            vec![f; groups]
        };
        for &f in &fs {
            self.heap.incref(f);
        }
        Ok(self.alloc(ObjKind::List(fs)))
    }

    /// `Counter(milestones)`: each milestone with how often it is listed.
    fn milestone_counter(&mut self, milestones: Value) -> R<ObjId> {
        let items = self.iterable_items(milestones)?;
        let mut counts: Vec<(Value, Value)> = Vec::new();
        for m in items {
            if !matches!(m, Value::Int(_)) {
                return self.unsupported("a milestone that is not an int");
            }
            match counts.iter_mut().find(|(k, _)| *k == m) {
                Some((_, Value::Int(n))) => *n += 1,
                _ => counts.push((m, Value::Int(1))),
            }
        }
        Ok(self.alloc(ObjKind::Dict(counts)))
    }

    /// A list built by a list comprehension: up to 3.11 the comprehension is a function
    /// object made and dropped around it (PEP 709 inlines it from 3.12).
    pub(super) fn comprehension_list(&mut self, items: Vec<Value>) -> ObjId {
        let function = (self.heap.profile.version.minor <= 11).then(|| {
            ObjKind::Function(Function {
                code: 0,
                name: Sym(0),
                closure: None,
                defaults: Vec::new(),
                dict: None,
            })
        });
        if function.is_some() {
            self.count_untracked_allocations(1);
        }
        let list = self.alloc(ObjKind::List(items));
        if let Some(f) = &function {
            self.heap.count_deallocation(f);
        }
        list
    }

    /// A short-lived helper object of the Python source that the model does not keep (the
    /// `_enable_get_lr_call` guard, a `zip`): counted when made, uncounted when dropped.
    pub(super) fn scheduler_helper_object(&mut self) {
        self.count_untracked_allocations(1);
    }

    pub(super) fn scheduler_helper_object_freed(&mut self) {
        self.heap.count_deallocation(&ObjKind::Cell(None));
    }

    /// Borrowed attribute of a scheduler.
    pub(super) fn sched_attr(&self, sched: ObjId, name: &str) -> Option<Value> {
        self.attr_values(sched)
            .into_iter()
            .find(|(k, _)| self.names.name(*k) == name)
            .map(|(_, v)| v)
    }

    pub(super) fn sched_set(&mut self, sched: ObjId, name: &str, v: Value) -> R<()> {
        let s = self.sym(name);
        self.set_attr(Value::Obj(sched), s, v)
    }

    /// The scheduler's optimizer's parameter groups.
    pub(super) fn sched_groups(&mut self, sched: ObjId) -> R<Vec<ObjId>> {
        match self.sched_attr(sched, "optimizer").and_then(|o| o.obj()) {
            Some(opt) => Ok(self
                .optimizer_groups(opt)?
                .into_iter()
                .map(|(g, _)| g)
                .collect()),
            None => self.error("AttributeError: the scheduler has no optimizer"),
        }
    }

    /// `LRScheduler.step(epoch=None)`: `_step_count += 1`, then `_update_lr`.
    pub(super) fn scheduler_step(
        &mut self,
        sched: ObjId,
        kind: TorchClass,
        epoch: Option<Value>,
    ) -> R<()> {
        if kind == TorchClass::CosineAnnealingWarmRestarts {
            return self.warm_restarts_step(sched, epoch);
        }
        let count = match self.sched_attr(sched, "_step_count") {
            Some(Value::Int(n)) => n,
            _ => 0,
        };
        if count == 1 {
            self.check_step_order(sched)?;
        }
        self.sched_set(sched, "_step_count", Value::Int(count + 1))?;
        if epoch.is_some() {
            self.warn_step_epoch(false);
        }
        self.scheduler_update_lr(sched, kind, epoch)
    }

    /// `_update_lr`: the rates are computed inside `with _enable_get_lr_call(self)`, written
    /// into the groups through a `zip`, and `_last_lr` is a new list of the groups' rates
    /// (the old one is dropped); the computed list lives until the method returns.
    pub(super) fn scheduler_update_lr(
        &mut self,
        sched: ObjId,
        kind: TorchClass,
        epoch: Option<Value>,
    ) -> R<()> {
        self.scheduler_helper_object();
        self.sched_set(sched, "_get_lr_called_within_step", Value::Bool(true))?;
        let values = match epoch {
            None => {
                let e = match self.sched_attr(sched, "last_epoch") {
                    Some(Value::Int(e)) => e,
                    _ => return self.unsupported("a scheduler `last_epoch` that is not an int"),
                };
                self.sched_set(sched, "last_epoch", Value::Int(e + 1))?;
                self.scheduler_rates(sched, kind)
            }
            Some(e) => {
                self.heap.incref(e);
                self.sched_set(sched, "last_epoch", e)?;
                match self.closed_form_rates(sched, kind) {
                    Ok(Some(v)) => Ok(v),
                    Ok(None) => self.scheduler_rates(sched, kind),
                    Err(e) => Err(e),
                }
            }
        };
        let exited = self.sched_set(sched, "_get_lr_called_within_step", Value::Bool(false));
        self.scheduler_helper_object_freed();
        let values = values?;
        exited?;
        let list = self.comprehension_list(values.clone());
        self.write_group_rates(sched, &values)?;
        let written = self.refresh_last_lr(sched);
        self.heap.decref_id(list);
        written
    }

    /// `for param_group, lr in zip(self.optimizer.param_groups, values): group['lr'] = lr`.
    pub(super) fn write_group_rates(&mut self, sched: ObjId, values: &[Value]) -> R<()> {
        let groups = self.sched_groups(sched)?;
        let lr_key = self.sym("lr");
        self.scheduler_helper_object();
        for (&g, &v) in groups.iter().zip(values) {
            self.heap.incref(v);
            self.dict_set(g, Value::Str(lr_key), v);
        }
        self.scheduler_helper_object_freed();
        Ok(())
    }

    /// `self._last_lr = [group['lr'] for group in self.optimizer.param_groups]`.
    pub(super) fn refresh_last_lr(&mut self, sched: ObjId) -> R<()> {
        let groups = self.sched_groups(sched)?;
        let lr_key = self.sym("lr");
        let lrs: Vec<Value> = groups
            .iter()
            .map(|&g| self.dict_str_get(g, lr_key).unwrap_or(Value::None))
            .collect();
        for &v in &lrs {
            self.heap.incref(v);
        }
        let list = self.comprehension_list(lrs);
        self.sched_set(sched, "_last_lr", Value::Obj(list))
    }

    /// `step()`, `get_last_lr()`, `state_dict()`, `load_state_dict()` of a scheduler.
    pub(super) fn scheduler_method(
        &mut self,
        sched: ObjId,
        kind: TorchClass,
        name: &str,
        args: &[Value],
    ) -> R<Option<Value>> {
        match name {
            "step"
                if matches!(
                    kind,
                    TorchClass::SequentialLr | TorchClass::ChainedScheduler
                ) =>
            {
                if !args.is_empty() {
                    return self.error(format!(
                        "TypeError: step() takes 1 positional argument but {} were given",
                        args.len() + 1
                    ));
                }
                self.composite_step(sched, kind)?;
                Ok(Some(Value::None))
            }
            "state_dict"
                if matches!(
                    kind,
                    TorchClass::SequentialLr | TorchClass::ChainedScheduler
                ) =>
            {
                self.composite_state_dict(sched).map(Some)
            }
            "step" if kind == TorchClass::ReduceLrOnPlateau => {
                self.plateau_step(sched, args)?;
                Ok(Some(Value::None))
            }
            "step" => {
                if args.len() > 1 {
                    return self.error(format!(
                        "TypeError: step() takes from 1 to 2 positional arguments but {} were given",
                        args.len() + 1
                    ));
                }
                let epoch = args.first().copied().filter(|v| *v != Value::None);
                self.scheduler_step(sched, kind, epoch)?;
                Ok(Some(Value::None))
            }
            // `return self._last_lr`: the list itself, not a copy.
            "get_last_lr" => {
                let last = self.sched_attr(sched, "_last_lr").unwrap_or(Value::None);
                self.heap.incref(last);
                Ok(Some(last))
            }
            "state_dict" if kind == TorchClass::CyclicLr => self.cyclic_state_dict(sched).map(Some),
            "state_dict" => self.scheduler_state_dict(sched, kind).map(Some),
            "load_state_dict" => {
                let Some(sd) = args.first().and_then(|v| v.obj()) else {
                    return self
                        .error("TypeError: load_state_dict() missing 1 required positional argument: 'state_dict'");
                };
                if kind == TorchClass::CyclicLr {
                    let saved = self.cyclic_pop_custom(sd)?;
                    self.scheduler_load_state_dict(sched, kind, sd)?;
                    self.cyclic_after_load(sched, saved)?;
                } else {
                    self.scheduler_load_state_dict(sched, kind, sd)?;
                }
                Ok(Some(Value::None))
            }
            _ => Ok(None),
        }
    }

    /// `{key: value for key, value in self.__dict__.items() if key != 'optimizer'}`;
    /// `LambdaLR`/`MultiplicativeLR` leave out `lr_lambdas` and put a list in its place:
    /// `None` for a plain function (lambdas are not saved), a copy of the `__dict__` of a
    /// callable object.
    fn scheduler_state_dict(&mut self, sched: ObjId, kind: TorchClass) -> R<Value> {
        let with_lambdas = matches!(kind, TorchClass::LambdaLr | TorchClass::MultiplicativeLr);
        let mut items = Vec::new();
        for (k, v) in self.attr_values(sched) {
            let key = self.names.name(k);
            if key == "optimizer" || (with_lambdas && key == "lr_lambdas") {
                continue;
            }
            self.heap.incref(v);
            items.push((Value::Str(k), v));
        }
        let sd = self.alloc(ObjKind::Dict(items));
        if with_lambdas {
            let fs = self.sched_attr(sched, "lr_lambdas").unwrap_or(Value::None);
            let fs = self.iterable_items(fs)?;
            let nones = self.alloc(ObjKind::List(vec![Value::None; fs.len()]));
            let key = self.sym("lr_lambdas");
            self.dict_set(sd, Value::Str(key), Value::Obj(nones));
            for (i, f) in fs.into_iter().enumerate() {
                let copy = match f.obj().map(|o| self.heap.kind(o)) {
                    Some(ObjKind::Function(_)) | None => continue,
                    Some(ObjKind::Instance { .. }) => {
                        let attrs = self.attr_values(f.obj().unwrap_or(sd));
                        for (_, v) in &attrs {
                            self.heap.incref(*v);
                        }
                        attrs.into_iter().map(|(k, v)| (Value::Str(k), v)).collect()
                    }
                    Some(_) => Vec::new(),
                };
                let d = self.alloc(ObjKind::Dict(copy));
                if let ObjKind::List(l) = self.heap.kind_mut(nones) {
                    l[i] = Value::Obj(d);
                }
            }
        }
        Ok(Value::Obj(sd))
    }

    /// `self.__dict__.update(state_dict)` (`lr_lambdas` entries update the callable objects'
    /// `__dict__`; `ReduceLROnPlateau` checks its mode again).
    fn scheduler_load_state_dict(&mut self, sched: ObjId, kind: TorchClass, sd: ObjId) -> R<()> {
        let items = match self.heap.kind(sd) {
            ObjKind::Dict(items) => items.clone(),
            _ => return self.error("TypeError: a scheduler state_dict must be a dict"),
        };
        let with_lambdas = matches!(kind, TorchClass::LambdaLr | TorchClass::MultiplicativeLr);
        let composite = matches!(
            kind,
            TorchClass::SequentialLr | TorchClass::ChainedScheduler
        );
        let mut lambda_dicts = Vec::new();
        let mut nested = Vec::new();
        for (k, v) in items {
            let Value::Str(name) = k else {
                return self.unsupported("a scheduler state_dict key that is not a str");
            };
            if with_lambdas && self.names.name(name) == "lr_lambdas" {
                lambda_dicts = self.iterable_items(v)?;
                continue;
            }
            if composite && self.names.name(name) == "_schedulers" {
                nested = self.iterable_items(v)?;
                continue;
            }
            self.heap.incref(v);
            self.set_attr(Value::Obj(sched), name, v)?;
        }
        if !lambda_dicts.is_empty() {
            let fs = self.sched_attr(sched, "lr_lambdas").unwrap_or(Value::None);
            let fs = self.iterable_items(fs)?;
            for (f, d) in fs.into_iter().zip(lambda_dicts) {
                let Some(d) = d.obj() else { continue };
                let entries = match self.heap.kind(d) {
                    ObjKind::Dict(e) => e.clone(),
                    _ => continue,
                };
                for (k, v) in entries {
                    if let Value::Str(name) = k {
                        self.heap.incref(v);
                        self.set_attr(f, name, v)?;
                    }
                }
            }
        }
        if !nested.is_empty() {
            let list = self.sched_attr(sched, "_schedulers").unwrap_or(Value::None);
            let members = self.iterable_items(list)?;
            for (m, sd) in members.into_iter().zip(nested) {
                let (Some(m_id), Some(sd)) = (m.obj(), sd.obj()) else {
                    continue;
                };
                let Some(k) = self.instance_torch_class(m) else {
                    continue;
                };
                self.scheduler_load_state_dict(m_id, k, sd)?;
            }
        }
        if kind == TorchClass::ReduceLrOnPlateau {
            self.plateau_check_mode(sched)?;
        }
        Ok(())
    }
}
