//! Binary arithmetic on ints, floats, strings, lists and tuples (not tensors).

use super::int_ops;
use super::interp::{Interpreter, R};
use super::natives::{float_of, new_sequence};
use crate::heap::{ObjKind, Value};
use ruff_python_ast::Operator;

/// Arithmetic on ints, floats, strings and sequences (borrowed operands).
pub(super) fn scalar_binary(
    it: &mut Interpreter<'_>,
    op: Operator,
    l: Value,
    r: Value,
) -> R<Value> {
    use Operator::*;
    let overflow = |it: &Interpreter<'_>| it.unsupported::<Value>("integers beyond 64 bits");
    let as_int = |v: Value| match v {
        Value::Int(i) => Some(i),
        Value::Bool(b) => Some(b as i64),
        _ => None,
    };
    if let (Some(a), Some(b)) = (as_int(l), as_int(r)) {
        return match op {
            Add => a
                .checked_add(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Sub => a
                .checked_sub(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Mult => a
                .checked_mul(b)
                .map(Value::Int)
                .map_or_else(|| overflow(it), Ok),
            Div => {
                if b == 0 {
                    return it.error("ZeroDivisionError: division by zero");
                }
                Ok(Value::Float(a as f64 / b as f64))
            }
            FloorDiv => int_ops::to_value(it, int_ops::floor_div(a, b)),
            Mod => int_ops::to_value(it, int_ops::modulo(a, b)),
            Pow if b < 0 => int_ops::negative_power(a, b)
                .map(Value::Float)
                .or_else(|fault| fault.raise(it)),
            Pow => int_ops::to_value(it, int_ops::power(a, b)),
            LShift => int_ops::to_value(it, int_ops::shift_left(a, b)),
            RShift => int_ops::to_value(it, int_ops::shift_right(a, b)),
            BitAnd => Ok(Value::Int(a & b)),
            BitOr => Ok(Value::Int(a | b)),
            BitXor => Ok(Value::Int(a ^ b)),
            MatMult => it.error("TypeError: unsupported operand type(s) for @"),
        };
    }
    if let (Some(a), Some(b)) = (float_of(l), float_of(r)) {
        return Ok(Value::Float(match op {
            Add => a + b,
            Sub => a - b,
            Mult => a * b,
            Div => {
                if b == 0.0 {
                    return it.error("ZeroDivisionError: float division by zero");
                }
                a / b
            }
            FloorDiv | Mod if b == 0.0 => {
                // The texts of CPython 3.10 – 3.12 (3.13 says "float modulo by zero").
                let what = if op == FloorDiv {
                    "floor division by zero"
                } else {
                    "modulo"
                };
                return it.error(format!("ZeroDivisionError: float {what}"));
            }
            FloorDiv => int_ops::float_divmod(a, b).0,
            Mod => int_ops::float_divmod(a, b).1,
            Pow => a.powf(b),
            _ => return it.error("TypeError: unsupported operand type(s) for float"),
        }));
    }
    match (op, l, r) {
        (Add, Value::Str(a), Value::Str(b)) => {
            it.budget_bytes((it.names.name(a).len() + it.names.name(b).len()) as u64)?;
            let s = format!("{}{}", it.names.name(a), it.names.name(b));
            Ok(Value::Str(it.names.intern(&s)))
        }
        // `"=" * 40`: the string repeated (empty for n <= 0), as log lines build rulers.
        (Mult, Value::Str(a), Value::Int(n)) | (Mult, Value::Int(n), Value::Str(a)) => {
            let count = usize::try_from(n.max(0)).unwrap_or(0);
            let len = it.names.name(a).len().saturating_mul(count);
            it.budget_bytes(len as u64)?;
            let s = it.names.name(a).repeat(count);
            Ok(Value::Str(it.names.intern(&s)))
        }
        // `[None] * n`: a new list (or tuple) repeating the items.
        (Mult, Value::Obj(seq), Value::Int(n)) | (Mult, Value::Int(n), Value::Obj(seq)) => {
            let (is_list, items) = match it.heap.kind(seq) {
                ObjKind::List(items) => (true, items.clone()),
                ObjKind::Tuple(items) => (false, items.clone()),
                _ => return it.unsupported("`*` on this object"),
            };
            let count = usize::try_from(n.max(0)).unwrap_or(0);
            it.budget_items(items.len().saturating_mul(count) as u64)?;
            if items.len().saturating_mul(count) > 100_000_000 {
                return it.unsupported("sequences of more than 100 000 000 items");
            }
            let repeated: Vec<Value> = std::iter::repeat_n(items, count).flatten().collect();
            Ok(new_sequence(it, is_list, repeated))
        }
        (Add, Value::Obj(a), Value::Obj(b)) => {
            let (ka, kb) = (it.heap.kind(a), it.heap.kind(b));
            let joined = match (ka, kb) {
                (ObjKind::List(x), ObjKind::List(y)) => {
                    Some((true, [x.clone(), y.clone()].concat()))
                }
                (ObjKind::Tuple(x), ObjKind::Tuple(y)) => {
                    Some((false, [x.clone(), y.clone()].concat()))
                }
                _ => None,
            };
            match joined {
                Some((is_list, items)) => Ok(new_sequence(it, is_list, items)),
                None => it.unsupported("`+` on these objects"),
            }
        }
        _ => it.unsupported(format!("the operator {} on these values", op.as_str())),
    }
}
