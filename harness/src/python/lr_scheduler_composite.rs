//! `SequentialLR` and `ChainedScheduler`: schedulers that run other schedulers. Each holds
//! the list it is given (`_schedulers`, the caller's list object itself) and so every
//! scheduler in it, their optimizer and its state. `state_dict()` nests each scheduler's
//! own `state_dict()`.

use super::interp::{Interpreter, R};
use super::torchlib::TorchClass;
use crate::heap::{ObjId, ObjKind, Value};

impl Interpreter<'_> {
    /// The schedulers of a composite's list, with their classes; PyTorch's checks (at
    /// least one, none a `ReduceLROnPlateau`, all on `optimizer`).
    fn composite_members(
        &mut self,
        name: &str,
        list: Value,
        optimizer: Option<Value>,
    ) -> R<Vec<(ObjId, TorchClass)>> {
        let items = self.iterable_items(list)?;
        if items.is_empty() {
            let what = if name == "ChainedScheduler" {
                "expects at least one scheduler to be chained"
            } else {
                "expects at least one scheduler"
            };
            return self.error(format!("ValueError: {name} {what}, but got no scheduler."));
        }
        let mut out = Vec::new();
        for (i, s) in items.into_iter().enumerate() {
            let kind = self.instance_torch_class(s).filter(|k| k.is_scheduler());
            let (Some(kind), Some(id)) = (kind, s.obj()) else {
                return self.error(format!(
                    "TypeError: {name} at index {i} should have `optimizer` as its attribute."
                ));
            };
            if kind == TorchClass::ReduceLrOnPlateau {
                return self.error(format!(
                    "ValueError: {name} does not support `ReduceLROnPlateau` scheduler as it requires additional kwargs to be specified when calling `step`, but got one at index {i} in the given schedulers sequence."
                ));
            }
            let own = self.sched_attr(id, "optimizer");
            if let (Some(o), Some(own)) = (optimizer, own)
                && o != own
            {
                return self.error(format!(
                    "ValueError: {name} expects all schedulers to belong to the same optimizer, but got scheduler at index {i} with another optimizer."
                ));
            }
            out.push((id, kind));
        }
        Ok(out)
    }

    /// `SequentialLR(optimizer, schedulers, milestones)` / `ChainedScheduler(schedulers)`.
    pub(super) fn construct_composite_scheduler(
        &mut self,
        kind: TorchClass,
        arg: &dyn Fn(&str) -> Option<Value>,
    ) -> R<ObjId> {
        let Some(list) = arg("schedulers") else {
            return self.error(
                "TypeError: __init__() missing 1 required positional argument: 'schedulers'",
            );
        };
        if kind == TorchClass::ChainedScheduler {
            let members = self.composite_members("ChainedScheduler", list, None)?;
            let optimizer = match arg("optimizer").filter(|v| *v != Value::None) {
                Some(o) => o,
                None => self
                    .sched_attr(members[0].0, "optimizer")
                    .unwrap_or(Value::None),
            };
            self.composite_members("ChainedScheduler", list, Some(optimizer))?;
            self.heap.incref(list);
            self.heap.incref(optimizer);
            let sched = self
                .new_torch_instance(kind, vec![("_schedulers", list), ("optimizer", optimizer)])?;
            self.refresh_last_lr(sched)?;
            return Ok(sched);
        }
        let optimizer = arg("optimizer").unwrap_or(Value::None);
        let members = self.composite_members("SequentialLR", list, Some(optimizer))?;
        let Some(milestones) = arg("milestones") else {
            return self.error(
                "TypeError: __init__() missing 1 required positional argument: 'milestones'",
            );
        };
        let count = self.iterable_items(milestones)?.len();
        if count + 1 != members.len() {
            return self.error(format!(
                "ValueError: Sequential Schedulers expects number of schedulers provided to be one more than the number of milestone points, but got number of schedulers {} and the number of milestones to be equal to {count}",
                members.len()
            ));
        }
        let last_epoch = match arg("last_epoch").unwrap_or(Value::Int(-1)) {
            Value::Int(e) => e + 1,
            _ => return self.unsupported("a SequentialLR `last_epoch` that is not an int"),
        };
        self.heap.incref(list);
        self.heap.incref(milestones);
        self.heap.incref(optimizer);
        let sched = self.new_torch_instance(
            kind,
            vec![
                ("_schedulers", list),
                ("_milestones", milestones),
                ("last_epoch", Value::Int(last_epoch)),
                ("optimizer", optimizer),
            ],
        )?;
        // `group['lr'] = group['initial_lr']`, undo each member's initial step, then the
        // first scheduler's `_initial_step()`.
        let (lr_key, initial_key) = (self.sym("lr"), self.sym("initial_lr"));
        for g in self.sched_groups(sched)? {
            let Some(initial) = self.dict_str_get(g, initial_key) else {
                return self.error("KeyError: 'initial_lr'");
            };
            self.heap.incref(initial);
            self.dict_set(g, Value::Str(lr_key), initial);
        }
        for &(m, _) in &members {
            if let Some(Value::Int(e)) = self.sched_attr(m, "last_epoch") {
                self.sched_set(m, "last_epoch", Value::Int(e - 1))?;
            }
        }
        let (first, first_kind) = members[0];
        self.scheduler_initial_step(first, first_kind)?;
        self.composite_take_last_lr(sched, first)?;
        Ok(sched)
    }

    /// `self._last_lr = scheduler.get_last_lr()`: the member's list itself.
    fn composite_take_last_lr(&mut self, sched: ObjId, member: ObjId) -> R<()> {
        let last = self.sched_attr(member, "_last_lr").unwrap_or(Value::None);
        self.heap.incref(last);
        self.sched_set(sched, "_last_lr", last)
    }

    /// `SequentialLR.step()` / `ChainedScheduler.step()`.
    pub(super) fn composite_step(&mut self, sched: ObjId, kind: TorchClass) -> R<()> {
        let list = self.sched_attr(sched, "_schedulers").unwrap_or(Value::None);
        let members = self.composite_members("scheduler", list, None)?;
        if kind == TorchClass::ChainedScheduler {
            for (m, k) in members {
                self.scheduler_step(m, k, None)?;
            }
            return self.refresh_last_lr(sched);
        }
        let e = match self.sched_attr(sched, "last_epoch") {
            Some(Value::Int(e)) => e + 1,
            _ => return self.unsupported("a SequentialLR `last_epoch` that is not an int"),
        };
        self.sched_set(sched, "last_epoch", Value::Int(e))?;
        let ms = self.sched_attr(sched, "_milestones").unwrap_or(Value::None);
        let ms: Vec<i64> = self
            .iterable_items(ms)?
            .into_iter()
            .map(|v| match v {
                Value::Int(i) => i,
                _ => i64::MAX,
            })
            .collect();
        // `bisect_right(self._milestones, self.last_epoch)`.
        let idx = ms.partition_point(|&m| m <= e);
        let Some(&(member, member_kind)) = members.get(idx) else {
            return self.error("IndexError: list index out of range");
        };
        if idx > 0 && ms[idx - 1] == e {
            self.scheduler_update_lr(member, member_kind, Some(Value::Int(0)))?;
        } else {
            self.scheduler_step(member, member_kind, None)?;
        }
        self.composite_take_last_lr(sched, member)
    }

    /// `state_dict()` of a composite: its attributes but the optimizer, with
    /// `_schedulers` replaced by each member's `state_dict()`.
    pub(super) fn composite_state_dict(&mut self, sched: ObjId) -> R<Value> {
        let mut items = Vec::new();
        for (k, v) in self.attr_values(sched) {
            if matches!(self.names.name(k), "optimizer" | "_schedulers") {
                continue;
            }
            self.heap.incref(v);
            items.push((Value::Str(k), v));
        }
        let sd = self.alloc(ObjKind::Dict(items));
        let list = self.sched_attr(sched, "_schedulers").unwrap_or(Value::None);
        let members = self.composite_members("scheduler", list, None)?;
        let mut nested = Vec::new();
        for (m, k) in members {
            match self.scheduler_method(m, k, "state_dict", &[])? {
                Some(v) => nested.push(v),
                None => nested.push(Value::None),
            }
        }
        let nested = self.alloc(ObjKind::List(nested));
        let key = self.sym("_schedulers");
        self.dict_set(sd, Value::Str(key), Value::Obj(nested));
        Ok(Value::Obj(sd))
    }
}
