//! `round()` and `divmod()`, which leak reports use to print memory figures
//! (`round(mem / 2**30, 2)`, `divmod(elapsed, 60)`). Results follow CPython: `round` rounds
//! half to even (`round(2.5) == 2`), returns an int without `ndigits` and a float with it
//! (correctly rounded from the exact binary value, so `round(2.675, 2) == 2.67`); `divmod`
//! floors and returns a new tuple, which counts for the collector as CPython's does.

use super::int_ops::{self, IntFault};
use super::interp::{Interpreter, R};
use crate::heap::{ObjKind, Value};

impl<'a> Interpreter<'a> {
    /// `round(x)` / `round(x, ndigits)` (arguments borrowed).
    pub(super) fn round_builtin(&mut self, p: &[Value], ndigits_kw: Option<Value>) -> R<Value> {
        let (x, ndigits) = match (p, ndigits_kw) {
            ([x], kw) => (*x, kw.unwrap_or(Value::None)),
            ([x, n], None) => (*x, *n),
            _ => return self.error("TypeError: round() takes at most 2 arguments"),
        };
        let digits = match ndigits {
            Value::None => None,
            Value::Int(n) => Some(n),
            Value::Bool(b) => Some(i64::from(b)),
            other => {
                let t = self.type_name_of(other);
                return self.error(format!(
                    "TypeError: '{t}' object cannot be interpreted as an integer"
                ));
            }
        };
        match (x, digits) {
            (Value::Int(i), None) => Ok(Value::Int(i)),
            (Value::Bool(b), None) => Ok(Value::Int(i64::from(b))),
            (Value::Int(i), Some(n)) => int_ops::to_value(self, round_int(i, n)),
            (Value::Bool(b), Some(n)) => int_ops::to_value(self, round_int(i64::from(b), n)),
            (Value::Float(f), None) => {
                int_ops::to_value(self, int_ops::from_float(f.round_ties_even()))
            }
            (Value::Float(f), Some(n)) => Ok(Value::Float(round_float(f, n))),
            (Value::Obj(_), _) if self.is_tensor(x) => self.unsupported(
                "round() of a tensor; nearest supported: `float(t)` or `t.item()` first",
            ),
            (other, _) => {
                let t = self.type_name_of(other);
                self.error(format!(
                    "TypeError: type {t} doesn't define __round__ method"
                ))
            }
        }
    }

    /// `sum(iterable, start=0)` (borrowed): `start + item + item ...` left to right with
    /// the `+` of the items (ints stay exact, tensors add into new tensors), each item
    /// released once added, as CPython consumes an iterator lazily. CPython 3.12+ sums
    /// floats with compensated (Neumaier) summation; this adds them plainly, so the last
    /// bits of a float total may differ there.
    pub(super) fn sum_builtin(&mut self, p: &[Value], start_kw: Option<Value>) -> R<Value> {
        let (iterable, start) = match (p, start_kw) {
            ([xs], start) => (*xs, start.unwrap_or(Value::Int(0))),
            ([xs, start], None) => (*xs, *start),
            ([], _) => {
                return self
                    .error("TypeError: sum() takes at least 1 positional argument (0 given)");
            }
            _ => return self.error("TypeError: sum() takes at most 2 arguments"),
        };
        if matches!(start, Value::Str(_)) {
            return self.error("TypeError: sum() can't sum strings [use ''.join(seq) instead]");
        }
        self.heap.incref(iterable);
        let iterator = self.user_iter(iterable)?;
        self.heap.incref(start);
        let mut total = start;
        let mut pos = 0;
        let result = loop {
            match self.next_of(iterator, pos) {
                Ok(Some(item)) => {
                    if matches!(item, Value::Str(_)) {
                        self.heap.decref(item);
                        break self.error(
                            "TypeError: unsupported operand type(s) for +: 'int' and 'str'",
                        );
                    }
                    let next = self.binary(ruff_python_ast::Operator::Add, total, item, false);
                    self.heap.decref(item);
                    self.heap.decref(total);
                    match next {
                        Ok(v) => total = v,
                        Err(e) => {
                            total = Value::None;
                            break Err(e);
                        }
                    }
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
            pos += 1;
        };
        self.heap.decref(iterator);
        match result {
            Ok(()) => Ok(total),
            Err(e) => {
                self.heap.decref(total);
                Err(e)
            }
        }
    }

    /// `divmod(a, b)` (borrowed): a new `(a // b, a % b)` tuple.
    pub(super) fn divmod_builtin(&mut self, a: Value, b: Value) -> R<Value> {
        let int_of = |v: Value| match v {
            Value::Int(i) => Some(i),
            Value::Bool(b) => Some(i64::from(b)),
            _ => None,
        };
        let float_of = |v: Value| match v {
            Value::Float(f) => Some(f),
            other => int_of(other).map(|i| i as f64),
        };
        let (q, r) = if let (Some(x), Some(y)) = (int_of(a), int_of(b)) {
            let q = int_ops::floor_div(x, y).or_else(|fault| fault.raise(self))?;
            let r = int_ops::modulo(x, y).or_else(|fault| fault.raise(self))?;
            (Value::Int(q), Value::Int(r))
        } else if let (Some(x), Some(y)) = (float_of(a), float_of(b)) {
            if y == 0.0 {
                return self.error("ZeroDivisionError: float divmod()");
            }
            let (q, r) = int_ops::float_divmod(x, y);
            (Value::Float(q), Value::Float(r))
        } else if self.is_tensor(a) || self.is_tensor(b) {
            return self
                .unsupported("divmod() of a tensor; nearest supported: `a // b` and `a % b`");
        } else {
            let (ta, tb) = (self.type_name_of(a), self.type_name_of(b));
            return self.error(format!(
                "TypeError: unsupported operand type(s) for divmod(): '{ta}' and '{tb}'"
            ));
        };
        Ok(Value::Obj(self.alloc(ObjKind::Tuple(vec![q, r]))))
    }
}

/// `round(i, n)`: unchanged for `n >= 0`, else to a multiple of `10**-n`, half to even.
fn round_int(i: i64, n: i64) -> Result<i64, IntFault> {
    if n >= 0 {
        return Ok(i);
    }
    let Some(unit) = 10_i128.checked_pow(u32::try_from(-n).unwrap_or(u32::MAX)) else {
        return Ok(0);
    };
    let v = i128::from(i);
    let (q, r) = (v.div_euclid(unit), v.rem_euclid(unit));
    let up = 2 * r > unit || (2 * r == unit && q % 2 != 0);
    let rounded = (q + i128::from(up)) * unit;
    i64::try_from(rounded).map_err(|_| IntFault::TooBig)
}

/// `round(f, n)`: the decimal text correctly rounded to `n` places, read back; a negative
/// `n` rounds to tens, hundreds, … (half to even on the scaled value: approximate where the
/// scaling itself rounds).
fn round_float(f: f64, n: i64) -> f64 {
    if !f.is_finite() || n > 323 {
        return f;
    }
    if n >= 0 {
        return format!("{f:.*}", n as usize).parse().unwrap_or(f);
    }
    if n < -308 {
        return 0.0_f64.copysign(f);
    }
    let unit = 10f64.powi((-n) as i32);
    (f / unit).round_ties_even() * unit
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Expected values printed by CPython 3.11 for the same calls.
    #[test]
    fn rounding_matches_cpython() {
        assert_eq!(round_float(2.675, 2), 2.67);
        assert_eq!(round_float(0.125, 2), 0.12);
        assert_eq!(round_float(1234.5678, 1), 1234.6);
        assert_eq!(round_float(1250.0, -2), 1200.0);
        assert_eq!(round_int(1250, -2), Ok(1200));
        assert_eq!(round_int(1350, -2), Ok(1400));
        assert_eq!(round_int(-1250, -2), Ok(-1200));
        assert_eq!(int_ops::float_divmod(7.5, 2.0), (3.0, 1.5));
        assert_eq!(int_ops::float_divmod(-7.5, 2.0), (-4.0, 0.5));
        assert_eq!(int_ops::float_divmod(7.5, -2.0), (-4.0, -0.5));
    }
}
