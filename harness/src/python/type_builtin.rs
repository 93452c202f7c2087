//! `type(x)`: the class of an object, the same object every time, so it compares with `is`
//! and `==`, gives `type(x).__name__` and constructs with `type(self)(...)`. The
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
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Instance { class, .. } => {
                    let class = Value::Obj(*class);
                    self.heap.incref(class);
                    Ok(class)
                }
                ObjKind::List(_) => builtin(Native::List),
                ObjKind::Tuple(_) => builtin(Native::Tuple),
                ObjKind::Dict(_) => builtin(Native::Dict),
                ObjKind::Set { frozen: false, .. } => builtin(Native::SetFn),
                ObjKind::Set { frozen: true, .. } => builtin(Native::FrozenSetFn),
                ObjKind::Tensor(_) => builtin(Native::TorchTensor),
                ObjKind::Class(_) => builtin(Native::TypeFn),
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
