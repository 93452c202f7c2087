//! The comparisons `@dataclass` generates (`__eq__`, and `__lt__`.. with `order=True`,
//! Lib/dataclasses.py `_cmp_fn`) and the `__setattr__` of a frozen dataclass.

use super::dataclasses::*;
use super::interp::{Interpreter, R};
use crate::heap::{ObjId, ObjKind, Sym, Value, WrapperKind};

impl<'a> Interpreter<'a> {
    /// `order=True`: `__lt__`, `__le__`, `__gt__`, `__ge__`, each a generated function
    /// (the wrapper of `__eq__` with the method's index as its item), refused as CPython
    /// refuses it without `eq` or over a method the class defines.
    pub(super) fn dataclass_add_order(&mut self, class: ObjId, eq: bool) -> R<()> {
        if !eq {
            return self.error("ValueError: eq must be true if order is true");
        }
        for (i, (method, _)) in ORDER_METHODS.iter().enumerate() {
            let sym = self.names.intern(method);
            if self.class_own_attr(class, sym).is_some() {
                let name = self.class_name(class);
                // 3.13 dropped the full stop of the message.
                let stop = if self.heap.profile.version.minor >= 13 {
                    ""
                } else {
                    "."
                };
                return self.error(format!(
                    "TypeError: Cannot overwrite attribute {method} in class {name}{stop} Consider using functools.total_ordering"
                ));
            }
            let f = self.new_wrapper(WrapperKind::DataclassEq, vec![Value::Int(i as i64)]);
            self.set_class_own_attr(class, sym, Some(f));
        }
        Ok(())
    }

    /// A generated comparison method called: `__eq__` (no item) or one of `order=True`'s
    /// (its index as the item). `args` are owned.
    pub(in crate::python) fn dataclass_compare(&mut self, id: ObjId, args: Vec<Value>) -> R<Value> {
        match self.heap.kind(id) {
            ObjKind::Wrapper(_, items) => match items.first() {
                Some(&Value::Int(i)) => self.dataclass_order(ORDER_METHODS[i as usize], args),
                _ => self.dataclass_eq(args),
            },
            _ => unreachable!("a generated comparison"),
        }
    }

    /// `_cmp_fn`'s method: the fields of both instances compared as tuples when `other` has
    /// the same class. A different class makes CPython's method return `NotImplemented`,
    /// and the operator then fails with the `TypeError` the model raises here (a reflected
    /// method of the other class is not tried). `args` are owned.
    pub(super) fn dataclass_order(
        &mut self,
        (method, op): (&str, &str),
        args: Vec<Value>,
    ) -> R<Value> {
        let class = |v: &Value| match v.obj().map(|i| self.heap.kind(i)) {
            Some(ObjKind::Instance { class, .. }) => Some(*class),
            _ => None,
        };
        let result = match args.as_slice() {
            [a, b] => match (class(a), class(b)) {
                (Some(x), Some(y)) if x == y => {
                    let names = self.dataclass_field_names(x);
                    let (ai, bi) = (a.obj().expect("an instance"), b.obj().expect("an instance"));
                    let mut xs = Vec::with_capacity(names.len());
                    let mut ys = Vec::with_capacity(names.len());
                    for n in names {
                        xs.extend(self.instance_attr(ai, n));
                        ys.extend(self.instance_attr(bi, n));
                    }
                    match self.values_ordering(&xs, &ys) {
                        Some(o) => Ok(Value::Bool(match op {
                            "<" => o.is_lt(),
                            "<=" => o.is_le(),
                            ">" => o.is_gt(),
                            _ => o.is_ge(),
                        })),
                        None => self.error(format!(
                            "TypeError: '{op}' not supported between these field values in the workload model"
                        )),
                    }
                }
                _ => {
                    let (l, r) = (self.type_name_of(*a), self.type_name_of(*b));
                    let (l, r) = match (class(a), class(b)) {
                        (Some(x), Some(y)) => (self.class_name(x), self.class_name(y)),
                        (Some(x), None) => (self.class_name(x), r.to_string()),
                        (None, Some(y)) => (l.to_string(), self.class_name(y)),
                        (None, None) => (l.to_string(), r.to_string()),
                    };
                    self.error(format!(
                        "TypeError: '{op}' not supported between instances of '{l}' and '{r}'"
                    ))
                }
            },
            _ => self.error(format!("TypeError: {method}() takes exactly one argument")),
        };
        self.heap.decref_all(args);
        result
    }

    /// The generated `__eq__(self, other)`: field by field when `other` has the same class,
    /// `NotImplemented` (here: identity) otherwise. `args` are owned.
    pub(super) fn dataclass_eq(&mut self, args: Vec<Value>) -> R<Value> {
        let result = match args.as_slice() {
            [a, b] => {
                let class = |v: &Value| match v.obj().map(|i| self.heap.kind(i)) {
                    Some(ObjKind::Instance { class, .. }) => Some(*class),
                    _ => None,
                };
                match (class(a), class(b)) {
                    (Some(x), Some(y)) if x == y => {
                        let names = self.dataclass_field_names(x);
                        let (ai, bi) =
                            (a.obj().expect("an instance"), b.obj().expect("an instance"));
                        Ok(Value::Bool(names.iter().all(|n| {
                            match (self.instance_attr(ai, *n), self.instance_attr(bi, *n)) {
                                (Some(p), Some(q)) => p == q || self.values_equal(p, q),
                                (None, None) => true,
                                _ => false,
                            }
                        })))
                    }
                    _ => Ok(Value::Bool(a == b)),
                }
            }
            _ => self.error("TypeError: __eq__() takes exactly one argument"),
        };
        self.heap.decref_all(args);
        result
    }

    /// The frozen class's `__setattr__`: every store on an instance is refused.
    pub(in crate::python) fn refuse_frozen_store(&mut self, class: ObjId, name: Sym) -> R<()> {
        let setattr = self.names.intern("__setattr__");
        match self.class_lookup(class, setattr) {
            Some(Value::Obj(m))
                if matches!(
                    self.heap.kind(m),
                    ObjKind::Wrapper(WrapperKind::DataclassFrozenSetattr, _)
                ) =>
            {
                self.error(format!(
                    "FrozenInstanceError: cannot assign to field '{}'",
                    self.names.name(name)
                ))
            }
            _ => Ok(()),
        }
    }
}
