//! `@torch.no_grad()`, `@torch.enable_grad()`, `@torch.inference_mode()` (and the bare
//! `@torch.no_grad` form) on functions and methods.
//!
//! PyTorch's `_DecoratorContextManager.__call__` (`torch/utils/_contextlib.py`) passes
//! `self.clone` (a bound method, keeping the manager alive) and the function to
//! `context_decorator`, which returns a new function made with `functools.wraps`: it closes
//! over two cells (the factory and the function) and carries a `__dict__` holding
//! `__wrapped__`; its `__name__`, `__qualname__`, `__doc__` and `__module__` are copied from
//! the function. Every call makes a fresh manager with the factory and runs the function
//! inside it, so outputs made in a `@torch.no_grad()` function carry no graph.
//!
//! Approximations: the manager instance and the bound `clone` method the decoration keeps
//! are counted as two allocations, not modelled as objects; each call counts one allocation
//! (the cloned manager), freed at once. Generator functions (which PyTorch wraps so that
//! every resume runs in the mode) and classes are refused.

use super::interp::{Interpreter, R};
use super::natives::{self, Native};
use crate::heap::{NativeId, ObjId, ObjKind, Sym, Value, WrapperKind};

/// The items of a `GradModeFunction` wrapper: the closure tuple (cells holding the manager
/// and the function) and the `__dict__` (`__wrapped__`).
const CLOSURE: usize = 0;
const DICT: usize = 1;

impl<'a> Interpreter<'a> {
    /// `torch.no_grad()(func)` and its siblings (argument borrowed).
    pub(in crate::python) fn grad_mode_decorate(
        &mut self,
        manager: Native,
        func: Value,
    ) -> R<Value> {
        let name = manager_name(manager);
        let kind = func.obj().map(|f| self.heap.kind(f));
        let code = match kind {
            Some(ObjKind::Function(f)) => Some(f.code),
            Some(ObjKind::Class(_)) => {
                return self.unsupported(format!(
                    "`@torch.{name}()` on a class; nearest supported: decorate its methods"
                ));
            }
            _ => None,
        };
        if let Some(code) = code
            && self.codes.get(code).is_generator
        {
            return self.unsupported(format!(
                "`@torch.{name}()` on a generator function; nearest supported: `with \
                 torch.{name}():` around the generator's body"
            ));
        }
        // The manager instance and its bound `clone` method, kept by the closure.
        self.count_untracked_allocations(2);
        self.heap.incref(func);
        let factory = self.alloc(ObjKind::Cell(Some(Value::Native(manager.id()))));
        let function = self.alloc(ObjKind::Cell(Some(func)));
        let closure = self.alloc(ObjKind::Tuple(vec![
            Value::Obj(factory),
            Value::Obj(function),
        ]));
        let wrapped = self.names.intern("__wrapped__");
        self.heap.incref(func);
        let dict = self.alloc(ObjKind::Dict(vec![(Value::Str(wrapped), func)]));
        Ok(Value::Obj(self.alloc(ObjKind::Wrapper(
            WrapperKind::GradModeFunction,
            vec![Value::Obj(closure), Value::Obj(dict)],
        ))))
    }

    /// The manager and the function a decorated function closes over (borrowed).
    fn grad_mode_parts(&self, wrapper: ObjId) -> (NativeId, Value) {
        let cells = match self.heap.kind(wrapper) {
            ObjKind::Wrapper(_, items) => match items[CLOSURE].obj().map(|c| self.heap.kind(c)) {
                Some(ObjKind::Tuple(cells)) => cells.clone(),
                _ => unreachable!("a grad-mode function's closure"),
            },
            _ => unreachable!("a grad-mode function"),
        };
        let cell = |i: usize| match cells[i].obj().map(|c| self.heap.kind(c)) {
            Some(ObjKind::Cell(Some(v))) => *v,
            _ => Value::None,
        };
        match cell(0) {
            Value::Native(n) => (n, cell(1)),
            _ => unreachable!("a grad-mode function's manager"),
        }
    }

    /// Calls a decorated function: a fresh manager sets the grad mode around the call.
    pub(in crate::python) fn grad_mode_function_call(
        &mut self,
        wrapper: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(Sym, Value)>,
    ) -> R<Value> {
        let (manager, func) = self.grad_mode_parts(wrapper);
        let mode = natives::grad_mode_of(manager).expect("a grad-mode manager");
        // `ctx_factory()`: the cloned manager, alive for the call only.
        self.count_untracked_allocations(1);
        let saved = self.grad_enabled;
        self.grad_enabled = mode;
        let result = self.call(func, args, kwargs);
        self.grad_enabled = saved;
        result
    }

    /// `f.__wrapped__` and the names `functools.wraps` copied (new reference).
    pub(in crate::python) fn grad_mode_function_attr(
        &mut self,
        wrapper: ObjId,
        name: Sym,
    ) -> R<Value> {
        let (_, func) = self.grad_mode_parts(wrapper);
        match self.names.name(name) {
            "__wrapped__" => {
                let dict = match self.heap.kind(wrapper) {
                    ObjKind::Wrapper(_, items) => items[DICT],
                    _ => unreachable!("a grad-mode function"),
                };
                let found = match dict.obj().map(|d| self.heap.kind(d)) {
                    Some(ObjKind::Dict(entries)) => entries
                        .iter()
                        .find(|(k, _)| *k == Value::Str(name))
                        .map(|&(_, v)| v),
                    _ => None,
                };
                let v = found.unwrap_or(func);
                self.heap.incref(v);
                Ok(v)
            }
            "__name__" | "__qualname__" | "__doc__" | "__module__" => self.get_attr(func, name),
            other => self.error(format!(
                "AttributeError: 'function' object has no attribute '{other}'"
            )),
        }
    }
}

impl Interpreter<'_> {
    /// `torch.is_grad_enabled()`, `torch.set_grad_enabled(mode)` and calls of the manager it
    /// returns (as a decorator), `torch.is_inference_mode_enabled()`.
    ///
    /// `set_grad_enabled.__init__` (`torch/autograd/grad_mode.py`) records the mode in force
    /// as `prev` and switches to `mode` at once, so a plain call switches grad mode until
    /// switched back; `__enter__` sets `mode` again and `__exit__` restores `prev`
    /// ([`natives::grad_mode_restored`]); `__call__(func)` restores `prev` and decorates
    /// `func` so that each call runs in `mode`. The manager object itself is not counted as
    /// an allocation (as `torch.no_grad()`'s is not).
    pub(in crate::python) fn grad_mode_call(&mut self, n: Native, a: &natives::Args) -> R<Value> {
        match n {
            Native::IsGradEnabled => Ok(Value::Bool(self.grad_enabled)),
            Native::IsInferenceModeEnabled => self.unsupported(
                "torch.is_inference_mode_enabled() (the model tracks grad mode, not inference \
                 mode apart from it); nearest supported: torch.is_grad_enabled()",
            ),
            Native::SetGradEnabled => {
                let mode = a.kw(self, "mode").or(a.pos.first().copied());
                let mode = match mode {
                    Some(Value::Bool(b)) => b,
                    Some(other) => {
                        return self.error(format!(
                            "TypeError: enabled must be a bool (got {})",
                            self.type_name_of(other)
                        ));
                    }
                    None => {
                        return self.error(
                            "TypeError: set_grad_enabled.__init__() missing 1 required positional argument: 'mode'",
                        );
                    }
                };
                let manager = match (mode, self.grad_enabled) {
                    (false, true) => Native::GradModeOffWasOn,
                    (false, false) => Native::GradModeOffWasOff,
                    (true, true) => Native::GradModeOnWasOn,
                    (true, false) => Native::GradModeOnWasOff,
                };
                self.grad_enabled = mode;
                Ok(Value::Native(manager.id()))
            }
            _ => {
                // The manager called: `@torch.set_grad_enabled(mode)` on a function.
                let [func @ (Value::Obj(_) | Value::Native(_))] = a.pos.as_slice() else {
                    return self.error(
                        "TypeError: set_grad_enabled.__call__() takes the function to decorate",
                    );
                };
                let (mode, prev) = (
                    natives::grad_mode_of(n.id()).expect("a set_grad_enabled manager"),
                    natives::grad_mode_restored(n.id()).expect("a set_grad_enabled manager"),
                );
                self.grad_enabled = prev;
                let manager = if mode {
                    Native::EnableGrad
                } else {
                    Native::NoGrad
                };
                self.grad_mode_decorate(manager, *func)
            }
        }
    }
}

/// The `torch.*` name of a grad-mode manager, for messages.
pub(in crate::python) fn manager_name(n: Native) -> &'static str {
    match n {
        Native::NoGrad => "no_grad",
        Native::EnableGrad => "enable_grad",
        _ => "inference_mode",
    }
}
