//! The wrapper that `LRScheduler.__init__` puts on `optimizer.step` (pytorch/pytorch
//! 008f727, `patch_track_step_called`; PyTorch 1.1 – 2.x have the same scheme, older
//! releases with a `with_counter` wrapper holding a weak method), and the order warnings
//! of `LRScheduler.step`.
//!
//! The first scheduler built on an optimizer replaces the bound `opt.step` by a plain
//! function stored in the optimizer's `__dict__`: `wrapper`, made by `functools.wraps`,
//! closing over two cells (`func`, the class's `step` function, and `opt_ref`, a
//! `weakref.ref` to the optimizer). It holds the optimizer only weakly, so there is no
//! cycle: the optimizer (and its wrapper) still die by reference counting. Later
//! schedulers on the same optimizer see `_wrapped_by_lr_sched` and make nothing lasting.
//! Each wrapped `opt.step()` sets `opt._opt_called = True` and makes two short-lived
//! objects (the `**kwargs` dict and the bound method `func.__get__(opt, cls)`).

use super::interp::{Interpreter, R};
use crate::heap::{Function, ObjId, ObjKind, Sym, Value, WrapperKind};

/// The code index of the wrapper function: it has no Python code of the workload; a call
/// of it runs [`Interpreter::call_step_wrapper`].
pub(super) const STEP_WRAPPER_CODE: u32 = u32::MAX;

/// Stand-in for the optimizer class's own `step` function (a library object).
const CLASS_STEP: &str = "Optimizer.step";

const OVERRIDDEN_WARNING: &str = "UserWarning: Seems like `optimizer.step()` has been overridden after learning rate scheduler initialization. Please, make sure to call `optimizer.step()` before `lr_scheduler.step()`. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate";

const EPOCH_WARNING: &str = "UserWarning: The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible. Please use `scheduler.step()` to step the scheduler. During the deprecation, if epoch is different from None, the closed form is used instead of the new chainable form, where available. Please open an issue if you are unable to replicate your use case: https://github.com/pytorch/pytorch/issues/new/choose.";

const ORDER_WARNING: &str = "UserWarning: Detected call of `lr_scheduler.step()` before `optimizer.step()`. In PyTorch 1.1.0 and later, you should call them in the opposite order: `optimizer.step()` before `lr_scheduler.step()`.  Failure to do this will result in PyTorch skipping the first value of the learning rate schedule. See more details at https://pytorch.org/docs/stable/optim.html#how-to-adjust-learning-rate";

impl Interpreter<'_> {
    /// The optimizer's own `step` attribute when it is a scheduler's wrapper.
    fn step_wrapper_of(&mut self, opt: ObjId) -> Option<ObjId> {
        let step = self.sym("step");
        let v = self.instance_attr(opt, step)?;
        let f = v.obj()?;
        match self.heap.kind(f) {
            ObjKind::Function(func) if func.code == STEP_WRAPPER_CODE => Some(f),
            _ => None,
        }
    }

    /// `patch_track_step_called(self.optimizer)` inside `LRScheduler.__init__`.
    pub(super) fn patch_optimizer_step(&mut self, optimizer: Value) -> R<()> {
        let Some(opt) = optimizer.obj() else {
            return Ok(());
        };
        // `self` becomes a cell of `__init__`; the nested `patch_track_step_called`
        // function and its closure tuple live until `__init__` returns.
        let frame_temporaries = 3;
        let step = self.sym("step");
        self.count_untracked_allocations(frame_temporaries);
        let already = match self.instance_attr(opt, step) {
            Some(_) => self.step_wrapper_of(opt).is_some(),
            None => {
                // `opt.step` is a new bound method, dropped after `hasattr`.
                self.scheduler_helper_object();
                self.scheduler_helper_object_freed();
                false
            }
        };
        if !already {
            self.make_step_wrapper(opt)?;
        }
        for _ in 0..frame_temporaries {
            self.heap.count_deallocation(&ObjKind::Cell(None));
        }
        Ok(())
    }

    /// `opt.step = wrap_step(opt.step)`: the lasting objects (the wrapper, its closure
    /// tuple and two cells, the weak reference, the wrapper's `__dict__`), and the
    /// temporaries (`wrap_step` and its closure tuple, the bound method passed to it, the
    /// `partial` of `functools.wraps` and its keyword dict).
    fn make_step_wrapper(&mut self, opt: ObjId) -> R<()> {
        let temporaries = 5;
        self.count_untracked_allocations(temporaries);
        let weak = self.new_weak_ref(&[Value::Obj(opt)])?;
        let func_name = Value::Str(self.sym(CLASS_STEP));
        let func_cell = self.alloc(ObjKind::Cell(Some(func_name)));
        let ref_cell = self.alloc(ObjKind::Cell(Some(weak)));
        let closure = self.alloc(ObjKind::Tuple(vec![
            Value::Obj(func_cell),
            Value::Obj(ref_cell),
        ]));
        // `update_wrapper` fills the wrapper's `__dict__` (`__wrapped__`), then
        // `wrapper._wrapped_by_lr_sched = True`. The model keeps that dict in the
        // function's defaults slot, which it never reads for this function.
        let entries = vec![
            (Value::Str(self.sym("__wrapped__")), func_name),
            (
                Value::Str(self.sym("_wrapped_by_lr_sched")),
                Value::Bool(true),
            ),
        ];
        let dict = self.alloc(ObjKind::Dict(entries));
        let name = self.sym("step");
        let wrapper = self.alloc(ObjKind::Function(Function {
            code: STEP_WRAPPER_CODE,
            name,
            closure: Some(closure),
            defaults: vec![Value::Obj(dict)],
            dict: None,
        }));
        for _ in 0..temporaries {
            self.heap.count_deallocation(&ObjKind::Cell(None));
        }
        let step = self.sym("step");
        self.set_attr(Value::Obj(opt), step, Value::Obj(wrapper))
    }

    /// A call of the wrapper: `opt = opt_ref()`, `opt._opt_called = True`, then
    /// `func.__get__(opt, opt.__class__)(*args, **kwargs)`.
    pub(super) fn call_step_wrapper(
        &mut self,
        wrapper: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let weak = match self.heap.kind(wrapper) {
            ObjKind::Function(Function {
                closure: Some(c), ..
            }) => match self.heap.kind(*c) {
                ObjKind::Tuple(cells) => match cells.get(1).and_then(|c| c.obj()) {
                    Some(cell) => match self.heap.kind(cell) {
                        ObjKind::Cell(Some(w)) => w.obj(),
                        _ => None,
                    },
                    None => None,
                },
                _ => None,
            },
            _ => None,
        };
        // The `**kwargs` dict.
        self.scheduler_helper_object();
        let target = match weak {
            Some(w) => self.call_weak(w, WrapperKind::WeakRef)?,
            None => Value::None,
        };
        let Some(opt) = target.obj() else {
            self.scheduler_helper_object_freed();
            self.heap.decref_all(args);
            self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
            return self.error("AttributeError: 'NoneType' object has no attribute '_opt_called'");
        };
        let called = self.sym("_opt_called");
        let set = self.set_attr(target, called, Value::Bool(true));
        let kind = self.instance_torch_class(target);
        // The bound method `func.__get__(opt, opt.__class__)`.
        self.scheduler_helper_object();
        let result = match (set, kind) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(kind)) => self
                .torch_method(opt, kind, "step", &args, &kwargs)
                .and_then(|r| match r {
                    Some(v) => Ok(v),
                    None => self.unsupported("a wrapped `step` of this optimizer"),
                }),
            (Ok(()), None) => self.unsupported("a scheduler on an optimizer the model lacks"),
        };
        self.scheduler_helper_object_freed();
        self.scheduler_helper_object_freed();
        self.heap.decref_all(args);
        self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
        self.heap.decref(target);
        result
    }

    /// `LRScheduler.step`'s check at `_step_count == 1`: the optimizer's `step` is no
    /// longer the wrapper, or the optimizer has not stepped (`_opt_called`). Each warning
    /// is printed once per process (the `default` warnings filter, one source line each).
    pub(super) fn check_step_order(&mut self, sched: ObjId) -> R<()> {
        let Some(opt) = self.sched_attr(sched, "optimizer").and_then(|o| o.obj()) else {
            return Ok(());
        };
        let note = if self.step_wrapper_of(opt).is_none() {
            OVERRIDDEN_WARNING
        } else {
            let called = self.sym("_opt_called");
            let stepped = match self.instance_attr(opt, called) {
                Some(v) => self.truth(v)?,
                None => false,
            };
            if stepped {
                return Ok(());
            }
            ORDER_WARNING
        };
        self.scheduler_warning(note, note);
        Ok(())
    }

    /// The deprecation warning of `step(epoch)`: `LRScheduler.step` and
    /// `ReduceLROnPlateau.step` give it from their own source lines, so each prints it once.
    pub(super) fn warn_step_epoch(&mut self, plateau: bool) {
        let site = if plateau {
            "ReduceLROnPlateau.step"
        } else {
            "LRScheduler.step"
        };
        self.scheduler_warning(site, EPOCH_WARNING);
    }

    /// A warning under the `default` filter: printed the first time its site gives it.
    fn scheduler_warning(&mut self, site: &'static str, note: &str) {
        if self.torch_classes.scheduler_warnings.contains(&site) {
            return;
        }
        self.torch_classes.scheduler_warnings.push(site);
        self.recorder
            .approximation(format!("PyTorch warns (once per process): {note}"));
    }
}
