//! Expression evaluation: truth, operators, comparisons, f-strings and display.

use super::{Interpreter, MAX_EVAL_DEPTH, R};
use crate::heap::{ObjKind, Value};
use crate::python::natives;
use crate::python::scope::symbol;
use ruff_python_ast::{self as ast, CmpOp, Expr, Operator, UnaryOp};

impl<'a> Interpreter<'a> {
    // ----- expressions ----------------------------------------------------------------------

    pub(in crate::python) fn eval_truth(&mut self, e: &'a Expr) -> R<bool> {
        let v = self.eval(e)?;
        let t = self.truth(v);
        self.heap.decref(v);
        t
    }

    pub(in crate::python) fn truth(&mut self, v: Value) -> R<bool> {
        Ok(match v {
            Value::None => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Float(f) => f != 0.0,
            Value::Str(s) => !self.names.name(s).is_empty(),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::List(items) | ObjKind::Tuple(items) | ObjKind::Deque { items, .. } => {
                    !items.is_empty()
                }
                ObjKind::Dict(items) => !items.is_empty(),
                ObjKind::Set { table, .. } => !table.is_empty(),
                ObjKind::Tensor(t) if t.numel() != 1 => {
                    return self.error("RuntimeError: Boolean value of Tensor with more than one value is ambiguous");
                }
                // A one-element tensor's truth needs its value, which the model does not compute.
                ObjKind::Tensor(_) => return self.unsupported("the truth value of a tensor"),
                _ => true,
            },
            _ => true,
        })
    }

    /// Evaluates an expression to a new reference.
    pub(crate) fn eval(&mut self, e: &'a Expr) -> R<Value> {
        // An operand the VM evaluated before a suspension point (`vm/split.rs`).
        if !self.vm_substitutes.is_empty()
            && let Some(v) = self.take_substitute(e)
        {
            return Ok(v);
        }
        self.eval_depth += 1;
        let result = if self.eval_depth > MAX_EVAL_DEPTH {
            self.at(e);
            self.unsupported(format!(
                "expressions and calls nested deeper than {MAX_EVAL_DEPTH} levels"
            ))
        } else {
            self.eval_expr(e)
        };
        self.eval_depth -= 1;
        result
    }

    fn eval_expr(&mut self, e: &'a Expr) -> R<Value> {
        match e {
            Expr::Name(n) => {
                let sym = symbol(&n.node_index, n.id.as_str(), &mut self.names);
                self.offset = n.range.start().to_u32();
                self.load_name(sym)
            }
            Expr::NumberLiteral(n) => match &n.value {
                ast::Number::Int(i) => match i.as_i64() {
                    Some(v) => Ok(Value::Int(v)),
                    None => {
                        self.at(e);
                        self.unsupported("integers beyond 64 bits")
                    }
                },
                ast::Number::Float(f) => Ok(Value::Float(*f)),
                ast::Number::Complex { .. } => {
                    self.at(e);
                    self.unsupported(crate::python::constructs::Construct::ComplexNumbers.what())
                }
            },
            Expr::StringLiteral(s) => Ok(Value::Str(symbol(
                &s.node_index,
                s.value.to_str(),
                &mut self.names,
            ))),
            Expr::BooleanLiteral(b) => Ok(Value::Bool(b.value)),
            Expr::NoneLiteral(_) => Ok(Value::None),
            Expr::FString(f) => {
                self.at(e);
                self.eval_fstring(f)
            }
            Expr::BinOp(b) => {
                let l = self.eval(&b.left)?;
                let r = self.eval(&b.right)?;
                self.at(e);
                let out = self.binary(b.op, l, r, false);
                self.heap.decref(l);
                self.heap.decref(r);
                out
            }
            Expr::UnaryOp(u) => {
                let v = self.eval(&u.operand)?;
                self.at(e);
                let out = self.unary(u.op, v);
                self.heap.decref(v);
                out
            }
            Expr::BoolOp(b) => {
                let mut last = Value::None;
                for (i, value) in b.values.iter().enumerate() {
                    let v = self.eval(value)?;
                    if i + 1 == b.values.len() {
                        return Ok(v);
                    }
                    let t = self.truth(v)?;
                    let short = match b.op {
                        ast::BoolOp::And => !t,
                        ast::BoolOp::Or => t,
                    };
                    if short {
                        return Ok(v);
                    }
                    self.heap.decref(v);
                    last = Value::None;
                }
                Ok(last)
            }
            Expr::Compare(c) => self.eval_compare(c),
            Expr::If(i) => {
                if self.eval_truth(&i.test)? {
                    self.eval(&i.body)
                } else {
                    self.eval(&i.orelse)
                }
            }
            Expr::Call(c) => self.eval_call(c),
            Expr::Attribute(a) => {
                let obj = self.eval(&a.value)?;
                self.at(e);
                let attr = symbol(&a.attr.node_index, a.attr.as_str(), &mut self.names);
                let v = self.get_attr(obj, attr);
                self.heap.decref(obj);
                v
            }
            Expr::Subscript(s) => {
                let obj = self.eval(&s.value)?;
                let mut index = match natives::eval_index(self, &s.slice) {
                    Ok(i) => i,
                    Err(e) => {
                        self.heap.decref(obj);
                        return Err(e);
                    }
                };
                self.at(e);
                let v = natives::subscript(self, obj, &mut index);
                self.heap.decref(obj);
                index.release(self);
                v
            }
            Expr::Tuple(t) if t.elts.iter().any(Expr::is_starred_expr) => {
                self.eval_spread_tuple(&t.elts)
            }
            Expr::List(l) if l.elts.iter().any(Expr::is_starred_expr) => {
                let items = self.eval_spread(&l.elts)?;
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            Expr::Tuple(t) => {
                // A tuple of constants is a constant of the code object: nothing is allocated.
                if t.elts.iter().all(is_constant) {
                    let key = std::ptr::from_ref(t) as usize;
                    return natives::cached_constant(self, key, |it| {
                        t.elts.iter().map(|x| it.eval(x)).collect()
                    });
                }
                let mut items = Vec::with_capacity(t.elts.len());
                for x in &t.elts {
                    items.push(self.eval(x)?);
                }
                Ok(Value::Obj(self.alloc(ObjKind::Tuple(items))))
            }
            Expr::List(l) => {
                let mut items = Vec::with_capacity(l.elts.len());
                for x in &l.elts {
                    items.push(self.eval(x)?);
                }
                Ok(Value::Obj(self.alloc(ObjKind::List(items))))
            }
            // `**` items, and from 3.10 a display cut into groups of 17 pairs.
            Expr::Dict(d)
                if d.items.iter().any(|i| i.key.is_none())
                    || (self.heap.profile.version.minor >= 10 && d.items.len() > 17) =>
            {
                self.at(e);
                self.eval_dict_unpacking(d)
            }
            Expr::Dict(d) => {
                // `BUILD_MAP n` after the keys and values are pushed (Python/compile.c
                // `compiler_subdict`); from 3.10 a display of more than 15 pairs (`2 * n >
                // STACK_USE_GUIDELINE`, 30) builds an empty dict first and adds each pair
                // with `MAP_ADD`. Measured with a value calling `gc.get_count()` (dict free
                // list drained): the dict is not yet counted there for 15 pairs on 3.8.18 –
                // 3.13.0, nor for 17 on 3.8.18/3.9.18, and is for 16 on 3.10.13 – 3.13.0.
                let dict_first = self.heap.profile.version.minor >= 10 && d.items.len() > 15;
                let dict = dict_first.then(|| self.alloc(ObjKind::Dict(Vec::new())));
                let mut pairs = Vec::new();
                for item in &d.items {
                    let evaluated = self.eval_dict_display_pair(item);
                    match evaluated {
                        Ok(pair) => match dict {
                            Some(dict) => self.dict_set(dict, pair.0, pair.1),
                            None => pairs.push(pair),
                        },
                        Err(e) => {
                            for (k, v) in pairs {
                                self.heap.decref(k);
                                self.heap.decref(v);
                            }
                            if let Some(dict) = dict {
                                self.heap.decref_id(dict);
                            }
                            return Err(e);
                        }
                    }
                }
                let dict = dict.unwrap_or_else(|| self.alloc(ObjKind::Dict(Vec::new())));
                for (k, v) in pairs {
                    self.dict_set(dict, k, v);
                }
                Ok(Value::Obj(dict))
            }
            Expr::Lambda(l) => {
                let code = self.codes.of_lambda(l);
                self.make_function(code, l.parameters.as_deref())
            }
            Expr::Await(a) => {
                let v = self.eval(&a.value)?;
                self.at(e);
                self.await_to_end(v)
            }
            Expr::Named(n) => {
                let v = self.eval(&n.value)?;
                self.heap.incref(v);
                self.store(&n.target, v)?;
                Ok(v)
            }
            Expr::Starred(_) => {
                self.at(e);
                self.unsupported("`*` unpacking here")
            }
            Expr::Slice(_) => {
                self.at(e);
                self.unsupported("a slice outside a subscript")
            }
            Expr::ListComp(c) => {
                self.at(e);
                self.eval_list_comprehension(c)
            }
            Expr::DictComp(c) => {
                self.at(e);
                self.eval_dict_comprehension(c)
            }
            Expr::Generator(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::GeneratorExpressions.what())
            }
            Expr::SetComp(c) => {
                self.at(e);
                self.eval_set_comprehension(c)
            }
            Expr::Set(s) => {
                self.at(e);
                self.eval_set_display(s)
            }
            Expr::Yield(_) | Expr::YieldFrom(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::Generators.what())
            }
            Expr::BytesLiteral(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::BytesLiterals.what())
            }
            Expr::EllipsisLiteral(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::Ellipsis.what())
            }
            Expr::TString(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::TemplateStrings.what())
            }
            Expr::IpyEscapeCommand(_) => {
                self.at(e);
                self.unsupported(crate::python::constructs::Construct::IpythonEscapes.what())
            }
        }
    }

    fn eval_compare(&mut self, c: &'a ast::ExprCompare) -> R<Value> {
        let mut left = self.eval(&c.left)?;
        let last = c.ops.len() - 1;
        for (i, (op, right_expr)) in c.ops.iter().zip(c.comparators.iter()).enumerate() {
            let right = match self.eval(right_expr) {
                Ok(v) => v,
                Err(e) => {
                    self.heap.decref(left);
                    return Err(e);
                }
            };
            self.offset = c.range.start().to_u32();
            if i == last {
                return self.compare_once(*op, left, right);
            }
            if let Some(value) = self.compare_link(*op, left, right)? {
                return Ok(value);
            }
            left = right;
        }
        unreachable!("a comparison has at least one operator")
    }

    /// One link of a chained comparison other than the last (CPython's `COMPARE_OP`, then
    /// `JUMP_IF_FALSE_OR_POP`, 3.12+ `COPY`/`POP_JUMP_IF_FALSE`): compares, releasing
    /// `left`, and tests the result. True releases the result and keeps `right` (the next
    /// link's left operand): `None`. False releases `right` and the result is the whole
    /// expression's value (a tensor comparison's tensor, whose truth decided). An error
    /// releases the result, then `right`.
    pub(in crate::python) fn compare_link(
        &mut self,
        op: CmpOp,
        left: Value,
        right: Value,
    ) -> R<Option<Value>> {
        let result = self.compare_value(op, left, right);
        self.heap.decref(left);
        let value = match result {
            Ok(v) => v,
            Err(e) => {
                self.heap.decref(right);
                return Err(e);
            }
        };
        match self.truth(value) {
            Ok(true) => {
                self.heap.decref(value);
                Ok(None)
            }
            Ok(false) => {
                self.heap.decref(right);
                Ok(Some(value))
            }
            Err(e) => {
                self.heap.decref(value);
                self.heap.decref(right);
                Err(e)
            }
        }
    }

    /// `left op right` as a new value, both operands borrowed: a tensor ordering or
    /// equality is a bool tensor, the rest a bool.
    fn compare_value(&mut self, op: CmpOp, left: Value, right: Value) -> R<Value> {
        let ordering = !matches!(op, CmpOp::Is | CmpOp::IsNot | CmpOp::In | CmpOp::NotIn);
        if ordering && (self.is_tensor(left) || self.is_tensor(right)) {
            return crate::python::comparisons::compare(self, op, left, right);
        }
        self.compare(op, left, right)
            .and_then(|ok| self.data_depth_checked(ok))
            .map(Value::Bool)
    }

    /// `left op right` with one operator, consuming both references in the order
    /// [`Interpreter::eval_compare`] releases them (the compiled path's comparison).
    pub(in crate::python) fn compare_once(
        &mut self,
        op: CmpOp,
        left: Value,
        right: Value,
    ) -> R<Value> {
        let result = self.compare_value(op, left, right);
        self.heap.decref(left);
        self.heap.decref(right);
        result
    }

    fn compare(&mut self, op: CmpOp, l: Value, r: Value) -> R<bool> {
        use std::cmp::Ordering;
        let ordering = |a: Value, b: Value| -> Option<Ordering> {
            match (a, b) {
                (Value::Int(x), Value::Int(y)) => Some(x.cmp(&y)),
                (Value::Float(x), Value::Float(y)) => x.partial_cmp(&y),
                (Value::Int(x), Value::Float(y)) => (x as f64).partial_cmp(&y),
                (Value::Float(x), Value::Int(y)) => x.partial_cmp(&(y as f64)),
                (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(&y)),
                (Value::Bool(x), Value::Int(y)) => Some((x as i64).cmp(&y)),
                (Value::Int(x), Value::Bool(y)) => Some(x.cmp(&(y as i64))),
                _ => None,
            }
        };
        let equal = |s: &Self, a: Value, b: Value| -> bool { s.values_equal(a, b) };
        Ok(match op {
            CmpOp::Is => l == r,
            CmpOp::IsNot => l != r,
            CmpOp::Eq | CmpOp::NotEq => {
                if self.is_tensor(l) || self.is_tensor(r) {
                    return self.unsupported("comparing tensors (values are not modelled)");
                }
                let eq = match self.user_predicate(l, "__eq__", r) {
                    Some(b) => b?,
                    None => equal(self, l, r),
                };
                if op == CmpOp::Eq { eq } else { !eq }
            }
            CmpOp::Lt | CmpOp::LtE | CmpOp::Gt | CmpOp::GtE => {
                if let Some(b) = self.user_ordering(op, l, r) {
                    return b;
                }
                let Some(o) = ordering(l, r).or_else(|| self.sequence_ordering(l, r)) else {
                    return self.error(
                        "TypeError: '<' not supported between these values in the workload model",
                    );
                };
                match op {
                    CmpOp::Lt => o == Ordering::Less,
                    CmpOp::LtE => o != Ordering::Greater,
                    CmpOp::Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                }
            }
            CmpOp::In | CmpOp::NotIn => {
                if let Some(found) = self.user_predicate(r, "__contains__", l) {
                    let found = found?;
                    return Ok(if op == CmpOp::In { found } else { !found });
                }
                let found = match r {
                    Value::Obj(id) => match self.heap.kind(id) {
                        ObjKind::List(items)
                        | ObjKind::Tuple(items)
                        | ObjKind::Deque { items, .. } => items.iter().any(|&v| equal(self, l, v)),
                        ObjKind::Dict(_) => self.dict_lookup(id, l)?.is_some(),
                        ObjKind::Set { .. } => self.set_contains(id, l)?,
                        _ if self.is_weak_container(r).is_some() => self.weak_contains(id, l),
                        _ if self.container_kind(r).is_some() => self.container_contains(id, l),
                        _ => return self.unsupported("`in` on this object"),
                    },
                    Value::Str(hay) => match l {
                        Value::Str(needle) => {
                            self.names.name(hay).contains(self.names.name(needle))
                        }
                        _ => {
                            return self
                                .error("TypeError: 'in <string>' requires string as left operand");
                        }
                    },
                    _ => return self.unsupported("`in` on this value"),
                };
                if op == CmpOp::In { found } else { !found }
            }
        })
    }

    /// `a == b` for values whose equality does not need tensor data: numbers, strings, and
    /// tuples, lists and `torch.Size` item by item (a `Size` equals a tuple of its dims).
    pub(in crate::python) fn values_equal(&self, a: Value, b: Value) -> bool {
        let Some(_level) = self.data_depth.enter() else {
            return false;
        };
        let number = |v: Value| match v {
            Value::Int(i) => Some(i as f64),
            Value::Float(f) => Some(f),
            Value::Bool(b) => Some(b as i64 as f64),
            _ => None,
        };
        if let (Some(x), Some(y)) = (number(a), number(b)) {
            return x == y;
        }
        let sequence = |v: Value| -> Option<(bool, Vec<Value>)> {
            let Value::Obj(id) = v else { return None };
            match self.heap.kind(id) {
                ObjKind::Tuple(items) => Some((false, items.clone())),
                ObjKind::List(items) => Some((true, items.clone())),
                ObjKind::Size(dims) => Some((false, dims.iter().map(|&d| Value::Int(d)).collect())),
                ObjKind::StructSeq { items, .. } | ObjKind::NamedTuple { items, .. } => {
                    Some((false, items.clone()))
                }
                _ => None,
            }
        };
        let dict = |v: Value| -> Option<&Vec<(Value, Value)>> {
            match v {
                Value::Obj(id) => match self.heap.kind(id) {
                    ObjKind::Dict(items) => Some(items),
                    _ => None,
                },
                _ => None,
            }
        };
        if let (Value::Obj(x), Value::Obj(y), Some(_), Some(_)) =
            (a, b, self.set_kind(a), self.set_kind(b))
        {
            return self.sets_equal(x, y);
        }
        if let (Some(x), Some(y)) = (dict(a), dict(b)) {
            return x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.iter()
                        .any(|(k2, v2)| self.values_equal(*k, *k2) && self.values_equal(*v, *v2))
                });
        }
        match (a, b) {
            (Value::Str(x), Value::Str(y)) => self.names.name(x) == self.names.name(y),
            (Value::Obj(x), Value::Obj(y)) if x == y => true,
            _ => match (sequence(a), sequence(b)) {
                (Some((list_a, xs)), Some((list_b, ys))) => {
                    list_a == list_b
                        && xs.len() == ys.len()
                        && xs.iter().zip(&ys).all(|(&x, &y)| self.values_equal(x, y))
                }
                _ => a == b,
            },
        }
    }

    pub(in crate::python) fn is_tensor(&self, v: Value) -> bool {
        matches!(v, Value::Obj(id) if matches!(self.heap.kind(id), ObjKind::Tensor(_)))
    }

    pub(in crate::python) fn unary(&mut self, op: UnaryOp, v: Value) -> R<Value> {
        Ok(match (op, v) {
            (UnaryOp::Not, v) => Value::Bool(!self.truth(v)?),
            (UnaryOp::USub, Value::Int(i)) => match i.checked_neg() {
                Some(n) => Value::Int(n),
                None => return self.unsupported("integers beyond 64 bits"),
            },
            (UnaryOp::USub, Value::Float(f)) => Value::Float(-f),
            (UnaryOp::UAdd, Value::Int(_) | Value::Float(_)) => v,
            (UnaryOp::Invert, Value::Int(i)) => Value::Int(!i),
            (UnaryOp::Invert, Value::Obj(id)) if self.is_tensor(v) => {
                return crate::python::comparisons::invert(self, id);
            }
            (_, Value::Obj(id)) if matches!(self.heap.kind(id), ObjKind::Tensor(_)) => {
                return natives::tensor_unary(self, id, "neg");
            }
            (UnaryOp::UAdd | UnaryOp::USub, _)
                if let Some(r) = self.counter_unary(op == UnaryOp::USub, v) =>
            {
                return r;
            }
            _ => return self.error("TypeError: bad operand type for unary operator"),
        })
    }

    /// Binary operator on borrowed operands; `in_place` for augmented assignment.
    pub(in crate::python) fn binary(
        &mut self,
        op: Operator,
        l: Value,
        r: Value,
        in_place: bool,
    ) -> R<Value> {
        // `str % x` is `str.__mod__`, which formats any right operand (a tensor too).
        if let (Operator::Mod, Value::Str(fmt)) = (op, l) {
            return self.percent_format(fmt, r);
        }
        if (self.is_tensor(l) || self.is_tensor(r))
            && matches!(op, Operator::BitAnd | Operator::BitOr | Operator::BitXor)
        {
            return crate::python::comparisons::bitwise(self, op, l, r, in_place);
        }
        if self.is_tensor(l) || self.is_tensor(r) {
            return natives::tensor_binary(self, op, l, r, in_place);
        }
        if let Some(result) = self.set_binary(op, l, r) {
            return result;
        }
        if let Some(result) = self.counter_binary(op, l, r, in_place) {
            return result;
        }
        crate::python::builtin_calls::scalar_binary(self, op, l, r)
    }

    fn eval_fstring(&mut self, f: &'a ast::ExprFString) -> R<Value> {
        let mut out = String::new();
        for part in f.value.iter() {
            match part {
                ast::FStringPart::Literal(l) => out.push_str(&l.value),
                ast::FStringPart::FString(fs) => {
                    for element in fs.elements.iter() {
                        match element {
                            ast::InterpolatedStringElement::Literal(l) => out.push_str(&l.value),
                            ast::InterpolatedStringElement::Interpolation(i) => {
                                let v = self.eval(&i.expression)?;
                                let piece = self.fstring_piece(v, i);
                                self.heap.decref(v);
                                out.push_str(&piece?);
                            }
                        }
                    }
                }
            }
        }
        Ok(Value::Str(self.names.intern(&out)))
    }

    /// `str(v)` as far as the model knows values.
    pub(in crate::python) fn display(&self, v: Value) -> String {
        match v {
            Value::None => "None".into(),
            Value::Bool(b) => if b { "True" } else { "False" }.into(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => crate::python::format_spec::float_repr(f),
            Value::Str(s) => self.names.name(s).to_string(),
            Value::Obj(id) => match self.heap.kind(id) {
                ObjKind::Tensor(t) => {
                    format!("tensor({}, device='{}')", t.describe(), t.device.name())
                }
                // `SimpleNamespace` has no `__str__`: `str()` is its `repr()`.
                ObjKind::Instance { class, .. } if self.is_namespace_class(*class) => {
                    self.repr_text(v)
                }
                ObjKind::Instance { class, .. } => format!("<{} object>", self.class_name(*class)),
                ObjKind::Exception(_) => self.exception_text(id),
                // `str()` of a container is its `repr()`.
                ObjKind::List(_)
                | ObjKind::Tuple(_)
                | ObjKind::Dict(_)
                | ObjKind::StructSeq { .. }
                | ObjKind::NamedTuple { .. }
                | ObjKind::Size(_) => self.repr_text(v),
                other => format!("<{}>", other.type_name()),
            },
            Value::Dtype(d) => format!("torch.{}", d.name()),
            Value::Device(d) => format!("device(type='{}')", d.name()),
            Value::Native(_) | Value::Module(_) | Value::BoundNative(..) => "<built-in>".into(),
        }
    }
}

pub(in crate::python) fn is_constant(e: &Expr) -> bool {
    match e {
        Expr::NumberLiteral(_)
        | Expr::StringLiteral(_)
        | Expr::BooleanLiteral(_)
        | Expr::NoneLiteral(_) => true,
        Expr::UnaryOp(u) => {
            matches!(u.op, UnaryOp::USub) && matches!(&*u.operand, Expr::NumberLiteral(_))
        }
        Expr::Tuple(t) => t.elts.iter().all(is_constant),
        _ => false,
    }
}

impl<'a> Interpreter<'a> {
    /// One `key: value` of a dict display, evaluated (owned).
    pub(in crate::python) fn eval_dict_display_pair(
        &mut self,
        item: &'a ast::DictItem,
    ) -> R<(Value, Value)> {
        let Some(key) = &item.key else {
            self.at(&item.value);
            return self.unsupported(crate::python::constructs::Construct::DictUnpacking.what());
        };
        let k = self.eval(key)?;
        self.at(key);
        if let Err(e) = self.check_dict_key(k) {
            self.heap.decref(k);
            return Err(e);
        }
        match self.eval(&item.value) {
            Ok(v) => Ok((k, v)),
            Err(e) => {
                self.heap.decref(k);
                Err(e)
            }
        }
    }
}
