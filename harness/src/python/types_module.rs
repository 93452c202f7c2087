//! `types`: `MethodType(func, obj)`, the way reports bind a replacement `forward` to a
//! module (`model.forward = types.MethodType(new_forward, model)`). The result is the same
//! bound-method object attribute access makes (`Objects/classobject.c` `method_new` calls
//! `PyMethod_New`, which takes 3.8's and 3.14+'s method free list like any binding): it
//! holds the function and the instance, so storing it on that instance makes a cycle that
//! keeps the instance, and the tensors it holds, until the collector runs. Other names of
//! `types` are refused where they are used.

use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

impl Interpreter<'_> {
    /// `types.MethodType(func, obj)` (arguments borrowed): a new bound method.
    pub(in crate::python) fn method_type(&mut self, p: &[Value]) -> R<Value> {
        let [func, receiver] = p else {
            return self.error(format!(
                "TypeError: method expected 2 arguments, got {}",
                p.len()
            ));
        };
        if *receiver == Value::None {
            return self.error("TypeError: self must not be None");
        }
        let func = match *func {
            Value::Obj(f) if self.callable(Value::Obj(f)) => f,
            f if self.callable(f) => {
                return self.unsupported("`types.MethodType` of a builtin function");
            }
            _ => return self.error("TypeError: first argument must be callable"),
        };
        self.heap.incref(Value::Obj(func));
        self.heap.incref(*receiver);
        Ok(Value::Obj(self.alloc(ObjKind::BoundMethod {
            func,
            receiver: *receiver,
        })))
    }
}
