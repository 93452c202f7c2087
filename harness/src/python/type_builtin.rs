//! `type(x)`: the class of an object, the same object every time, so it compares with `is`
//! and `==`, gives `type(x).__name__` and constructs with `type(self)(...)` (`type(None)()`
//! is `None`, as CPython's `NoneType()` is). The
//! three-argument form (a class built at run time) is refused.

use super::interp::{Interpreter, R};
use super::natives::{self, Native};
use crate::heap::{ObjKind, Value};

impl<'a> Interpreter<'a> {
    /// `type(obj)` (arguments borrowed): a user instance's class, or the builtin type that the
    /// model names for an int, float, str, bool, list, tuple, dict, set, tensor or class.
    pub(super) fn type_call(&mut self, args: &[Value]) -> R<Value> {
        let obj = match args {
            [obj] => *obj,
            [_, _, _] => {
                return self.unsupported("`type(name, bases, dict)`: classes built at run time");
            }
            _ => return self.error("TypeError: type() takes 1 or 3 arguments"),
        };
        let builtin = |n: Native| Ok(natives::native_value(n));
        match obj {
            Value::Int(_) => builtin(Native::Int),
            Value::Float(_) => builtin(Native::Float),
            Value::Bool(_) => builtin(Native::Bool),
            Value::Str(_) => builtin(Native::Str),
            Value::None => builtin(Native::NoneTypeFn),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } if self.is_namespace_class(*class) => {
                    builtin(Native::TypesSimpleNamespace)
                }
                ObjKind::Instance { class, .. } | ObjKind::NamedTuple { class, .. } => {
                    let class = Value::Obj(*class);
                    self.heap.incref(class);
                    Ok(class)
                }
                // An exception's class is a class object (builtin or user-defined).
                ObjKind::Exception(e) => {
                    let class = Value::Obj(e.class);
                    self.heap.incref(class);
                    Ok(class)
                }
                ObjKind::Dict(_) => match self.heap.dict_flavour(id).map(|f| f.subclass) {
                    Some(crate::heap::DictSubclass::DefaultDict) => builtin(Native::DefaultDictFn),
                    Some(crate::heap::DictSubclass::OrderedDict) => builtin(Native::OrderedDictFn),
                    Some(crate::heap::DictSubclass::Counter) => builtin(Native::CounterFn),
                    None => builtin(Native::Dict),
                },
                ObjKind::Deque { .. } => builtin(Native::Deque),
                ObjKind::List(_) => builtin(Native::List),
                ObjKind::Tuple(_) => builtin(Native::Tuple),
                ObjKind::Set { frozen: false, .. } => builtin(Native::SetFn),
                ObjKind::Set { frozen: true, .. } => builtin(Native::FrozenSetFn),
                ObjKind::Tensor(_) => builtin(Native::TorchTensor),
                ObjKind::Class(_) => builtin(Native::TypeFn),
                ObjKind::GradFn { .. } => self.grad_fn_type(id),
                other => {
                    let t = other.type_name();
                    self.unsupported(format!("`type()` of a {t} object"))
                }
            },
            _ => {
                let t = self.value_type_name(obj);
                self.unsupported(format!("`type()` of a {t} value"))
            }
        }
    }
}

/// `__name__` of a builtin type the model represents as a native (`type(d).__name__`).
pub(super) fn builtin_type_name(n: Native) -> Option<&'static str> {
    Some(match n {
        Native::Int => "int",
        Native::Float => "float",
        Native::Bool => "bool",
        Native::Str => "str",
        Native::List => "list",
        Native::Tuple => "tuple",
        Native::Dict => "dict",
        Native::SetFn => "set",
        Native::FrozenSetFn => "frozenset",
        Native::Deque => "deque",
        Native::DefaultDictFn => "defaultdict",
        Native::OrderedDictFn => "OrderedDict",
        Native::CounterFn => "Counter",
        Native::NoneTypeFn => "NoneType",
        Native::TorchTensor => "Tensor",
        Native::TypeFn => "type",
        Native::Object => "object",
        Native::TypesSimpleNamespace => "SimpleNamespace",
        _ => return None,
    })
}

/// Whether `name` is a method of the builtin container type `type_name` that the model
/// only supports when called (`d.get(k)`), not taken as a value (`key=d.get`).
pub(super) fn is_container_method(type_name: &str, name: &str) -> bool {
    let methods: &[&str] = match type_name {
        "dict" => &[
            "get",
            "keys",
            "values",
            "items",
            "pop",
            "popitem",
            "setdefault",
            "update",
            "clear",
            "copy",
        ],
        "list" => &[
            "append", "extend", "insert", "pop", "remove", "clear", "index", "count", "sort",
            "reverse", "copy",
        ],
        "tuple" => &["index", "count"],
        "set" => &["add", "discard", "remove", "pop", "update", "clear", "copy"],
        "deque" => &["append", "appendleft", "pop", "popleft", "extend", "clear"],
        _ => &[],
    };
    methods.contains(&name)
}
