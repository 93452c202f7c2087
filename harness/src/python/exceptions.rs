//! Python exceptions as model objects: the builtin exception classes, exception instances,
//! the model's own runtime errors turned into the exceptions CPython would raise, chaining
//! (`__context__`, `__cause__`) and the exceptions being handled (`sys.exc_info()`).
//!
//! An exception travels as [`Exc::Raised`] holding its instance. While no `try` or `with`
//! block is running, nothing can catch it, so errors travel as before and no object is
//! created: an uncaught out-of-memory error ends the run exactly as it always did.
//!
//! Objects an exception creates, as counted by CPython's generation-0 counter. Measured
//! with `~/.pyenv/versions/3.{8,9,10,11,12,13}.*/bin/python -c "$PRELUDE$probe$MEASURE
//! print(d)"` (the probes, prelude and measurement of `harness/tests/exceptions.rs` and
//! `tests/probes`: `gc.disable()`, free lists warmed, `gc.get_count()[0]` around the
//! third call of `probe()`); the test re-measures with every installed interpreter:
//!
//! | probe                                      | 3.8 – 3.10 | 3.11 – 3.13 |
//! |--------------------------------------------|------------|-------------|
//! | `ValueError("x")` kept                     | 1          | 1           |
//! | raise + catch, nothing kept                | 0          | 0           |
//! | raise + catch, `e` kept                    | 2          | 3           |
//! | raised one call deeper, `e` kept           | 3          | 5           |
//! | raised two calls deeper, `e` kept          | 4          | 7           |
//! | `sys.exc_info()` kept                      | 2          | 3           |
//! | `e.__traceback__` kept                     | 1          | 2           |
//! | `raise x` of a caught `x`, caught, kept    | 3          | 4           |
//! | bare `raise`, caught again, kept           | 2          | 3           |
//! | `raise KeyError from ValueError`, kept     | 3          | 4           |
//! | `KeyError` of a dict lookup, kept          | 2          | 3           |
//!
//! That is: the instance (+1; its `args` tuple comes from the tuple free list, no args is
//! the empty-tuple singleton), one traceback object per frame the exception passes (+1
//! each, no free list), and the frame objects: on 3.11+ a frame object is created when a
//! traceback takes the frame (+1); on ≤ 3.10 every call already has one, and a frame kept
//! past its call makes the next call of the same code take another frame (here from the
//! warm frame free list, so 0; see `frames.rs`).

use super::interp::{Exc, Interpreter, R};
use crate::error::InputErrorKind;
use crate::heap::{Attrs, Class, ExceptionData, ObjId, ObjKind, Value};
use crate::timeline::OomReport;

/// CPython's builtin exception hierarchy (the part workloads meet), parents first.
/// `OutOfMemoryError` is torch's (`torch.OutOfMemoryError`, a `RuntimeError`).
const HIERARCHY: &[(&str, Option<&str>)] = &[
    ("BaseException", None),
    ("SystemExit", Some("BaseException")),
    ("KeyboardInterrupt", Some("BaseException")),
    ("GeneratorExit", Some("BaseException")),
    ("Exception", Some("BaseException")),
    ("StopIteration", Some("Exception")),
    ("StopAsyncIteration", Some("Exception")),
    ("ArithmeticError", Some("Exception")),
    ("ZeroDivisionError", Some("ArithmeticError")),
    ("OverflowError", Some("ArithmeticError")),
    ("FloatingPointError", Some("ArithmeticError")),
    ("AssertionError", Some("Exception")),
    ("AttributeError", Some("Exception")),
    ("BufferError", Some("Exception")),
    ("EOFError", Some("Exception")),
    ("ImportError", Some("Exception")),
    ("ModuleNotFoundError", Some("ImportError")),
    ("LookupError", Some("Exception")),
    ("IndexError", Some("LookupError")),
    ("KeyError", Some("LookupError")),
    ("MemoryError", Some("Exception")),
    ("NameError", Some("Exception")),
    ("UnboundLocalError", Some("NameError")),
    ("OSError", Some("Exception")),
    ("ReferenceError", Some("Exception")),
    ("RuntimeError", Some("Exception")),
    ("NotImplementedError", Some("RuntimeError")),
    ("RecursionError", Some("RuntimeError")),
    ("OutOfMemoryError", Some("RuntimeError")),
    ("SystemError", Some("Exception")),
    ("TypeError", Some("Exception")),
    ("ValueError", Some("Exception")),
    ("UnicodeError", Some("ValueError")),
    ("Warning", Some("Exception")),
    ("UserWarning", Some("Warning")),
    ("DeprecationWarning", Some("Warning")),
    ("RuntimeWarning", Some("Warning")),
    ("FutureWarning", Some("Warning")),
    ("CancelledError", Some("BaseException")),
    ("FrozenInstanceError", Some("AttributeError")),
    ("QueueEmpty", Some("Exception")),
    ("QueueFull", Some("Exception")),
    ("TimeoutError", Some("OSError")),
    // `asyncio.TimeoutError` before 3.11 (its own class; an alias of the builtin from 3.11).
    ("asyncio.TimeoutError", Some("Exception")),
];

/// The name under which torch exposes its out-of-memory error (not a Python builtin).
const TORCH_OOM: &str = "OutOfMemoryError";

/// `asyncio.CancelledError` (a `BaseException` since 3.8; not a Python builtin).
const ASYNCIO_CANCELLED: &str = "CancelledError";

/// `asyncio.QueueEmpty` and `asyncio.QueueFull` (not Python builtins).
pub(super) const ASYNCIO_QUEUE_ERRORS: [&str; 2] = ["QueueEmpty", "QueueFull"];

/// `dataclasses.FrozenInstanceError` (an `AttributeError`; not a Python builtin).
const DATACLASSES_FROZEN: &str = "FrozenInstanceError";

/// The interpreter's exception bookkeeping.
#[derive(Default)]
pub(super) struct ExceptionState {
    /// The builtin exception classes, created on first use (workloads that never touch an
    /// exception create no objects for them).
    classes: Vec<(&'static str, ObjId)>,
    /// `try` statements and `with` blocks on user context managers under way: only while
    /// one is can an exception be caught, so only then are exception objects created.
    pub handler_depth: u32,
    /// Exceptions being handled, innermost last (`except` and `finally` bodies, `__exit__`):
    /// what `sys.exc_info()`, bare `raise` and `__context__` see. Each holds a reference.
    pub handling: Vec<ObjId>,
    /// An out-of-memory error raised while a handler could catch it: recorded as the run's
    /// outcome only if it is never caught.
    pub pending_oom: Option<OomReport>,
}

impl<'a> Interpreter<'a> {
    fn exception_classes(&mut self) -> &[(&'static str, ObjId)] {
        if self.exc.classes.is_empty() {
            let mut ids: Vec<(&'static str, ObjId)> = Vec::with_capacity(HIERARCHY.len());
            for &(name, base) in HIERARCHY {
                let base = base.and_then(|b| ids.iter().find(|(n, _)| *n == b).map(|(_, id)| *id));
                if let Some(b) = base {
                    self.heap.incref(Value::Obj(b));
                }
                let shown = name.rsplit('.').next().unwrap_or(name);
                let sym = self.names.intern(shown);
                let id = self.heap.insert_uncounted(ObjKind::Class(Class {
                    name: sym,
                    base,
                    attrs: Vec::new(),
                }));
                ids.push((name, id));
            }
            self.exc.classes = ids;
        }
        &self.exc.classes
    }

    /// The builtin exception class `name` (`ValueError`), if it is one.
    pub(super) fn builtin_exception(&mut self, name: &str) -> Option<Value> {
        if name == TORCH_OOM
            || name == ASYNCIO_CANCELLED
            || name == DATACLASSES_FROZEN
            || ASYNCIO_QUEUE_ERRORS.contains(&name)
            || !HIERARCHY.iter().any(|(n, _)| *n == name)
        {
            return None;
        }
        self.exception_class(name).map(Value::Obj)
    }

    /// `torch.OutOfMemoryError` (also `torch.cuda.OutOfMemoryError`).
    pub(super) fn torch_oom_class(&mut self) -> Value {
        self.exception_class(TORCH_OOM)
            .map_or(Value::None, Value::Obj)
    }

    /// `asyncio.CancelledError`.
    pub(super) fn asyncio_cancelled_class(&mut self) -> ObjId {
        self.exception_class(ASYNCIO_CANCELLED)
            .expect("CancelledError is in the hierarchy")
    }

    /// `asyncio.TimeoutError`: its own class (an `Exception`) before 3.11, the builtin
    /// `TimeoutError` from 3.11.
    pub(super) fn asyncio_timeout_class(&mut self) -> ObjId {
        let name = if self.heap.profile.version.minor <= 10 {
            "asyncio.TimeoutError"
        } else {
            "TimeoutError"
        };
        self.exception_class(name)
            .expect("TimeoutError is in the hierarchy")
    }

    /// `dataclasses.FrozenInstanceError`.
    pub(super) fn dataclasses_frozen_class(&mut self) -> Value {
        self.exception_class(DATACLASSES_FROZEN)
            .map_or(Value::None, Value::Obj)
    }

    /// `asyncio.QueueEmpty` / `asyncio.QueueFull` by name.
    pub(super) fn builtin_exception_class(&mut self, name: &str) -> Option<Value> {
        self.exception_class(name).map(Value::Obj)
    }

    fn exception_class(&mut self, name: &str) -> Option<ObjId> {
        self.exception_classes()
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, id)| *id)
    }

    /// Whether `class` derives from `BaseException`.
    pub(super) fn is_exception_class(&self, class: ObjId) -> bool {
        let Some(&(_, root)) = self.exc.classes.first() else {
            return false;
        };
        self.class_derives_from(class, root)
    }

    /// Whether `class` is `base` or one of its subclasses.
    pub(super) fn class_derives_from(&self, class: ObjId, base: ObjId) -> bool {
        let mut cur = Some(class);
        while let Some(c) = cur {
            if c == base {
                return true;
            }
            cur = match self.heap.kind(c) {
                ObjKind::Class(k) => k.base,
                _ => None,
            };
        }
        false
    }

    /// Creates an exception instance of `class` whose `args` are `args` (owned).
    pub(super) fn new_exception(&mut self, class: ObjId, args: Vec<Value>) -> ObjId {
        let args = if args.is_empty() {
            None
        } else {
            Some(self.alloc(ObjKind::Tuple(args)))
        };
        self.heap.incref(Value::Obj(class));
        self.alloc(ObjKind::Exception(Box::new(ExceptionData {
            class,
            args,
            traceback: None,
            context: None,
            cause: None,
            suppress_context: false,
            dict: Attrs::Dict(None),
            oom: None,
        })))
    }

    /// `SomeError(*args, **kwargs)`: the call's argument tuple becomes `args`
    /// (`BaseException_new`), then a user `__init__` runs if the class defines one.
    pub(super) fn instantiate_exception(
        &mut self,
        class: ObjId,
        args: Vec<Value>,
        kwargs: Vec<(crate::heap::Sym, Value)>,
    ) -> R<Value> {
        let init_sym = self.names.intern("__init__");
        let init = self.class_lookup(class, init_sym);
        let Some(Value::Obj(init)) = init.filter(
            |v| matches!(v, Value::Obj(f) if matches!(self.heap.kind(*f), ObjKind::Function(_))),
        ) else {
            if !kwargs.is_empty() {
                self.heap.decref_all(args);
                self.heap.decref_all(kwargs.into_iter().map(|(_, v)| v));
                return self.error("TypeError: exceptions take no keyword arguments");
            }
            return Ok(Value::Obj(self.new_exception(class, args)));
        };
        for &a in &args {
            self.heap.incref(a);
        }
        let exception = self.new_exception(class, args.clone());
        let mut all = Vec::with_capacity(args.len() + 1);
        self.heap.incref(Value::Obj(exception));
        all.push(Value::Obj(exception));
        all.extend(args);
        let receiver = Value::Obj(exception);
        match self.call(Value::Obj(init), all, kwargs) {
            Ok(Value::None) => Ok(receiver),
            Ok(other) => {
                self.heap.decref(other);
                self.heap.decref(receiver);
                self.error("TypeError: __init__() should return None")
            }
            Err(e) => {
                self.heap.decref(receiver);
                Err(e)
            }
        }
    }

    /// `BaseException.__init__(self, *args)`: replaces `args`.
    pub(super) fn exception_init(&mut self, exception: ObjId, args: Vec<Value>) {
        let tuple = (!args.is_empty()).then(|| self.alloc(ObjKind::Tuple(args)));
        let old = match self.heap.kind_mut(exception) {
            ObjKind::Exception(e) => std::mem::replace(&mut e.args, tuple),
            _ => tuple,
        };
        if let Some(old) = old {
            self.heap.decref_id(old);
        }
    }

    /// Raises a builtin exception `name(message)`: an object when a handler could catch
    /// it, otherwise the model's located error with CPython's text.
    pub(super) fn raise_builtin<T>(&mut self, name: &str, args: Vec<Value>) -> R<T> {
        if self.exc.handler_depth == 0 {
            let text = self.args_text(&args);
            self.heap.decref_all(args);
            return self.error(if text.is_empty() {
                name.to_string()
            } else {
                format!("{name}: {text}")
            });
        }
        let class = self.exception_class(name).expect("a builtin exception");
        let exception = self.new_exception(class, args);
        Err(self.raising(exception))
    }

    /// A new exception in flight: its `__context__` is the exception being handled.
    pub(super) fn raising(&mut self, exception: ObjId) -> Box<Exc> {
        self.set_context(exception);
        Box::new(Exc::Raised {
            exception,
            tb_depth: None,
            offset: self.offset,
        })
    }

    /// `_PyErr_SetObject`'s chaining: the handled exception becomes the new one's
    /// `__context__`, cutting the chain where it would loop back.
    pub(in crate::python) fn set_context(&mut self, exception: ObjId) {
        let Some(&handled) = self.exc.handling.last() else {
            return;
        };
        if handled == exception {
            return;
        }
        let mut cur = handled;
        loop {
            let next = match self.heap.kind(cur) {
                ObjKind::Exception(e) => e.context,
                _ => None,
            };
            match next {
                Some(n) if n == exception => {
                    if let ObjKind::Exception(e) = self.heap.kind_mut(cur) {
                        e.context = None;
                    }
                    self.heap.decref_id(n);
                    break;
                }
                Some(n) => cur = n,
                None => break,
            }
        }
        self.heap.incref(Value::Obj(handled));
        let old = match self.heap.kind_mut(exception) {
            ObjKind::Exception(e) => e.context.replace(handled),
            _ => None,
        };
        if let Some(old) = old {
            self.heap.decref_id(old);
        }
    }

    /// Sets `__cause__` (owned, or `None`) and `__suppress_context__`.
    pub(super) fn set_cause(&mut self, exception: ObjId, cause: Option<ObjId>) {
        let old = match self.heap.kind_mut(exception) {
            ObjKind::Exception(e) => {
                e.suppress_context = true;
                std::mem::replace(&mut e.cause, cause)
            }
            _ => cause,
        };
        if let Some(old) = old {
            self.heap.decref_id(old);
        }
    }

    /// Turns an error on its way out into an exception object when a handler could catch
    /// it: a runtime error whose message names a builtin exception (`KeyError: 'a'`), or the
    /// allocator's out-of-memory error. Unsupported constructs and other model errors stay
    /// as they are: they end the run.
    pub(super) fn materialise(&mut self, exc: Box<Exc>) -> Box<Exc> {
        if self.exc.handler_depth == 0 {
            return exc;
        }
        match *exc {
            Exc::Error {
                kind: InputErrorKind::Runtime,
                ref message,
                offset,
            } => {
                let Some((name, text)) = split_exception_message(message) else {
                    return exc;
                };
                let Some(class) = self.exception_class(name) else {
                    return exc;
                };
                let args = if text.is_empty() {
                    Vec::new()
                } else if name == "KeyError" {
                    // CPython's `KeyError` carries the key itself.
                    use super::reprs::KeyText;
                    vec![match super::reprs::key_from_text(text) {
                        Some(KeyText::Str(s)) => Value::Str(self.names.intern(s)),
                        Some(KeyText::Int(i)) => Value::Int(i),
                        Some(KeyText::Bool(b)) => Value::Bool(b),
                        Some(KeyText::None) => Value::None,
                        None => Value::Str(self.names.intern(text)),
                    }]
                } else {
                    vec![Value::Str(self.names.intern(text))]
                };
                let exception = self.new_exception(class, args);
                let saved = std::mem::replace(&mut self.offset, offset);
                let raised = self.raising(exception);
                self.offset = saved;
                raised
            }
            Exc::Oom => {
                let Some(report) = self.exc.pending_oom.take() else {
                    return exc;
                };
                let class = self.torch_oom_class();
                let Value::Obj(class) = class else { return exc };
                let message = Value::Str(self.names.intern(&report.message));
                let exception = self.new_exception(class, vec![message]);
                if let ObjKind::Exception(e) = self.heap.kind_mut(exception) {
                    e.oom = Some(Box::new(report));
                }
                self.raising(exception)
            }
            _ => exc,
        }
    }

    /// Whether `exception` matches an `except` clause's value: a class or a tuple of them.
    pub(super) fn exception_matches(&mut self, exception: ObjId, spec: Value) -> R<bool> {
        let class = match self.heap.kind(exception) {
            ObjKind::Exception(e) => e.class,
            _ => return Ok(false),
        };
        let classes: Vec<Value> = match spec {
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tuple(items) => items.clone(),
                _ => vec![spec],
            },
            other => vec![other],
        };
        for c in classes {
            match c {
                Value::Obj(c)
                    if matches!(self.heap.kind(c), ObjKind::Class(_))
                        && self.is_exception_class(c) =>
                {
                    if self.class_derives_from(class, c) {
                        return Ok(true);
                    }
                }
                _ => {
                    return self.error(
                        "TypeError: catching classes that do not inherit from BaseException is not allowed",
                    );
                }
            }
        }
        Ok(false)
    }

    /// The exception an `Exc` carries, if it is a Python exception.
    pub(super) fn raised_exception(exc: &Exc) -> Option<ObjId> {
        match exc {
            Exc::Raised { exception, .. } => Some(*exception),
            _ => None,
        }
    }

    /// `str(e)`: the single argument, nothing for none, the tuple otherwise.
    pub(super) fn exception_text(&self, exception: ObjId) -> String {
        let args = match self.heap.kind(exception) {
            ObjKind::Exception(e) => e.args,
            _ => None,
        };
        let items = match args.map(|a| self.heap.kind(a)) {
            Some(ObjKind::Tuple(items)) => items.clone(),
            _ => Vec::new(),
        };
        // `KeyError.__str__` shows its one argument's repr.
        if let (ObjKind::Exception(e), [one]) = (self.heap.kind(exception), items.as_slice())
            && self.class_name(e.class) == "KeyError"
        {
            return self.repr_text(*one);
        }
        self.args_text(&items)
    }

    fn args_text(&self, items: &[Value]) -> String {
        match items {
            [] => String::new(),
            [one] => self.display(*one),
            many => format!(
                "({})",
                many.iter()
                    .map(|v| self.display(*v))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    /// `ClassName: text`, as an uncaught exception prints its last line.
    pub(super) fn exception_summary(&self, exception: ObjId) -> String {
        let class = match self.heap.kind(exception) {
            ObjKind::Exception(e) => self.class_name(e.class),
            _ => "Exception".into(),
        };
        let text = self.exception_text(exception);
        if text.is_empty() {
            class
        } else {
            format!("{class}: {text}")
        }
    }

    /// An exception that reached the top of the workload: the allocator's out-of-memory
    /// error ends the run as OOM (its report recorded now); any other is a located error.
    pub(super) fn uncaught(
        &mut self,
        exception: ObjId,
        offset: u32,
    ) -> Result<(), (InputErrorKind, String, u32)> {
        let report = match self.heap.kind_mut(exception) {
            ObjKind::Exception(e) => e.oom.take(),
            _ => None,
        };
        if let Some(report) = report {
            self.recorder.oom(*report);
            return Ok(());
        }
        let summary = self.exception_summary(exception);
        Err((InputErrorKind::Runtime, summary, offset))
    }

    /// `e.args`, `e.__traceback__`, `e.__context__`, `e.__cause__`, `e.__suppress_context__`,
    /// then instance attributes and class attributes.
    pub(super) fn exception_attr(&mut self, id: ObjId, name: &str) -> Option<Value> {
        let ObjKind::Exception(e) = self.heap.kind(id) else {
            return None;
        };
        let v = match name {
            "args" => match e.args {
                Some(a) => Value::Obj(a),
                None => {
                    let t = super::natives::constant_tuple(self, Vec::new());
                    return Some(t);
                }
            },
            "__traceback__" => e.traceback.map_or(Value::None, Value::Obj),
            "__context__" => e.context.map_or(Value::None, Value::Obj),
            "__cause__" => e.cause.map_or(Value::None, Value::Obj),
            "__suppress_context__" => Value::Bool(e.suppress_context),
            "__class__" => Value::Obj(e.class),
            // `StopIteration.value`: its first argument (a generator's return value).
            "value" if self.class_name(e.class) == "StopIteration" => {
                let first = match e.args.map(|a| self.heap.kind(a)) {
                    Some(ObjKind::Tuple(items)) => items.first().copied(),
                    _ => None,
                };
                first.unwrap_or(Value::None)
            }
            _ => return None,
        };
        self.heap.incref(v);
        Some(v)
    }

    /// `e.__traceback__ = tb` / `e.with_traceback(tb)`: `tb` is owned.
    pub(super) fn set_exception_traceback(&mut self, id: ObjId, tb: Value) -> R<()> {
        let tb = match tb {
            Value::None => None,
            Value::Obj(t) if matches!(self.heap.kind(t), ObjKind::Traceback(_)) => Some(t),
            other => {
                self.heap.decref(other);
                return self.error("TypeError: __traceback__ must be a traceback or None");
            }
        };
        let old = match self.heap.kind_mut(id) {
            ObjKind::Exception(e) => std::mem::replace(&mut e.traceback, tb),
            _ => tb,
        };
        if let Some(old) = old {
            self.heap.decref_id(old);
        }
        Ok(())
    }

    /// `sys.exc_info()`: a new 3-tuple `(type, value, traceback)` of the exception being
    /// handled, or of three `None`s.
    pub(super) fn sys_exc_info(&mut self) -> Value {
        let items = match self.exc.handling.last() {
            Some(&e) => self.sys_exc_info_items(e),
            None => vec![Value::None; 3],
        };
        Value::Obj(self.alloc(ObjKind::Tuple(items)))
    }

    /// Enters the handling of `exception` (a reference is taken).
    pub(super) fn begin_handling(&mut self, exception: ObjId) {
        self.heap.incref(Value::Obj(exception));
        self.exc.handling.push(exception);
    }

    pub(super) fn end_handling(&mut self) {
        if let Some(e) = self.exc.handling.pop() {
            self.heap.decref_id(e);
        }
    }

    /// Drops an error that will not propagate (a `finally` that returned, a suppressing
    /// `__exit__`): its exception reference is released.
    #[allow(clippy::boxed_local)] // errors travel boxed; this is where one ends
    pub(super) fn discard(&mut self, exc: Box<Exc>) {
        if let Exc::Raised { exception, .. } = *exc {
            self.heap.decref_id(exception);
        }
    }
}

/// `("KeyError", "'a'")` from the model's `KeyError: 'a'`.
fn split_exception_message(message: &str) -> Option<(&str, &str)> {
    let (name, text) = match message.split_once(": ") {
        Some((n, t)) => (n, t),
        None => (message, ""),
    };
    (name != TORCH_OOM && HIERARCHY.iter().any(|(n, _)| *n == name)).then_some((name, text))
}
